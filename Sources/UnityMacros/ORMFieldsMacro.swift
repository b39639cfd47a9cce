import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@ORMFields`: writes an `AmigoModel` subclass's `ormFields` accessor table (UnityORM) from
/// its stored `var` properties, each by its name:
///
/// ```swift
/// override class var ormFields: ORMFieldTable {
///     ORMFieldTable(Dog.self, .property("id", \.id) { $0.id = $1 }, .property("label", \.label) { $0.label = $1 })
/// }
/// ```
///
/// Amigo found a model's properties through KVC; Linux has no Objective-C runtime, so the
/// table is generated instead. Each entry writes its property with a direct store (the
/// closure), which is several times faster than a write through the key path; the key path
/// reads it and gives the value's type, which picks the overload (value, optional value,
/// related model, or a type the ORM cannot store). Constants (`let`), computed, `lazy` and
/// `static`/`class` properties are left out.
public struct ORMFieldsMacro: MemberMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: ORMFieldsMessage.notAClass))
            return []
        }
        var names: [String] = []
        for member in classDecl.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self),
                  variable.bindingSpecifier.tokenKind == .keyword(.var),
                  !RowCodedMacro.isStaticOrLazy(variable) else { continue }
            for binding in variable.bindings {
                guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
                if let accessors = binding.accessorBlock, RowCodedMacro.isComputed(accessors) { continue }
                names.append(pattern.identifier.text)
            }
        }
        let typeName = classDecl.name.text
        let entries = names.map { name -> String in
            let bare = name.filter { $0 != "`" }
            return ".property(\(RowCodedMacro.literal(bare)), \\.\(name)) { $0.\(name) = $1 }"
        }
        let isPublic = classDecl.modifiers.contains { modifier in
            modifier.name.tokenKind == .keyword(.public) || modifier.name.tokenKind == .keyword(.open)
        }
        let arguments = ([typeName + ".self"] + entries).joined(separator: ",\n        ")
        return ["""
            \(raw: isPublic ? "public " : "")override class var ormFields: UnityORM.ORMFieldTable {
                UnityORM.ORMFieldTable(
                    \(raw: arguments)
                )
            }
            """]
    }
}

/// The macro's diagnostics.
enum ORMFieldsMessage: DiagnosticMessage {
    case notAClass

    var message: String {
        switch self {
        case .notAClass: return "@ORMFields applies to a class that inherits from AmigoModel"
        }
    }

    var diagnosticID: MessageID {
        switch self {
        case .notAClass: return MessageID(domain: "UnityMacros", id: "ormFieldsNotAClass")
        }
    }

    var severity: DiagnosticSeverity { .error }
}
