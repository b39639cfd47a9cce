import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing
import UnityMacros

private let macros: [String: MacroSpec] = [
    "JSONKeyPaths": MacroSpec(type: JSONKeyPathsMacro.self, conformances: ["PredicateJSONMapped"]),
]

/// Checks one expansion, reporting a mismatch as a Swift Testing issue.
private func expect(_ source: String, expands expanded: String, diagnostics: [DiagnosticSpec] = [],
                    sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros) { failure in
        Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
    }
}

@Suite("@JSONKeyPaths expansions")
struct JSONKeyPathsMacroExpansionTests {
    /// `CodingKeys` raw values name the keys; a property `CodingKeys` leaves out, a computed,
    /// a static and a `let` with a value are not written by `Codable`, so not in the table.
    @Test func codingKeysNameTheKeys() {
        expect("""
            @JSONKeyPaths
            public struct Address: Codable {
                enum CodingKeys: String, CodingKey {
                    case city, zip = "postal_code", geo
                }
                var city: String
                var zip: String?
                var geo: Geo?
                var cache: Int = 0
                let version = 1
                static var shared = 0
                var shout: String { city.uppercased() }
            }
            """, expands: """
            public struct Address: Codable {
                enum CodingKeys: String, CodingKey {
                    case city, zip = "postal_code", geo
                }
                var city: String
                var zip: String?
                var geo: Geo?
                var cache: Int = 0
                let version = 1
                static var shared = 0
                var shout: String { city.uppercased() }
            }

            extension Address: Unity.PredicateJSONMapped {
                public static var predicateJSONKeys: [PartialKeyPath<Self>: String] {
                    [
                        \\Self.city: "city",
                        \\Self.zip: "postal_code",
                        \\Self.geo: "geo",
                    ]
                }
            }
            """)
    }

    /// Without `CodingKeys`, each stored property is written under its own name.
    @Test func propertyNamesWithoutCodingKeys() {
        expect("""
            @JSONKeyPaths
            struct Geo: Codable {
                var lat, lon: Double
                var level: Int?
            }
            """, expands: """
            struct Geo: Codable {
                var lat, lon: Double
                var level: Int?
            }

            extension Geo: Unity.PredicateJSONMapped {
                static var predicateJSONKeys: [PartialKeyPath<Self>: String] {
                    [
                        \\Self.lat: "lat",
                        \\Self.lon: "lon",
                        \\Self.level: "level",
                    ]
                }
            }
            """)
    }

    /// A hand-written `encode(to:)` writes keys the declaration does not show: refused.
    @Test func handWrittenEncodeIsRefused() {
        expect("""
            @JSONKeyPaths
            struct Odd: Codable {
                var a: Int
                func encode(to encoder: any Encoder) throws {}
            }
            """, expands: """
            struct Odd: Codable {
                var a: Int
                func encode(to encoder: any Encoder) throws {}
            }
            """, diagnostics: [
                DiagnosticSpec(message: "this type writes its own JSON in encode(to:), so its keys cannot be read from its declaration: "
                               + "remove @JSONKeyPaths and declare predicateJSONKeys by hand, with the key encode(to:) writes for each property",
                               line: 4, column: 5),
            ])
    }

    @Test func anEnumIsRefused() {
        expect("""
            @JSONKeyPaths
            enum Kind: String, Codable {
                case a
            }
            """, expands: """
            enum Kind: String, Codable {
                case a
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@JSONKeyPaths applies to a struct; for another type, declare predicateJSONKeys by hand",
                               line: 1, column: 1),
            ])
    }
}
