import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing
import UnityMacros

private let macros: [String: MacroSpec] = [
    "RowCoded": MacroSpec(type: RowCodedMacro.self, conformances: ["RowDecodable", "RowEncodable"]),
]

/// Checks one expansion, reporting a mismatch as a Swift Testing issue.
private func expect(_ source: String, expands expanded: String, diagnostics: [DiagnosticSpec] = [],
                    sourceLocation: Testing.SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expanded, diagnostics: diagnostics, macroSpecs: macros) { failure in
        Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
    }
}

@Suite("@RowCoded expansions")
struct RowCodedMacroExpansionTests {
    /// A public ModelDef with custom CodingKeys: renamed column, optional, a JSON value, a
    /// default, and existsInDatabase (read with `true` when missing, never written).
    @Test func modelDefWithCodingKeys() {
        expect("""
            @RowCoded
            public struct Thing: ModelDef {
                enum CodingKeys: String, CodingKey {
                    case tid, name = "thing_name", meta, count, existsInDatabase
                }
                static let tableName = "Thing"
                var tid: String
                var name: String?
                var meta: Meta
                var count: Int = 0
                var existsInDatabase = false
                var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
            }
            """, expands: """
            public struct Thing: ModelDef {
                enum CodingKeys: String, CodingKey {
                    case tid, name = "thing_name", meta, count, existsInDatabase
                }
                static let tableName = "Thing"
                var tid: String
                var name: String?
                var meta: Meta
                var count: Int = 0
                var existsInDatabase = false
                var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
            }

            extension Thing: Unity.RowDecodable, Unity.RowEncodable {
                public static let decodingColumns: [String] = ["tid", "thing_name", "meta", "count", "existsInDatabase"]
                public static let encodingColumns: [String] = ["tid", "thing_name", "meta", "count"]
                public init(row: borrowing Unity.Row, columns: borrowing Unity.RowColumns) throws {
                    self.tid = try columns.decode(0, from: row)
                    self.name = try columns.decodeIfPresent(1, from: row)
                    self.meta = try columns.decode(2, from: row)
                    if let value = try columns.decodeIfColumn(3, from: row, as: type(of: self.count)) {
                        self.count = value
                    }
                    self.existsInDatabase = try columns.decodeIfColumn(4, from: row) ?? true
                }
                public func encodeRow(to values: inout [Unity.DatabaseValue]) throws {
                    values.append(try Unity.RowCoding.value(self.tid))
                    values.append(try Unity.RowCoding.valueIfPresent(self.name))
                    values.append(try Unity.RowCoding.value(self.meta))
                    values.append(try Unity.RowCoding.value(self.count))
                }
                public func databaseValue(forColumn name: String) throws -> Unity.DatabaseValue? {
                    switch name {
                    case "tid":
                        return try Unity.RowCoding.value(self.tid)
                    case "thing_name":
                        return try Unity.RowCoding.valueIfPresent(self.name)
                    case "meta":
                        return try Unity.RowCoding.value(self.meta)
                    case "count":
                        return try Unity.RowCoding.value(self.count)
                    default:
                        return nil
                    }
                }
                public static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
                    if keyPath == \\Self.tid {
                        return "tid"
                    }
                    if keyPath == \\Self.name {
                        return "thing_name"
                    }
                    if keyPath == \\Self.meta {
                        return "meta"
                    }
                    if keyPath == \\Self.count {
                        return "count"
                    }
                    if keyPath == \\Self.existsInDatabase {
                        return "existsInDatabase"
                    }
                    return nil
                }
            }
            """)
    }

    /// Without CodingKeys every stored property is a column; static, computed, lazy and
    /// initialized `let` properties are not; `Optional<T>` and `T!` are optionals; an optional
    /// with a default keeps it when the column is missing; a property without a written type is read by inference.
    @Test func storedPropertiesWithoutCodingKeys() {
        expect("""
            @RowCoded
            struct Gadget {
                static var counter = 0
                let kind = "gadget"
                var id: Int64
                var note: Optional<String>
                var tag: String! = "x"
                var flag = true
                var ratio: Double { 1 }
                lazy var cache: [Int] = []
                var watched: Int = 1 { didSet {} }
            }
            """, expands: """
            struct Gadget {
                static var counter = 0
                let kind = "gadget"
                var id: Int64
                var note: Optional<String>
                var tag: String! = "x"
                var flag = true
                var ratio: Double { 1 }
                lazy var cache: [Int] = []
                var watched: Int = 1 { didSet {} }
            }

            extension Gadget: Unity.RowDecodable, Unity.RowEncodable {
                static let decodingColumns: [String] = ["id", "note", "tag", "flag", "watched"]
                static let encodingColumns: [String] = ["id", "note", "tag", "flag", "watched"]
                init(row: borrowing Unity.Row, columns: borrowing Unity.RowColumns) throws {
                    self.id = try columns.decode(0, from: row)
                    self.note = try columns.decodeIfPresent(1, from: row)
                    if columns.index(2) != nil {
                        self.tag = try columns.decodeIfPresent(2, from: row)
                    }
                    if let value = try columns.decodeIfColumn(3, from: row, as: type(of: self.flag)) {
                        self.flag = value
                    }
                    if let value = try columns.decodeIfColumn(4, from: row, as: type(of: self.watched)) {
                        self.watched = value
                    }
                }
                func encodeRow(to values: inout [Unity.DatabaseValue]) throws {
                    values.append(try Unity.RowCoding.value(self.id))
                    values.append(try Unity.RowCoding.valueIfPresent(self.note))
                    values.append(try Unity.RowCoding.valueIfPresent(self.tag))
                    values.append(try Unity.RowCoding.value(self.flag))
                    values.append(try Unity.RowCoding.value(self.watched))
                }
                func databaseValue(forColumn name: String) throws -> Unity.DatabaseValue? {
                    switch name {
                    case "id":
                        return try Unity.RowCoding.value(self.id)
                    case "note":
                        return try Unity.RowCoding.valueIfPresent(self.note)
                    case "tag":
                        return try Unity.RowCoding.valueIfPresent(self.tag)
                    case "flag":
                        return try Unity.RowCoding.value(self.flag)
                    case "watched":
                        return try Unity.RowCoding.value(self.watched)
                    default:
                        return nil
                    }
                }
                static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
                    if keyPath == \\Self.id {
                        return "id"
                    }
                    if keyPath == \\Self.note {
                        return "note"
                    }
                    if keyPath == \\Self.tag {
                        return "tag"
                    }
                    if keyPath == \\Self.flag {
                        return "flag"
                    }
                    if keyPath == \\Self.watched {
                        return "watched"
                    }
                    return nil
                }
            }
            """)
    }

    /// A class is an error that says what to do; nothing is generated.
    @Test func classesAreDiagnosed() {
        expect("""
            @RowCoded
            final class Box {
                var id: Int64 = 0
            }
            """, expands: """
            final class Box {
                var id: Int64 = 0
            }
            """, diagnostics: [
                DiagnosticSpec(
                    message: "@RowCoded applies to a struct (a class cannot gain a designated initializer in an extension); write RowDecodable and RowEncodable by hand for other types",
                    line: 1, column: 1),
            ])
    }
}
