import Foundation

/// A Swift type that can be stored in a single column: it turns into a ``DatabaseValue`` to
/// be bound, and back from what a column held.
///
/// Conformances follow the value mapping of DESIGN.md. Conversions accept both the semantic
/// form (`.date`, `.uuid`, …) and the storage form SQLite hands back (`.text`, `.blob`, …),
/// so one conformance reads the same value from either backend.
public protocol DatabaseValueConvertible: Sendable {
    /// The value to bind for this Swift value.
    var databaseValue: DatabaseValue { get }
    /// The Swift value for a column value, or nil if `value` cannot represent one
    /// (callers such as ``Row/decode(_:at:)`` turn nil into a ``DatabaseError/typeConversion(_:)``
    /// naming the column).
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
    /// The abstract column type that stores this type, used when a schema is derived from
    /// Swift types.
    static var columnType: ColumnType { get }
}

extension DatabaseValueConvertible {
    /// Defaults to `.text`; numeric, binary and temporal types say otherwise.
    public static var columnType: ColumnType { .text }
}

/// The abstract type of a column, rendered by each dialect into its own type name
/// (`.int64` is INTEGER on SQLite and BIGINT on PostgreSQL).
public enum ColumnType: Sendable, Hashable {
    /// A 64-bit integer.
    case int64
    /// A 32-bit integer (INTEGER on both; SQLite stores every integer in up to 8 bytes).
    case int32
    /// A 16-bit integer.
    case int16
    /// A double-precision float.
    case double
    /// A single-precision float (stored as double on SQLite).
    case float
    /// A boolean.
    case bool
    /// Unbounded text.
    case text
    /// Text of at most `n` characters (VARCHAR(n) on PostgreSQL; TEXT on SQLite).
    case varchar(Int)
    /// Bytes.
    case blob
    /// A timestamp with time zone.
    case date
    /// A UUID.
    case uuid
    /// An exact decimal (NUMERIC).
    case decimal
    /// A JSON document (JSONB on PostgreSQL).
    case json
    /// A type name written by hand, passed through unchanged.
    case custom(String)
}

// MARK: - Integers

extension Int64: DatabaseValueConvertible {
    /// An `.integer`.
    @inlinable public var databaseValue: DatabaseValue { .integer(self) }
    /// From `.integer`, `.bool`, and an integral `.double` or `.decimal`.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let v): return v
        case .bool(let b): return b ? 1 : 0
        case .double(let d): return Int64(exactly: d)
        case .decimal(let d):
            guard let i = Int64(d.description), Decimal(i) == d else { return nil }
            return i
        default: return nil
        }
    }
    /// `.int64`.
    public static var columnType: ColumnType { .int64 }
}

/// Narrower integers convert through `Int64`, range-checked: a column value that does not fit
/// is a conversion error, never a silent truncation.
public protocol DatabaseRangeCheckedInteger: FixedWidthInteger, DatabaseValueConvertible {}

extension DatabaseRangeCheckedInteger {
    /// An `.integer`.
    @inlinable public var databaseValue: DatabaseValue { .integer(Int64(self)) }
    /// Through `Int64`, nil when out of range.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        if case .integer(let v) = value { return Self(exactly: v) }
        return Int64.fromDatabaseValue(value).flatMap { Self(exactly: $0) }
    }
}

extension Int: DatabaseRangeCheckedInteger {
    /// `.int64`.
    public static var columnType: ColumnType { .int64 }
}
extension Int32: DatabaseRangeCheckedInteger {
    /// `.int32`.
    public static var columnType: ColumnType { .int32 }
}
extension Int16: DatabaseRangeCheckedInteger {
    /// `.int16`.
    public static var columnType: ColumnType { .int16 }
}
extension Int8: DatabaseRangeCheckedInteger {
    /// `.int16`: no engine has a one-byte integer column.
    public static var columnType: ColumnType { .int16 }
}
extension UInt8: DatabaseRangeCheckedInteger {
    /// `.int16`.
    public static var columnType: ColumnType { .int16 }
}
extension UInt16: DatabaseRangeCheckedInteger {
    /// `.int32`.
    public static var columnType: ColumnType { .int32 }
}
extension UInt32: DatabaseRangeCheckedInteger {
    /// `.int64`.
    public static var columnType: ColumnType { .int64 }
}

