import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing
import UnityMacros

private let macros: [String: MacroSpec] = ["ORMFields": MacroSpec(type: ORMFieldsMacro.self)]

/// Checks one expansion, reporting a mismatch as a Swift Testing issue.
private func expect(_ source: String, expands expanded: String, diagnostics: [DiagnosticSpec] = [],
                    sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros) { failure in
        Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
    }
}

@Suite("@ORMFields expansions")
struct ORMFieldsMacroExpansionTests {
    /// Every stored `var` by its name, observers included; constants, computed, lazy and
    /// static properties left out; a backticked name keeps its backticks in code only.
    @Test func storedVarsOnly() {
        expect("""
            @ORMFields
            final class Dog: AmigoModel {
                var id = 0
                var label: String = "New Dog", owner: Person?
                var `default`: Int?
                var seen = 0 { didSet { changes += 1 } }
                let kind = "dog"
                var shout: String { label.uppercased() }
                lazy var cache = [String]()
                static var count = 0
                private var changes = 0
            }
            """, expands: """
            final class Dog: AmigoModel {
                var id = 0
                var label: String = "New Dog", owner: Person?
                var `default`: Int?
                var seen = 0 { didSet { changes += 1 } }
                let kind = "dog"
                var shout: String { label.uppercased() }
                lazy var cache = [String]()
                static var count = 0
                private var changes = 0

                override class var ormFields: UnityORM.ORMFieldTable {
                    UnityORM.ORMFieldTable(
                        Dog.self,
                        .property("id", \\.id) {
                            $0.id = $1
                        },
                        .property("label", \\.label) {
                            $0.label = $1
                        },
                        .property("owner", \\.owner) {
                            $0.owner = $1
                        },
                        .property("default", \\.`default`) {
                            $0.`default` = $1
                        },
                        .property("seen", \\.seen) {
                            $0.seen = $1
                        },
                        .property("changes", \\.changes) {
                            $0.changes = $1
                        }
                    )
                }
            }
            """)
    }

    /// A public (or open) class gets a public table, so that a subclass elsewhere may use it.
    @Test func publicClass() {
        expect("""
            @ORMFields
            open class Person: AmigoModel {
                public var name = ""
            }
            """, expands: """
            open class Person: AmigoModel {
                public var name = ""

                public override class var ormFields: UnityORM.ORMFieldTable {
                    UnityORM.ORMFieldTable(
                        Person.self,
                        .property("name", \\.name) {
                            $0.name = $1
                        }
                    )
                }
            }
            """)
    }

    @Test func structIsAnError() {
        expect("""
            @ORMFields
            struct Dog {
                var id = 0
            }
            """, expands: """
            struct Dog {
                var id = 0
            }
            """, diagnostics: [DiagnosticSpec(message: "@ORMFields applies to a class that inherits from AmigoModel", line: 1, column: 1)])
    }
}
