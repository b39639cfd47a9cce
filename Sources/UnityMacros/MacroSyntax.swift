import SwiftSyntax

/// What the macros read from a type's declaration alike.
enum MacroSyntax {
    /// `public ` / `package ` when the type is, so that the generated conformance is visible
    /// where the type is.
    static func accessPrefix(of modifiers: DeclModifierListSyntax) -> String {
        for modifier in modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.public), .keyword(.open): return "public "
            case .keyword(.package): return "package "
            default: continue
            }
        }
        return ""
    }

    /// Property name → coded key (the case's raw value, else its name) from a nested
    /// `enum CodingKeys` among `members`, or nil when there is none.
    static func codingKeys(in members: MemberBlockSyntax) -> [String: String]? {
        for member in members.members {
            guard let enumDecl = member.decl.as(EnumDeclSyntax.self), enumDecl.name.text == "CodingKeys" else { continue }
            var keys: [String: String] = [:]
            for enumMember in enumDecl.memberBlock.members {
                guard let caseDecl = enumMember.decl.as(EnumCaseDeclSyntax.self) else { continue }
                for element in caseDecl.elements {
                    let name = element.name.text.filter { $0 != "`" }
                    var key = name
                    if let raw = element.rawValue?.value.as(StringLiteralExprSyntax.self) {
                        key = raw.segments.compactMap { $0.as(StringSegmentSyntax.self)?.content.text }.joined()
                    }
                    keys[name] = key
                }
            }
            return keys
        }
        return nil
    }
}
