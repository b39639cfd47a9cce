import Foundation
import Logging
import Unity

/// An immutable query for records of one ``Persistable`` type, as Tailor's `Query<T>`.
/// Every builder returns a new query and leaves the original as it was.
///
/// ```swift
/// let query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", [10])
///     .order("brim_size", .orderedAscending)
/// let hats = query.all()          // SELECT * FROM "hats" WHERE "hats"."color" = ? AND (brim_size > ?) ORDER BY …
/// let last = query.last()         // … ORDER BY "hats"."brim_size" DESC LIMIT 1
/// ```
///
/// Column names given as strings (`order`, a dictionary `filter`, `filter(_:inList:)`,
/// `join(_:fromColumn:toColumn:)`) are quoted identifiers qualified with their table. Raw
/// fragments (`filter("…", […])`, `join("…", […])`, `select("…")`) are the caller's SQL, with
/// their values bound and `?` rewritten for the backend.
///
/// Calls that run the query take an optional database as their last argument; without one they
/// use `DefaultDatabase.current`. The seed's non-throwing calls (`all()`, `first()`, …) log
/// a failure and answer empty; the `…OrThrow` calls throw it.
public struct Query<Record: Persistable>: Sendable, Equatable {
    /// The table the query reads.
    public let tableName: String
    /// The raw select list, or nil for every column (the table's own when joined).
    public private(set) var selectClause: SQLFragment?
    /// The WHERE conditions, AND-ed together.
    public private(set) var filters: [SQLExpression]
    /// The joins, in order.
    public private(set) var joins: [SQLJoin]
    /// The ORDER BY terms, first added first.
    public private(set) var orders: [SQLOrdering]
    /// LIMIT.
    public private(set) var limitCount: Int?
    /// OFFSET.
    public private(set) var offsetCount: Int?
    /// Whether a raw fragment of the caller's SQL is part of the query. Such a query reads in a
    /// read-only transaction (which refuses a write hidden in the fragment); a query built only
    /// from column names runs its one SELECT by itself, which sees one snapshot anyway and saves
    /// BEGIN and COMMIT (two round trips on PostgreSQL).
    public private(set) var containsRawSQL: Bool

    /// A query for every record of `Record`.
    public init() {
        tableName = Record.tableName
        selectClause = nil
        filters = []
        joins = []
        orders = []
        limitCount = nil
        offsetCount = nil
        containsRawSQL = false
    }

    // MARK: Building

    /// ANDs a raw condition with `?` placeholders: `filter("brim_size > ?", [10])`. The values
    /// are bound, never pasted into the text.
    public func filter(_ sql: String, _ values: [any DatabaseValueConvertible] = []) -> Query {
        if sql.isEmpty { return self }
        return filter(.fragment(SQLFragment(sql, values.map(\.databaseValue))))
    }

    /// ANDs one condition per entry of `conditions`: column = value, `IS NULL` for nil, as
    /// Tailor. Columns are quoted and qualified with the table name. A `[UInt8]` or `Data`
    /// value is a blob compared for equality, as everywhere in Unity; for `IN (…)` use
    /// ``filter(_:inList:)``.
    /// A `Decimal` value (or a column in ``Persistable/decimalColumns``) compares as a number
    /// on every backend.
    public func filter(_ conditions: [String: (any DatabaseValueConvertible)?]) -> Query {
        var query = self
        for column in conditions.keys.sorted() {
            switch conditions[column] ?? nil {
            case nil:
                query = query.filter(operand(column, decimal: false).isNull)
            case let value?:
                let bound = value.databaseValue
                let target = operand(column, decimal: value is Decimal)
                query = query.filter(bound.isNull ? target.isNull : target.equals(.bind(bound)))
            }
        }
        return query
    }

    /// ANDs `column IN (values…)`, Tailor's `filter(_:inList:)`. The column is quoted and
    /// qualified; an empty list matches nothing. `Decimal` values (or a column in
    /// ``Persistable/decimalColumns``) compare as numbers.
    public func filter<Value: DatabaseValueConvertible>(_ column: String, inList list: [Value]) -> Query {
        let decimal = Value.self == Decimal.self || Value.self == Decimal?.self
        return filter(.inList(operand(column, decimal: decimal), list.map { .bind($0.databaseValue) }, negated: false))
    }

