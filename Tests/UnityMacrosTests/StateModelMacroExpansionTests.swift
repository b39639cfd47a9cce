import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing
import UnityMacros

private let stateMacros: [String: MacroSpec] = [
    "Model": MacroSpec(type: StateModelMacro.self, conformances: ["ModelProtocol"]),
    "Command": MacroSpec(type: StateCommandMacro.self),
]

/// Checks one expansion, reporting a mismatch as a Swift Testing issue.
private func expectState(_ source: String, expands expanded: String, diagnostics: [DiagnosticSpec] = [],
                         sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: stateMacros) { failure in
        Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
    }
}

@Suite("@Model / @Command expansions")
struct StateModelMacroExpansionTests {
    @Test func modelWithAPropertyAReferenceAListAndACommand() {
        expectState("""
            @Model(id: 7)
            final class Task {
                @Property(id: 1) var title: String = "New"
                @Reference(id: 2) var owner: Person!
                @ReferenceList(id: 3) var tags: [Tag]
                @Command(id: 1)
                func rename(to title: String) throws {}
            }
            """, expands: """
            final class Task {
                @Property(id: 1) var title: String = "New"
                @Reference(id: 2) var owner: Person!
                @ReferenceList(id: 3) var tags: [Tag]
                func rename(to title: String) throws {}

                /// The command that runs `rename` with these arguments on this instance of a remote database.
                func renameCommand(to title: String) -> UnityStateRuntime.CommandRequest {
                    UnityStateRuntime.CommandRequest(model: Self.modelId, instance: id, command: 1, arguments: [title])
                }

                let id: UnityStateRuntime.InstanceKey

                let database: any UnityStateRuntime.Database

                required init(database: any UnityStateRuntime.Database, id: UnityStateRuntime.InstanceKey) {
                    self.database = database
                    self.id = id
                    UnityStateRuntime.ObservableDatabase.track(self)
                }

                private let _$observation = UnityStateRuntime.ModelObservation()

                func observationAccess(_ property: UnityStateRuntime.PropertyKey) {
                    guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else {
                        return
                    }
                    switch property {
                    case 1:
                        _$observation.access(self, keyPath: \\Task.title)
                    case 2:
                        _$observation.access(self, keyPath: \\Task.owner)
                    case 3:
                        _$observation.access(self, keyPath: \\Task.tags)
                    default:
                        _$observation.access(self, keyPath: \\Task.status)
                    }
                }

                func observationMutation(_ property: UnityStateRuntime.PropertyKey, _ write: () -> Void) {
                    guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else {
                        return write()
                    }
                    switch property {
                    case 1:
                        _$observation.withMutation(of: self, keyPath: \\Task.title, write)
                    case 2:
                        _$observation.withMutation(of: self, keyPath: \\Task.owner, write)
                    case 3:
                        _$observation.withMutation(of: self, keyPath: \\Task.tags, write)
                    default:
                        _$observation.withMutation(of: self, keyPath: \\Task.status, write)
                    }
                }

                func notifyObservers(ofChangeTo property: UnityStateRuntime.PropertyKey) {
                    observationMutation(property) {
                    }
                }

                static var modelId: UnityStateRuntime.ModelKey {
                    7
                }

                enum PropertyId: Int, CaseIterable {
                    case title = 1
                    case owner = 2
                    case tags = 3
                }

                static func visitProperties<Visitor: UnityStateRuntime.PropertyVisitor>(with visitor: inout Visitor) {
                    visitor.visit(property: 1, as: (String).self)
                    visitor.visit(property: 2, as: (UnityStateRuntime.InstanceKey?).self)
                    visitor.visit(property: 3, as: ([UnityStateRuntime.InstanceKey]).self)
                }

                static var propertyKeyPaths: [AnyKeyPath: UnityStateRuntime.PropertyKey]? {
                    [\\Task.title: 1, \\Task.owner: 2, \\Task.tags: 3]
                }

                func resetPropertiesToDefaults() {
                    self.title = self._title.defaultValue
                    self.owner = nil
                    self.tags = self._tags.emptyValue
                }

                /// Creates instance `id` in `database` with these values, in one transaction: the
                /// status and every value that differs from its default (throws the store's error,
                /// and writes nothing, when that fails).
                @discardableResult
                static func create(in database: any UnityStateRuntime.Database, id: UnityStateRuntime.InstanceKey, title: String = "New", owner: Person? = nil, tags: [Tag] = .init()) throws -> Self {
                    let instance = Self(database: database, id: id)
                    try database.transaction {
                        database.set(UnityStateRuntime.InstanceStatus.created, for: UnityStateRuntime.Path(model: Self.modelId, instance: id))
                        if !UnityStateRuntime.stateIsDefault(title, instance._title.defaultValue) {
                            instance.title = title
                        }
                        if owner != nil {
                            instance.owner = owner
                        }
                        if !tags.isEmpty {
                            instance.tags = tags
                        }
                    }
                    return instance
                }

                func execute<Command: UnityStateRuntime.CommandArguments>(command: Command) throws(UnityStateRuntime.StateError) {
                    switch command.commandId {
                    case 1:
                        let argument0 = try command.argument(0, as: (String).self)
                        do {
                            try self.rename(to: argument0)
                        } catch {
                            throw UnityStateRuntime.StateError.commandFailed(id: 1, error: String(describing: error))
                        }
                    default:
                        throw UnityStateRuntime.StateError.unknownCommand(id: command.commandId)
                    }
                }
            }

            extension Task: UnityStateRuntime.ModelProtocol {
            }

            @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
            extension Task: Observation.Observable {
            }
            """)
    }

