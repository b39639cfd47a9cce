import Foundation

/// A path into a JSON document: object keys and array indexes, from the document's root.
///
/// ```swift
/// let theme: SQLJSONPath = ["display", "theme"]          // $.display.theme
/// let firstTag = SQLJSONPath("tags", 0)                  // $.tags[0]
/// ```
///
/// A key matches only an object's member and an index only an array's element, on both
/// backends (PostgreSQL's `#>` would also read `"0"` as an index into an array: Unity renders
/// a chain of `->` instead). Paths are written into the SQL as validated literals, so that an
/// expression index on a path serves the queries on it: see ``validate()`` for what a path
/// may hold.
public struct SQLJSONPath: Sendable, Hashable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// One step of a path.
    public enum Element: Sendable, Hashable {
        /// An object's member, by its key.
        case key(String)
        /// An array's element, by its index from 0.
        case index(Int)
    }

    /// The steps, from the root.
    public var elements: [Element]

    /// A path of the given steps.
    public init(_ elements: [Element]) { self.elements = elements }

    /// A path of keys (`String`) and indexes (`Int`): `SQLJSONPath("tags", 0)`.
    public init(_ steps: any SQLJSONPathStep...) { self.elements = steps.map(\.jsonPathElement) }

    /// A path written as an array literal of keys and indexes: `["tags", 0]`.
    public init(arrayLiteral steps: any SQLJSONPathStep...) { self.elements = steps.map(\.jsonPathElement) }

    /// The path in SQLite's JSON path syntax: `$."display"."theme"`, `$."tags"[0]`.
    public var description: String {
        var out = "$"
        for e in elements {
            switch e {
            case .key(let k): out += ".\"" + k + "\""
            case .index(let i): out += "[" + String(i) + "]"
            }
        }
        return out
    }

    /// The path with one more step.
    public func appending(_ element: Element) -> SQLJSONPath { SQLJSONPath(elements + [element]) }

    /// Checks that both backends can spell the path the same way; throws
    /// ``DatabaseError/misuse(_:)`` naming the step otherwise.
    ///
    /// An index must be 0 or more. A key must not be empty and must not hold `"`, `\`, `/`
    /// or a control character: SQLite's path syntax cannot quote a `"`, and SQLite (before
    /// 3.45) compares keys with the document's own spelling, in which a JSON encoder escapes
    /// those characters (Foundation's escapes `/` as `\/`), so such a key would be found on
    /// PostgreSQL and missed on SQLite.
    public func validate() throws {
        for e in elements {
            switch e {
            case .index(let i):
                guard i >= 0 else {
                    throw DatabaseError.misuse("the JSON path \(self) has the index \(i); an index counts from 0 at the start of the array")
                }
            case .key(let k):
                if k.isEmpty { throw DatabaseError.misuse("the JSON path \(self) has an empty key; name the member") }
                if let bad = k.unicodeScalars.first(where: { $0 == "\"" || $0 == "\\" || $0 == "/" || $0.value < 0x20 || $0.value == 0x7F }) {
                    throw DatabaseError.misuse(
                        "the JSON key \"\(k.debugDescription.dropFirst().dropLast())\" holds the character U+\(String(bad.value, radix: 16, uppercase: true)), which Unity cannot look up "
                            + "the same way on SQLite and PostgreSQL; keys may hold any character but \", \\, / and control characters")
                }
            }
        }
    }
}

/// A step of a ``SQLJSONPath``: a `String` is an object key, an `Int` an array index.
public protocol SQLJSONPathStep: Sendable {
    /// The step as a path element.
    var jsonPathElement: SQLJSONPath.Element { get }
}

extension String: SQLJSONPathStep {
    /// An object key.
    public var jsonPathElement: SQLJSONPath.Element { .key(self) }
}

extension Int: SQLJSONPathStep {
    /// An array index.
    public var jsonPathElement: SQLJSONPath.Element { .index(self) }
}

/// What a JSON extraction yields, and from which JSON values.
///
/// Every typed form yields SQL NULL unless the JSON value at the path has that JSON type, so
/// that a filter never fails on a document of another shape and both backends answer alike:
/// `"42"` (a JSON string) is not the number 42, `true` is not 1, and a missing member, a JSON
/// `null` and a SQL NULL document all yield NULL.
public enum SQLJSONValueType: Sendable, Hashable {
    /// Any scalar as text: a string's content, `true`/`false`, a number's JSON spelling
    /// (the engine's: PostgreSQL writes `1e2` as `100`, SQLite keeps `1e2`). Objects and arrays
    /// yield their JSON text, whose spacing and key order differ between the backends: compare
    /// them with containment, not as text.
    case text
    /// A JSON string's content.
    case string
    /// A JSON number, compared as a number (1.5 is not 1 or 2).
    case integer
    /// A JSON number as a double.
    case double
    /// A JSON number as a Swift `Decimal`: compared exactly, digits as written.
    case decimal
    /// A JSON `true` or `false`.
    case bool
}

