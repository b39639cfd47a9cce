import Foundation

/// A condition built by the core's expressions for the request's table (or alias): JSON
/// paths and full-text search.
struct QualifiedCondition: Sendable {
    let make: @Sendable (String) throws -> SQLExpression
}

/// A value inside a JSON attribute (a `Codable` property stored as JSON), compared with the
/// operators `==`, `!=`, `<`, `<=`, `>`, `>=`:
///
/// ```swift
/// let dark = Query.json(\Person.settings, ["theme"]) == "dark"
/// let busy = Query.json(\Person.settings, ["limits", "daily"], as: .integer) > 10
/// ```
///
/// The comparisons mean what SQL means, as this flavor's other operators do: a document
/// without the value (or with a JSON `null` there) matches neither `==` nor `!=`.
public struct JSONPathValue<Root: ManagedObjectConvertible>: Sendable {
    let column: String?
    let keyPathDescription: String
    let path: SQLJSONPath
    let type: SQLJSONValueType

    func predicate(_ make: @escaping @Sendable (SQLExpression) -> SQLExpression) -> QueryPredicate {
        guard let column else {
            return QueryPredicate(.invalid(.unknownAttribute(entity: Root.entityName, keyPath: keyPathDescription)))
        }
        let path = self.path, type = self.type
        return QueryPredicate(.expression(QualifiedCondition { q in
            make(SQLExpression.column(q, column).jsonValue(at: path, as: type))
        }))
    }

    /// True when the value is absent or a JSON `null` (or the attribute is nil).
    public var isNull: QueryPredicate { predicate { $0.isNull } }
    /// True when the value is there and not a JSON `null`.
    public var isNotNull: QueryPredicate { predicate { $0.isNotNull } }
}

extension Query {
    /// The value at `path` inside the JSON attribute `keyPath`, as `type` (see
    /// `SQLJSONValueType`), for comparing with an operator.
    public static func json<T: ManagedObjectConvertible, A>(_ keyPath: KeyPath<T, A>, _ path: SQLJSONPath,
                                                            as type: SQLJSONValueType = .text) -> JSONPathValue<T> {
        JSONPathValue(column: T.columnName(keyPath), keyPathDescription: "\(keyPath)", path: path, type: type)
    }

    /// True when the JSON attribute `keyPath` contains the JSON text `json` at `path` (the
    /// root by default), as PostgreSQL's `@>` means it, on both backends.
    public static func jsonContains<T: ManagedObjectConvertible, A>(_ keyPath: KeyPath<T, A>, json: String,
                                                                    at path: SQLJSONPath = []) -> QueryPredicate {
        guard let column = T.columnName(keyPath) else { return .unknownAttribute(T.entityName, keyPath) }
        return QueryPredicate(.expression(QualifiedCondition { q in
            SQLExpression.column(q, column).jsonContains(json: json, at: path)
        }))
    }

    /// True when the object at `path` (the root by default) of the JSON attribute `keyPath`
    /// has the member `key`, whatever its value.
    public static func jsonHasKey<T: ManagedObjectConvertible, A>(_ keyPath: KeyPath<T, A>, _ key: String,
                                                                  at path: SQLJSONPath = []) -> QueryPredicate {
        guard let column = T.columnName(keyPath) else { return .unknownAttribute(T.entityName, keyPath) }
        return QueryPredicate(.expression(QualifiedCondition { q in
            SQLExpression.column(q, column).jsonHasKey(key, at: path)
        }))
    }

    /// True for the objects whose text matches `query` (Unity's search syntax: words, `prefix*`,
    /// `"a phrase"`) in the full-text index `index` of their table. Order the results with
    /// ``Request/sortByRelevance(_:in:)``.
    public static func matches(_ query: String, in index: FullTextIndex) -> QueryPredicate {
        QueryPredicate(.expression(QualifiedCondition { q in index.matches(query, table: q) }))
    }
}

/// `value == x` inside a JSON attribute.
public func == <T>(lhs: JSONPathValue<T>, rhs: some DatabaseValueConvertible) -> QueryPredicate {
    let value = rhs.databaseValue
    return lhs.predicate { .binary($0, .equal, .bind(value)) }
}
/// `value <> x` inside a JSON attribute.
public func != <T>(lhs: JSONPathValue<T>, rhs: some DatabaseValueConvertible) -> QueryPredicate {
    let value = rhs.databaseValue
    return lhs.predicate { .binary($0, .notEqual, .bind(value)) }
}
/// `value < x` inside a JSON attribute.
public func < <T>(lhs: JSONPathValue<T>, rhs: some DatabaseValueConvertible) -> QueryPredicate {
    let value = rhs.databaseValue
    return lhs.predicate { .binary($0, .less, .bind(value)) }
}
/// `value <= x` inside a JSON attribute.
public func <= <T>(lhs: JSONPathValue<T>, rhs: some DatabaseValueConvertible) -> QueryPredicate {
    let value = rhs.databaseValue
    return lhs.predicate { .binary($0, .lessOrEqual, .bind(value)) }
}
/// `value > x` inside a JSON attribute.
public func > <T>(lhs: JSONPathValue<T>, rhs: some DatabaseValueConvertible) -> QueryPredicate {
    let value = rhs.databaseValue
    return lhs.predicate { .binary($0, .greater, .bind(value)) }
}
/// `value >= x` inside a JSON attribute.
public func >= <T>(lhs: JSONPathValue<T>, rhs: some DatabaseValueConvertible) -> QueryPredicate {
    let value = rhs.databaseValue
    return lhs.predicate { .binary($0, .greaterOrEqual, .bind(value)) }
}

extension Request {
    /// Sorts by how well each object matches `query` in `index`, best first (after the sorts
    /// added before). The engines rank differently (FTS5's bm25, PostgreSQL's `ts_rank`):
    /// clear differences order alike, near ties may not.
    public func sortByRelevance(_ query: String, in index: FullTextIndex) -> Request {
        var r = self
        r.sortTerms.append(SortTerm(ordering: QualifiedOrdering { q in index.relevance(query, table: q).desc }))
        return r
    }
}

/// An ordering built by the core's expressions for the request's table.
struct QualifiedOrdering: Sendable {
    let make: @Sendable (String) -> SQLOrdering
}