    /// The qualified column, as a number when it holds decimals (`decimal`, or listed in the
    /// record type's ``Persistable/decimalColumns``).
    func operand(_ column: String, decimal: Bool) -> SQLExpression {
        let target = SQLExpression.column(tableName, column)
        return decimal || Record.decimalColumns.contains(column) ? .decimal(target) : target
    }

    /// ANDs a condition built with the core's expressions.
    public func filter(_ condition: SQLExpression) -> Query {
        var query = self
        query.filters.append(condition)
        if case .fragment = condition { query.containsRawSQL = true }
        return query
    }

    /// Adds a raw join clause, JOIN keyword included (`"LEFT JOIN stores ON stores.id = hats.store_id"`),
    /// with its values bound. With a join, `*` becomes the table's own columns.
    public func join(_ sql: String, _ values: [any DatabaseValueConvertible] = []) -> Query {
        var query = self
        query.joins.append(.fragment(SQLFragment(sql, values.map(\.databaseValue))))
        query.containsRawSQL = true
        return query
    }

    /// Adds `INNER JOIN other ON other.fromColumn = this.toColumn`, both columns quoted:
    /// `Query<Hat>().join(Store.self, fromColumn: "id", toColumn: "store_id")`.
    public func join<Other: Persistable>(_ recordType: Other.Type, fromColumn: String, toColumn: String) -> Query {
        var query = self
        query.joins.append(.join(.inner, .table(Other.tableName),
                                 on: SQLExpression.column(Other.tableName, fromColumn).equals(.column(tableName, toColumn))))
        return query
    }

    /// Adds an ordering on a column of this table; orderings apply in the order they were added.
    /// `.orderedSame` keeps ascending order. A column in ``Persistable/decimalColumns`` orders
    /// as a number on every backend.
    public func order(_ column: String, _ order: ComparisonResult) -> Query {
        var query = self
        let expression = operand(column, decimal: false)
        query.orders.append(SQLOrdering(expression, order == .orderedDescending ? .descending : .ascending))
        return query
    }

    /// Appends orderings built with the core's expressions (after those already added).
    func appendingOrders(_ terms: [SQLOrdering]) -> Query {
        var query = self
        query.orders += terms
        return query
    }

    /// Limits the number of records. As in Tailor, a second limit only ever lowers the first.
    public func limit(_ count: Int) -> Query {
        var query = self
        query.limitCount = limitCount.map { Swift.min($0, count) } ?? count
        return query
    }

    /// Skips the first `count` records.
    public func offset(_ count: Int) -> Query {
        var query = self
        query.offsetCount = count
        return query
    }

    /// Flips every ordering; a query without one is ordered by id, descending.
    public func reverse() -> Query {
        var query = self
        query.orders = orders.isEmpty ? [SQLExpression.column(tableName, "id").desc] : orders.map(\.reversed)
        return query
    }

    /// Replaces the select list with a raw fragment, written as SQL: `select("hats.id, hats.color")`.
    public func select(_ sql: String, _ values: [any DatabaseValueConvertible] = []) -> Query {
        var query = self
        query.selectClause = SQLFragment(sql, values.map(\.databaseValue))
        query.containsRawSQL = true
        return query
    }

    /// Takes the joins and filters of another query (used by ``Persistable/toMany(through:foreignKey:joinToMany:)``).
    func merging<Other>(joinsAndFiltersOf other: Query<Other>) -> Query {
        var query = self
        query.joins += other.joins
        query.filters += other.filters
        query.containsRawSQL = containsRawSQL || other.containsRawSQL
        return query
    }

    // MARK: The statement

    /// The query as the core's SELECT value.
    public var statement: SQLSelect {
        var select = SQLSelect(from: tableName)
        if let selectClause {
            select.columns = [.expression(.fragment(selectClause), alias: nil)]
        } else if !joins.isEmpty {
            select.columns = [.all(table: tableName)]
        }
        select.joins = joins
        if !filters.isEmpty { select.whereCondition = .all(filters) }
        select.orderBy = orders
        select.limit = limitCount
        select.offset = offsetCount
        return select
    }

    /// The query's SQL in `dialect`'s spelling, with a `?` placeholder for each value, as
    /// Tailor's `toSql()` gave it: the text and values run as they are through the core's raw
    /// calls on a database of that dialect (`db.fetchAll(sql: sql.sql, sql.bindings)`), whose
    /// `?` placeholders become the backend's own (`$1…` on PostgreSQL) when they run. For the
    /// backend's exact text, render ``statement`` (`dialect.render(.select(query.statement))`).
    ///
    /// - Throws: the renderer's `DatabaseError.misuse` when a raw fragment of the query has
    ///   more or fewer `?` than values.
    public func toSql(dialect: SQLDialect) throws -> RenderedSQL {
        try questionMarkDialect(dialect).render(.select(statement))
    }

