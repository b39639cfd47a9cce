/// Generates a `Codable` type's `PredicateJSONMapped` conformance: the JSON key each
/// stored property is written under (its `CodingKeys` raw value, or its name when the type has
/// no `CodingKeys`), so that `#Predicate` can read the type's members inside a JSON column:
///
/// ```swift
/// import UnityRowCoding
///
/// @JSONKeyPaths
/// struct Address: DatabaseJSONConvertible {
///     var city: String
///     var zip: String?
///     enum CodingKeys: String, CodingKey { case city, zip = "postal_code" }
/// }
/// ```
///
/// Static, computed and `lazy` properties, a `let` with a value and properties that
/// `CodingKeys` leaves out are not in the table, as a synthesized `Codable` conformance does
/// not write them. A type with a hand-written `encode(to:)` is refused with a diagnostic:
/// declare `predicateJSONKeys` by hand.
@attached(extension, conformances: PredicateJSONMapped, names: named(predicateJSONKeys))
public macro JSONKeyPaths() = #externalMacro(module: "UnityMacros", type: "JSONKeyPathsMacro")
