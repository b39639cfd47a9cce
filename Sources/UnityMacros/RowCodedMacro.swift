import SwiftCompilerPlugin
import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@RowCoded`: writes a struct's `RowDecodable` and `RowEncodable` conformances (Unity core)
/// from its stored properties, with the column names of its `CodingKeys` when it has them.
///
/// Each stored property is a column, read by the position resolved once per result set and
/// written straight into the statement's values. The generated calls are overloads chosen at
/// compile time by the property's type: a `DatabaseValueConvertible` type is stored as its
/// value, any other `Codable` type as a JSON document, as `RowEncoder`/`RowDecoder` do.
///
/// - An optional property (`T?`) reads NULL or a missing column as nil.
/// - A `var` with a default keeps its default when the row has no such column.
/// - `existsInDatabase` is never written; it reads its column when there is one, else `true`
///   (every decoded row comes from the database).
/// - Not columns: static and computed properties, `lazy` ones, a `let` with a value, and, when
///   the type declares `CodingKeys`, properties it does not list.
public struct RowCodedMacro: ExtensionMacro {
    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        guard let structDecl = declaration.as(StructDeclSyntax.self) else {
            context.diagnose(Diagnostic(node: node, message: RowCodedMessage.notAStruct))
            return []
        }
        let codingKeys = MacroSyntax.codingKeys(in: structDecl.memberBlock)
        var properties: [StoredProperty] = []
        var failed = false
        for member in structDecl.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            switch Self.storedProperties(of: variable, codingKeys: codingKeys) {
            case .found(let found): properties += found
            case .failed(let diagnostic):
                context.diagnose(diagnostic)
                failed = true
            }
        }
        if failed { return [] }

        let access = MacroSyntax.accessPrefix(of: structDecl.modifiers)
        let decoded = properties
        let encoded = properties.filter { !$0.isExistsFlag }
        let decodingNames = decoded.map { Self.literal($0.column) }.joined(separator: ", ")
        let encodingNames = encoded.map { Self.literal($0.column) }.joined(separator: ", ")

        var initBody: [String] = []
        for (k, p) in decoded.enumerated() {
            let name = p.name
            if p.isExistsFlag {
                initBody.append("self.\(name) = try columns.decodeIfColumn(\(k), from: row) ?? true")
            } else if p.isOptional && p.hasDefault {
                initBody.append("if columns.index(\(k)) != nil { self.\(name) = try columns.decodeIfPresent(\(k), from: row) }")
            } else if p.isOptional {
                initBody.append("self.\(name) = try columns.decodeIfPresent(\(k), from: row)")
            } else if p.hasDefault {
                initBody.append("if let value = try columns.decodeIfColumn(\(k), from: row, as: type(of: self.\(name))) { self.\(name) = value }")
            } else {
                initBody.append("self.\(name) = try columns.decode(\(k), from: row)")
            }
        }
        let encodeBody = encoded.map { "values.append(\(Self.valueCall($0)))" }
        let byName = encoded.map { "case \(Self.literal($0.column)): return \(Self.valueCall($0))" }
        let byKeyPath = properties.map { "if keyPath == \\Self.\($0.name) { return \(Self.literal($0.column)) }" }

        // Only the conformances the type lacks (the compiler lists them in `protocols`).
        let missing = Set(protocols.map { $0.trimmedDescription.split(separator: ".").last.map(String.init) ?? "" })
        let conformances = ["RowDecodable", "RowEncodable"].filter { missing.contains($0) }.map { "Unity." + $0 }
        let clause = conformances.isEmpty ? "" : ": " + conformances.joined(separator: ", ")
        let source = """
            extension \(type.trimmedDescription)\(clause) {
                \(access)static let decodingColumns: [String] = [\(decodingNames)]
                \(access)static let encodingColumns: [String] = [\(encodingNames)]
                \(access)init(row: borrowing Unity.Row, columns: borrowing Unity.RowColumns) throws {
                    \(initBody.joined(separator: "\n        "))
                }
                \(access)func encodeRow(to values: inout [Unity.DatabaseValue]) throws {
                    \(encodeBody.joined(separator: "\n        "))
                }
                \(access)func databaseValue(forColumn name: String) throws -> Unity.DatabaseValue? {
                    switch name {
                    \(byName.joined(separator: "\n        "))
                    default: return nil
                    }
                }
                \(access)static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
                    \(byKeyPath.joined(separator: "\n        "))
                    return nil
                }
            }
            """
        let decl = DeclSyntax(stringLiteral: source)
        guard let ext = decl.as(ExtensionDeclSyntax.self) else { return [] }
        return [ext]
    }

    /// What one stored property needs.
    struct StoredProperty {
        var name: String
        var column: String
        var isOptional: Bool
        var hasDefault: Bool
        /// `existsInDatabase`: read (true when there is no column), never written.
        var isExistsFlag: Bool
    }

    /// The columns of one declaration, or why there are none.
    enum PropertyScan {
        case found([StoredProperty])
        case failed(Diagnostic)
    }

    static func valueCall(_ p: StoredProperty) -> String {
        p.isOptional
            ? "try Unity.RowCoding.valueIfPresent(self.\(p.name))"
            : "try Unity.RowCoding.value(self.\(p.name))"
    }

    static func literal(_ s: String) -> String {
        var out = "\""
        for c in s {
            if c == "\\" || c == "\"" { out.append("\\") }
            out.append(c)
        }
        return out + "\""
    }

    /// The columns of one `var`/`let` declaration (none for static, computed, lazy, …).
    static func storedProperties(of variable: VariableDeclSyntax, codingKeys: [String: String]?) -> PropertyScan {
        if isStaticOrLazy(variable) { return .found([]) }
        let isLet = variable.bindingSpecifier.tokenKind == .keyword(.let)
        var found: [StoredProperty] = []
        let bindings = Array(variable.bindings)
        for (index, binding) in bindings.enumerated() {
            guard let pattern = binding.pattern.as(IdentifierPatternSyntax.self) else { continue }
            if let accessors = binding.accessorBlock, isComputed(accessors) { continue }
            let name = pattern.identifier.text.filter { $0 != "`" }
            let hasDefault = binding.initializer != nil
            // `let x = 1` is a constant, not decoded (as Codable).
            if isLet && hasDefault { continue }
            let column: String
            if let codingKeys {
                guard let key = codingKeys[name] else { continue }
                column = key
            } else {
                column = name
            }
            let isExistsFlag = name == "existsInDatabase"
            // `var a, b: Int`: the type is written on the last binding.
            let typeSyntax = binding.typeAnnotation?.type
                ?? bindings[index...].lazy.compactMap { $0.typeAnnotation?.type }.first
            // The generated calls infer the type from the property (so a type nested in another
            // type's namespace needs no qualified name): only optionality is read from the source.
            let isOptional = typeSyntax.map(isOptionalType) ?? false
            found.append(StoredProperty(name: name, column: column, isOptional: isOptional,
                                        hasDefault: hasDefault, isExistsFlag: isExistsFlag))
        }
        return .found(found)
    }

    /// True for a `static`, `class` or `lazy` declaration: not an instance's stored column.
    static func isStaticOrLazy(_ variable: VariableDeclSyntax) -> Bool {
        variable.modifiers.contains { modifier in
            switch modifier.name.tokenKind {
            case .keyword(.static), .keyword(.class), .keyword(.lazy): return true
            default: return false
            }
        }
    }

    /// True for `{ get … }` or a bare getter body; false for `willSet`/`didSet` observers.
    static func isComputed(_ accessors: AccessorBlockSyntax) -> Bool {
        switch accessors.accessors {
        case .getter: return true
        case .accessors(let list):
            return list.contains { accessor in
                switch accessor.accessorSpecifier.tokenKind {
                case .keyword(.willSet), .keyword(.didSet): return false
                default: return true
                }
            }
        }
    }

    /// True for `T?`, `T!` and `Optional<T>`.
    static func isOptionalType(_ type: TypeSyntax) -> Bool {
        if type.is(OptionalTypeSyntax.self) || type.is(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return true }
        if let identifier = type.as(IdentifierTypeSyntax.self), identifier.name.text == "Optional",
           identifier.genericArgumentClause != nil {
            return true
        }
        return false
    }
}

/// The macro's diagnostics.
enum RowCodedMessage: DiagnosticMessage {
    case notAStruct

    var message: String {
        switch self {
        case .notAStruct:
            return "@RowCoded applies to a struct (a class cannot gain a designated initializer in an extension); write RowDecodable and RowEncodable by hand for other types"
        }
    }

    var diagnosticID: MessageID {
        switch self {
        case .notAStruct: return MessageID(domain: "UnityMacros", id: "notAStruct")
        }
    }

    var severity: DiagnosticSeverity { .error }
}

@main
struct UnityMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [RowCodedMacro.self, JSONKeyPathsMacro.self, ORMFieldsMacro.self, StateModelMacro.self, StateCommandMacro.self]
}
