@_exported import Unity
import Foundation

/// A type the database stores as it is, through the core's value mapping: the base types
/// (`Int`, `String`, `Decimal`, `Date`, …) and optionals of them. Every
/// ``SupportedAttributeType`` is stored as one of these.
public protocol PrimitiveAttribute: DatabaseValueConvertible, Sendable {}

/// A Swift type that an ``Attribute`` can store in one column, shaped as Sworm's: it turns
/// into a ``PrimitiveAttribute`` and back.
///
/// `PrimitiveAttributeType` is also what the database compares: the type itself for the base
/// types, the raw value for a raw-value enum, the wrapped type's (optional) for an optional.
/// Equality operators need it `Equatable`, ordering operators and sorts `Comparable` (for an
/// optional attribute, its wrapped type's), checked by the compiler: so an enum sorts by its
/// raw value even when the enum is not `Comparable`.
///
/// A `RawRepresentable` enum gets everything by declaring the conformance
/// (`enum Kind: String, SupportedAttributeType { case a, b }`); another type says how it is
/// stored, and throws when a stored value cannot be one:
///
/// ```swift
/// struct Version: SupportedAttributeType {
///     var major = 0, minor = 0
///     func encodePrimitiveValue() -> String { "\(major).\(minor)" }
///     static func decode(primitiveValue: String) throws -> Version {
///         let parts = primitiveValue.split(separator: ".").compactMap { Int($0) }
///         guard parts.count == 2 else { throw AttributeError.badInput(primitiveValue) }
///         return Version(major: parts[0], minor: parts[1])
///     }
/// }
/// ```
///
/// A value that the database holds but `decode(primitiveValue:)` refuses makes the read throw
/// ``PredicatesError/invalidValue(column:type:value:reason:)``, which names the column, the
/// value and the error `decode` threw.
public protocol SupportedAttributeType: Sendable {
    /// The stored (and compared) type.
    associatedtype PrimitiveAttributeType: PrimitiveAttribute
    /// The stored value for this Swift value.
    func encodePrimitiveValue() -> PrimitiveAttributeType
    /// The Swift value for a stored value; throws (any error: it is reported with the column
    /// and the value) when the stored value cannot be one.
    static func decode(primitiveValue: PrimitiveAttributeType) throws -> Self
    /// The abstract column type that stores it (the primitive type's, by default).
    static var attributeColumnType: ColumnType { get }
    /// True for optionals: their column is nullable.
    static var isOptionalAttribute: Bool { get }
}

extension SupportedAttributeType {
    /// The primitive type's column type.
    public static var attributeColumnType: ColumnType { PrimitiveAttributeType.columnType }
    /// False, except for `Optional`.
    public static var isOptionalAttribute: Bool { false }

    /// The database value bound for this Swift value.
    @inlinable
    public func encodeDatabaseValue() -> DatabaseValue { encodePrimitiveValue().databaseValue }

    /// The Swift value for a database value read from `column`.
    /// - Throws: ``PredicatesError/conversion(column:type:value:)`` when the value is no
    ///   `PrimitiveAttributeType`; ``PredicatesError/invalidValue(column:type:value:reason:)``
    ///   when ``decode(primitiveValue:)`` refuses it.
    @inlinable
    public static func decode(databaseValue: DatabaseValue, column: String) throws -> Self {
        guard let primitive = PrimitiveAttributeType.fromDatabaseValue(databaseValue) else {
            throw PredicatesError.conversion(column: column, type: "\(Self.self)", value: databaseValue)
        }
        do {
            return try decode(primitiveValue: primitive)
        } catch AttributeError.badInput {
            throw PredicatesError.conversion(column: column, type: "\(Self.self)", value: databaseValue)
        } catch {
            throw PredicatesError.invalidValue(column: column, type: "\(Self.self)", value: databaseValue, reason: "\(error)")
        }
    }
}

extension SupportedAttributeType where Self: PrimitiveAttribute, PrimitiveAttributeType == Self {
    /// Itself.
    @inlinable public func encodePrimitiveValue() -> Self { self }
    /// Itself.
    @inlinable public static func decode(primitiveValue: Self) throws -> Self { primitiveValue }
}

