import Foundation

/// A value as it travels between Swift and a database: a bind parameter on the way in, a
/// column value on the way out.
///
/// The cases are semantic rather than storage classes, so that a driver can bind each value
/// with the right native type (PostgreSQL needs to know a `UUID` from a `String`), while
/// SQLite stores them in its five storage classes according to the value mapping of
/// DESIGN.md (a `Date` becomes TEXT, a `UUID` a 16-byte BLOB, a `Decimal` TEXT, …).
/// Values read back from SQLite arrive as `.integer`, `.double`, `.text`, `.blob` or `.null`;
/// ``DatabaseValueConvertible`` conversions accept both forms.
public enum DatabaseValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double-precision floating point number (NaN and ±infinity included).
    case double(Double)
    /// A Unicode string.
    case text(String)
    /// Raw bytes.
    case blob(Data)
    /// A boolean: BOOLEAN on PostgreSQL, INTEGER 0/1 on SQLite.
    case bool(Bool)
    /// A point in time: TIMESTAMPTZ on PostgreSQL, UTC TEXT `YYYY-MM-DD HH:MM:SS.ffffff` on SQLite.
    case date(Date)
    /// A UUID: UUID on PostgreSQL, a 16-byte BLOB on SQLite.
    case uuid(UUID)
    /// An exact decimal number: NUMERIC on PostgreSQL, TEXT on SQLite.
    case decimal(Decimal)
    /// A JSON document, as its UTF-8 text: JSONB on PostgreSQL, TEXT on SQLite.
    case json(String)

    /// True for `.null`.
    @inlinable
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The name of this value's kind, for error messages.
    public var kindName: String {
        switch self {
        case .null: return "NULL"
        case .integer: return "integer"
        case .double: return "double"
        case .text: return "text"
        case .blob: return "blob"
        case .bool: return "boolean"
        case .date: return "date"
        case .uuid: return "uuid"
        case .decimal: return "decimal"
        case .json: return "json"
        }
    }
}

extension DatabaseValue: CustomStringConvertible {
    /// A short, human readable rendering used in error messages and logs. Long text and blobs
    /// are abbreviated so that an error never carries megabytes of data.
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let v): return String(v)
        case .double(let v): return String(v)
        case .text(let s): return "'" + DatabaseValue.abbreviate(s) + "'"
        case .blob(let d): return "<\(d.count) bytes>"
        case .bool(let b): return b ? "true" : "false"
        case .date(let d): return "date(" + DateText.format(d) + ")"
        case .uuid(let u): return "uuid(" + u.uuidString.lowercased() + ")"
        case .decimal(let d): return "decimal(" + d.description + ")"
        case .json(let s): return "json(" + DatabaseValue.abbreviate(s) + ")"
        }
    }

    static func abbreviate(_ s: String) -> String {
        if s.utf8.count <= 64 { return s }
        return String(s.prefix(60)) + "…"
    }
}

extension DatabaseValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    /// `nil` is SQL NULL.
    public init(nilLiteral: ()) { self = .null }
    /// An integer literal is an `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A float literal is a `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal is `.text`.
    public init(stringLiteral value: String) { self = .text(value) }
    /// A boolean literal is `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
