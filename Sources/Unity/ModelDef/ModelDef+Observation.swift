import Foundation

// Observed queries of SQL-first records: the calls of the fetch API, each returning the core's
// `DatabaseObservation` of the models instead of one array. The rows are compared before they
// are decoded (an unchanged result is not delivered again), then decoded as a fetch decodes them.

extension ModelDef {
    /// Every row of the table as models, now and after each committed transaction that changed
    /// the table (from this process, another process on the same SQLite file, or any client of
    /// the same PostgreSQL database): ``allInstances(orderedBy:in:)``, observed.
    ///
    /// ```swift
    /// for try await things in try Thing.observeAll(orderedBy: [.ascending("tid")]) {
    ///     show(things)
    /// }
    /// ```
    ///
    /// On PostgreSQL the table needs the change trigger of `Migration.observeChanges(of:)`;
    /// without it the first `next()` throws `ObservationError.missingChangeTrigger`.
    ///
    /// - Throws: `DatabaseError.misuse` when no database is given and there is no default one.
    public static func observeAll(orderedBy ordering: [ModelOrdering] = [], in db: Database? = nil) throws
        -> DatabaseObservation<[Self]> {
        try observe(select(where: nil, ordering), tables: nil, in: db)
    }

    /// The rows that match a raw WHERE clause with `?` placeholders, as models, now and after
    /// each committed transaction that changed a table the query reads:
    /// ``instancesWhere(_:_:orderedBy:in:)``, observed.
    ///
    /// ```swift
    /// for try await named in try Thing.observe(where: "name IS NOT NULL", orderedBy: [.ascending("tid")]) {
    ///     show(named)
    /// }
    /// ```
    ///
    /// The observed table is this model's. A clause with a subquery of its own
    /// (`"tid IN (SELECT …)"`) must name every table it reads in `tables`; without them the
    /// first `next()` throws `ObservationError.tablesUnknown`.
    ///
    /// - Parameters:
    ///   - clause: the WHERE clause; every `?` is bound to the next argument.
    ///   - arguments: the values of the placeholders, in order, each a bind parameter.
    ///   - ordering: the ORDER BY terms (unspecified order when empty).
    ///   - tables: the tables to follow instead of those found in the query.
    ///   - db: the database, or nil for the default one.
    /// - Throws: `DatabaseError.misuse` when no database is given and there is no default one.
    public static func observe(where clause: String, _ arguments: any DatabaseValueConvertible...,
                               orderedBy ordering: [ModelOrdering] = [], tables: Set<String>? = nil,
                               in db: Database? = nil) throws -> DatabaseObservation<[Self]> {
        try observe(select(where: fragment(clause, arguments), ordering), tables: tables, in: db)
    }

    /// The models of the rows of any SELECT whose columns are this model's columns, now and after
    /// each committed transaction that changed a table it reads: ``instances(_:in:)``, observed.
    /// The tables are found in the query (FROM, JOINs, subqueries, EXISTS); `tables` replaces
    /// them, and is required when a raw part of the query reads a table.
    ///
    /// - Throws: `DatabaseError.misuse` when no database is given and there is no default one.
    public static func observe(_ query: SQLSelect, tables: Set<String>? = nil, in db: Database? = nil) throws
        -> DatabaseObservation<[Self]> {
        let database = try DBManager.resolve(db)
        return database.observe(.select(query), tables: tables, removeDuplicates: true) { rows in
            try decodeModelRows(rows)
        }
    }

    /// Every row of `rows`, decoded as a fetch decodes them (generated coding when the type has
    /// it, the shared `RowDecoder` otherwise).
    static func decodeModelRows(_ rows: [Row]) throws -> [Self] {
        if let generated = Self.self as? any RowDecodable.Type,
           let models = try generated.modelRows(as: Self.self, { body in for row in rows { try body(row) } }) {
            return models
        }
        let decoder = modelRowDecoder.rowsDecoder(for: Self.self)
        var models: [Self] = []
        models.reserveCapacity(rows.count)
        for row in rows { models.append(try decoder.decode(row)) }
        return models
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension ModelDef {
    /// The models of the rows for which `predicate` holds, ordered by `orderBy`, at most `limit`
    /// of them, now and after each committed transaction that changed the table:
    /// ``instances(matching:orderBy:limit:in:)``, observed.
    ///
    /// ```swift
    /// let named = try Thing.observe(matching: #Predicate<Thing> { $0.name != nil }, orderBy: [SortDescriptor(\.tid)])
    /// ```
    ///
    /// - Throws: ``PredicateTranslationError`` for what SQL cannot express (nothing is observed
    ///   then), or `DatabaseError.misuse` when there is no database.
    public static func observe(matching predicate: Predicate<Self>, orderBy: [SortDescriptor<Self>] = [],
                               limit: Int? = nil, in db: Database? = nil) throws -> DatabaseObservation<[Self]> {
        let schema = predicateSchema
        var query = select(where: try PredicateSQL.condition(predicate, schema: schema), [])
        query.orderBy = try PredicateSQL.ordering(orderBy, schema: schema)
        query.limit = limit
        return try observe(query, tables: nil, in: db)
    }
}