// MARK: - Floating point

extension Double: DatabaseValueConvertible {
    /// A `.double`.
    @inlinable public var databaseValue: DatabaseValue { .double(self) }
    /// From `.double`, `.integer` and `.decimal`.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .double(let d): return d
        case .integer(let i): return Double(i)
        case .decimal(let d): return NSDecimalNumber(decimal: d).doubleValue
        default: return nil
        }
    }
    /// `.double`.
    public static var columnType: ColumnType { .double }
}

extension Float: DatabaseValueConvertible {
    /// A `.double`.
    @inlinable public var databaseValue: DatabaseValue { .double(Double(self)) }
    /// Through `Double`, rounded to the nearest `Float`; nil for a finite value beyond
    /// `Float`'s range (it would become infinity).
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Float? {
        guard let d = Double.fromDatabaseValue(value) else { return nil }
        let f = Float(d)
        if f.isInfinite, d.isFinite { return nil }
        return f
    }
    /// `.float`.
    public static var columnType: ColumnType { .float }
}

// MARK: - Bool, String, bytes

extension Bool: DatabaseValueConvertible {
    /// A `.bool`.
    @inlinable public var databaseValue: DatabaseValue { .bool(self) }
    /// From `.bool` and from an `.integer` (zero is false), SQLite's storage for booleans.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        switch value {
        case .bool(let b): return b
        case .integer(let i): return i != 0
        default: return nil
        }
    }
    /// `.bool`.
    public static var columnType: ColumnType { .bool }
}

extension String: DatabaseValueConvertible {
    /// A `.text`.
    @inlinable public var databaseValue: DatabaseValue { .text(self) }
    /// From `.text` and `.json` (a JSON column read as its text).
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        switch value {
        case .text(let s), .json(let s): return s
        default: return nil
        }
    }
}

extension Data: DatabaseValueConvertible {
    /// A `.blob`.
    @inlinable public var databaseValue: DatabaseValue { .blob(self) }
    /// From `.blob`.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        if case .blob(let d) = value { return d }
        return nil
    }
    /// `.blob`.
    public static var columnType: ColumnType { .blob }
}

extension Array: DatabaseValueConvertible where Element == UInt8 {
    /// A `.blob`.
    @inlinable public var databaseValue: DatabaseValue { .blob(Data(self)) }
    /// From `.blob`.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> [UInt8]? {
        if case .blob(let d) = value { return [UInt8](d) }
        return nil
    }
    /// `.blob`.
    public static var columnType: ColumnType { .blob }
}

// MARK: - Date, UUID, Decimal

extension Date: DatabaseValueConvertible {
    /// A `.date`.
    @inlinable public var databaseValue: DatabaseValue { .date(self) }
    /// From `.date` and from `.text` in Unity's UTC format (or ISO 8601 with an offset).
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Date? {
        switch value {
        case .date(let d): return d
        case .text(let s): return DateText.parse(s)
        default: return nil
        }
    }
    /// `.date`.
    public static var columnType: ColumnType { .date }
}

extension UUID: DatabaseValueConvertible {
    /// A `.uuid`.
    @inlinable public var databaseValue: DatabaseValue { .uuid(self) }
    /// From `.uuid`, a 16-byte `.blob` (SQLite's storage) or a `.text` UUID string.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> UUID? {
        switch value {
        case .uuid(let u): return u
        case .blob(let d):
            guard d.count == 16 else { return nil }
            return d.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> UUID in
                UUID(uuid: (raw[0], raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7],
                            raw[8], raw[9], raw[10], raw[11], raw[12], raw[13], raw[14], raw[15]))
            }
        case .text(let s): return UUID(uuidString: s)
        default: return nil
        }
    }
    /// `.uuid`.
    public static var columnType: ColumnType { .uuid }

    /// The 16 bytes of this UUID, as SQLite stores it.
    public var databaseBytes: Data {
        withUnsafeBytes(of: uuid) { Data($0) }
    }
}

