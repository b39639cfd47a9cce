import Foundation

/// Encodes `Encodable` values straight into column/value pairs: each coding key becomes a
/// column, with no JSON round trip and no reflection.
///
/// ``DatabaseValueConvertible`` properties become their own values; any other `Encodable`
/// property becomes a JSON document. A nil optional becomes NULL (Swift's synthesized
/// `encodeIfPresent` would otherwise leave the column out, and an update would keep the old
/// value).
public struct RowEncoder: Sendable {
    /// Coding keys that are not columns (for example `existsInDatabase`); they are skipped.
    /// A key is matched by its bytes, as columns are told apart.
    public var skippedKeys: Set<String> {
        didSet { skipped = SkippedKeys(skippedKeys) }
    }
    /// `skippedKeys`, ready to match: made once, not per encoded value.
    private var skipped: SkippedKeys

    /// Creates an encoder.
    public init(skippedKeys: Set<String> = []) {
        self.skippedKeys = skippedKeys
        self.skipped = SkippedKeys(skippedKeys)
    }

    /// The columns and values of `value`, in the order its `encode(to:)` writes them.
    public func encode<T: Encodable>(_ value: T) throws -> [(column: String, value: DatabaseValue)] {
        let columns = try encodeColumns(value)
        return Array(zip(columns.names, columns.values))
    }

    /// The column names of `value` and, in a second array, their values: what a statement
    /// takes, with no array of pairs to take apart.
    func encodeColumns<T: Encodable>(_ value: T) throws -> (names: [String], values: [DatabaseValue]) {
        let columns = try encodeColumns(value, expecting: nil)
        return (columns.names, columns.values)
    }

    /// The columns of `value`, encoded against `expected`, the names another value of its type
    /// encoded: while the columns come in that order no list of names is built, and when they
    /// all do, `names` is `expected` itself (the same storage) and `asExpected` is true.
    func encodeColumns<T: Encodable>(_ value: T, expecting expected: [String]?)
    throws -> (names: [String], values: [DatabaseValue], asExpected: Bool) {
        let encoder = _RowEncoder(skipped: skipped, expecting: expected ?? [])
        do {
            try value.encode(to: encoder)
        } catch let error as EncodingError {
            throw DatabaseError.misuse("could not encode \(T.self) as a row: \(error)")
        }
        if !encoder.diverged {
            if let expected, encoder.matched == expected.count { return (expected, encoder.columns.values, true) }
            return (Array(encoder.expected[..<encoder.matched]), encoder.columns.values, false)
        }
        return (encoder.columns.names, encoder.columns.values, false)
    }
}

/// The columns an encoder has written, in order. A value type held in one stored property
/// of ``_RowEncoder``, so that writing a column is one access to the class (one exclusivity
/// check) instead of one per field touched.
struct EncodedColumns {
    /// The names of the columns written so far, in order.
    var names: [String] = []
    /// Their values, one per name.
    var values: [DatabaseValue] = []
    /// Where each column is in `names`; built only for wide rows, where scanning `names` for a
    /// column written twice would cost more than hashing.
    var positions: [SQLTextKey: Int]?

    /// Above this many columns, `positions` takes over from scanning `names`.
    static let scanLimit = 16

    /// Whether two names have the same bytes. Most pairs of names differ in length, which
    /// settles them without looking at a byte (and without `String`'s Unicode comparison);
    /// names of one length are compared with `memcmp` (walking two `UTF8View`s element by
    /// element cost more than the rest of a column's encoding).
    @inline(__always)
    static func sameName(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && SQLTextKey.sameBytes(a, b)
    }

    /// Sets `column` (the last write of a column wins, in the place of its first write).
    /// Columns are told apart by their bytes, as the database names them: NFC and NFD
    /// spellings of one name are two columns.
    @inline(__always)
    mutating func set(_ column: String, _ value: DatabaseValue) {
        if positions != nil {
            if let i = positions?[SQLTextKey(column)] { values[i] = value; return }
        } else {
            for i in names.indices where Self.sameName(names[i], column) {
                values[i] = value
                return
            }
        }
        names.append(column)
        values.append(value)
        if positions != nil {
            positions?[SQLTextKey(column)] = names.count - 1
        } else if names.count > Self.scanLimit {
            var index = [SQLTextKey: Int](minimumCapacity: names.count * 2)
            for (i, name) in names.enumerated() where index[SQLTextKey(name)] == nil { index[SQLTextKey(name)] = i }
            positions = index
        }
    }
}

/// Coding keys that are not columns, matched by their bytes.
struct SkippedKeys: Sendable {
    /// A few keys: comparing bytes (mostly just lengths) is cheaper than hashing every column.
    private let list: [String]
    /// Many keys.
    private let set: Set<SQLTextKey>

    init(_ keys: Set<String>) {
        if keys.count <= 4 {
            list = Array(keys)
            set = []
        } else {
            list = []
            set = Set(keys.map(SQLTextKey.init))
        }
    }

    @inline(__always)
    func contains(_ column: String) -> Bool {
        if !list.isEmpty { return list.contains { EncodedColumns.sameName($0, column) } }
        return !set.isEmpty && set.contains(SQLTextKey(column))
    }
}

