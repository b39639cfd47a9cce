import Foundation

// Row coding without `Codable`: a type lists its columns once, reads a row by column
// positions resolved once per result set, and writes its values straight into the values a
// statement binds. No keyed container, no dictionary, no existential per value.
//
// The `@RowCoded` macro (module `UnityRowCoding`) writes these conformances; they can be
// written by hand too (see ``RowDecodable`` and ``RowEncodable``).

/// A type that decodes itself from a ``Row`` by column positions.
///
/// ```swift
/// struct Point: RowDecodable {
///     var x: Int64
///     var label: String?
///
///     static let decodingColumns = ["x", "label"]
///
///     init(row: Row, columns: RowColumns) throws {
///         x = try columns.decode(0, from: row)              // the type is inferred,
///         label = try columns.decodeIfPresent(1, from: row, as: String.self)  // or given
///     }
/// }
///
/// var reader = RowReader<Point>()
/// try conn.forEachRow(statement) { row in points.append(try reader.decode(row)) }
/// ```
///
/// Position `k` passed to ``RowColumns`` means `decodingColumns[k]`; ``RowColumns`` turns it
/// into the column's index in the result set, found once for all the rows of a statement.
public protocol RowDecodable {
    /// The names of the columns ``init(row:columns:)`` reads, in the order of the positions
    /// it passes to ``RowColumns``. Lookup is exact first, then case-insensitive.
    static var decodingColumns: [String] { get }

    /// Decodes one row, reading column `k` of ``decodingColumns`` through `columns`.
    ///
    /// Both are borrowed: an initializer's arguments are otherwise passed owned, which cost
    /// five retains and releases per row. A conformance written without `borrowing` still
    /// satisfies the requirement (Swift copies the arguments for it).
    init(row: borrowing Row, columns: borrowing RowColumns) throws

    /// Decodes every row that `forEachRow` passes to its body, in order.
    ///
    /// Leave it to the default: it is a requirement so that its code is compiled for the
    /// conforming type itself. Code that finds the type at run time (``ModelDef`` asks whether
    /// a model is `RowDecodable`) would otherwise run a generic loop, which looked up the array
    /// type's metadata for every row it appended (a quarter of a fetch).
    static func decodeRows(_ forEachRow: (_ body: (Row) throws -> Void) throws -> Void) throws -> [Self]
}

extension RowDecodable {
    /// Every row, through a ``RowReader`` (columns resolved once per result set).
    @inlinable
    public static func decodeRows(_ forEachRow: (_ body: (Row) throws -> Void) throws -> Void) throws -> [Self] {
        var reader = RowReader<Self>()
        var result: [Self] = []
        try forEachRow { row in result.append(try reader.decode(row)) }
        return result
    }
}

/// A type that encodes itself into the values of a statement, one per column, with no
/// intermediate container.
///
/// ```swift
/// extension Point: RowEncodable {
///     static let encodingColumns = ["x", "label"]
///     func encodeRow(to values: inout [DatabaseValue]) throws {
///         values.append(try RowCoding.value(x))
///         values.append(try RowCoding.valueIfPresent(label))
///     }
/// }
/// ```
public protocol RowEncodable {
    /// The names of the columns ``encodeRow(to:)`` writes, in the order it appends them.
    static var encodingColumns: [String] { get }

    /// Appends one value per column of ``encodingColumns``, in that order.
    func encodeRow(to values: inout [DatabaseValue]) throws

    /// The value of one column by name (exact match), or nil when the type has no such column:
    /// by-name access without reflection (for ORMs, predicates, change tracking).
    func databaseValue(forColumn name: String) throws -> DatabaseValue?

    /// The column that stores the property at `keyPath`, or nil when it is not a column:
    /// key-path access without reflection (for predicates and sorts).
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String?
}

extension RowEncodable {
    /// By name, through ``encodeRow(to:)`` (a generated conformance answers with a `switch`).
    public func databaseValue(forColumn name: String) throws -> DatabaseValue? {
        guard let i = Self.encodingColumns.firstIndex(of: name) else { return nil }
        var values: [DatabaseValue] = []
        values.reserveCapacity(Self.encodingColumns.count)
        try encodeRow(to: &values)
        return i < values.count ? values[i] : nil
    }

    /// None unless the conformance says (the generated one does).
    public static func columnName(for keyPath: PartialKeyPath<Self>) -> String? { nil }

