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
        let decoder = _RowDecoder(row: row, defaults: defaultValues)
        do {
            return try T(from: decoder)
        } catch let error as DecodingError {
            throw DatabaseError.misuse("could not decode \(T.self) from row \(row): \(error)")
        }
    }
}

final class _RowDecoder: Decoder {
    let row: Row
    let defaults: [String: DatabaseValue]
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(row: Row, defaults: [String: DatabaseValue]) {
        self.row = row
        self.defaults = defaults
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowKeyedDecodingContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DatabaseError.misuse("a row decodes into a keyed type (a struct or class with coding keys), not an array")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        throw DatabaseError.misuse("a row decodes into a keyed type (a struct or class with coding keys), not a single value")
    }
}

struct RowKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: _RowDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { decoder.row.columnNames.compactMap { Key(stringValue: $0) } }

    @inline(__always)
    private func value(for key: Key) throws -> (DatabaseValue, String) {
        let name = key.stringValue
        if let i = decoder.row.layout.index(of: name) {
            return (decoder.row.values[i], name)
        }
        if let d = decoder.defaults[name] { return (d, name) }
        throw DatabaseError.misuse("no column named \(name) in the row; columns are \(decoder.row.columnNames)")
    }

    @inline(__always)
    private func convert<T: DatabaseValueConvertible>(_ type: T.Type, _ key: Key) throws -> T {
        let (v, name) = try value(for: key)
        if let t = T.fromDatabaseValue(v) { return t }
        throw DatabaseError.typeConversion(ConversionFailure(column: name, expectedType: String(describing: T.self), actual: v.description))
    }

    func contains(_ key: Key) -> Bool {
        decoder.row.layout.index(of: key.stringValue) != nil || decoder.defaults[key.stringValue] != nil
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let i = decoder.row.layout.index(of: key.stringValue) else {
            return decoder.defaults[key.stringValue]?.isNull ?? true
        }
        return decoder.row.values[i].isNull
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
        if T.self == Date.self, let v = try convert(Date.self, key) as? T { return v }
        if T.self == UUID.self, let v = try convert(UUID.self, key) as? T { return v }
        if T.self == Data.self, let v = try convert(Data.self, key) as? T { return v }
        if T.self == Decimal.self, let v = try convert(Decimal.self, key) as? T { return v }
        if let convertible = T.self as? any DatabaseValueConvertible.Type,
           let v = try decodeConvertible(convertible, key) as? T {
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

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
}
