import CLibPQ
import Foundation
import Unity

/// PostgreSQL type OIDs the driver binds or decodes (from `pg_type.dat`).
enum PGType {
    static let unknown: Oid = 0
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let char: Oid = 18
    static let name: Oid = 19
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let oid: Oid = 26
    static let json: Oid = 114
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let bpchar: Oid = 1042
    static let varchar: Oid = 1043
    static let date: Oid = 1082
    static let timestamp: Oid = 1114
    static let timestamptz: Oid = 1184
    static let numeric: Oid = 1700
    static let uuid: Oid = 2950
    static let jsonb: Oid = 3802
}

/// How one result column is decoded, decided once per prepared statement so that the row
/// loop switches over a small enum instead of looking up type OIDs per value.
enum PGColumnKind: Sendable {
    case int2, int4, int8, oid
    case float4, float8
    case numeric
    case bool
    case text
    case bytea
    case timestamp
    case date
    case uuid
    case json
    case jsonb
    /// A type the driver has no binary decoder for: the whole statement is read in text
    /// format and this column becomes `.text`.
    case other

    /// The decoder for a column of type `oid`.
    init(oid: Oid) {
        switch oid {
        case PGType.int2: self = .int2
        case PGType.int4: self = .int4
        case PGType.int8: self = .int8
        case PGType.oid: self = .oid
        case PGType.float4: self = .float4
        case PGType.float8: self = .float8
        case PGType.numeric: self = .numeric
        case PGType.bool: self = .bool
        case PGType.text, PGType.varchar, PGType.bpchar, PGType.name, PGType.char: self = .text
        case PGType.bytea: self = .bytea
        case PGType.timestamptz, PGType.timestamp: self = .timestamp
        case PGType.date: self = .date
        case PGType.uuid: self = .uuid
        case PGType.json: self = .json
        case PGType.jsonb: self = .jsonb
        default: self = .other
        }
    }

    /// The type's name, for error messages.
    var typeName: String {
        switch self {
        case .int2: return "int2"
        case .int4: return "int4"
        case .int8: return "int8"
        case .oid: return "oid"
        case .float4: return "float4"
        case .float8: return "float8"
        case .numeric: return "numeric"
        case .bool: return "bool"
        case .text: return "text"
        case .bytea: return "bytea"
        case .timestamp: return "timestamp"
        case .date: return "date"
        case .uuid: return "uuid"
        case .json: return "json"
        case .jsonb: return "jsonb"
        case .other: return "text (fallback)"
        }
    }
}

// MARK: - Parameters

/// The bind parameters of one execution, laid out the way `PQexecPrepared` wants them:
/// one byte buffer plus per-parameter type OIDs, offsets, lengths and formats.
///
/// A connection keeps one buffer and resets it between statements, so binding allocates
/// nothing in the steady state.
struct PGParameterBuffer {
    private(set) var types: [Oid] = []
    private var formats: [Int32] = []
    private var lengths: [Int32] = []
    /// Offset of each value in `bytes`, or -1 for SQL NULL.
    private var offsets: [Int] = []
    /// The values' bytes. It starts with one spare byte so that it is never empty: an empty
    /// blob must still get a non-null pointer (a null pointer means SQL NULL).
    private var bytes: [UInt8] = [0]

    /// The number of parameters.
    var count: Int { types.count }

    /// Empties the buffer, keeping its capacity.
    mutating func reset() {
        types.removeAll(keepingCapacity: true)
        formats.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(0)
    }

    /// The type OID a value is bound with. `.text` and `.null` are sent untyped (OID 0) so
    /// that the server infers the type from context: a string can go into a uuid, json or
    /// timestamptz column.
    static func typeOID(of value: DatabaseValue) -> Oid {
        switch value {
        case .null, .text: return PGType.unknown
        case .integer: return PGType.int8
        case .double: return PGType.float8
        case .bool: return PGType.bool
        case .blob: return PGType.bytea
        case .date: return PGType.timestamptz
        case .uuid: return PGType.uuid
        case .decimal: return PGType.numeric
        case .json: return PGType.jsonb
        }
    }