    /// The values of ``encodingColumns``, in order.
    public func encodedRowValues() throws -> [DatabaseValue] {
        var values: [DatabaseValue] = []
        values.reserveCapacity(Self.encodingColumns.count)
        try encodeRow(to: &values)
        guard values.count == Self.encodingColumns.count else {
            throw DatabaseError.misuse(
                "\(Self.self).encodeRow(to:) wrote \(values.count) values for the \(Self.encodingColumns.count) columns \(Self.encodingColumns)")
        }
        return values
    }
}

/// Both directions.
public typealias RowCodable = RowDecodable & RowEncodable

// MARK: - Column positions

/// The columns a ``RowDecodable`` type reads, resolved against one result set's
/// ``RowLayout``: built once per statement (``RowReader`` does it), then every row is read by
/// index, with no name lookup.
public struct RowColumns: Sendable {
    /// The result set's layout the positions were resolved in.
    public let layout: RowLayout
    /// The names asked for.
    public let names: [String]
    /// `indices[k]`: the index in the row of `names[k]`, or -1 when the result set has no
    /// such column.
    @usableFromInline let indices: [Int]

    /// Columns resolved in no result set, for a reader that has seen no row yet.
    @usableFromInline static let unresolved = RowColumns([], in: RowLayout(columnNames: []))

    /// Resolves `names` in `layout` (exact first, then case-insensitive).
    public init(_ names: [String], in layout: RowLayout) {
        self.layout = layout
        self.names = names
        self.indices = names.map { layout.index(of: $0) ?? -1 }
    }

    /// The index in the row of column `k` of the names, or nil when the row has no such column.
    @inlinable
    public func index(_ k: Int) -> Int? {
        let i = indices[k]
        return i >= 0 ? i : nil
    }

    /// The value of column `k`, or nil when the row has no such column.
    @inlinable
    public func value(_ k: Int, from row: Row) -> DatabaseValue? {
        let i = indices[k]
        guard i >= 0, i < row.values.count else { return nil }
        return row.values[i]
    }

    // MARK: Errors

    @usableFromInline
    func missing(_ k: Int) -> DatabaseError {
        .misuse("no column named \(names[k]) in the row; columns are \(layout.columnNames)")
    }

    @usableFromInline
    func conversion(_ k: Int, _ expected: String, _ value: DatabaseValue) -> DatabaseError {
        .typeConversion(ConversionFailure(column: names[k], expectedType: expected, actual: value.description))
    }

    @inlinable
    func convert<T: DatabaseValueConvertible>(_ type: T.Type, _ k: Int, _ value: DatabaseValue) throws -> T {
        if let v = T.fromDatabaseValue(value) { return v }
        throw conversion(k, String(describing: T.self), value)
    }

    @usableFromInline
    func convertJSON<T: Decodable>(_ type: T.Type, _ k: Int, _ value: DatabaseValue) throws -> T {
        try RowCoding.decodeJSON(T.self, from: value, column: names[k])
    }

    @usableFromInline
    func convertUnsigned<T: FixedWidthInteger & UnsignedInteger>(_ type: T.Type, _ k: Int, _ value: DatabaseValue) throws -> T {
        let v = try convert(Int64.self, k, value)
        guard let u = T(exactly: v) else { throw conversion(k, String(describing: T.self), value) }
        return u
    }

    // MARK: decode: the column must be there (a non-optional property without a default)

    /// Column `k` as `T`; throws when the row has no such column or the value does not
    /// convert (NULL included).
    @inlinable
    public func decode<T: DatabaseValueConvertible>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T {
        guard let value = value(k, from: row) else { throw missing(k) }
        return try convert(T.self, k, value)
    }

    /// Column `k` as `T` (a value type that is both convertible and `Decodable` reads as a
    /// value, never as JSON).
    @inlinable
    public func decode<T: DatabaseValueConvertible & Decodable>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T {
        guard let value = value(k, from: row) else { throw missing(k) }
        return try convert(T.self, k, value)
    }

    /// Column `k` as a `Decodable` value stored as a JSON document.
    @inlinable
    public func decode<T: Decodable>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T {
        guard let value = value(k, from: row) else { throw missing(k) }
        return try convertJSON(T.self, k, value)
    }

    /// Column `k` as `UInt64` (range-checked).
    @inlinable
    public func decode(_ k: Int, from row: Row, as type: UInt64.Type = UInt64.self) throws -> UInt64 {
        guard let value = value(k, from: row) else { throw missing(k) }
        return try convertUnsigned(UInt64.self, k, value)
    }

