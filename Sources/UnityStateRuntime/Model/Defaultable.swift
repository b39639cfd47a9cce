import Foundation

/// A type with a natural default value, used by `@Property` when the declaration gives none
/// (`@Property(id: 1) var count: Int` is 0 until set).
public protocol Defaultable {
    /// The value a property of this type has when nothing is stored for it.
    static var `default`: Self { get }
}

extension Int: Defaultable { public static var `default`: Int { 0 } }
extension Int8: Defaultable { public static var `default`: Int8 { 0 } }
extension Int16: Defaultable { public static var `default`: Int16 { 0 } }
extension Int32: Defaultable { public static var `default`: Int32 { 0 } }
extension Int64: Defaultable { public static var `default`: Int64 { 0 } }
extension UInt: Defaultable { public static var `default`: UInt { 0 } }
extension UInt8: Defaultable { public static var `default`: UInt8 { 0 } }
extension UInt16: Defaultable { public static var `default`: UInt16 { 0 } }
extension UInt32: Defaultable { public static var `default`: UInt32 { 0 } }
extension UInt64: Defaultable { public static var `default`: UInt64 { 0 } }
extension Double: Defaultable { public static var `default`: Double { 0 } }
extension Float: Defaultable { public static var `default`: Float { 0 } }
#if !((os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64))
// Float16 does not exist on Intel Macs.
extension Float16: Defaultable { public static var `default`: Float16 { 0 } }
#endif
extension Bool: Defaultable { public static var `default`: Bool { false } }
extension String: Defaultable { public static var `default`: String { "" } }
extension Data: Defaultable { public static var `default`: Data { Data() } }
extension Array: Defaultable { public static var `default`: [Element] { [] } }
extension ContiguousArray: Defaultable { public static var `default`: ContiguousArray<Element> { [] } }
extension Set: Defaultable { public static var `default`: Set<Element> { [] } }
extension Dictionary: Defaultable { public static var `default`: [Key: Value] { [:] } }

/// An optional, whatever it wraps: its default is nil.
public protocol AnyOptional {
    /// `nil` of this optional type.
    static var nilValue: Self { get }
}

extension Optional: AnyOptional {
    /// `nil`.
    public static var nilValue: Wrapped? { nil }
}

/// The default of a type that has one (used by the code `@Model` generates for `create`'s
/// parameters).
@inlinable public func stateDefault<T: Defaultable>(_ type: T.Type) -> T { T.default }

/// nil, the default of every optional (used by the code `@Model` generates).
@inlinable public func stateDefault<T: AnyOptional>(_ type: T.Type) -> T { T.nilValue }

/// Whether `value` equals `defaultValue`; a type that is not `Equatable` is never equal to its
/// default, so `create(in:…)` always stores it (used by the code `@Model` generates).
@inlinable public func stateIsDefault<T>(_ value: T, _ defaultValue: T) -> Bool { false }

/// Whether `value` equals `defaultValue` (used by the code `@Model` generates).
@inlinable public func stateIsDefault<T: Equatable>(_ value: T, _ defaultValue: T) -> Bool { value == defaultValue }