    /// Appends every value of `values`; see ``append(_:position:)``.
    mutating func append(contentsOf values: [DatabaseValue]) throws {
        for (i, value) in values.enumerated() {
            try append(value, position: i + 1)
        }
    }

    /// Appends one parameter; `position` is its 1-based `$n`, for error messages.
    /// Throws `DatabaseError.misuse(_:)` for values PostgreSQL cannot store: NaN, text with
    /// NUL characters, blobs over 2 GB, dates beyond 64-bit microseconds.
    mutating func append(_ value: DatabaseValue, position: Int) throws {
        types.append(Self.typeOID(of: value))
        switch value {
        case .null:
            offsets.append(-1)
            lengths.append(0)
            formats.append(0)
        case .integer(let v):
            appendBinary(UInt64(bitPattern: v).bigEndian)
        case .double(let v):
            if v.isNaN {
                throw DatabaseError.misuse(
                    "parameter $\(position) is NaN, which Unity does not store (SQLite cannot); "
                        + "use NULL or another value")
            }
            appendBinary(v.bitPattern.bigEndian)
        case .bool(let b):
            appendBinary(UInt8(b ? 1 : 0))
        case .text(let s):
            try appendText(s, position: position, what: "text")
        case .json(let s):
            try appendText(s, position: position, what: "json")
        case .decimal(let d):
            if d.isNaN {
                throw DatabaseError.misuse(
                    "parameter $\(position) is Decimal.nan, which Unity does not store (SQLite cannot); "
                        + "use NULL or another value")
            }
            try appendText(d.description, position: position, what: "decimal")
        case .blob(let data):
            guard data.count <= Int(Int32.max) else {
                throw DatabaseError.misuse(
                    "parameter $\(position) is a blob of \(data.count) bytes; PostgreSQL bytea parameters are limited to 1 GB")
            }
            offsets.append(bytes.count)
            lengths.append(Int32(data.count))
            formats.append(1)
            bytes.append(contentsOf: data)
        case .date(let date):
            guard let micros = DateText.microsecondsSinceReferenceDate(date) else {
                throw DatabaseError.misuse(
                    "parameter $\(position) is the date \(date.timeIntervalSinceReferenceDate)s from 2001, too far away for a PostgreSQL timestamptz")
            }
            let (since2000, overflow) = micros.addingReportingOverflow(DateText.postgresEpochToReferenceMicros)
            // PostgreSQL's timestamptz range: 4714-11-24 00:00 BC up to (not including)
            // 294277-01-01 00:00 (MIN_TIMESTAMP / END_TIMESTAMP in its datatype/timestamp.h).
            guard !overflow, since2000 >= -211_813_488_000_000_000, since2000 < 9_223_371_331_200_000_000 else {
                throw DatabaseError.misuse(
                    "parameter $\(position) is a date outside PostgreSQL's timestamptz range (4714 BC to 294276 AD)")
            }
            appendBinary(UInt64(bitPattern: since2000).bigEndian)
        case .uuid(let u):
            offsets.append(bytes.count)
            lengths.append(16)
            formats.append(1)
            withUnsafeBytes(of: u.uuid) { bytes.append(contentsOf: $0) }
        }
    }

    private mutating func appendBinary<T: FixedWidthInteger>(_ bigEndianValue: T) {
        offsets.append(bytes.count)
        lengths.append(Int32(MemoryLayout<T>.size))
        formats.append(1)
        withUnsafeBytes(of: bigEndianValue) { bytes.append(contentsOf: $0) }
    }