    /// ``toSql(dialect:)`` in the dialect of `database` (the default database when nil).
    public func toSql(_ database: Database? = nil) throws -> RenderedSQL {
        try toSql(dialect: DefaultDatabase.resolve(database).dialect)
    }

    // MARK: Fetching

    /// Every record of the query. A row that `init(databaseRow:)` rejects is logged and skipped;
    /// a database error is logged and answers an empty array. ``allOrThrow(_:)`` throws both.
    @inlinable
    public func all(_ database: Database? = nil) -> [Record] {
        logging(database, "all()", []) { db in
            try fetch(statement, db, skipBadRows: true)
        }
    }

    /// Every record of the query; throws the database's error, or the first error of
    /// `init(databaseRow:)`.
    @inlinable
    public func allOrThrow(_ database: Database? = nil) throws -> [Record] {
        try fetch(statement, DefaultDatabase.resolve(database), skipBadRows: false)
    }

    /// The first record (the query with LIMIT 1), or nil.
    public func first(_ database: Database? = nil) -> Record? {
        logging(database, "first()", nil) { db in try fetch(limit(1).statement, db, skipBadRows: true).first }
    }

    /// ``first(_:)`` that throws.
    @inlinable
    public func firstOrThrow(_ database: Database? = nil) throws -> Record? {
        try fetch(limit(1).statement, DefaultDatabase.resolve(database), skipBadRows: false).first
    }

    /// The last record, or nil: the reversed query with LIMIT 1 (a query without an ordering is
    /// ordered by id). A query with its own limit keeps the last of its own records, so
    /// `limit(5).last()` is the fifth record, not the table's last.
    public func last(_ database: Database? = nil) -> Record? {
        logging(database, "last()", nil) { db in try lastRecord(db, skipBadRows: true) }
    }

    /// ``last(_:)`` that throws.
    public func lastOrThrow(_ database: Database? = nil) throws -> Record? {
        try lastRecord(DefaultDatabase.resolve(database), skipBadRows: false)
    }

    /// The reversed query with LIMIT 1. A query with its own limit fetches its (bounded) rows and
    /// keeps the last, so that `limit(5).last()` is the fifth record, not the table's last; one
    /// with only an offset checks the offset leaves a record.
    func lastRecord(_ db: Database, skipBadRows: Bool) throws -> Record? {
        if limitCount != nil { return try fetch(statement, db, skipBadRows: skipBadRows).last }
        var reversed = reverse().limit(1)
        reversed.offsetCount = nil
        if let offset = offsetCount, offset > 0, try countStatement(db) == 0 { return nil }
        return try fetch(reversed.statement, db, skipBadRows: skipBadRows).first
    }

    /// The record with this id that also matches the query's filters, or nil.
    public func find(_ id: Int, _ database: Database? = nil) -> Record? {
        filter(SQLExpression.column(tableName, "id").equals(.bind(.integer(Int64(id))))).first(database)
    }

    /// ``find(_:_:)`` that throws.
    @inlinable
    public func findOrThrow(_ id: Int, _ database: Database? = nil) throws -> Record? {
        try filter(SQLExpression.column(tableName, "id").equals(.bind(.integer(Int64(id))))).firstOrThrow(database)
    }

    /// How many records the query would fetch, counted by the database (limit and offset
    /// respected through a subquery, orderings dropped). Logs a failure and answers 0;
    /// ``countOrThrow(_:)`` throws.
    public func count(_ database: Database? = nil) -> Int {
        logging(database, "count()", 0) { db in try countStatement(db) }
    }

    /// ``count(_:)`` that throws.
    public func countOrThrow(_ database: Database? = nil) throws -> Int {
        try countStatement(DefaultDatabase.resolve(database))
    }

    /// True when the query has no records (asked with LIMIT 1, on the default database).
    public var isEmpty: Bool { isEmpty(nil) }

