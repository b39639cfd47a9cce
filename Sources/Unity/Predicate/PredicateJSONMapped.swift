import Foundation

/// A `Codable` type stored as a JSON document (a ``DatabaseJSONConvertible`` property) that
/// says which JSON key each of its stored properties is written under, so that `#Predicate`
/// can reach inside it: `#Predicate<Person> { $0.address.city == "Oslo" }` reads the member
/// `city` of the document in the `address` column, on SQLite and PostgreSQL alike.
///
/// The table is declared, never guessed: a synthesized `Codable` conformance writes each
/// stored property under its `CodingKeys` raw value (its name when there is no `CodingKeys`
/// enum); a hand-written `encode(to:)` writes whatever it writes, and the table must say so.
///
/// ```swift
/// struct Geo: Codable, PredicateJSONMapped {
///     var lat: Double
///     var lon: Double
///     static var predicateJSONKeys: [PartialKeyPath<Geo>: String] { [\.lat: "lat", \.lon: "lon"] }
/// }
///
/// struct Address: DatabaseJSONConvertible, PredicateJSONMapped {
///     var city: String
///     var zip: String?
///     var geo: Geo?
///     enum CodingKeys: String, CodingKey { case city, zip = "postal_code", geo }
///     static var predicateJSONKeys: [PartialKeyPath<Address>: String] {
///         [\.city: "city", \.zip: "postal_code", \.geo: "geo"]
///     }
/// }
/// ```
///
/// A member whose type is itself `PredicateJSONMapped` is a nested object (`$0.address.geo?.lat`).
/// A member that is nil is written by a synthesized conformance as an absent key; an absent key
/// and a JSON `null` both read as nil. Members of other types translate when their JSON form
/// compares as Swift compares them: `String` (and `Character`), the integer types up to 64
/// bits, `Double`, `Bool`, `Decimal`, `Date` (Unity's date text), `UUID` and raw-value enums
/// of these. An array, a dictionary, `Float` or `Data` member, and any key path the table
/// does not list, throws ``PredicateTranslationError`` naming the key path before any SQL runs.
public protocol PredicateJSONMapped: Encodable {
    /// The JSON key each stored property is written under, by its key path.
    static var predicateJSONKeys: [PartialKeyPath<Self>: String] { get }
}

extension PredicateJSONMapped {
    /// The JSON key `keyPath` is written under, or nil when the table does not list it.
    static func predicateJSONKey(for keyPath: AnyKeyPath) -> String? {
        guard let partial = keyPath as? PartialKeyPath<Self> else { return nil }
        return predicateJSONKeys[partial]
    }
}

/// How a member of a JSON document is read and compared in SQL.
enum PredicateJSONLeaf {
    /// A nested object with its own key table.
    case object(any PredicateJSONMapped.Type)
    /// A scalar, extracted as `type`; `kind` says how it compares.
    case scalar(SQLJSONValueType, PredicateTranslator.Traits.Kind)

    /// The leaf for a member of (unwrapped) type `type`, or nil when its JSON form does not
    /// compare in SQL as the Swift value does.
    static func of(_ type: Any.Type) -> PredicateJSONLeaf? {
        if let mapped = type as? any PredicateJSONMapped.Type { return .object(mapped) }
        switch type {
        case is String.Type, is Character.Type: return .scalar(.string, .text)
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type,
             is UInt32.Type, is UInt16.Type, is UInt8.Type:
            return .scalar(.integer, .other)
        case is Double.Type: return .scalar(.double, .other)
        case is Bool.Type: return .scalar(.bool, .boolean)
        case is Decimal.Type: return .scalar(.decimal, .decimal)
        case is Date.Type, is UUID.Type: return .scalar(.string, .encodedText)
        default:
            if let raw = type as? any RawRepresentable.Type, case .scalar(let t, let kind)? = of(rawValueType(raw)),
               kind != .encodedText {
                return .scalar(t, kind)
            }
            return nil
        }
    }

    private static func rawValueType<R: RawRepresentable>(_ type: R.Type) -> Any.Type { R.RawValue.self }
}
