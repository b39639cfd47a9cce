import Foundation
import Unity

extension Query {
    /// The value at `path` inside this table's JSON column `column` (a `Codable` property), as
    /// `type`, for a condition of your own: `query.filter(query.json("settings", ["limits", "daily"], as: .integer).greaterThan(10))`.
    public func json(_ column: String, _ path: SQLJSONPath, as type: SQLJSONValueType = .text) -> SQLExpression {
        SQLExpression.column(tableName, column).jsonValue(at: path, as: type)
    }

    /// ANDs "the value at `path` of the JSON column `column`, as `type`, equals `value`":
    /// `Query<User>().filter(json: "settings", at: ["theme"], equals: "dark")`. A document
    /// without the value, or with a JSON `null` there, does not match; nor does a value of
    /// another JSON type (`"42"` is no `.integer` 42).
    public func filter(json column: String, at path: SQLJSONPath, as type: SQLJSONValueType = .text,
                       equals value: some DatabaseValueConvertible) -> Query {
        filter(json(column, path, as: type).equals(.bind(value.databaseValue)))
    }

    /// ANDs "the JSON column `column` contains `value` at `path`" (the root by default), as
    /// PostgreSQL's `@>` means it, on both backends:
    /// `filter(json: "settings", contains: ["tags": ["admin"]])`. Throws when `value` does not
    /// encode.
    public func filter(json column: String, contains value: some Encodable, at path: SQLJSONPath = []) throws -> Query {
        filter(try SQLExpression.column(tableName, column).jsonContains(value, at: path))
    }

    /// ANDs "the object at `path` of the JSON column `column` has the member `key`".
    public func filter(json column: String, hasKey key: String, at path: SQLJSONPath = []) -> Query {
        filter(SQLExpression.column(tableName, column).jsonHasKey(key, at: path))
    }

    /// ANDs "the record's text matches `search`" in the full-text index `index` of this table
    /// (Unity's syntax: words, `prefix*`, `"a phrase"`), and orders by relevance, best first,
    /// after the orderings added before.
    public func matching(_ search: String, in index: FullTextIndex) -> Query {
        filter(index.matches(search, table: tableName)).appendingOrders([index.relevance(search, table: tableName).desc])
    }
}
