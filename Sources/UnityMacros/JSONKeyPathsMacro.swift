import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@JSONKeyPaths`: writes a `Codable` type's `PredicateJSONMapped` conformance (Unity core),
/// the table of the JSON key each stored property is written under, as a synthesized
/// `Codable` conformance writes it: the `CodingKeys` raw value when the type declares
/// `CodingKeys` (properties it does not list are not written, so not in the table), else the
/// property's name.
///
/// Static, computed and `lazy` properties and a `let` with a value are not written by
/// `Codable`, so they are not in the table. A type with a hand-written `encode(to:)` writes
/// whatever it writes: the macro refuses it (declare `predicateJSONKeys` by hand).
public struct JSONKeyPathsMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: JSONKeyPathsMessage.notAStruct))
            return []
        }
        let members = structDecl.memberBlock
        let modifiers = structDecl.modifiers
        if let encode = Self.handWrittenEncode(in: members) {
            context.diagnose(Diagnostic(node: encode, message: JSONKeyPathsMessage.handWrittenEncode))
            return []
        }
        let codingKeys = MacroSyntax.codingKeys(in: members)
        var entries: [String] = []
        for member in members.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            guard case .found(let properties) = RowCodedMacro.storedProperties(of: variable, codingKeys: codingKeys) else { continue }
            for property in properties {
                entries.append("\\Self.\(property.name): \(RowCodedMacro.literal(property.column))")
            }
        }
        let access = MacroSyntax.accessPrefix(of: modifiers)
        let missing = Set(protocols.map { $0.trimmedDescription.split(separator: ".").last.map(String.init) ?? "" })
        let clause = missing.contains("PredicateJSONMapped") ? ": Unity.PredicateJSONMapped" : ""
        let table = entries.isEmpty ? "[:]" : "[\n            " + entries.joined(separator: ",\n            ") + ",\n        ]"
        let source = """
            extension \(type.trimmedDescription)\(clause) {
                \(access)static var predicateJSONKeys: [PartialKeyPath<Self>: String] {
                    \(table)
                }
            }
            """
        guard let ext = DeclSyntax(stringLiteral: source).as(ExtensionDeclSyntax.self) else { return [] }
        return [ext]
    }

    /// A hand-written `func encode(to:)`, if the type has one.
    static func handWrittenEncode(in members: MemberBlockSyntax) -> FunctionDeclSyntax? {
        for member in members.members {
            guard let function = member.decl.as(FunctionDeclSyntax.self), function.name.text == "encode" else { continue }
            let labels = function.signature.parameterClause.parameters.map { $0.firstName.text }
            if labels == ["to"] { return function }
        }
        return nil
    }
}

/// The macro's diagnostics.
enum JSONKeyPathsMessage: DiagnosticMessage {
    case notAStruct
    case handWrittenEncode

    var message: String {
        switch self {
        case .notAStruct:
            return "@JSONKeyPaths applies to a struct; for another type, declare predicateJSONKeys by hand"
        case .handWrittenEncode:
            return "this type writes its own JSON in encode(to:), so its keys cannot be read from its declaration: "
                + "remove @JSONKeyPaths and declare predicateJSONKeys by hand, with the key encode(to:) writes for each property"
        }
    }

    var diagnosticID: MessageID {
        switch self {
        case .notAStruct: return MessageID(domain: "UnityMacros", id: "jsonKeyPaths.notAStruct")
        case .handWrittenEncode: return MessageID(domain: "UnityMacros", id: "jsonKeyPaths.handWrittenEncode")
        }
    }

    var severity: DiagnosticSeverity { .error }
}