/// An operation on a JSON document: see ``SQLExpression/json(_:)``.
public enum SQLJSONOperation: Sendable, Hashable {
    /// The value at `path` of `document`, as `type`.
    case extract(SQLExpression, SQLJSONPath, as: SQLJSONValueType)
    /// True when the value at `path` of `document` contains `value` (a bound JSON document), as
    /// PostgreSQL's `@>` means it: an object contains an object whose members it contains, an
    /// array contains an array whose elements each are contained in one of its own (and a
    /// scalar it holds), scalars are equal. NULL when the path is missing.
    case contains(SQLExpression, SQLJSONPath, value: SQLExpression)
    /// True when `path` leads to a value in `document`, a JSON `null` included; false when a
    /// step is missing (or meets a value of the other kind: a key on an array).
    case exists(SQLExpression, SQLJSONPath)
}

extension SQLExpression {
    /// The value of this JSON document at `path`, as text (see ``SQLJSONValueType/text``).
    ///
    /// ```swift
    /// SQLExpression.column("settings").jsonValue(at: ["theme"]).equals("dark")
    /// SQLExpression.column("settings").jsonValue(at: ["limits", "daily"], as: .integer).greaterThan(10)
    /// ```
    public func jsonValue(at path: SQLJSONPath, as type: SQLJSONValueType = .text) -> SQLExpression {
        let extracted = SQLExpression.json(.extract(self, path, as: type))
        return type == .decimal ? .decimal(extracted) : extracted
    }

    /// True when this JSON document contains `value` (encoded with Unity's JSON coders) at
    /// `path` (the root by default), as PostgreSQL's `@>` means it: `{"tags": ["a"]}` is
    /// contained in `{"tags": ["a", "b"], "x": 1}`.
    public func jsonContains(_ value: some Encodable, at path: SQLJSONPath = []) throws -> SQLExpression {
        let data: Data
        do { data = try JSONCoding.encoder().encode(value) } catch {
            throw DatabaseError.misuse("could not encode \(type(of: value)) as JSON for a containment test: \(error)")
        }
        return .json(.contains(self, path, value: .bind(.json(String(decoding: data, as: UTF8.self)))))
    }

    /// True when this JSON document contains the JSON text `json` at `path`.
    public func jsonContains(json: String, at path: SQLJSONPath = []) -> SQLExpression {
        .json(.contains(self, path, value: .bind(.json(json))))
    }

    /// True when `path` leads to a value (a JSON `null` included) in this JSON document.
    public func jsonHasValue(at path: SQLJSONPath) -> SQLExpression { .json(.exists(self, path)) }

    /// True when the object at `path` (the root by default) has the member `key`, whatever
    /// its value (a JSON `null` included).
    public func jsonHasKey(_ key: String, at path: SQLJSONPath = []) -> SQLExpression {
        .json(.exists(self, path.appending(.key(key))))
    }
}

/// An expression index on a value inside a JSON column, as a statement for a migration:
/// the index serves the filters ``SQLExpression/jsonValue(at:as:)`` builds on the same column,
/// path and type, on both backends.
///
/// ```swift
/// Migration("0002_theme_index", statements: [
///     SQLJSONIndex("users_theme", on: "users", column: "settings", path: ["theme"]).statement,
/// ])
/// ```
public struct SQLJSONIndex: Sendable, Hashable {
    /// The index's name.
    public var name: String
    /// The table.
    public var table: String
    /// The JSON column.
    public var column: String
    /// The path inside the documents.
    public var path: SQLJSONPath
    /// The type the filters extract (it is part of the indexed expression).
    public var type: SQLJSONValueType
    /// UNIQUE.
    public var unique: Bool

    /// An index on `column`'s value at `path`, as `type`.
    public init(_ name: String, on table: String, column: String, path: SQLJSONPath, as type: SQLJSONValueType = .text,
                unique: Bool = false) {
        self.name = name
        self.table = table
        self.column = column
        self.path = path
        self.type = type
        self.unique = unique
    }

    /// The CREATE INDEX statement.
    public var statement: SQLStatement {
        var index = SQLCreateIndex(name, on: table, columns: [], unique: unique, ifNotExists: true)
        index.expressions = [SQLExpression.column(column).jsonValue(at: path, as: type)]
        return .createIndex(index)
    }
}