extension Decimal: DatabaseValueConvertible {
    /// A `.decimal`. (`Decimal.nan` is refused when bound, as `Double.nan` is.)
    @inlinable public var databaseValue: DatabaseValue { .decimal(self) }
    /// From `.decimal`, `.integer`, `.text` holding a plain decimal numeral (SQLite's storage,
    /// and PostgreSQL's for a NUMERIC beyond `Decimal`'s digits) and `.double`.
    ///
    /// Nothing is rounded: text whose significant digits make a mantissa above 2¹²⁸ − 1 (39
    /// digits up to 340282366920938463463374607431768211455), or whose exponent is beyond
    /// `Decimal`'s −128…127, is nil, which a row read turns into a ``DatabaseError/typeConversion(_:)``
    /// naming the column. A double converts through its shortest decimal representation
    /// (`0.1` is 0.1), and is nil when that does not fit (`1e300`, `1e-300`) or is not finite.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Decimal? {
        switch value {
        case .decimal(let d): return d.isNaN ? nil : d
        case .text(let s): return DecimalText.exactDecimal(s)
        case .integer(let i): return Decimal(i)
        case .double(let d): return DecimalText.shortestDecimal(d)
        default: return nil
        }
    }
    /// `.decimal`.
    public static var columnType: ColumnType { .decimal }
}

/// Exact conversions between decimal text and `Decimal`, whose mantissa holds up to 2¹²⁸ − 1
/// (every 38-digit number, and 39-digit ones up to 340282366920938463463374607431768211455)
/// with an exponent from −128 to 127. Nothing here rounds: what does not fit is nil.
public enum DecimalText {
    /// The `Decimal` a decimal numeral (`-12.50`, `1e-5`, `+3`) stands for, or nil when it is
    /// not a numeral or needs more than `Decimal` holds (a mantissa above 2¹²⁸ − 1, or an
    /// exponent out of range). Leading and trailing zeros are not significant.
    public static func exactDecimal(_ text: String) -> Decimal? {
        var text = text
        return text.withUTF8 { exactDecimal(utf8: $0) }
    }

    /// True when `text` is a plain decimal numeral: optional sign, digits, optional fraction
    /// and exponent.
    public static func isNumeral(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { scan($0) != nil }
    }

    /// The shortest decimal that reads back as `value` (Swift's own `description` digits),
    /// as a `Decimal`; nil for NaN, infinities and values whose exponent `Decimal` cannot
    /// hold (e.g. `1e300`, `1e-300`).
    public static func shortestDecimal(_ value: Double) -> Decimal? {
        guard value.isFinite else { return nil }
        if value == 0 { return Decimal(0) }
        return exactDecimal(value.description)
    }

