@_exported import Unity
import Foundation

/// A Swift type that an ``Attribute`` can store in one column, through the core's value
/// mapping (so every flavor reads what this one writes).
///
/// `PrimitiveAttributeType` is what the database compares: the type itself for the base types,
/// the raw value for a raw-value enum, the wrapped type's for an optional. Equality
/// operators need it `Equatable`, ordering operators and sorts `Comparable`, checked by the
/// compiler: so an enum sorts by its raw value even when the enum is not `Comparable`.
///
/// A `RawRepresentable` enum gets everything by declaring the conformance:
/// `enum Kind: String, SupportedAttributeType { case a, b }`.
public protocol SupportedAttributeType: Sendable {
    /// The type the database compares and sorts.
    associatedtype PrimitiveAttributeType
    /// The value bound for this Swift value.
    func encodePrimitiveValue() -> DatabaseValue
    /// The Swift value for a stored value, or nil when it cannot represent one.
    static func decode(primitiveValue: DatabaseValue) -> Self?
    /// The abstract column type that stores it.
    static var attributeColumnType: ColumnType { get }
    /// True for optionals: their column is nullable.
    static var isOptionalAttribute: Bool { get }
}

extension SupportedAttributeType {
    /// False, except for `Optional`.
    public static var isOptionalAttribute: Bool { false }
}

/// The base types: the core's `DatabaseValueConvertible` mapping.
public protocol CoreMappedAttributeType: SupportedAttributeType, DatabaseValueConvertible where PrimitiveAttributeType == Self {}

extension CoreMappedAttributeType {
    /// The core's database value.
    @inlinable public func encodePrimitiveValue() -> DatabaseValue { databaseValue }
    /// The core's conversion.
    @inlinable public static func decode(primitiveValue: DatabaseValue) -> Self? { fromDatabaseValue(primitiveValue) }
    /// The core's column type.
    public static var attributeColumnType: ColumnType { columnType }
}

extension Int: CoreMappedAttributeType {}
extension Int64: CoreMappedAttributeType {}
extension Int32: CoreMappedAttributeType {}
extension Int16: CoreMappedAttributeType {}
extension Int8: CoreMappedAttributeType {}
extension UInt8: CoreMappedAttributeType {}
extension UInt16: CoreMappedAttributeType {}
extension UInt32: CoreMappedAttributeType {}
extension Double: CoreMappedAttributeType {}
extension Float: CoreMappedAttributeType {}
extension Bool: CoreMappedAttributeType {}
extension String: CoreMappedAttributeType {}
extension Date: CoreMappedAttributeType {}
extension UUID: CoreMappedAttributeType {}
extension Decimal: CoreMappedAttributeType {}
extension Data: CoreMappedAttributeType {}

extension URL: SupportedAttributeType {
    /// URLs compare as their text.
    public typealias PrimitiveAttributeType = String
    /// The absolute string, as text.
    @inlinable
    public func encodePrimitiveValue() -> DatabaseValue { .text(absoluteString) }
    /// Parsed from text; nil for text that is not a URL.
    @inlinable
    public static func decode(primitiveValue: DatabaseValue) -> URL? {
        guard let text = String.fromDatabaseValue(primitiveValue) else { return nil }
        return URL(string: text)
    }
    /// Text.
    public static var attributeColumnType: ColumnType { .text }
}

// The conversions below are inlinable so that a model's attribute closures are compiled for
// the concrete types: as generic code, each call looked up the wrapped type's metadata.
extension Optional: SupportedAttributeType where Wrapped: SupportedAttributeType {
    /// The wrapped type's.
    public typealias PrimitiveAttributeType = Wrapped.PrimitiveAttributeType
    /// NULL for nil.
    @inlinable
    public func encodePrimitiveValue() -> DatabaseValue {
        switch self {
        case .none: return .null
        case .some(let value): return value.encodePrimitiveValue()
        }
    }
    /// `.some(nil)` for NULL.
    @inlinable
    public static func decode(primitiveValue: DatabaseValue) -> Wrapped?? {
        if case .null = primitiveValue { return .some(nil) }
        return Wrapped.decode(primitiveValue: primitiveValue).map { .some($0) }
    }
    /// The wrapped type's.
    public static var attributeColumnType: ColumnType { Wrapped.attributeColumnType }
    /// True.
    public static var isOptionalAttribute: Bool { true }
}

extension SupportedAttributeType where Self: RawRepresentable, RawValue: SupportedAttributeType {
    /// The raw value's primitive: an enum compares and sorts by its raw value.
    public typealias PrimitiveAttributeType = RawValue.PrimitiveAttributeType
    /// Its raw value's.
    @inlinable
    public func encodePrimitiveValue() -> DatabaseValue { rawValue.encodePrimitiveValue() }
    /// Through the raw value; nil for a raw value with no case.
    @inlinable
    public static func decode(primitiveValue: DatabaseValue) -> Self? {
        RawValue.decode(primitiveValue: primitiveValue).flatMap { Self(rawValue: $0) }
    }
    /// The raw value's.
    public static var attributeColumnType: ColumnType { RawValue.attributeColumnType }
}
