import Foundation
import Unity

/// The core's bound value (this module's `DatabaseValue` is StateModel's `Codable` alias).
typealias SQLValue = Unity.DatabaseValue

/// How a value is kept in a row of the SQL stores: a kind and one typed column.
///
/// | kind | Swift types | column |
/// |---|---|---|
/// | 0 `nil` | `nil` of an optional, at nesting depth `int_value` (`Int??.some(nil)`: 1) | — |
/// | 1 integer | `Int`, `Int8`…`Int64`, `UInt8`…`UInt32`, `InstanceStatus` | `int_value` |
/// | 2 unsigned | `UInt`, `UInt64` (the bit pattern, so `UInt64.max` is exact in a signed BIGINT) | `int_value` |
/// | 3 boolean | `Bool` | `int_value` (0 / 1) |
/// | 4 real | `Double`, `Float`, `Float16` (widened exactly) | `real_value` |
/// | 5 text | `String` | `text_value` |
/// | 6 bytes | `Data` | `blob_value` |
/// | 7 date | `Date` (its `timeIntervalSinceReferenceDate`, the value a `Date` holds, every bit kept) | `real_value` |
/// | 8 encoded | any other `Codable` value (references' `[InstanceKey]` included), by the store's encoder | `blob_value` |
struct StoredValueCodec {
    enum Kind: Int64 {
        case null = 0, integer = 1, unsigned = 2, boolean = 3, real = 4, text = 5, bytes = 6, date = 7, encoded = 8
    }

    /// A value as a row's columns: kind, integer, real, text, blob.
    struct Columns {
        var kind: Kind
        var integer: SQLValue = .null
        var real: SQLValue = .null
        var text: SQLValue = .null
        var blob: SQLValue = .null

        var values: [SQLValue] { [.integer(kind.rawValue), integer, real, text, blob] }
    }

    let encoder: any GenericEncoder
    let decoder: any GenericDecoder

    /// The columns for `value`; throws when the encoder refuses it.
    func encode<Value: Encodable>(_ value: Value) throws -> Columns {
        // The common types by metatype identity: a pointer comparison each, where the general
        // path boxes the value and asks the runtime for conformances and casts.
        if Value.self == String.self { return Columns(kind: .text, text: .text(unsafeBitCast(value, to: String.self))) }
        if Value.self == Int.self { return Columns(kind: .integer, integer: .integer(Int64(unsafeBitCast(value, to: Int.self)))) }
        if Value.self == Double.self { return Columns(kind: .real, real: .double(unsafeBitCast(value, to: Double.self))) }
        if Value.self == Bool.self { return Columns(kind: .boolean, integer: .integer(unsafeBitCast(value, to: Bool.self) ? 1 : 0)) }
        if Value.self == Int64.self { return Columns(kind: .integer, integer: .integer(unsafeBitCast(value, to: Int64.self))) }
        if Value.self == InstanceStatus.self {
            return Columns(kind: .integer, integer: .integer(Int64(unsafeBitCast(value, to: InstanceStatus.self).rawValue)))
        }
        return try encodeAny(value, depth: 0)
    }

    private func encodeAny(_ value: Any, depth: Int64) throws -> Columns {
        if let optional = value as? any StateOptionalValue {
            guard let wrapped = optional.wrappedAny else {
                return Columns(kind: .null, integer: .integer(depth))
            }
            return try encodeAny(wrapped, depth: depth + 1)
        }
        switch value {
        case let v as Int: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as Int8: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as Int16: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as Int32: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as Int64: return Columns(kind: .integer, integer: .integer(v))
        case let v as UInt8: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as UInt16: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as UInt32: return Columns(kind: .integer, integer: .integer(Int64(v)))
        case let v as UInt: return Columns(kind: .unsigned, integer: .integer(Int64(bitPattern: UInt64(v))))
        case let v as UInt64: return Columns(kind: .unsigned, integer: .integer(Int64(bitPattern: v)))
        case let v as InstanceStatus: return Columns(kind: .integer, integer: .integer(Int64(v.rawValue)))
        case let v as Bool: return Columns(kind: .boolean, integer: .integer(v ? 1 : 0))
        case let v as Double: return Columns(kind: .real, real: .double(v))
        case let v as Float: return Columns(kind: .real, real: .double(Double(v)))
        #if !((os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64))
        case let v as Float16: return Columns(kind: .real, real: .double(Double(v)))
        #endif
        case let v as String: return Columns(kind: .text, text: .text(v))
        case let v as Data: return Columns(kind: .bytes, blob: .blob(v))
        case let v as Date: return Columns(kind: .date, real: .double(v.timeIntervalSinceReferenceDate))
        case let v as any Encodable: return Columns(kind: .encoded, blob: .blob(try encoder.encode(v)))
        default:
            throw StateError.encodingFailed(error: "\(type(of: value)) is not Encodable")
        }
    }