    /// A numeral's pieces: its sign, its significant digits (no leading or trailing zeros)
    /// and the power of ten of the last of them.
    private static func scan(_ s: UnsafeBufferPointer<UInt8>) -> (negative: Bool, digits: [UInt8], exponent: Int)? {
        var i = 0
        let n = s.count
        var negative = false
        if i < n, s[i] == UInt8(ascii: "-") || s[i] == UInt8(ascii: "+") {
            negative = s[i] == UInt8(ascii: "-")
            i += 1
        }
        var all = [UInt8]()
        var pointIndex: Int?
        while i < n {
            let c = s[i]
            if c >= 48, c <= 57 {
                all.append(c - 48)
            } else if c == UInt8(ascii: "."), pointIndex == nil {
                pointIndex = all.count
            } else {
                break
            }
            i += 1
        }
        let sawDigit = !all.isEmpty
        guard sawDigit else { return nil }
        var exponent = 0
        if i < n, s[i] == UInt8(ascii: "e") || s[i] == UInt8(ascii: "E") {
            i += 1
            var expNegative = false
            if i < n, s[i] == UInt8(ascii: "-") || s[i] == UInt8(ascii: "+") {
                expNegative = s[i] == UInt8(ascii: "-")
                i += 1
            }
            var any = false
            while i < n, s[i] >= 48, s[i] <= 57 {
                any = true
                // Saturate: an exponent this large is out of range anyway.
                if exponent < 100_000 { exponent = exponent * 10 + Int(s[i] - 48) }
                i += 1
            }
            guard any else { return nil }
            if expNegative { exponent = -exponent }
        }
        guard i == n else { return nil }
        guard let first = all.firstIndex(where: { $0 != 0 }), let last = all.lastIndex(where: { $0 != 0 }) else {
            return (negative, [], 0)
        }
        // Digit k is worth 10^(point - 1 - k + exponent).
        let point = pointIndex ?? all.count
        return (negative, Array(all[first...last]), point - 1 - last + exponent)
    }

    /// The digits of `Decimal`'s largest mantissa, 2¹²⁸ − 1: a 39-digit mantissa fits when it
    /// is not above them.
    private static let largestMantissaDigits: [UInt8] = Array("340282366920938463463374607431768211455".utf8).map { $0 - 48 }

    private static func exactDecimal(utf8 s: UnsafeBufferPointer<UInt8>) -> Decimal? {
        guard var (negative, digits, power) = scan(s) else { return nil }
        if digits.isEmpty { return Decimal(0) }
        guard digits.count <= 39 else { return nil }
        // An exponent above Decimal's may still fit with trailing zeros moved into the
        // mantissa (1000e125 is 1e128 written with a larger mantissa).
        while power > 127, digits.count < 39 {
            digits.append(0)
            power -= 1
        }
        guard power >= -128, power <= 127 else { return nil }
        if digits.count == 39, largestMantissaDigits.lexicographicallyPrecedes(digits) { return nil }
        // The mantissa (at most 2¹²⁸ − 1, so Decimal's arithmetic on it is exact) is built
        // from 19-digit integers, each of which fits UInt64: one Decimal for the common case.
        func integer(_ slice: ArraySlice<UInt8>) -> UInt64 {
            var v: UInt64 = 0
            for d in slice { v = v &* 10 &+ UInt64(d) }
            return v
        }
        var mantissa: Decimal
        if digits.count <= 19 {
            mantissa = Decimal(integer(digits[...]))
        } else {
            let chunk = Decimal(10_000_000_000_000_000_000 as UInt64)
            var start = digits.count % 19 == 0 ? 19 : digits.count % 19
            mantissa = Decimal(integer(digits[..<start]))
            while start < digits.count {
                mantissa = mantissa * chunk + Decimal(integer(digits[start..<(start + 19)]))
                start += 19
            }
        }
        let result = Decimal(sign: negative ? .minus : .plus, exponent: power, significand: mantissa)
        return result.isNaN ? nil : result
    }
}

// MARK: - Optional, RawRepresentable, JSON

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    /// `.null` for nil, the wrapped value's otherwise.
    @inlinable
    public var databaseValue: DatabaseValue {
        switch self {
        case .none: return .null
        case .some(let w): return w.databaseValue
        }
    }
    /// `.some(nil)` for NULL; nil (not convertible) when a non-null value does not convert.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(.none) }
        guard let w = Wrapped.fromDatabaseValue(value) else { return nil }
        return .some(.some(w))
    }
    /// The wrapped type's.
    public static var columnType: ColumnType { Wrapped.columnType }
}

extension DatabaseValueConvertible where Self: RawRepresentable, Self.RawValue: DatabaseValueConvertible {
    /// The raw value's database value.
    @inlinable public var databaseValue: DatabaseValue { rawValue.databaseValue }
    /// Through the raw value; nil for a raw value with no case.
    @inlinable
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        RawValue.fromDatabaseValue(value).flatMap { Self(rawValue: $0) }
    }
    /// The raw value's.
    public static var columnType: ColumnType { RawValue.columnType }
}