    /// Text-format parameters are NUL-terminated C strings, so a NUL inside would silently
    /// truncate the value; PostgreSQL text cannot hold NUL at all, so it is refused.
    private mutating func appendText(_ s: String, position: Int, what: String) throws {
        let start = bytes.count
        bytes.append(contentsOf: s.utf8)
        if bytes[start...].contains(0) {
            bytes.removeSubrange(start...)
            throw DatabaseError.misuse(
                "parameter $\(position) is \(what) containing a NUL character (\\0), which PostgreSQL text cannot store; "
                    + "remove it or store the value as a blob")
        }
        bytes.append(0)
        offsets.append(start)
        lengths.append(Int32(clamping: bytes.count - start - 1))
        formats.append(0)
    }

    /// Calls `body` with the value pointers, lengths and formats `PQexecPrepared` expects
    /// (nil pointers when there are no parameters).
    func withPointers<R>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws -> R
    ) rethrows -> R {
        if types.isEmpty { return try body(nil, nil, nil) }
        return try bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress)
            var pointers = [UnsafePointer<CChar>?]()
            pointers.reserveCapacity(offsets.count)
            for offset in offsets {
                if offset < 0 {
                    pointers.append(nil)
                } else {
                    pointers.append(base.map { ($0 + offset).assumingMemoryBound(to: CChar.self) })
                }
            }
            return try pointers.withUnsafeBufferPointer { values in
                try lengths.withUnsafeBufferPointer { lens in
                    try formats.withUnsafeBufferPointer { fmts in
                        try body(values.baseAddress, lens.baseAddress, fmts.baseAddress)
                    }
                }
            }
        }
    }
}

// MARK: - Result values

/// Decodes column values straight from the bytes libpq hands out, without intermediate
/// strings or Foundation formatters. Every length is checked: a malformed value throws
/// `DatabaseError.typeConversion(_:)`, never reads out of bounds.
enum PGValueDecoder {

    static func malformed(_ kind: PGColumnKind, column: String, _ detail: String) -> DatabaseError {
        .typeConversion(ConversionFailure(column: column, expectedType: "PostgreSQL \(kind.typeName)", actual: detail))
    }

