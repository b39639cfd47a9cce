import Foundation

/// The column names of a result set, shared by every row of that result set.
///
/// Name lookup goes through a dictionary built once per statement, never per row. Lookup is
/// exact first, then case-insensitive, because PostgreSQL folds unquoted names to lower case
/// while SQLite keeps them as written.
public final class RowLayout: Sendable, Hashable {
    /// The column names, in result order.
    public let columnNames: [String]
    private let exact: [String: Int]
    private let folded: [String: Int]

    /// Creates a layout for the given column names. When two columns share a name, lookup
    /// by name finds the leftmost one, as SQL does.
    public init(columnNames: [String]) {
        self.columnNames = columnNames
        var exact = [String: Int](minimumCapacity: columnNames.count)
        var folded = [String: Int](minimumCapacity: columnNames.count)
        for (i, name) in columnNames.enumerated() {
            if exact[name] == nil { exact[name] = i }
            let lower = name.lowercased()
            if folded[lower] == nil { folded[lower] = i }
        }
        self.exact = exact
        self.folded = folded
    }

    /// The number of columns.
    @inlinable public var count: Int { columnNames.count }

    /// The index of the column called `name`, or nil.
    @inlinable
    public func index(of name: String) -> Int? {
        // The common case, inlined into the caller: the name as the result spells it, in a
        // result of up to 16 columns (a wider one hashes). Comparing UTF-8 lengths first skips
        // the other columns without a call into the string library (a record's reads would
        // otherwise spend more time failing comparisons than decoding). Names of another length
        // that are still canonically equal to a column's, and names in another case, go the
        // full way below.
        if columnNames.count <= 16 {
            let count = name.utf8.count
            for i in columnNames.indices where columnNames[i].utf8.count == count && columnNames[i] == name {
                return i
            }
        }
        return indexLookup(name)
    }

    @usableFromInline
    func indexLookup(_ name: String) -> Int? {
        // Small result sets are scanned: comparing a handful of short strings beats hashing,
        // and the case-insensitive pass allocates no lowered copy of `name` (a Codable record's
        // key that is not a column, such as a flag with a default, misses on every row).
        if columnNames.count <= 8 {
            for i in columnNames.indices where columnNames[i] == name { return i }
            for i in columnNames.indices where Self.equalIgnoringCase(columnNames[i], name) { return i }
            return nil
        }
        if let i = exact[name] { return i }
        return folded[name.lowercased()]
    }

    /// `a.lowercased() == b.lowercased()`, without allocating while both are ASCII.
    @usableFromInline
    static func equalIgnoringCase(_ a: String, _ b: String) -> Bool {
        var left = a.utf8.makeIterator()
        var right = b.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil):
                return true
            case let (x?, y?):
                // Beyond ASCII, lowering may change lengths: let Unicode decide.
                if x >= 0x80 || y >= 0x80 { return a.lowercased() == b.lowercased() }
                // ASCII letters fold by one bit; lowering ASCII keeps every byte in place, so
                // a difference here is a difference between the lowered strings.
                if x != y, asciiLower(x) != asciiLower(y) { return false }
            default:
                // One ended first; lowering never maps a character to nothing.
                return false
            }
        }
    }

    @inline(__always)
    static func asciiLower(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte | 0x20 : byte
    }

    /// Layouts are equal when their column names are.
    public static func == (lhs: RowLayout, rhs: RowLayout) -> Bool {
        lhs === rhs || lhs.columnNames == rhs.columnNames
    }

    /// Hashes the column names.
    public func hash(into hasher: inout Hasher) { hasher.combine(columnNames) }
}

/// One row of a result set: values by column index and by column name.
///
/// A row is a value: it can be kept after the statement that produced it has moved on.
public struct Row: Sendable, Hashable {
    /// The result set's columns.
    public let layout: RowLayout
    /// The values, in column order.
    public var values: [DatabaseValue]

    /// Creates a row from a layout and values of the same count.
    public init(layout: RowLayout, values: [DatabaseValue]) {
        self.layout = layout
        self.values = values
    }

    /// Creates a row from column name/value pairs, in order.
    public init(_ pairs: KeyValuePairs<String, DatabaseValue>) {
        self.layout = RowLayout(columnNames: pairs.map(\.key))
        self.values = pairs.map(\.value)
    }

    /// The number of columns.
    @inlinable public var count: Int { values.count }

    /// The column names, in order.
    public var columnNames: [String] { layout.columnNames }

    /// The value at `index`; `.null` when the index is out of range.
    @inlinable
    public subscript(index: Int) -> DatabaseValue {
        values.indices.contains(index) ? values[index] : .null
    }

    /// The value of the column called `name`, or nil when there is no such column.
    @inlinable
    public subscript(name: String) -> DatabaseValue? {
        guard let i = layout.index(of: name), i < values.count else { return nil }
        return values[i]
    }

    /// True when the row has a column called `name`.
    public func hasColumn(_ name: String) -> Bool { layout.index(of: name) != nil }

    /// The value at `index` as `T`; throws ``DatabaseError/typeConversion(_:)`` naming the
    /// column, the type and the value when it does not convert (NULL into a non-optional
    /// included), and ``DatabaseError/misuse(_:)`` for an index out of range.
    @inlinable
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, at index: Int) throws -> T {
        guard index >= 0, index < values.count else {
            throw DatabaseError.misuse("column index \(index) is out of range: the row has \(values.count) columns")
        }
        let value = values[index]
        if let v = T.fromDatabaseValue(value) { return v }
        throw conversionError(T.self, value: value, column: index < layout.count ? layout.columnNames[index] : "#\(index)")
    }

    /// The value of the column called `name` as `T`; throws when the column is missing or
    /// the value does not convert.
    @inlinable
    public func decode<T: DatabaseValueConvertible>(_ type: T.Type = T.self, column name: String) throws -> T {
        guard let i = layout.index(of: name) else {
            throw DatabaseError.misuse("no column named \(name) in this row; columns are \(layout.columnNames)")
        }
        return try decode(T.self, at: i)
    }

    /// The value of the column called `name` as `T`, or nil when the column is missing or NULL.
    /// A value that is present but does not convert still throws.
    @inlinable
    public func decodeIfPresent<T: DatabaseValueConvertible>(_ type: T.Type = T.self, column name: String) throws -> T? {
        guard let i = layout.index(of: name) else { return nil }
        let value = values[i]
        if case .null = value { return nil }
        return try decode(T.self, at: i)
    }

    @usableFromInline
    func conversionError<T>(_ type: T.Type, value: DatabaseValue, column: String) -> DatabaseError {
        .typeConversion(ConversionFailure(column: column, expectedType: String(describing: T.self), actual: value.description))
    }

    /// Column name/value pairs, in order.
    public var pairs: [(String, DatabaseValue)] {
        Array(zip(layout.columnNames, values))
    }
}

extension Row: CustomStringConvertible {
    /// `[name: value, …]`.
    public var description: String {
        "[" + pairs.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "]"
    }
}
