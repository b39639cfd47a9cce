import Foundation
import Unity

/// What every query of the flavor does, whatever its record type is known as: Tailor's
/// `QueryType`. ``Query`` conforms with its record type in its own type; ``GenericQuery``
/// takes the record type as a value, so code that handles queries of any record type
/// (`[any QueryType]`, a function over `some QueryType`) can build and run them.
///
/// The builders return a query of the same type, with the same meaning as ``Query``'s;
/// ``allRecords(_:)`` returns the records as `any Persistable` (``Query/all(_:)`` keeps the
/// record type).
public protocol QueryType: Sendable {
    /// The type of the records the query reads.
    var recordType: any Persistable.Type { get }
    /// The table the query reads.
    var tableName: String { get }
    /// The query as the core's SELECT value.
    var statement: SQLSelect { get }

    /// ANDs a raw condition with `?` placeholders, its values bound.
    func filter(_ sql: String, _ values: [any DatabaseValueConvertible]) -> Self
    /// ANDs `column = value` per entry (nil: `IS NULL`), columns quoted and qualified; for `IN`
    /// use ``filter(_:inList:)``.
    func filter(_ conditions: [String: (any DatabaseValueConvertible)?]) -> Self
    /// ANDs `column IN (values…)`; an empty list matches nothing.
    func filter<Value: DatabaseValueConvertible>(_ column: String, inList list: [Value]) -> Self
    /// ANDs a condition built with the core's expressions.
    func filter(_ condition: SQLExpression) -> Self
    /// Adds a raw join clause with its values bound.
    func join(_ sql: String, _ values: [any DatabaseValueConvertible]) -> Self
    /// Adds `INNER JOIN other ON other.fromColumn = this.toColumn`.
    func join<Other: Persistable>(_ recordType: Other.Type, fromColumn: String, toColumn: String) -> Self
    /// Adds an ordering on a column of the table.
    func order(_ column: String, _ order: ComparisonResult) -> Self
    /// Limits the number of records; a second limit only lowers the first.
    func limit(_ count: Int) -> Self
    /// Skips the first `count` records.
    func offset(_ count: Int) -> Self
    /// Flips every ordering (a query without one: by id, descending).
    func reverse() -> Self
    /// Replaces the select list with a raw fragment.
    func select(_ sql: String, _ values: [any DatabaseValueConvertible]) -> Self

    /// The SQL in `dialect`'s spelling with `?` placeholders (see ``Query/toSql(dialect:)``).
    func toSql(dialect: SQLDialect) throws -> RenderedSQL
    /// The SQL in the dialect of `database` (the default database when nil).
    func toSql(_ database: Database?) throws -> RenderedSQL
    /// Every record of the query, as `any Persistable`; a failure is logged and answers `[]`.
    func allRecords(_ database: Database?) -> [any Persistable]
    /// Every record of the query; throws the database's error or the first row's decoding error.
    func allRecordsOrThrow(_ database: Database?) throws -> [any Persistable]
    /// How many records the query would fetch; a failure is logged and answers 0.
    func count(_ database: Database?) -> Int
    /// How many records the query would fetch; throws on failure.
    func countOrThrow(_ database: Database?) throws -> Int
    /// True when the query has no records; a failure is logged and answers true.
    func isEmpty(_ database: Database?) -> Bool
    /// True when the query has no records; throws on failure.
    func isEmptyOrThrow(_ database: Database?) throws -> Bool
}

extension QueryType {
    /// Every record of the query on the default database, as `any Persistable` (Tailor's
    /// `allRecords()`).
    @_disfavoredOverload
    public func allRecords() -> [any Persistable] { allRecords(nil) }

    /// ``allRecordsOrThrow(_:)`` on the default database.
    @_disfavoredOverload
    public func allRecordsOrThrow() throws -> [any Persistable] { try allRecordsOrThrow(nil) }

    /// ``count(_:)`` on the default database.
    @_disfavoredOverload
    public func count() -> Int { count(nil) }

    /// ``isEmpty(_:)`` on the default database.
    @_disfavoredOverload
    public func isEmpty() -> Bool { isEmpty(nil) }

    /// ``toSql(_:)`` on the default database's dialect.
    @_disfavoredOverload
    public func toSql() throws -> RenderedSQL { try toSql(nil) }

    /// ``filter(_:_:)-(String,_)`` without values.
    @_disfavoredOverload
    public func filter(_ sql: String) -> Self { filter(sql, []) }

    /// ``join(_:_:)`` without values.
    @_disfavoredOverload
    public func join(_ sql: String) -> Self { join(sql, []) }

    /// ``select(_:_:)`` without values.
    @_disfavoredOverload
    public func select(_ sql: String) -> Self { select(sql, []) }
}

extension Query: QueryType {
    /// `Record`.
    public var recordType: any Persistable.Type { Record.self }

    /// Every record of the query as `any Persistable` (``all(_:)`` keeps the type).
    public func allRecords(_ database: Database? = nil) -> [any Persistable] {
        all(database).map { $0 }
    }