    /// True when the query has no records on `database` (the default database when nil), as
    /// Tailor's `isEmpty()`. A failure is logged and answers true; ``isEmptyOrThrow(_:)`` throws.
    public func isEmpty(_ database: Database? = nil) -> Bool {
        logging(database, "isEmpty", true) { db in
            var select = limit(1).statement
            select.columns = [.expression(.literal(.integer(1)), alias: nil)]
            return try reading(db) { try $0.fetchOne(.select(select)) } == nil
        }
    }

    /// The rows of the query as the core reads them, without building records.
    public func rows(_ database: Database? = nil) throws -> [Row] {
        let db = try DefaultDatabase.resolve(database)
        return try reading(db) { try $0.fetchAll(.select(statement)) }
    }

    /// Calls `body` with each record as the database produces it, through a cursor, without
    /// collecting them (one row in memory at a time). A row `init(databaseRow:)` rejects is
    /// logged and skipped.
    @inlinable
    public func forEach(_ database: Database? = nil, _ body: (Record) throws -> Void) throws {
        let db = try DefaultDatabase.resolve(database)
        let logger = db.configuration.logger
        let table = tableName
        try reading(db) { conn in
            // A cursor: one row in memory at a time, however large the result.
            let cursor = try conn.cursor(.select(statement))
            defer { cursor.close() }
            while let row = try cursor.next() {
                let record: Record
                do { record = try Record(databaseRow: DatabaseRow(row: row)) } catch {
                    logger.warning("skipped a \(table) row that init(databaseRow:) rejected: \(error)")
                    continue
                }
                try body(record)
            }
        }
    }

    func countStatement(_ db: Database) throws -> Int {
        var inner = statement
        inner.orderBy = []
        let select: SQLSelect
        if inner.limit == nil && inner.offset == nil && selectClause == nil {
            inner.columns = [.expression(.countAll, alias: nil)]
            select = inner
        } else {
            select = SQLSelect(columns: [.expression(.countAll, alias: nil)], from: .subquery(inner, alias: "counted"))
        }
        let count = try reading(db) { try $0.fetchValue(Int.self, .select(select)) }
        return count ?? 0
    }

    // Inlinable (with the calls above) so that a client's fetch is specialized for its record
    // type: building and collecting records through generic witnesses costs as much as reading
    // the row.
    @inlinable
    func fetch(_ select: SQLSelect, _ db: Database, skipBadRows: Bool) throws -> [Record] {
        try reading(db) { try fetch(select, $0, logger: db.configuration.logger, skipBadRows: skipBadRows) }
    }

    /// Runs the query's one statement: alone on a reader connection, or in a read-only
    /// transaction when the query holds the caller's raw SQL (see ``containsRawSQL``).
    @inlinable
    func reading<T>(_ db: Database, _ body: (Connection) throws -> T) throws -> T {
        if containsRawSQL { return try db.read(body) }
        return try db.withConnection(role: .reader, body)
    }

    @inlinable
    func fetch(_ select: SQLSelect, _ conn: Connection, logger: Logger, skipBadRows: Bool) throws -> [Record] {
        let table = tableName
        var records: [Record] = []
        try conn.forEachRow(.select(select)) { row in
            do {
                records.append(try Record(databaseRow: DatabaseRow(row: row)))
            } catch where skipBadRows {
                logger.warning("skipped a \(table) row that init(databaseRow:) rejected: \(error)")
            }
        }
        return records
    }

    @inlinable
    func logging<T>(_ database: Database?, _ call: String, _ fallback: T, _ body: (Database) throws -> T) -> T {
        do {
            return try body(DefaultDatabase.resolve(database))
        } catch {
            let logger = (database ?? DefaultDatabase.current)?.configuration.logger ?? persistableLogger
            logger.error("\(call) on \(tableName) failed: \(error)")
            return fallback
        }
    }

    // MARK: Relationships without N+1

    /// The records of the query, each with its children of type `Child` (the rows of `children`
    /// whose `foreignKey`, by default `Record.foreignKeyName()`, holds the record's id), in two
    /// statements whatever the number of records: one for the records, one for all their
    /// children (`WHERE fk IN (SELECT id FROM <this query>)`).
    public func allIncluding<Child: Persistable>(
        _ children: Query<Child> = Query<Child>(), foreignKey: String? = nil, _ database: Database? = nil
    ) throws -> [(record: Record, children: [Child])] {
        let db = try DefaultDatabase.resolve(database)
        let column = foreignKey ?? Record.foreignKeyName()
        return try db.read { conn in
            let parents = try fetch(statement, conn, logger: db.configuration.logger, skipBadRows: false)
            var ids = statement
            ids.columns = [.expression(.column(tableName, "id"), alias: nil)]
            if ids.limit == nil && ids.offset == nil { ids.orderBy = [] }
            let childSelect = children.filter(SQLExpression.column(Child.tableName, column).isIn(ids)).statement
            var byParent: [Int: [Child]] = [:]
            try conn.forEachRow(.select(childSelect)) { row in
                let child = try Child(databaseRow: DatabaseRow(row: row))
                guard let parent = try row.decodeIfPresent(Int.self, column: column) else { return }
                byParent[parent, default: []].append(child)
            }
            return parents.map { ($0, $0.id.flatMap { byParent[$0] } ?? []) }
        }
    }
}