final class _RowEncoder: Encoder {
    /// The columns written so far. While the columns written match `expected`, only their
    /// values are kept here (`names` stays empty).
    var columns = EncodedColumns()
    let skipped: SkippedKeys
    /// The names another value of the type encoded, in order (empty when unknown); they hold
    /// no name twice.
    let expected: [String]
    /// How many columns, from the first, were written as `expected` names them.
    var matched = 0
    /// True once a column differed from `expected`: `columns.names` then lists every name.
    var diverged = false
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(skipped: SkippedKeys, expecting expected: [String] = []) {
        self.skipped = skipped
        self.expected = expected
        diverged = expected.isEmpty
        if diverged { columns.names.reserveCapacity(8) }
        columns.values.reserveCapacity(expected.isEmpty ? 8 : expected.count)
    }

    @inline(__always)
    func isSkipped(_ column: String) -> Bool {
        skipped.contains(column)
    }

    /// Sets `column` (the last write of a column wins, in the place of its first write).
    @inline(__always)
    func set(_ column: String, _ value: DatabaseValue) {
        if !diverged {
            // The next expected name: no earlier column can be this one (`expected` holds no
            // name twice), so there is nothing to search.
            if matched < expected.count, EncodedColumns.sameName(expected[matched], column) {
                columns.values.append(value)
                matched += 1
                return
            }
            diverged = true
            columns.names = Array(expected[..<matched])
        }
        columns.set(column, value)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowKeyedEncodingContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        FailingUnkeyedContainer()
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        FailingSingleValueContainer()
    }
}

struct RowKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: _RowEncoder
    var codingPath: [any CodingKey] { [] }

    @inline(__always)
    private func put(_ value: DatabaseValue, _ key: Key) {
        let name = key.stringValue
        if !encoder.isSkipped(name) {
            encoder.set(name, value)
        }
    }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(value.databaseValue, key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.text(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.integer(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.integer(Int64(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        guard let v = Int64(exactly: value) else {
            throw DatabaseError.misuse("column \(key.stringValue): \(value) does not fit in a 64-bit signed integer column")
        }
        put(.integer(v), key)
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        guard let v = Int64(exactly: value) else {
            throw DatabaseError.misuse("column \(key.stringValue): \(value) does not fit in a 64-bit signed integer column")
        }
        put(.integer(v), key)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        // Common value types first: a metatype comparison is far cheaper than the dynamic cast
        // below, and `unsafeBitCast` is the identity here (T is that very type). Compared as
        // `ObjectIdentifier`s: `==` on metatypes looks up `Any.Type?`'s metadata per call.
        let type = ObjectIdentifier(T.self)
        if type == ObjectIdentifier(Date.self) { put(.date(unsafeBitCast(value, to: Date.self)), key); return }
        if type == ObjectIdentifier(Data.self) { put(.blob(unsafeBitCast(value, to: Data.self)), key); return }
        if type == ObjectIdentifier(UUID.self) { put(.uuid(unsafeBitCast(value, to: UUID.self)), key); return }
        if type == ObjectIdentifier(Decimal.self) { put(.decimal(unsafeBitCast(value, to: Decimal.self)), key); return }
        if let json = value as? any DatabaseJSONConvertible {
            do {
                put(try json.encodedDatabaseValue(), key)
            } catch {
                throw DatabaseError.misuse("column \(key.stringValue): could not encode \(T.self) as JSON: \(error)")
            }
            return
        }
        if let convertible = value as? any DatabaseValueConvertible {
            put(convertible.databaseValue, key)
            return
        }
        // A raw-value enum (`enum Status: Int, Codable`) is stored as its raw value, as its
        // own Codable conformance would encode it, with no conformance of its own needed.
        if let raw = value as? any RawRepresentable, let convertible = raw.rawValue as? any DatabaseValueConvertible {
            put(convertible.databaseValue, key)
            return
        }
        let data: Data
        do {
            data = try JSONCoding.encoder().encode(value)
        } catch {
            throw DatabaseError.misuse("column \(key.stringValue): could not encode \(T.self) as JSON: \(error)")
        }
        put(.json(String(decoding: data, as: UTF8.self)), key)
    }

    // Nil optionals become NULL instead of being left out (see the type's comment).
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { if let v = value { try encode(v, forKey: key) } else { put(.null, key) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(FailingKeyedContainer<NestedKey>())
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { FailingUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { encoder }
    mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
}

private let nestedMessage = "a row encodes a keyed type; nested containers are not columns (give the property a Codable type, which is stored as JSON)"

private struct FailingKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws { throw DatabaseError.misuse(nestedMessage) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw DatabaseError.misuse(nestedMessage) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(FailingKeyedContainer<NestedKey>())
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { FailingUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { FailingEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { FailingEncoder() }
}

private struct FailingUnkeyedContainer: UnkeyedEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws { throw DatabaseError.misuse(nestedMessage) }
    mutating func encode<T: Encodable>(_ value: T) throws { throw DatabaseError.misuse(nestedMessage) }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(FailingKeyedContainer<NestedKey>())
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { FailingUnkeyedContainer() }
    mutating func superEncoder() -> any Encoder { FailingEncoder() }
}

private struct FailingSingleValueContainer: SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil() throws { throw DatabaseError.misuse(nestedMessage) }
    mutating func encode<T: Encodable>(_ value: T) throws { throw DatabaseError.misuse(nestedMessage) }
}

private struct FailingEncoder: Encoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> { KeyedEncodingContainer(FailingKeyedContainer<Key>()) }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { FailingUnkeyedContainer() }
    func singleValueContainer() -> any SingleValueEncodingContainer { FailingSingleValueContainer() }
}
