import Foundation
import Unity

/// A condition built by the core's expressions, given the model and the query's alias.
struct ExpressionCondition {
    let compile: (ORMModel, String) throws -> SQLExpression
}

extension QuerySet {
    /// The mapped column `name` (a property's label or its column), or an ``ORMError`` naming it.
    static func jsonColumn(_ name: String, of model: ORMModel, alias: String) throws -> SQLExpression {
        guard let column = model.column(named: name) else { throw ORMError.unknownColumn(model: model.typeName, name: name) }
        return SQLExpression.column(alias, column.name)
    }

    /// Keeps the objects whose JSON column `column` (a `Codable` property) holds, at `path`, a
    /// value of `type` equal to `value`:
    /// `session.query(Dog.self).filter(json: "traits", at: ["coat", "color"], equals: "brown")`.
    /// A document without the value, or with a JSON `null` there, does not match.
    public func filter(json column: String, at path: SQLJSONPath, as type: SQLJSONValueType = .text,
                       equals value: some DatabaseValueConvertible) -> QuerySet {
        let bound = value.databaseValue
        return filter(json: column, at: path, as: type) { $0.equals(.bind(bound)) }
    }

    /// Keeps the objects for which `condition` holds of the value at `path` of the JSON column
    /// `column`: `filter(json: "traits", at: ["age"], as: .integer) { $0.greaterThan(3) }`.
    public func filter(json column: String, at path: SQLJSONPath, as type: SQLJSONValueType = .text,
                       _ condition: @escaping (SQLExpression) -> SQLExpression) -> QuerySet {
        var q = self
        q.expressionFilters.append(ExpressionCondition { model, alias in
            condition(try Self.jsonColumn(column, of: model, alias: alias).jsonValue(at: path, as: type))
        })
        return q
    }

    /// Keeps the objects whose JSON column `column` contains the JSON text `json` at `path`
    /// (the root by default), as PostgreSQL's `@>` means it, on both backends.
    public func filter(json column: String, contains json: String, at path: SQLJSONPath = []) -> QuerySet {
        var q = self
        q.expressionFilters.append(ExpressionCondition { model, alias in
            try Self.jsonColumn(column, of: model, alias: alias).jsonContains(json: json, at: path)
        })
        return q
    }

    /// Keeps the objects whose JSON column `column` has the member `key` in the object at
    /// `path` (the root by default).
    public func filter(json column: String, hasKey key: String, at path: SQLJSONPath = []) -> QuerySet {
        var q = self
        q.expressionFilters.append(ExpressionCondition { model, alias in
            try Self.jsonColumn(column, of: model, alias: alias).jsonHasKey(key, at: path)
        })
        return q
    }

    /// Keeps the objects whose text matches `query` in the full-text index `index` of their
    /// table (Unity's syntax: words, `prefix*`, `"a phrase"`) and orders them by relevance,
    /// best first, after the orders given before.
    public func search(_ query: String, in index: FullTextIndex) -> QuerySet {
        var q = self
        q.expressionFilters.append(ExpressionCondition { _, alias in index.matches(query, table: alias) })
        q.orderings.append(.expression { alias in index.relevance(query, table: alias).desc })
        return q
    }
}