/// Sworm's error for a stored value that a type's `decode(primitiveValue:)` cannot take.
public enum AttributeError: Error, CustomStringConvertible, @unchecked Sendable {
    // @unchecked: as Sworm's, it carries the refused value as `Any?`; it is only read.
    /// The value that could not be decoded.
    case badInput(Any?)

    /// What was refused.
    public var description: String {
        switch self {
        case .badInput(let value): return "bad input: \(value.map { "\($0)" } ?? "nil")"
        }
    }
}

extension Int: PrimitiveAttribute, SupportedAttributeType {}
extension Int64: PrimitiveAttribute, SupportedAttributeType {}
extension Int32: PrimitiveAttribute, SupportedAttributeType {}
extension Int16: PrimitiveAttribute, SupportedAttributeType {}
extension Int8: PrimitiveAttribute, SupportedAttributeType {}
extension UInt8: PrimitiveAttribute, SupportedAttributeType {}
extension UInt16: PrimitiveAttribute, SupportedAttributeType {}
extension UInt32: PrimitiveAttribute, SupportedAttributeType {}
extension Double: PrimitiveAttribute, SupportedAttributeType {}
extension Float: PrimitiveAttribute, SupportedAttributeType {}
extension Bool: PrimitiveAttribute, SupportedAttributeType {}
extension String: PrimitiveAttribute, SupportedAttributeType {}
extension Date: PrimitiveAttribute, SupportedAttributeType {}
extension UUID: PrimitiveAttribute, SupportedAttributeType {}
extension Decimal: PrimitiveAttribute, SupportedAttributeType {}
extension Data: PrimitiveAttribute, SupportedAttributeType {}

extension URL: SupportedAttributeType {
    /// The absolute string, as text: URLs compare as their text.
    @inlinable
    public func encodePrimitiveValue() -> String { absoluteString }
    /// Parsed from text.
    /// - Throws: ``AttributeError/badInput(_:)`` for text that is no URL.
    @inlinable
    public static func decode(primitiveValue: String) throws -> URL {
        guard let url = URL(string: primitiveValue) else { throw AttributeError.badInput(primitiveValue) }
        return url
    }
}

extension Optional: PrimitiveAttribute where Wrapped: PrimitiveAttribute {}

// The conversions below are inlinable so that a model's attribute closures are compiled for
// the concrete types: as generic code, each call looked up the wrapped type's metadata.
extension Optional: SupportedAttributeType where Wrapped: SupportedAttributeType {
    /// NULL for nil, else the wrapped value's.
    @inlinable
    public func encodePrimitiveValue() -> Wrapped.PrimitiveAttributeType? { map { $0.encodePrimitiveValue() } }
    /// nil for NULL, else the wrapped type's.
    @inlinable
    public static func decode(primitiveValue: Wrapped.PrimitiveAttributeType?) throws -> Wrapped? {
        try primitiveValue.map { try Wrapped.decode(primitiveValue: $0) }
    }
    /// The wrapped type's.
    public static var attributeColumnType: ColumnType { Wrapped.attributeColumnType }
    /// True.
    public static var isOptionalAttribute: Bool { true }
}

extension SupportedAttributeType where Self: RawRepresentable, RawValue: SupportedAttributeType {
    /// Its raw value's: an enum compares and sorts by its raw value.
    @inlinable
    public func encodePrimitiveValue() -> RawValue.PrimitiveAttributeType { rawValue.encodePrimitiveValue() }
    /// Through the raw value.
    /// - Throws: ``AttributeError/badInput(_:)`` for a raw value with no case.
    @inlinable
    public static func decode(primitiveValue: RawValue.PrimitiveAttributeType) throws -> Self {
        let raw = try RawValue.decode(primitiveValue: primitiveValue)
        guard let value = Self(rawValue: raw) else { throw AttributeError.badInput(raw) }
        return value
    }
    /// The raw value's.
    public static var attributeColumnType: ColumnType { RawValue.attributeColumnType }
}