    /// The value of `type` in the columns `kind`, `integer`, `real`, `text`, `blob`; nil when
    /// the stored value is not a `Value` (written as another type).
    func decode<Value>(_ type: Value.Type, kind: Int64, integer: SQLValue, real: SQLValue,
                       text: SQLValue, blob: SQLValue) -> Value? {
        guard let kind = Kind(rawValue: kind) else { return nil }
        // The common types by metatype identity (see `encode`), read as `decodeAny` reads them.
        if Value.self == String.self {
            guard kind == .text, case .text(let v) = text else { return nil }
            return unsafeBitCast(v, to: Value.self)
        }
        if Value.self == Double.self {
            guard kind == .real, case .double(let v) = real else { return nil }
            return unsafeBitCast(v, to: Value.self)
        }
        if Value.self == Int.self {
            guard kind == .integer, case .integer(let v) = integer, let exact = Int(exactly: v) else { return nil }
            return unsafeBitCast(exact, to: Value.self)
        }
        if kind == .null {
            guard case .integer(let depth) = integer, let depth = Int(exactly: depth) else { return nil }
            return stateNil(Value.self, atDepth: depth)
        }
        return decodeAny(Value.self, kind: kind, integer: integer, real: real, text: text, blob: blob) as? Value
    }

    private func decodeAny(_ type: Any.Type, kind: Kind, integer: SQLValue, real: SQLValue,
                           text: SQLValue, blob: SQLValue) -> Any? {
        if let optional = type as? any StateOptionalValue.Type {
            // A stored nil is read by `decode` (typed, see `stateNil`); here only values.
            guard kind != .null, let wrapped = decodeAny(optional.wrappedType, kind: kind, integer: integer, real: real, text: text, blob: blob) else {
                return nil
            }
            return optional.some(wrapped)
        }
        switch (kind, integer, real, text, blob) {
        case (.integer, .integer(let v), _, _, _):
            switch type {
            case is Int.Type: return Int(exactly: v)
            case is Int8.Type: return Int8(exactly: v)
            case is Int16.Type: return Int16(exactly: v)
            case is Int32.Type: return Int32(exactly: v)
            case is Int64.Type: return v
            case is UInt8.Type: return UInt8(exactly: v)
            case is UInt16.Type: return UInt16(exactly: v)
            case is UInt32.Type: return UInt32(exactly: v)
            case is InstanceStatus.Type: return UInt8(exactly: v).flatMap(InstanceStatus.init(rawValue:))
            default: return nil
            }
        case (.unsigned, .integer(let v), _, _, _):
            switch type {
            case is UInt64.Type: return UInt64(bitPattern: v)
            case is UInt.Type: return UInt(exactly: UInt64(bitPattern: v))
            default: return nil
            }
        case (.boolean, .integer(let v), _, _, _):
            return type == Bool.self ? (v != 0) : nil
        case (.boolean, .bool(let v), _, _, _):
            return type == Bool.self ? v : nil
        case (.real, _, .double(let v), _, _):
            if type == Double.self { return v }
            if type == Float.self { return Float(v) }
            #if !((os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64))
            if type == Float16.self { return Float16(v) }
            #endif
            return nil
        case (.text, _, _, .text(let v), _):
            return type == String.self ? v : nil
        case (.bytes, _, _, _, .blob(let v)):
            return type == Data.self ? v : nil
        case (.date, _, .double(let v), _, _):
            return type == Date.self ? Date(timeIntervalSinceReferenceDate: v) : nil
        case (.encoded, _, _, _, .blob(let data)):
            guard let decodable = type as? any Decodable.Type else { return nil }
            return decodeEncoded(decodable, from: data)
        default:
            return nil
        }
    }

    private func decodeEncoded<T: Decodable>(_ type: T.Type, from data: Data) -> T? {
        try? decoder.decode(T.self, from: data)
    }
}

/// The nil of the optional type `Value` at nesting `depth` (0: `nil`; 1: `.some(nil)`; ...),
/// built without a dynamic cast: a cast from `Any` holding an optional's `nil` to that optional
/// type does not keep the nil's depth. nil when `Value` is not an optional that deep.
func stateNil<Value>(_ type: Value.Type, atDepth depth: Int) -> Value? {
    guard depth >= 0, let optional = type as? any StateOptionalValue.Type else { return nil }
    return stateNil(opening: optional, atDepth: depth, as: Value.self)
}

private func stateNil<Optional: StateOptionalValue, Value>(opening type: Optional.Type, atDepth depth: Int,
                                                           as value: Value.Type) -> Value? {
    guard Optional.self == Value.self, let empty = Optional.typedNil(atDepth: depth) else { return nil }
    // The same type (checked above): the bits are the value.
    return unsafeBitCast(empty, to: Value.self)
}

/// Optionals seen through `Any`, so that the SQL stores and the sync messages can tell `nil`
/// from `.some(nil)` at any depth.
protocol StateOptionalValue {
    var wrappedAny: Any? { get }
    static var wrappedType: Any.Type { get }
    /// This optional's nil at nesting `depth`, typed; nil when it does not nest that deep.
    static func typedNil(atDepth depth: Int) -> Self?
    static func some(_ wrapped: Any) -> Any?
}

extension Optional: StateOptionalValue {
    var wrappedAny: Any? {
        switch self {
        case .some(let wrapped): return wrapped
        case .none: return nil
        }
    }

    static var wrappedType: Any.Type { Wrapped.self }

    /// nil at depth 0 is this optional's nil; deeper, `.some` of the wrapped optional's nil.
    static func typedNil(atDepth depth: Int) -> Wrapped?? {
        if depth == 0 { return .some(.none) }
        guard let inner = stateNil(Wrapped.self, atDepth: depth - 1) else { return nil }
        return .some(.some(inner))
    }

    static func some(_ wrapped: Any) -> Any? {
        guard let value = wrapped as? Wrapped else { return nil }
        return Wrapped?.some(value) as Any
    }
}