    /// Column `k` as `UInt` (range-checked).
    @inlinable
    public func decode(_ k: Int, from row: Row, as type: UInt.Type = UInt.self) throws -> UInt {
        guard let value = value(k, from: row) else { throw missing(k) }
        return try convertUnsigned(UInt.self, k, value)
    }

    // MARK: decodeIfPresent: an optional property (missing column or NULL is nil)

    /// Column `k` as `T`, nil when it is NULL or the row has no such column.
    @inlinable
    public func decodeIfPresent<T: DatabaseValueConvertible>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T? {
        guard let value = value(k, from: row), !value.isNull else { return nil }
        return try convert(T.self, k, value)
    }

    /// Column `k` as `T`, nil when it is NULL or missing.
    @inlinable
    public func decodeIfPresent<T: DatabaseValueConvertible & Decodable>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T? {
        guard let value = value(k, from: row), !value.isNull else { return nil }
        return try convert(T.self, k, value)
    }

    /// Column `k` as a JSON document, nil when it is NULL or missing.
    @inlinable
    public func decodeIfPresent<T: Decodable>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T? {
        guard let value = value(k, from: row), !value.isNull else { return nil }
        return try convertJSON(T.self, k, value)
    }

    /// Column `k` as `UInt64`, nil when it is NULL or missing.
    @inlinable
    public func decodeIfPresent(_ k: Int, from row: Row, as type: UInt64.Type = UInt64.self) throws -> UInt64? {
        guard let value = value(k, from: row), !value.isNull else { return nil }
        return try convertUnsigned(UInt64.self, k, value)
    }

    /// Column `k` as `UInt`, nil when it is NULL or missing.
    @inlinable
    public func decodeIfPresent(_ k: Int, from row: Row, as type: UInt.Type = UInt.self) throws -> UInt? {
        guard let value = value(k, from: row), !value.isNull else { return nil }
        return try convertUnsigned(UInt.self, k, value)
    }

    // MARK: decodeIfColumn: a property with a default (missing column keeps the default)

    /// Column `k` as `T`, nil only when the row has no such column (a NULL into a
    /// non-optional `T` still throws).
    @inlinable
    public func decodeIfColumn<T: DatabaseValueConvertible>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T? {
        guard let value = value(k, from: row) else { return nil }
        return try convert(T.self, k, value)
    }

    /// Column `k` as `T`, nil only when the row has no such column.
    @inlinable
    public func decodeIfColumn<T: DatabaseValueConvertible & Decodable>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T? {
        guard let value = value(k, from: row) else { return nil }
        return try convert(T.self, k, value)
    }

    /// Column `k` as a JSON document, nil only when the row has no such column.
    @inlinable
    public func decodeIfColumn<T: Decodable>(_ k: Int, from row: Row, as type: T.Type = T.self) throws -> T? {
        guard let value = value(k, from: row) else { return nil }
        return try convertJSON(T.self, k, value)
    }

    /// Column `k` as `UInt64`, nil only when the row has no such column.
    @inlinable
    public func decodeIfColumn(_ k: Int, from row: Row, as type: UInt64.Type = UInt64.self) throws -> UInt64? {
        guard let value = value(k, from: row) else { return nil }
        return try convertUnsigned(UInt64.self, k, value)
    }

    /// Column `k` as `UInt`, nil only when the row has no such column.
    @inlinable
    public func decodeIfColumn(_ k: Int, from row: Row, as type: UInt.Type = UInt.self) throws -> UInt? {
        guard let value = value(k, from: row) else { return nil }
        return try convertUnsigned(UInt.self, k, value)
    }
}

// MARK: - Reading rows

/// Decodes the rows of result sets into `T`, resolving `T`'s column positions once per
/// result set (a new ``RowLayout``), not per row. Use one per loop.
public struct RowReader<T: RowDecodable> {
    /// The columns resolved for the last result set (none yet: an empty layout no row has).
    /// Not an optional: unwrapping one copied the columns for every row.
    @usableFromInline var columns: RowColumns

    /// A reader that has seen no row yet.
    public init() { columns = RowColumns.unresolved }

    /// Decodes `row`.
    @inlinable
    public mutating func decode(_ row: Row) throws -> T {
        if columns.layout !== row.layout {
            columns = RowColumns(T.decodingColumns, in: row.layout)
        }
        return try T(row: row, columns: columns)
    }
}

extension Row {
    /// This row as a ``RowDecodable`` value (resolves the columns for this one row; for many
    /// rows use a ``RowReader``).
    public func decode<T: RowDecodable>(as type: T.Type = T.self) throws -> T {
        try T(row: self, columns: RowColumns(T.decodingColumns, in: layout))
    }
}