/// A page of a query's records, as Tailor's `PaginatedList`.
public struct PaginatedList<Record: Persistable>: Sendable, Equatable {
    /// The query whose records are paged.
    public let query: Query<Record>
    /// The page shown, from 1.
    public let page: Int
    /// How many records a page holds.
    public let pageSize: Int

    /// A page of `query`; pages count from 1, and a page size below 1 counts as 1.
    public init(query: Query<Record>, page: Int = 1, pageSize: Int = 10) {
        self.query = query
        self.page = Swift.max(page, 1)
        self.pageSize = Swift.max(pageSize, 1)
    }

    /// The page's query: the records of this page, in the query's order.
    public var pageQuery: Query<Record> { query.offset(pageSize * (page - 1)).limit(pageSize) }

    /// The records on this page (logged and empty on failure).
    @inlinable
    public func all(_ database: Database? = nil) -> [Record] { pageQuery.all(database) }

    /// The records on this page; throws on failure.
    @inlinable
    public func allOrThrow(_ database: Database? = nil) throws -> [Record] { try pageQuery.allOrThrow(database) }

    /// How many pages the query fills; an empty query has one page.
    public var numberOfPages: Int { numberOfPages(nil) }

    /// How many pages the query fills on `database`; an empty query has one page.
    public func numberOfPages(_ database: Database?) -> Int {
        let count = query.count(database)
        if count == 0 { return 1 }
        return (count + pageSize - 1) / pageSize
    }
}

extension Query {
    /// A page of this query's records.
    public func paginate(page: Int, pageSize: Int = 10) -> PaginatedList<Record> {
        PaginatedList(query: self, page: page, pageSize: pageSize)
    }
}

/// PostgreSQL's spelling with `?` placeholders, made once.
private let postgresWithQuestionMarks = questionMarkVariant(of: .postgres)

/// `dialect` itself when its placeholders are `?`, else the same spelling with `?` ones.
func questionMarkDialect(_ dialect: SQLDialect) -> SQLDialect {
    if dialect.placeholderStyle == .questionMark { return dialect }
    if dialect == .postgres { return postgresWithQuestionMarks }
    return questionMarkVariant(of: dialect)
}

/// A copy of `dialect` that writes `?` for every bind parameter (its own small render cache).
private func questionMarkVariant(of dialect: SQLDialect) -> SQLDialect {
    SQLDialect(
        name: dialect.name, placeholderStyle: .questionMark,
        allowsBacktickAndBracketIdentifiers: dialect.allowsBacktickAndBracketIdentifiers,
        allowsDollarQuotedStrings: dialect.allowsDollarQuotedStrings, booleanLiterals: dialect.booleanLiterals,
        supportsReturning: dialect.supportsReturning, supportsUpsert: dialect.supportsUpsert,
        upsertSelectNeedsWhere: dialect.upsertSelectNeedsWhere, caseInsensitiveLike: dialect.caseInsensitiveLike,
        supportsIsDistinctFrom: dialect.supportsIsDistinctFrom, offsetRequiresLimit: dialect.offsetRequiresLimit,
        autoIncrementPrimaryKey: dialect.autoIncrementPrimaryKey,
        primaryKeyNeedsExplicitNotNull: dialect.primaryKeyNeedsExplicitNotNull,
        binaryLiteralStyle: dialect.binaryLiteralStyle, inlineDateSuffix: dialect.inlineDateSuffix,
        typeNames: dialect.typeNames, beginStatements: dialect.beginStatements,
        decimalCollation: dialect.decimalCollation, aggregateRenames: dialect.aggregateRenames,
        supportsServerCursors: dialect.supportsServerCursors, cacheCapacity: 64)
}
