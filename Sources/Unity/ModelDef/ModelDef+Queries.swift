import Foundation

/// The rest of sModel's query and delete calls, with sModel 1.0.2's names. Raw clauses take
/// `?` placeholders, one per argument, rewritten to the backend's own; every argument is a
/// bind parameter. On PostgreSQL, a mixed-case column in a raw clause must be quoted
/// (`"serverId" = ?`), as PostgreSQL folds unquoted names to lower case.
extension ModelDef {
    /// The models of the rows of a full SELECT of your own with `?` placeholders
    /// (sModel's `instances(_:params:)`): `Thing.instances("SELECT * FROM Thing WHERE tid > ?", "a")`.
    /// Its columns must be this model's columns.
    public static func instances(_ query: String, _ arguments: any DatabaseValueConvertible...,
                                 in db: Database? = nil) throws -> [Self] {
        try fetchAll(statement: .raw(SQLFragment(query, arguments.map(\.databaseValue))), in: db)
    }

    /// Every row of the table, ordered by a raw ORDER BY clause (sModel's
    /// `instancesOrderedBy(_:)`): `Thing.instancesOrderedBy("name DESC, tid")`.
    public static func instancesOrderedBy(_ orderByClause: String, in db: Database? = nil) throws -> [Self] {
        let database = try DBManager.resolve(db)
        // The SELECT is rendered by the dialect (the table name quoted); the clause is the
        // caller's, as it is in instancesWhere.
        let base = try database.dialect.render(.select(select(where: nil, [])))
        return try fetchAll(statement: .raw(SQLFragment(base.sql + " ORDER BY " + orderByClause, base.bindings)), in: database)
    }

    /// The number of rows that match a raw WHERE clause, or of every row when
    /// `whereClause` is nil (sModel's `numberOfInstancesWhere(_:params:)`).
    public static func numberOfInstancesWhere(_ whereClause: String?, _ arguments: any DatabaseValueConvertible...,
                                              in db: Database? = nil) throws -> Int {
        try countRows(where: whereClause.map { fragment($0, arguments) }, in: db)
    }

    /// Deletes every row of the table; returns how many there were.
    @discardableResult
    public static func deleteAllInstances(in db: Database? = nil) throws -> Int {
        try deleteRows(where: nil, in: db)
    }

    /// Deletes the rows that match a raw WHERE clause with `?` placeholders; returns how many.
    @discardableResult
    public static func deleteWhere(_ whereClause: String, _ arguments: any DatabaseValueConvertible...,
                                   in db: Database? = nil) throws -> Int {
        try deleteRows(where: fragment(whereClause, arguments), in: db)
    }

    /// A new random identifier, as text (sModel's `generateUUID()`), for a primary key made
    /// in code.
    public static func generateUUID() -> String {
        UUID().uuidString
    }

    /// This model's row as the database holds it now, found by its primary key; nil when
    /// there is no such row (sModel's `readFromDB()`).
    public func readFromDB(in db: Database? = nil) throws -> Self? {
        let condition = try primaryKeyCondition(try encodedColumns(), for: "be read again")
        return try Self.fetchFirst(SQLSelect(from: Self.tableName).where(condition), in: db)
    }

    static func deleteRows(where condition: SQLExpression?, in db: Database?) throws -> Int {
        let statement = SQLStatement.delete(SQLDelete(from: tableName, where: condition))
        return try DBManager.resolve(db).write { try $0.execute(statement) }
    }

    static func fetchAll(statement: SQLStatement, in db: Database?) throws -> [Self] {
        try DBManager.resolve(db).readStatement(statement) { conn in
            var models: [Self] = []
            let decoder = modelRowDecoder.rowsDecoder(for: Self.self)
            try conn.forEachRow(statement) { row in models.append(try decoder.decode(row)) }
            return models
        }
    }
}