    @inline(__always)
    static func loadBE<T: FixedWidthInteger>(_ p: UnsafeRawPointer, _ offset: Int = 0, as: T.Type) -> T {
        T(bigEndian: p.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// Decodes one binary-format value.
    @inline(__always)
    static func decodeBinary(_ kind: PGColumnKind, _ p: UnsafeRawPointer, _ length: Int, column: @autoclosure () -> String) throws -> DatabaseValue {
        switch kind {
        case .int8:
            guard length == 8 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .integer(loadBE(p, as: Int64.self))
        case .int4:
            guard length == 4 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .integer(Int64(loadBE(p, as: Int32.self)))
        case .int2:
            guard length == 2 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .integer(Int64(loadBE(p, as: Int16.self)))
        case .oid:
            guard length == 4 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .integer(Int64(loadBE(p, as: UInt32.self)))
        case .float8:
            guard length == 8 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .double(Double(bitPattern: loadBE(p, as: UInt64.self)))
        case .float4:
            guard length == 4 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .double(Double(Float(bitPattern: loadBE(p, as: UInt32.self))))
        case .bool:
            guard length == 1 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .bool(p.load(as: UInt8.self) != 0)
        case .text, .other:
            return .text(String(decoding: UnsafeRawBufferPointer(start: p, count: length), as: UTF8.self))
        case .json:
            return .json(String(decoding: UnsafeRawBufferPointer(start: p, count: length), as: UTF8.self))
        case .jsonb:
            guard length >= 1, p.load(as: UInt8.self) == 1 else {
                throw malformed(kind, column: column(), "an unknown jsonb format version")
            }
            return .json(String(decoding: UnsafeRawBufferPointer(start: p + 1, count: length - 1), as: UTF8.self))
        case .bytea:
            return .blob(Data(bytes: p, count: length))
        case .timestamp:
            guard length == 8 else { throw malformed(kind, column: column(), "\(length) bytes") }
            let micros = loadBE(p, as: Int64.self)
            guard let date = timestamp(micros2000: micros) else {
                throw malformed(kind, column: column(), "\(micros) µs from 2000, beyond any date")
            }
            return .date(date)
        case .date:
            guard length == 4 else { throw malformed(kind, column: column(), "\(length) bytes") }
            return .date(date(days2000: loadBE(p, as: Int32.self)))
        case .uuid:
            guard length == 16 else { throw malformed(kind, column: column(), "\(length) bytes") }
            var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &raw) { $0.copyMemory(from: UnsafeRawBufferPointer(start: p, count: 16)) }
            return .uuid(UUID(uuid: raw))
        case .numeric:
            return try decodeBinaryNumeric(p, length, column: column())
        }
    }

    /// A timestamp from microseconds since 2000-01-01; PostgreSQL's ±infinity become
    /// `Date.distantFuture` / `Date.distantPast`. Nil (never a trap) for a count no
    /// PostgreSQL timestamp has, whose distance from 2001 does not fit 64 bits.
    @inline(__always)
    static func timestamp(micros2000: Int64) -> Date? {
        if micros2000 == Int64.max { return .distantFuture }
        if micros2000 == Int64.min { return .distantPast }
        let (micros, overflow) = micros2000.subtractingReportingOverflow(DateText.postgresEpochToReferenceMicros)
        if overflow { return nil }
        return DateText.date(microsecondsSinceReferenceDate: micros)
    }

    /// Midnight UTC of a PostgreSQL `date` (days since 2000-01-01); ±infinity become
    /// `Date.distantFuture` / `Date.distantPast`. Every 32-bit day count is a `Date`
    /// (PostgreSQL's range reaches 5874897 AD), computed without integer overflow.
    @inline(__always)
    static func date(days2000: Int32) -> Date {
        if days2000 == Int32.max { return .distantFuture }
        if days2000 == Int32.min { return .distantPast }
        return DateText.date(daysSinceReferenceDate: Int64(days2000) - 366)
    }

    /// Binary numeric: int16 ndigits, int16 weight, uint16 sign, uint16 dscale, then ndigits
    /// base-10000 digits; the first digit is worth 10000^weight.
    static func decodeBinaryNumeric(_ p: UnsafeRawPointer, _ length: Int, column: String) throws -> DatabaseValue {
        guard length >= 8 else { throw malformed(.numeric, column: column, "\(length) bytes") }
        let ndigits = Int(loadBE(p, 0, as: Int16.self))
        let weight = Int(loadBE(p, 2, as: Int16.self))
        let sign = loadBE(p, 4, as: UInt16.self)
        let dscale = Int(loadBE(p, 6, as: UInt16.self))
        switch sign {
        case 0xC000: return .double(.nan)
        case 0xD000: return .double(.infinity)
        case 0xF000: return .double(-.infinity)
        case 0x0000, 0x4000: break
        default: throw malformed(.numeric, column: column, "sign word \(sign)")
        }
        guard ndigits >= 0, length == 8 + 2 * ndigits, dscale <= 0x3FFF else {
            throw malformed(.numeric, column: column, "\(length) bytes for \(ndigits) digits")
        }
        var digits = [Int](repeating: 0, count: ndigits)
        for i in 0..<ndigits {
            let d = Int(loadBE(p, 8 + 2 * i, as: Int16.self))
            guard d >= 0, d < 10_000 else { throw malformed(.numeric, column: column, "digit \(d)") }
            digits[i] = d
        }
        func digit(_ index: Int) -> Int { index >= 0 && index < ndigits ? digits[index] : 0 }
        var text = [UInt8]()
        text.reserveCapacity(4 * (max(weight, 0) + 1) + dscale + 2)
        if sign == 0x4000 { text.append(UInt8(ascii: "-")) }
        func appendGroup(_ value: Int, padded: Bool) {
            let chars = [value / 1000, (value / 100) % 10, (value / 10) % 10, value % 10]
            var started = padded
            for (k, c) in chars.enumerated() where started || c != 0 || k == 3 {
                started = true
                text.append(UInt8(48 + c))
            }
        }
        if weight < 0 {
            text.append(UInt8(ascii: "0"))
        } else {
            for i in 0...weight { appendGroup(digit(i), padded: i != 0) }
        }
        if dscale > 0 {
            text.append(UInt8(ascii: "."))
            var written = 0
            var group = weight + 1
            while written < dscale {
                let value = digit(group)
                let chars = [value / 1000, (value / 100) % 10, (value / 10) % 10, value % 10]
                for c in chars where written < dscale {
                    text.append(UInt8(48 + c))
                    written += 1
                }
                group += 1
            }
        }
        let string = String(decoding: text, as: UTF8.self)
        // More significant digits (or a wider exponent) than `Decimal` holds: the exact
        // digits as text, so reading the column as `Decimal` fails naming it while the rest
        // of the row (and this column as `String`) still reads.
        guard let decimal = DecimalText.exactDecimal(string) else { return .text(string) }
        return .decimal(decimal)
    }

    /// Decodes one text-format value (used for statements whose results include a type
    /// without a binary decoder). `p` is NUL-terminated, as libpq guarantees.
    static func decodeText(_ kind: PGColumnKind, _ p: UnsafeRawPointer, _ length: Int, column: @autoclosure () -> String) throws -> DatabaseValue {
        let bytes = UnsafeBufferPointer(start: p.assumingMemoryBound(to: UInt8.self), count: length)
        let text = String(decoding: bytes, as: UTF8.self)
        switch kind {
        case .int2, .int4, .int8, .oid:
            guard let v = Int64(text) else { throw malformed(kind, column: column(), text) }
            return .integer(v)
        case .float4:
            // Read as the stored single-precision value, widened: the same `Double` the
            // binary path gives whatever digits `extra_float_digits` printed.
            guard let v = Float(text) else { throw malformed(kind, column: column(), text) }
            return .double(Double(v))
        case .float8:
            guard let v = Double(text) else { throw malformed(kind, column: column(), text) }
            return .double(v)
        case .numeric:
            switch text {
            case "NaN": return .double(.nan)
            case "Infinity": return .double(.infinity)
            case "-Infinity": return .double(-.infinity)
            default:
                if let d = DecimalText.exactDecimal(text) { return .decimal(d) }
                // Beyond `Decimal`'s 38 digits: the exact digits, as the binary path.
                guard DecimalText.isNumeral(text) else { throw malformed(kind, column: column(), text) }
                return .text(text)
            }
        case .bool:
            switch text {
            case "t": return .bool(true)
            case "f": return .bool(false)
            default: throw malformed(kind, column: column(), text)
            }
        case .text, .other:
            return .text(text)
        case .json, .jsonb:
            return .json(text)
        case .bytea:
            var count = 0
            guard let raw = PQunescapeBytea(bytes.baseAddress, &count) else {
                throw malformed(kind, column: column(), "undecodable bytea text")
            }
            defer { PQfreemem(raw) }
            return .blob(Data(bytes: raw, count: count))
        case .timestamp, .date:
            switch text {
            case "infinity": return .date(.distantFuture)
            case "-infinity": return .date(.distantPast)
            default:
                // ISO output (the session pins DateStyle=ISO): years of 4+ digits, ` BC`,
                // offsets `±HH[:MM[:SS]]`; the same `Date` as the binary path.
                guard let d = DateText.parse(text) else { throw malformed(kind, column: column(), text) }
                return .date(d)
            }
        case .uuid:
            guard let u = UUID(uuidString: text) else { throw malformed(kind, column: column(), text) }
            return .uuid(u)
        }
    }
}