    /// ``allOrThrow(_:)`` as `any Persistable`.
    public func allRecordsOrThrow(_ database: Database? = nil) throws -> [any Persistable] {
        try allOrThrow(database).map { $0 }
    }
}

/// A query whose record type is a value given to its initializer, not part of its type:
/// Tailor's `GenericQuery`. It builds and runs the same SQL as ``Query`` of that type.
///
/// ```swift
/// let recordTypes: [any Persistable.Type] = [Hat.self, Store.self]
/// for type in recordTypes {
///     let query = GenericQuery(recordType: type).order("id", .orderedAscending).limit(10)
///     for record in query.allRecords() { print(type.tableName, record.id ?? 0) }
/// }
/// ```
public struct GenericQuery: QueryType, Equatable {
    /// The typed query every call goes to.
    private let base: any QueryType

    /// A query for every record of `recordType`.
    public init(recordType: any Persistable.Type) {
        func typed<Record: Persistable>(_ type: Record.Type) -> any QueryType { Query<Record>() }
        base = typed(recordType)
    }

    private init(base: any QueryType) { self.base = base }

    /// The type of the records the query reads.
    public var recordType: any Persistable.Type { base.recordType }
    /// The table the query reads.
    public var tableName: String { base.tableName }
    /// The query as the core's SELECT value.
    public var statement: SQLSelect { base.statement }

    /// See ``QueryType/filter(_:_:)-(String,_)``.
    public func filter(_ sql: String, _ values: [any DatabaseValueConvertible]) -> GenericQuery {
        GenericQuery(base: base.filter(sql, values))
    }
    /// See the dictionary form of `QueryType.filter(_:)`.
    public func filter(_ conditions: [String: (any DatabaseValueConvertible)?]) -> GenericQuery {
        GenericQuery(base: base.filter(conditions))
    }
    /// See ``QueryType/filter(_:inList:)``.
    public func filter<Value: DatabaseValueConvertible>(_ column: String, inList list: [Value]) -> GenericQuery {
        GenericQuery(base: base.filter(column, inList: list))
    }
    /// See ``QueryType/filter(_:)-(SQLExpression)``.
    public func filter(_ condition: SQLExpression) -> GenericQuery {
        GenericQuery(base: base.filter(condition))
    }
    /// See ``QueryType/join(_:_:)``.
    public func join(_ sql: String, _ values: [any DatabaseValueConvertible]) -> GenericQuery {
        GenericQuery(base: base.join(sql, values))
    }
    /// See ``QueryType/join(_:fromColumn:toColumn:)``.
    public func join<Other: Persistable>(_ recordType: Other.Type, fromColumn: String, toColumn: String) -> GenericQuery {
        GenericQuery(base: base.join(recordType, fromColumn: fromColumn, toColumn: toColumn))
    }
    /// See ``QueryType/order(_:_:)``.
    public func order(_ column: String, _ order: ComparisonResult) -> GenericQuery {
        GenericQuery(base: base.order(column, order))
    }
    /// See ``QueryType/limit(_:)``.
    public func limit(_ count: Int) -> GenericQuery { GenericQuery(base: base.limit(count)) }
    /// See ``QueryType/offset(_:)``.
    public func offset(_ count: Int) -> GenericQuery { GenericQuery(base: base.offset(count)) }
    /// See ``QueryType/reverse()``.
    public func reverse() -> GenericQuery { GenericQuery(base: base.reverse()) }
    /// See ``QueryType/select(_:_:)``.
    public func select(_ sql: String, _ values: [any DatabaseValueConvertible]) -> GenericQuery {
        GenericQuery(base: base.select(sql, values))
    }

    /// See ``QueryType/toSql(dialect:)``.
    public func toSql(dialect: SQLDialect) throws -> RenderedSQL { try base.toSql(dialect: dialect) }
    /// See ``QueryType/toSql(_:)``.
    public func toSql(_ database: Database?) throws -> RenderedSQL { try base.toSql(database) }
    /// See ``QueryType/allRecords(_:)``.
    public func allRecords(_ database: Database?) -> [any Persistable] { base.allRecords(database) }
    /// See ``QueryType/allRecordsOrThrow(_:)``.
    public func allRecordsOrThrow(_ database: Database?) throws -> [any Persistable] { try base.allRecordsOrThrow(database) }
    /// See ``QueryType/count(_:)``.
    public func count(_ database: Database?) -> Int { base.count(database) }
    /// See ``QueryType/countOrThrow(_:)``.
    public func countOrThrow(_ database: Database?) throws -> Int { try base.countOrThrow(database) }
    /// See ``QueryType/isEmpty(_:)``.
    public func isEmpty(_ database: Database?) -> Bool { base.isEmpty(database) }
    /// See ``QueryType/isEmptyOrThrow(_:)``.
    public func isEmptyOrThrow(_ database: Database?) throws -> Bool { try base.isEmptyOrThrow(database) }

    /// Two queries are equal when they read the same record type with the same statement.
    public static func == (lhs: GenericQuery, rhs: GenericQuery) -> Bool {
        ObjectIdentifier(lhs.recordType) == ObjectIdentifier(rhs.recordType) && lhs.statement == rhs.statement
    }
}
