import Foundation

/// Conditions built with the core's expressions (JSON paths, full-text search) beside sModel's
/// raw WHERE clauses.
extension ModelDef {
    /// The models of the rows that match a condition built with the core's expressions, in the
    /// order given: `Thing.instances(where: SQLExpression.column("settings").jsonValue(at: ["theme"]).equals("dark"))`.
    /// For a model with `@RowCoded` (or `columnName(for:)`), ``column(_:)`` gives typed operands:
    /// `try Invoice.instances(where: Invoice.column(\.total).greaterThanOrEquals(Decimal(10)), orderedBy: [.descending(\Invoice.total)])`.
    public static func instances(where condition: SQLExpression, orderedBy ordering: [ModelOrdering] = [],
                                 in db: Database? = nil) throws -> [Self] {
        try fetchAll(select(where: condition, ordering), in: db)
    }

    /// The number of rows for which `condition` holds.
    public static func count(where condition: SQLExpression, in db: Database? = nil) throws -> Int {
        try countRows(where: condition, in: db)
    }

    /// The rows whose JSON column `column` holds, at `path`, a value of `type` equal to
    /// `value`: `Thing.instances(json: "settings", at: ["theme"], equals: "dark")`. A document
    /// without the value, or with a JSON `null` there, does not match.
    public static func instances(json column: String, at path: SQLJSONPath, as type: SQLJSONValueType = .text,
                                 equals value: some DatabaseValueConvertible, orderedBy ordering: [ModelOrdering] = [],
                                 in db: Database? = nil) throws -> [Self] {
        try instances(where: SQLExpression.column(tableName, column).jsonValue(at: path, as: type).equals(.bind(value.databaseValue)),
                      orderedBy: ordering, in: db)
    }

    /// The rows whose text matches `query` in the full-text index `index` of this model's table
    /// (Unity's syntax: words, `prefix*`, `"a phrase"`), best match first; at most `limit`.
    public static func search(_ query: String, in index: FullTextIndex, limit: Int? = nil,
                              in db: Database? = nil) throws -> [Self] {
        var select = select(where: index.matches(query, table: tableName),
                            [ModelOrdering(index.relevance(query, table: tableName).desc)])
        select.limit = limit
        return try fetchAll(select, in: db)
    }
}

extension ModelOrdering {
    /// Best match of `query` in `index` first.
    public static func relevance(_ query: String, in index: FullTextIndex) -> ModelOrdering {
        ModelOrdering(index.relevance(query).desc)
    }
}
