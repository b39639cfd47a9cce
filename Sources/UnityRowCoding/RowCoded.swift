@_exported import Unity

/// Generates a struct's `RowDecodable` and `RowEncodable` conformances: row
/// coding with no `Codable` container, column positions resolved once per result set, values
/// written straight into the statement. Attach it to a `ModelDef` and the model's fetches,
/// saves and batches use it instead of `Codable`:
///
/// ```swift
/// import UnityRowCoding
///
/// @RowCoded
/// struct Thing: ModelDef {
///     var tid: String
///     var name: String?
///     static let tableName = "Thing"
///     var existsInDatabase = false
///     var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
/// }
/// ```
///
/// Columns are the stored properties (named by `CodingKeys` when the type declares them).
/// A `DatabaseValueConvertible` property (numbers, strings, `Date`, `UUID`, `Decimal`, `Data`,
/// raw-value enums that conform) is stored as its value; any other `Codable` property as a JSON
/// document; an optional reads NULL or a missing column as nil; a `var` with a default keeps it
/// when the row has no such column; `existsInDatabase` is read as `true` and never written.
@attached(
    extension,
    conformances: RowDecodable, RowEncodable,
    names: named(decodingColumns), named(encodingColumns), named(init(row:columns:)), named(encodeRow(to:)),
    named(databaseValue(forColumn:)), named(columnName(for:))
)
public macro RowCoded() = #externalMacro(module: "UnityMacros", type: "RowCodedMacro")