extension Connection {
    /// Every row of `statement` as a ``RowDecodable`` value, columns resolved once.
    public func fetchAll<T: RowDecodable>(_ type: T.Type, _ statement: SQLStatement) throws -> [T] {
        try T.decodeRows { body in try forEachRow(statement, body) }
    }
}

// MARK: - Values for statements

/// The value conversions that generated (or hand-written) row coding calls. Overloads pick,
/// at compile time, a property type's own database value when it is
/// ``DatabaseValueConvertible`` and a JSON document for any other `Codable` type — the
/// mapping `RowEncoder` and `RowDecoder` apply at run time.
public enum RowCoding {
    /// The database value of a convertible value.
    @inlinable
    public static func value<T: DatabaseValueConvertible>(_ value: T) throws -> DatabaseValue {
        value.databaseValue
    }

    /// The database value of a convertible value (never JSON, even when it is `Encodable`).
    @inlinable
    public static func value<T: DatabaseValueConvertible & Encodable>(_ value: T) throws -> DatabaseValue {
        value.databaseValue
    }

    /// Any other `Encodable` value: a JSON document.
    @inlinable
    public static func value<T: Encodable>(_ value: T) throws -> DatabaseValue {
        try encodeJSON(value)
    }

    /// A `UInt64`, which must fit in a signed 64-bit column.
    @inlinable
    public static func value(_ value: UInt64) throws -> DatabaseValue {
        guard let v = Int64(exactly: value) else { throw unsignedOverflow(value) }
        return .integer(v)
    }

    /// A `UInt`, which must fit in a signed 64-bit column.
    @inlinable
    public static func value(_ value: UInt) throws -> DatabaseValue {
        guard let v = Int64(exactly: value) else { throw unsignedOverflow(value) }
        return .integer(v)
    }

    /// NULL for nil, else the wrapped value's.
    @inlinable
    public static func valueIfPresent<T: DatabaseValueConvertible>(_ value: T?) throws -> DatabaseValue {
        guard let value else { return .null }
        return value.databaseValue
    }

    /// NULL for nil, else the wrapped value's.
    @inlinable
    public static func valueIfPresent<T: DatabaseValueConvertible & Encodable>(_ value: T?) throws -> DatabaseValue {
        guard let value else { return .null }
        return value.databaseValue
    }

    /// NULL for nil, else a JSON document.
    @inlinable
    public static func valueIfPresent<T: Encodable>(_ value: T?) throws -> DatabaseValue {
        guard let value else { return .null }
        return try encodeJSON(value)
    }

    /// NULL for nil, else the checked integer.
    @inlinable
    public static func valueIfPresent(_ value: UInt64?) throws -> DatabaseValue {
        guard let value else { return .null }
        return try self.value(value)
    }

    /// NULL for nil, else the checked integer.
    @inlinable
    public static func valueIfPresent(_ value: UInt?) throws -> DatabaseValue {
        guard let value else { return .null }
        return try self.value(value)
    }

    @usableFromInline
    static func unsignedOverflow<T: BinaryInteger>(_ value: T) -> DatabaseError {
        .misuse("\(value) does not fit in a 64-bit signed integer column")
    }

    /// A JSON document with Unity's JSON coders (sorted keys, microsecond dates).
    public static func encodeJSON<T: Encodable>(_ value: T) throws -> DatabaseValue {
        let data: Data
        do {
            data = try JSONCoding.encoder().encode(value)
        } catch {
            throw DatabaseError.misuse("could not encode \(T.self) as JSON: \(error)")
        }
        return .json(String(decoding: data, as: UTF8.self))
    }

    /// Decodes a JSON document from `.json`, `.text` or `.blob`; throws
    /// ``DatabaseError/typeConversion(_:)`` naming `column` otherwise.
    public static func decodeJSON<T: Decodable>(_ type: T.Type, from value: DatabaseValue, column: String) throws -> T {
        let data: Data
        switch value {
        case .json(let s), .text(let s): data = Data(s.utf8)
        case .blob(let d): data = d
        default:
            throw DatabaseError.typeConversion(ConversionFailure(column: column, expectedType: "\(T.self) (JSON)", actual: value.description))
        }
        do {
            return try JSONCoding.decoder().decode(T.self, from: data)
        } catch {
            throw DatabaseError.typeConversion(ConversionFailure(column: column, expectedType: "\(T.self) (JSON)", actual: value.description))
        }
    }
}