/// A Codable type stored as one JSON column (JSONB on PostgreSQL, TEXT on SQLite).
/// Conform a type and it can be bound and read like any other value.
public protocol DatabaseJSONConvertible: Codable, DatabaseValueConvertible {}

extension DatabaseJSONConvertible {
    /// A `.json` value holding the encoded document.
    ///
    /// Encoding can fail (a `Double.infinity` or NaN inside, a throwing `encode(to:)`); this
    /// property cannot throw, so it then returns a value that is never written: binding it
    /// throws ``DatabaseError/misuse(_:)`` with the encoder's message (see
    /// ``JSONCoding/encodingFailure(in:)``). Call ``encodedDatabaseValue()`` to get the
    /// error at once.
    public var databaseValue: DatabaseValue {
        do {
            return try encodedDatabaseValue()
        } catch {
            return JSONCoding.failedEncoding(of: Self.self, error)
        }
    }

    /// A `.json` value holding the encoded document; throws ``DatabaseError/misuse(_:)``
    /// naming the type when it cannot be encoded as JSON.
    public func encodedDatabaseValue() throws -> DatabaseValue {
        let data: Data
        do {
            data = try JSONCoding.encoder().encode(self)
        } catch {
            throw DatabaseError.misuse("could not encode \(Self.self) as JSON, so nothing was written: \(error)")
        }
        return .json(String(decoding: data, as: UTF8.self))
    }
    /// Decodes `.json` or `.text` as JSON; nil if it is not a document of this type.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        switch value {
        case .json(let s), .text(let s):
            return try? JSONCoding.decoder().decode(Self.self, from: Data(s.utf8))
        case .blob(let d):
            return try? JSONCoding.decoder().decode(Self.self, from: d)
        default: return nil
        }
    }
    /// `.json`.
    public static var columnType: ColumnType { .json }
}

/// The JSON coders Unity uses for JSON columns: sorted keys so equal values store equal text,
/// and dates in the same microsecond text as date columns.
public enum JSONCoding {
    /// A JSON encoder configured for database storage.
    public static func encoder() -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        e.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            // A date beyond 64-bit microseconds would be written as a clamped year: refuse it.
            guard DateText.microsecondsSinceReferenceDate(date) != nil else {
                throw EncodingError.invalidValue(date, EncodingError.Context(
                    codingPath: encoder.codingPath,
                    debugDescription: "the date \(date.timeIntervalSinceReferenceDate)s from 2001 is beyond what Unity stores"))
            }
            try c.encode(DateText.format(date))
        }
        e.dataEncodingStrategy = .base64
        return e
    }

    /// What ``DatabaseJSONConvertible/databaseValue`` holds when encoding failed: a `.json`
    /// value starting with a NUL character, which no JSON text can contain, followed by the
    /// error. The renderer and the drivers refuse to bind it.
    static func failedEncoding<T>(of type: T.Type, _ error: any Error) -> DatabaseValue {
        .json("\u{0}could not encode \(T.self) as JSON, so nothing was written: \(error)")
    }

    /// The message of a value made by a failed JSON encoding, or nil for any other value.
    /// Such a value must never be written: binding it throws ``DatabaseError/misuse(_:)``
    /// with this message.
    public static func encodingFailure(in value: DatabaseValue) -> String? {
        guard case .json(let text) = value, text.utf8.first == 0 else { return nil }
        return String(text.dropFirst())
    }

    /// A JSON decoder matching ``encoder()``.
    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let s = try c.decode(String.self)
            guard let date = DateText.parse(s) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a date: \(s)")
            }
            return date
        }
        d.dataDecodingStrategy = .base64
        return d
    }
}

extension DatabaseValue: DatabaseValueConvertible {
    /// Itself.
    public var databaseValue: DatabaseValue { self }
    /// Itself.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}
