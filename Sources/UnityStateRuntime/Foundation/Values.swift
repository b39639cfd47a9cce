import Foundation

/// A value that can be stored as a property of a model: every `Codable` type.
///
/// A typealias, as in StateModel, so that models declare plain Swift types. The SQL stores keep
/// integers, floating-point numbers, strings and `Data` in typed tables and encode every other
/// value with the encoder they are given.
public typealias DatabaseValue = Codable

/// Whether an instance exists or was deleted (it keeps its values when deleted).
public enum InstanceStatus: UInt8, Codable, Sendable, CaseIterable, CustomStringConvertible {

    /// The instance exists.
    case created = 1

    /// The instance was deleted; its property values are kept and `insert()` restores it.
    case deleted = 2

    /// `created` or `deleted`.
    public var description: String {
        switch self {
        case .created: "created"
        case .deleted: "deleted"
        }
    }
}

/// A value together with the time it was written.
///
/// Deliberately not `Codable`: it would then be a ``DatabaseValue`` itself, and
/// `get(_:) -> Timestamped<V>?` could not be told from `get(_:) -> V?`.
public struct Timestamped<Value> {

    /// The value.
    public let value: Value

    /// When the value was written.
    public let date: Date

    /// Wraps a value with its write time.
    public init(value: Value, date: Date) {
        self.value = value
        self.date = date
    }
}

extension Timestamped: Sendable where Value: Sendable {}
extension Timestamped: Equatable where Value: Equatable {}
extension Timestamped: Hashable where Value: Hashable {}


/// An encoder that turns a `Codable` value into `Data` (`JSONEncoder` and
/// `PropertyListEncoder` conform), used for values the SQL stores do not keep natively, for
/// synchronization messages and for command arguments.
public protocol GenericEncoder {
    /// Encodes `value` as data.
    func encode<T: Encodable>(_ value: T) throws -> Data
}

/// A decoder that turns `Data` back into a `Codable` value (`JSONDecoder` and
/// `PropertyListDecoder` conform).
public protocol GenericDecoder {
    /// Decodes a value of `type` from `data`.
    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T
}

extension JSONEncoder: GenericEncoder {}
extension JSONDecoder: GenericDecoder {}
extension PropertyListEncoder: GenericEncoder {}
extension PropertyListDecoder: GenericDecoder {}