    /// The mistakes @Model reports at compile time, each with its message.
    @Test func mistakesAreCompileTimeErrors() {
        expectState("""
            @Model(id: 1)
            final class Bad {
                @Property(id: 1) var a: Int
                @Property(id: 1) var b: Int
                @Property(id: 0) var c: Int
                @Reference(id: 2) var d: Other
                @Property(id: 3) var e = 5
            }
            """, expands: """
            final class Bad {
                @Property(id: 1) var a: Int
                @Property(id: 1) var b: Int
                @Property(id: 0) var c: Int
                @Reference(id: 2) var d: Other
                @Property(id: 3) var e = 5
            }

            extension Bad: UnityStateRuntime.ModelProtocol {
            }

            @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
            extension Bad: Observation.Observable {
            }
            """, diagnostics: [
                DiagnosticSpec(message: "property id 1 is used by both 'a' and 'b'; every property of a model needs its own id", line: 4, column: 5),
                DiagnosticSpec(message: "property id 0 of 'c' is reserved for the instance status; choose another id", line: 5, column: 5),
                DiagnosticSpec(message: "@Reference 'd' must be optional (Model? or Model!): a new instance references nothing", line: 6, column: 30),
                DiagnosticSpec(message: "'e' needs a type annotation: @Model writes create(in:id:…) with one argument per property", line: 7, column: 5),
            ])
    }

    @Test func duplicateCommandIdsAndNonClasses() {
        expectState("""
            @Model(id: 1)
            final class Twice {
                @Command(id: 4) func a() {}
                @Command(id: 4) func b() {}
            }
            """, expands: """
            final class Twice {
                func a() {}

                /// The command that runs `a` with these arguments on this instance of a remote database.
                func aCommand() -> UnityStateRuntime.CommandRequest {
                    UnityStateRuntime.CommandRequest(model: Self.modelId, instance: id, command: 4, arguments: [])
                }
                func b() {}

                /// The command that runs `b` with these arguments on this instance of a remote database.
                func bCommand() -> UnityStateRuntime.CommandRequest {
                    UnityStateRuntime.CommandRequest(model: Self.modelId, instance: id, command: 4, arguments: [])
                }
            }

            extension Twice: UnityStateRuntime.ModelProtocol {
            }

            @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
            extension Twice: Observation.Observable {
            }
            """, diagnostics: [
                DiagnosticSpec(message: "command id 4 is used by both 'a' and 'b'; every command of a model needs its own id", line: 4, column: 5),
            ])
        expectState("""
            @Model(id: 1)
            struct NotAClass {
                @Property(id: 1) var a: Int
            }
            """, expands: """
            struct NotAClass {
                @Property(id: 1) var a: Int
            }
            """, diagnostics: [
                DiagnosticSpec(message: "@Model applies to a class: model objects are references to one instance in a database", line: 1, column: 1),
            ])
    }
}
