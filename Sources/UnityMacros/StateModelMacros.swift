import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Model(id:)` (UnityState): makes a class a state model. It adds `id`, `database`,
/// `init(database:id:)`, `modelId`, the `PropertyId` enum, the property visitor, the reset used
/// by `deleteAndClearProperties()`, `create(in:id:…)` with one argument per stored property,
/// the dispatch of `@Command` functions, and the `ModelProtocol` conformance.
///
/// Stored properties are the `var`s marked `@Property(id:)`, `@Reference(id:)` and
/// `@ReferenceList(id:)`; their ids are integer literals, unique, and not 0 (the instance
/// status). Mistakes are compile-time errors.
public struct StateModelMacro: MemberMacro, ExtensionMacro {

    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: StateMacroMessage.notAClass))
            return []
        }
        guard let modelId = node.arguments?.as(LabeledExprListSyntax.self)?.first(where: { $0.label?.text == "id" })?.expression else {
            context.diagnose(Diagnostic(node: node, message: StateMacroMessage.missingModelId))
            return []
        }
        guard let members = StateMembers.collect(classDecl, in: context) else { return [] }
        let access = classDecl.modifiers.contains { $0.name.text == "public" || $0.name.text == "open" } ? "public " : ""
        let db = "any UnityStateRuntime.Database"
        var decls: [String] = []
        decls.append("\(access)let id: UnityStateRuntime.InstanceKey")
        decls.append("\(access)let database: \(db)")
        decls.append("""
            \(access)required init(database: \(db), id: UnityStateRuntime.InstanceKey) {
                self.database = database
                self.id = id
                UnityStateRuntime.ObservableDatabase.track(self)
            }
            """)
        let className = classDecl.name.text
        // Observation: each stored property is observed under its own key path.
        decls.append("private let _$observation = UnityStateRuntime.ModelObservation()")
        func observed(_ call: (String) -> String) -> String {
            var lines = ["switch property {"]
            for property in members.properties {
                lines.append("case \(property.id): \(call("\\\(className).\(property.name)"))")
            }
            lines.append("default: \(call("\\\(className).status"))")
            lines.append("}")
            return lines.joined(separator: "\n")
        }
        decls.append("""
            \(access)func observationAccess(_ property: UnityStateRuntime.PropertyKey) {
                guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
                \(observed { "_$observation.access(self, keyPath: \($0))" })
            }
            """)
        decls.append("""
            \(access)func observationMutation(_ property: UnityStateRuntime.PropertyKey, _ write: () -> Void) {
                guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return write() }
                \(observed { "_$observation.withMutation(of: self, keyPath: \($0), write)" })
            }
            """)
        decls.append("""
            \(access)func notifyObservers(ofChangeTo property: UnityStateRuntime.PropertyKey) {
                observationMutation(property) {}
            }
            """)
        decls.append("\(access)static var modelId: UnityStateRuntime.ModelKey { \(modelId.trimmedDescription) }")

        // PropertyId: one case per stored property (an empty enum cannot have a raw type).
        if members.properties.isEmpty {
            decls.append("""
                \(access)enum PropertyId: RawRepresentable, CaseIterable {
                    \(access)init?(rawValue: Int) { return nil }
                    \(access)var rawValue: Int { switch self {} }
                    \(access)static var allCases: [PropertyId] { [] }
                }
                """)
        } else {
            let cases = members.properties.map { "case \($0.name) = \($0.id)" }.joined(separator: "\n")
            decls.append("\(access)enum PropertyId: Int, CaseIterable {\n\(cases)\n}")
        }

        let visits = members.properties.map { "visitor.visit(property: \($0.id), as: (\($0.storedType)).self)" }
        decls.append("""
            \(access)static func visitProperties<Visitor: UnityStateRuntime.PropertyVisitor>(with visitor: inout Visitor) {
                \(visits.isEmpty ? "_ = visitor" : visits.joined(separator: "\n"))
            }
            """)

        let keyPaths = members.properties.map { "\\\(className).\($0.name): \($0.id)" }
        decls.append("""
            \(access)static var propertyKeyPaths: [AnyKeyPath: UnityStateRuntime.PropertyKey]? {
                [\(keyPaths.isEmpty ? ":" : keyPaths.joined(separator: ", "))]
            }
            """)

        let resets = members.properties.map { property -> String in
            switch property.kind {
            case .property: return "self.\(property.name) = self._\(property.name).defaultValue"
            case .reference: return "self.\(property.name) = nil"
            case .referenceList: return "self.\(property.name) = self._\(property.name).emptyValue"
            }
        }
        decls.append("""
            \(access)func resetPropertiesToDefaults() {
                \(resets.isEmpty ? "" : resets.joined(separator: "\n"))
            }
            """)

        // create(in:id:…): one argument per stored property, defaulting to its default; only
        // values that differ from their default are written, all in one transaction.
        var parameters = ["in database: \(db)", "id: UnityStateRuntime.InstanceKey"]
        var writes: [String] = []
        for property in members.properties {
            switch property.kind {
            case .property:
                let defaultValue = property.initializer ?? "UnityStateRuntime.stateDefault((\(property.declaredType)).self)"
                parameters.append("\(property.name): \(property.declaredType) = \(defaultValue)")
                writes.append("if !UnityStateRuntime.stateIsDefault(\(property.name), instance._\(property.name).defaultValue) { instance.\(property.name) = \(property.name) }")
            case .reference:
                parameters.append("\(property.name): \(property.declaredType) = nil")
                writes.append("if \(property.name) != nil { instance.\(property.name) = \(property.name) }")
            case .referenceList:
                parameters.append("\(property.name): \(property.declaredType) = .init()")
                writes.append("if !\(property.name).isEmpty { instance.\(property.name) = \(property.name) }")
            }
        }
        decls.append("""
            /// Creates instance `id` in `database` with these values, in one transaction: the
            /// status and every value that differs from its default (throws the store's error,
            /// and writes nothing, when that fails).
            @discardableResult
            \(access)static func create(\(parameters.joined(separator: ", "))) throws -> Self {
                let instance = Self(database: database, id: id)
                try database.transaction {
                    database.set(UnityStateRuntime.InstanceStatus.created, for: UnityStateRuntime.Path(model: Self.modelId, instance: id))
                    \(writes.joined(separator: "\n"))
                }
                return instance
            }
            """)

        if !members.commands.isEmpty {
            var branches: [String] = []
            for command in members.commands {
                var lines = ["case \(command.id):"]
                for (index, parameter) in command.parameters.enumerated() {
                    lines.append("let argument\(index) = try command.argument(\(index), as: (\(parameter.type)).self)")
                }
                let arguments = command.parameters.enumerated().map { index, parameter in
                    parameter.label == "_" ? "argument\(index)" : "\(parameter.label): argument\(index)"
                }.joined(separator: ", ")
                let call = "\(command.isAsync ? "await " : "")self.\(command.name)(\(arguments))"
                if command.throwsError {
                    lines.append("""
                        do { try \(call) } catch {
                            throw UnityStateRuntime.StateError.commandFailed(id: \(command.id), error: String(describing: error))
                        }
                        """)
                } else {
                    lines.append(call)
                }
                branches.append(lines.joined(separator: "\n"))
            }
            decls.append("""
                \(access)func execute<Command: UnityStateRuntime.CommandArguments>(command: Command) throws(UnityStateRuntime.StateError) {
                    switch command.commandId {
                    \(branches.joined(separator: "\n"))
                    default:
                        throw UnityStateRuntime.StateError.unknownCommand(id: command.commandId)
                    }
                }
                """)
        }
        return decls.map { DeclSyntax(stringLiteral: $0) }
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard declaration.is(ClassDeclSyntax.self) else { return [] }
        let model: DeclSyntax = "extension \(type.trimmed): UnityStateRuntime.ModelProtocol {}"
        let observable: DeclSyntax = """
            @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
            extension \(type.trimmed): Observation.Observable {}
            """
        return [model, observable].compactMap { $0.as(ExtensionDeclSyntax.self) }
    }
}

/// `@Command(id:)` on a model's method: adds `<name>Command(<same arguments>)`, which builds
/// the ``CommandRequest`` to run the method on the same instance of a remote database.
public struct StateCommandMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let function = declaration.as(FunctionDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: StateMacroMessage.commandNotAFunction))
            return []
        }
        guard let id = StateMembers.integerId(of: node) else {
            context.diagnose(Diagnostic(node: node, message: StateMacroMessage.idNotALiteral("@Command")))
            return []
        }
        let parameters = function.signature.parameterClause.parameters
        let declared = parameters.map { parameter -> String in
            let first = parameter.firstName.text
            let second = parameter.secondName?.text
            let names = second.map { "\(first) \($0)" } ?? first
            return "\(names): \(parameter.type.trimmedDescription)"
        }.joined(separator: ", ")
        let values = parameters.map { ($0.secondName ?? $0.firstName).text }.joined(separator: ", ")
        let access = function.modifiers.contains { $0.name.text == "public" } ? "public " : ""
        return ["""
            /// The command that runs `\(raw: function.name.text)` with these arguments on this instance of a remote database.
            \(raw: access)func \(raw: function.name.text)Command(\(raw: declared)) -> UnityStateRuntime.CommandRequest {
                UnityStateRuntime.CommandRequest(model: Self.modelId, instance: id, command: \(raw: id), arguments: [\(raw: values)])
            }
            """]
    }
}

/// The stored properties and commands of a `@Model` class.
struct StateMembers {
    enum Kind { case property, reference, referenceList }

    struct StoredProperty {
        let name: String
        let id: Int
        let kind: Kind
        /// The type as written (`String`, `Person?`, `[Pet]`).
        let declaredType: String
        /// The `= value` of a `@Property`, if any.
        let initializer: String?
        /// The type stored in the database (`InstanceKey?` for a reference, `[InstanceKey]`
        /// for a list).
        var storedType: String {
            switch kind {
            case .property: return declaredType
            case .reference: return "UnityStateRuntime.InstanceKey?"
            case .referenceList: return "[UnityStateRuntime.InstanceKey]"
            }
        }
    }

    struct Command {
        let name: String
        let id: Int
        let parameters: [(label: String, type: String)]
        let throwsError: Bool
        let isAsync: Bool
    }

    var properties: [StoredProperty] = []
    var commands: [Command] = []

    /// The literal id of `@Property(id: 3)`-style attributes.
    static func integerId(of attribute: AttributeSyntax) -> Int? {
        guard let argument = attribute.arguments?.as(LabeledExprListSyntax.self)?.first(where: { $0.label?.text == "id" }),
              let literal = argument.expression.as(IntegerLiteralExprSyntax.self) else { return nil }
        return Int(String(literal.literal.text.filter { $0 != "_" }))
    }

    static func collect(_ classDecl: ClassDeclSyntax, in context: some MacroExpansionContext) -> StateMembers? {
        var result = StateMembers()
        var failed = false
        var seenProperty: [Int: String] = [:]
        var seenCommand: [Int: String] = [:]
        for member in classDecl.memberBlock.members {
            if let variable = member.decl.as(VariableDeclSyntax.self) {
                for element in variable.attributes {
                    guard let attribute = element.as(AttributeSyntax.self) else { continue }
                    let attributeName = attribute.attributeName.trimmedDescription
                    let kind: Kind
                    switch attributeName {
                    case "Property": kind = .property
                    case "Reference": kind = .reference
                    case "ReferenceList": kind = .referenceList
                    default: continue
                    }
                    guard let binding = variable.bindings.first, variable.bindings.count == 1,
                          let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text else {
                        context.diagnose(Diagnostic(node: variable, message: StateMacroMessage.oneNamePerProperty))
                        failed = true
                        continue
                    }
                    guard let id = integerId(of: attribute) else {
                        context.diagnose(Diagnostic(node: attribute, message: StateMacroMessage.idNotALiteral("@\(attributeName)")))
                        failed = true
                        continue
                    }
                    guard let type = binding.typeAnnotation?.type else {
                        context.diagnose(Diagnostic(node: variable, message: StateMacroMessage.missingType(name)))
                        failed = true
                        continue
                    }
                    if id == 0 {
                        context.diagnose(Diagnostic(node: attribute, message: StateMacroMessage.propertyIdZero(name)))
                        failed = true
                        continue
                    }
                    if let other = seenProperty[id] {
                        context.diagnose(Diagnostic(node: attribute, message: StateMacroMessage.duplicatePropertyId(id, other, name)))
                        failed = true
                        continue
                    }
                    var declaredType = type.trimmedDescription
                    if kind == .reference {
                        if let iuo = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) {
                            declaredType = iuo.wrappedType.trimmedDescription + "?"
                        } else if !type.is(OptionalTypeSyntax.self) {
                            context.diagnose(Diagnostic(node: type, message: StateMacroMessage.referenceNotOptional(name)))
                            failed = true
                            continue
                        }
                    }
                    seenProperty[id] = name
                    result.properties.append(StoredProperty(
                        name: name, id: id, kind: kind, declaredType: declaredType,
                        initializer: binding.initializer?.value.trimmedDescription))
                }
            } else if let function = member.decl.as(FunctionDeclSyntax.self) {
                for element in function.attributes {
                    guard let attribute = element.as(AttributeSyntax.self),
                          attribute.attributeName.trimmedDescription == "Command" else { continue }
                    guard let id = integerId(of: attribute) else { continue } // @Command reports it
                    let name = function.name.text
                    if let other = seenCommand[id] {
                        context.diagnose(Diagnostic(node: attribute, message: StateMacroMessage.duplicateCommandId(id, other, name)))
                        failed = true
                        continue
                    }
                    seenCommand[id] = name
                    let effects = function.signature.effectSpecifiers
                    result.commands.append(Command(
                        name: name, id: id,
                        parameters: function.signature.parameterClause.parameters.map {
                            ($0.firstName.text, $0.type.trimmedDescription)
                        },
                        throwsError: effects?.throwsClause != nil,
                        isAsync: effects?.asyncSpecifier != nil))
                }
            }
        }
        return failed ? nil : result
    }
}

/// The diagnostics of `@Model` and `@Command`.
enum StateMacroMessage: DiagnosticMessage {
    case notAClass
    case missingModelId
    case commandNotAFunction
    case idNotALiteral(String)
    case oneNamePerProperty
    case missingType(String)
    case propertyIdZero(String)
    case duplicatePropertyId(Int, String, String)
    case duplicateCommandId(Int, String, String)
    case referenceNotOptional(String)

    var message: String {
        switch self {
        case .notAClass:
            return "@Model applies to a class: model objects are references to one instance in a database"
        case .missingModelId:
            return "@Model needs its id: @Model(id: 1)"
        case .commandNotAFunction:
            return "@Command applies to a method of a @Model class"
        case .idNotALiteral(let attribute):
            return "\(attribute)(id:) takes an integer literal, so that @Model can check that ids are unique"
        case .oneNamePerProperty:
            return "declare one stored property per var (var a: Int, not var a, b: Int)"
        case .missingType(let name):
            return "'\(name)' needs a type annotation: @Model writes create(in:id:…) with one argument per property"
        case .propertyIdZero(let name):
            return "property id 0 of '\(name)' is reserved for the instance status; choose another id"
        case .duplicatePropertyId(let id, let first, let second):
            return "property id \(id) is used by both '\(first)' and '\(second)'; every property of a model needs its own id"
        case .duplicateCommandId(let id, let first, let second):
            return "command id \(id) is used by both '\(first)' and '\(second)'; every command of a model needs its own id"
        case .referenceNotOptional(let name):
            return "@Reference '\(name)' must be optional (Model? or Model!): a new instance references nothing"
        }
    }

    var diagnosticID: MessageID {
        let id: String
        switch self {
        case .notAClass: id = "notAClass"
        case .missingModelId: id = "missingModelId"
        case .commandNotAFunction: id = "commandNotAFunction"
        case .idNotALiteral: id = "idNotALiteral"
        case .oneNamePerProperty: id = "oneNamePerProperty"
        case .missingType: id = "missingType"
        case .propertyIdZero: id = "propertyIdZero"
        case .duplicatePropertyId: id = "duplicatePropertyId"
        case .duplicateCommandId: id = "duplicateCommandId"
        case .referenceNotOptional: id = "referenceNotOptional"
        }
        return MessageID(domain: "UnityMacros", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
