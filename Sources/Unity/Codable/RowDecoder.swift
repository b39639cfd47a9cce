import Foundation

/// Decodes `Decodable` values straight from a ``Row``: each coding key is a column, with no
/// JSON round trip and no reflection.
///
/// A property whose type is ``DatabaseValueConvertible`` (numbers, strings, `Date`, `UUID`,
/// `Decimal`, `Data`, raw-value enums, …) reads its column directly; any other `Decodable`
/// property is read as a JSON document from its column. A value that does not convert throws
/// ``DatabaseError/typeConversion(_:)`` naming the column.
public struct RowDecoder: Sendable {
    /// Values used for keys that have no column in the row (for example a flag such as
    /// `existsInDatabase` that a record computes rather than stores).
    public var defaultValues: [String: DatabaseValue]

    /// Creates a decoder.
    public init(defaultValues: [String: DatabaseValue] = [:]) {
        self.defaultValues = defaultValues
    }

    /// Decodes a value of type `T` from `row`.
    public func decode<T: Decodable>(_ type: T.Type = T.self, from row: Row) throws -> T {
        let decoder = _RowDecoder(RowDecodingState(row: row, defaults: defaultValues), cachesContainer: false)
        do {
            return try T(from: decoder)
        } catch let error as DecodingError {
            throw DatabaseError.misuse("could not decode \(T.self) from row \(row): \(error)")
        }
    }

    /// A decoder for the rows of one result set, one after another (a fetch loop, a cursor):
    /// faster than ``decode(_:from:)`` per row, because what it learns about the columns and
    /// the decoding machinery it builds are kept from one row to the next.
    public func rowsDecoder<T: Decodable>(for type: T.Type = T.self) -> RowsDecoder<T> {
        RowsDecoder(defaults: defaultValues)
    }
}

/// Decodes the rows of a result set one after another into `T`, reusing its state between
/// rows; made by ``RowDecoder/rowsDecoder(for:)``. Use one per loop, on one thread.
///
/// A type whose `init(from:)` keeps its decoding container after it returns (none of the
/// synthesized ones do) must use ``RowDecoder/decode(_:from:)`` instead: the decoder lets go
/// of each row once decoded, so the kept container throws (no column) from then on.
public final class RowsDecoder<T: Decodable> {
    private let defaults: [String: DatabaseValue]
    // Unchecked for exclusive access: one loop, on one thread, uses a decoder (see above).
    @exclusivity(unchecked) private var state: RowDecodingState?
    @exclusivity(unchecked) private var decoder: _RowDecoder?

    init(defaults: [String: DatabaseValue]) {
        self.defaults = defaults
    }

    /// Decodes `row` into a `T`. Throws as ``RowDecoder/decode(_:from:)`` does.
    public func decode(_ row: Row) throws -> T {
        let state: RowDecodingState
        let decoder: _RowDecoder
        if let current = self.state, isKnownUniquelyReferenced(&self.decoder) {
            // Nothing kept the previous row's decoder: reuse it.
            state = current
            decoder = self.decoder.unsafelyUnwrapped
            state.reset(row)
        } else {
            // First row, or a decoded value kept its decoder (for example through
            // `superDecoder()`): leave that one alone and start afresh.
            if let old = self.state { old.dropCachedContainer() }
            self.decoder?.cachesContainer = false
            state = RowDecodingState(row: row, defaults: defaults)
            decoder = _RowDecoder(state, cachesContainer: true)
            self.state = state
            self.decoder = decoder
        }
        // Let go of the row's values once decoded: a cursor writes its next row over this
        // one's buffer in place only when nothing else holds it (else it copies every row).
        defer { state.releaseValues() }
        do {
            return try T(from: decoder)
        } catch let error as DecodingError {
            throw DatabaseError.misuse("could not decode \(T.self) from row \(row): \(error)")
        }
    }

    deinit {
        // The cached container refers back to the state: break the cycle.
        state?.dropCachedContainer()
    }
}

/// What decoding one row needs, kept between the rows of a ``RowsDecoder``.
///
/// Its fields are unchecked for exclusive access: a state belongs to one decoder, used on one
/// thread at a time (as ``RowsDecoder`` requires), and the checks were a thread-local lookup
/// on every key of every row.
final class RowDecodingState {
    @exclusivity(unchecked) private(set) var row: Row
    let defaults: [String: DatabaseValue]
    /// The column the previous key lookup found, or -1. A synthesized `init(from:)` asks for
    /// its keys in declaration order, and a SELECT usually lists the columns in that order, so
    /// the next key is most often in the next column; `decodeIfPresent` also asks for the same
    /// key two or three times in a row. Checking those two columns first turns the per-key
    /// name lookup into one string comparison.
    @exclusivity(unchecked) private var lastIndex = -1
    /// Names known to have no column in `row.layout` (a key decoded from ``defaults``), with
    /// their default value, so that the next rows skip the full lookup and the hashing.
    @exclusivity(unchecked) private var missingNames: [(name: String, defaultValue: DatabaseValue?)] = []
    /// The keyed container of the previous row, reused while the key type stays the same.
    @exclusivity(unchecked) private var cachedContainer: AnyObject?
    @exclusivity(unchecked) private var cachedKeyType: ObjectIdentifier?

    init(row: Row, defaults: [String: DatabaseValue]) {
        self.row = row
        self.defaults = defaults
    }

    /// Moves on to the next row.
    @inline(__always)
    func reset(_ next: Row) {
        if next.layout !== row.layout { missingNames.removeAll() }
        row = next
        lastIndex = -1
    }

    /// Drops the reference to the current row's values (the layout stays, for ``reset(_:)``).
    @inline(__always)
    func releaseValues() {
        row.values = []
    }

    /// Whether the row has fewer values than column names: let go of by ``releaseValues()``.
    @inline(__always)
    var isReleased: Bool { row.values.count < row.layout.columnNames.count }

    /// The index of the column called `name`, or nil.
    @inline(__always)
    func columnIndex(of name: String) -> Int? {
        // A released row (a container kept past its row, see ``RowsDecoder``): nothing is
        // found, and nothing is learned for the rows to come. Past this, every column name
        // has a value.
        if isReleased { return nil }
        let names = row.layout.columnNames
        if lastIndex >= 0 {
            if names[lastIndex] == name { return lastIndex }
            let next = lastIndex + 1
            if next < names.count, names[next] == name {
                lastIndex = next
                return next
            }
        } else if let first = names.first, first == name {
            lastIndex = 0
            return 0
        }
        if !missingNames.isEmpty, missingNames.contains(where: { $0.name == name }) { return nil }
        guard let i = row.layout.index(of: name) else {
            missingNames.append((name, defaults[name]))
            return nil
        }
        lastIndex = i
        return i
    }

    /// The keyed container for `Key`: the previous row's when the key type is the same.
    func container<Key: CodingKey>(keyedBy type: Key.Type, cached: Bool) -> KeyedDecodingContainer<Key> {
        guard cached else { return KeyedDecodingContainer(RowKeyedDecodingContainer<Key>(state: self)) }
        if let holder = cachedContainer, cachedKeyType == ObjectIdentifier(Key.self) {
            // Checked just above: the holder was made for this very key type. Reached through
            // an unmanaged reference and a method of the holder, which finds its own type in
            // the instance: a downcast or a field read here asked the runtime for
            // `KeyedContainerHolder<Key>`'s metadata on every row.
            return Unmanaged<KeyedContainerHolder<Key>>.fromOpaque(Unmanaged.passUnretained(holder).toOpaque())
                .takeUnretainedValue().keyedContainer()
        }
        let container = KeyedDecodingContainer(RowKeyedDecodingContainer<Key>(state: self))
        cachedContainer = KeyedContainerHolder(container)
        cachedKeyType = ObjectIdentifier(Key.self)
        return container
    }

    /// The default value for a key that has no column, or nil.
    @inline(__always)
    func defaultValue(for name: String) -> DatabaseValue? {
        if defaults.isEmpty { return nil }
        for missing in missingNames where missing.name == name { return missing.defaultValue }
        return defaults[name]
    }

    func dropCachedContainer() {
        cachedContainer = nil
        cachedKeyType = nil
    }
}

/// Keeps a keyed container between rows.
final class KeyedContainerHolder<Key: CodingKey> {
    let container: KeyedDecodingContainer<Key>
    init(_ container: KeyedDecodingContainer<Key>) { self.container = container }

    /// The container (see ``RowDecodingState/container(keyedBy:cached:)`` for why a method).
    @inline(never)
    func keyedContainer() -> KeyedDecodingContainer<Key> { container }
}

final class _RowDecoder: Decoder {
    let state: RowDecodingState
    var cachesContainer: Bool
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ state: RowDecodingState, cachesContainer: Bool) {
        self.state = state
        self.cachesContainer = cachesContainer
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        state.container(keyedBy: Key.self, cached: cachesContainer)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DatabaseError.misuse("a row decodes into a keyed type (a struct or class with coding keys), not an array")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DatabaseError.misuse("a row decodes into a keyed type (a struct or class with coding keys), not a single value")
    }
}

struct RowKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: RowDecodingState
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { state.row.columnNames.compactMap { Key(stringValue: $0) } }

    @inline(__always)
    private func value(for key: Key) throws -> (DatabaseValue, String) {
        let name = key.stringValue
        if let i = state.columnIndex(of: name) {
            return (state.row.values[i], name)
        }
        if let d = state.defaultValue(for: name) { return (d, name) }
        if state.isReleased {
            throw DatabaseError.misuse("the row of this container was decoded already: a type decoded by a RowsDecoder must not keep its container")
        }
        throw DatabaseError.misuse("no column named \(name) in the row; columns are \(state.row.columnNames)")
    }

    @inline(__always)
    private func convert<T: DatabaseValueConvertible>(_ type: T.Type, _ key: Key) throws -> T {
        let (v, name) = try value(for: key)
        if let t = T.fromDatabaseValue(v) { return t }
        throw DatabaseError.typeConversion(ConversionFailure(column: name, expectedType: String(describing: T.self), actual: v.description))
    }

    /// The value of `key`, or nil when it is NULL or the row has no such column (as the
    /// generic `decodeIfPresent` does).
    @inline(__always)
    private func convertIfPresent<T: DatabaseValueConvertible>(_ type: T.Type, _ key: Key) throws -> T? {
        let name = key.stringValue
        let v: DatabaseValue
        if let i = state.columnIndex(of: name) {
            v = state.row.values[i]
        } else if let d = state.defaultValue(for: name) {
            v = d
        } else {
            return nil
        }
        if v.isNull { return nil }
        if let t = T.fromDatabaseValue(v) { return t }
        throw DatabaseError.typeConversion(ConversionFailure(column: name, expectedType: String(describing: T.self), actual: v.description))
    }

    func contains(_ key: Key) -> Bool {
        state.columnIndex(of: key.stringValue) != nil || state.defaultValue(for: key.stringValue) != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let i = state.columnIndex(of: key.stringValue) else {
            return state.defaultValue(for: key.stringValue)?.isNull ?? true
        }
        return state.row.values[i].isNull
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try convert(Bool.self, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try convert(String.self, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try convert(Double.self, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try convert(Float.self, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try convert(Int.self, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try convert(Int8.self, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try convert(Int16.self, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try convert(Int32.self, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try convert(Int64.self, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try convert(UInt8.self, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try convert(UInt16.self, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try convert(UInt32.self, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        let v = try convert(Int64.self, key)
        guard let u = UInt(exactly: v) else {
            throw DatabaseError.typeConversion(ConversionFailure(column: key.stringValue, expectedType: "UInt", actual: String(v)))
        }
        return u
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        let v = try convert(Int64.self, key)
        guard let u = UInt64(exactly: v) else {
            throw DatabaseError.typeConversion(ConversionFailure(column: key.stringValue, expectedType: "UInt64", actual: String(v)))
        }
        return u
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        // Common value types first: a metatype comparison is far cheaper than a
        // conformance lookup, and these are the columns most records have.
        // `unsafeBitCast` is the identity here (T is that very type) and, unlike `as? T`, costs
        // no dynamic cast. The metatypes are compared as `ObjectIdentifier`s: `==` on
        // metatypes takes `Any.Type?`, whose metadata the runtime looks up on every call.
        let type = ObjectIdentifier(T.self)
        if type == ObjectIdentifier(Date.self) { return unsafeBitCast(try convert(Date.self, key), to: T.self) }
        if type == ObjectIdentifier(UUID.self) { return unsafeBitCast(try convert(UUID.self, key), to: T.self) }
        if type == ObjectIdentifier(Data.self) { return unsafeBitCast(try convert(Data.self, key), to: T.self) }
        if type == ObjectIdentifier(Decimal.self) { return unsafeBitCast(try convert(Decimal.self, key), to: T.self) }
        return try decodeOther(T.self, forKey: key)
    }

    /// ``decode(_:forKey:)`` for the other types. A function of its own, so that the common
    /// types above never pay for what this one needs on entry (the metadata of `T?`, which
    /// the runtime looks up per call).
    @inline(never)
    private func decodeOther<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if let convertible = T.self as? any DatabaseValueConvertible.Type,
           let v = try decodeConvertible(convertible, key) as? T {
            return v
        }
        // A raw-value enum declared the usual way (`enum Status: Int, Codable`) is its raw
        // value, with no conformance of its own needed.
        if let rawType = T.self as? any RawRepresentable.Type,
           let v = try decodeRawValue(rawType, key) as? T {
            return v
        }
        // Any other Decodable is a JSON document in its column.
        let (v, name) = try value(for: key)
        let data: Data
        switch v {
        case .json(let s), .text(let s): data = Data(s.utf8)
        case .blob(let d): data = d
        default:
            throw DatabaseError.typeConversion(ConversionFailure(column: name, expectedType: "\(T.self) (JSON)", actual: v.description))
        }
        do {
            return try JSONCoding.decoder().decode(T.self, from: data)
        } catch {
            throw DatabaseError.typeConversion(ConversionFailure(column: name, expectedType: "\(T.self) (JSON)", actual: v.description))
        }
    }

    private func decodeConvertible<C: DatabaseValueConvertible>(_ type: C.Type, _ key: Key) throws -> C {
        try convert(C.self, key)
    }

    /// The `R` whose raw value is in the column; nil when `R`'s raw value is not a database
    /// value (then it is read as JSON). A raw value with no case throws, naming the column.
    private func decodeRawValue<R: RawRepresentable>(_ type: R.Type, _ key: Key) throws -> R? {
        guard let rawType = R.RawValue.self as? any DatabaseValueConvertible.Type,
              let raw = try decodeConvertible(rawType, key) as? R.RawValue else { return nil }
        if let value = R(rawValue: raw) { return value }
        let (v, name) = try value(for: key)
        throw DatabaseError.typeConversion(ConversionFailure(
            column: name, expectedType: "\(R.self) (no case has the raw value \(raw))", actual: v.description))
    }

    // One lookup each instead of the three of the default implementations (contains,
    // decodeNil, decode).
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try convertIfPresent(Bool.self, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try convertIfPresent(String.self, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try convertIfPresent(Double.self, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try convertIfPresent(Float.self, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try convertIfPresent(Int.self, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try convertIfPresent(Int8.self, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try convertIfPresent(Int16.self, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try convertIfPresent(Int32.self, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try convertIfPresent(Int64.self, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try convertIfPresent(UInt8.self, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try convertIfPresent(UInt16.self, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try convertIfPresent(UInt32.self, key) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        if try decodeNil(forKey: key) { return nil }
        return try decode(T.self, forKey: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw DatabaseError.misuse("column \(key.stringValue): nested containers are not columns; give the property a Codable type, which is stored as JSON")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DatabaseError.misuse("column \(key.stringValue): nested containers are not columns; give the property a Codable type, which is stored as JSON")
    }

    // A decoder of its own (over the same row): one kept by the value being decoded must not
    // follow a ``RowsDecoder`` on to the next rows.
    func superDecoder() throws -> any Decoder {
        _RowDecoder(RowDecodingState(row: state.row, defaults: state.defaults), cachesContainer: false)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder() }
}
