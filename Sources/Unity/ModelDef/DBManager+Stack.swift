import Foundation

/// A fault of ``DBManager``'s stack of databases.
public enum DBManagerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// ``DBManager/push(_:dbDefFilePaths:deleter:)`` with no database open: open one first
    /// (sModel's `pushFailed`).
    case nothingToPushOnto
    /// ``DBManager/pop(deleteDB:)`` with one database (or none) on the stack: the last one is
    /// closed with ``DBManager/close()`` (sModel's `popFailed`).
    case cannotPopLastDatabase
    /// ``DBManager/pop(deleteDB:)`` closed the database but could not delete it.
    case deleteFailed(String)

    /// Says what to do.
    public var description: String {
        switch self {
        case .nothingToPushOnto:
            return "DBManager.push: no database is open to push onto; open one first with DBManager.open(…)"
        case .cannotPopLastDatabase:
            return "DBManager.pop: only one database is open; close it with DBManager.close() instead"
        case .deleteFailed(let reason):
            return "DBManager.pop(deleteDB: true) closed the database but could not delete it: \(reason)"
        }
    }
}

extension DBManager {
    /// What ``pop(deleteDB:)`` runs to delete each pushed database (its file, its schema).
    private final class Deleters: @unchecked Sendable {
        // @unchecked: `byDatabase` is read and written only under `lock`.
        private let lock = NSLock()
        private var byDatabase: [ObjectIdentifier: @Sendable () throws -> Void] = [:]

        func set(_ deleter: (@Sendable () throws -> Void)?, for database: Database) {
            lock.lock(); defer { lock.unlock() }
            byDatabase[ObjectIdentifier(database)] = deleter
        }

        func take(for database: Database) -> (@Sendable () throws -> Void)? {
            lock.lock(); defer { lock.unlock() }
            return byDatabase.removeValue(forKey: ObjectIdentifier(database))
        }
    }

    private static let deleters = Deleters()

    /// Runs the `.sql` files of `dbDefFilePaths` that have not run on `database` yet and
    /// pushes it onto the stack of databases above the open one: it is the default database
    /// until ``pop(deleteDB:)`` (sModel's `push(_:dbDefFilePaths:)`, used for a second
    /// database such as a user's session). `deleter` is what `pop(deleteDB: true)` runs to
    /// delete it; the drivers' `push` calls pass one (SQLite: remove the file). Throws
    /// ``DBManagerError/nothingToPushOnto`` when no database is open.
    public static func push(_ database: Database, dbDefFilePaths: [String],
                            deleter: (@Sendable () throws -> Void)? = nil) throws {
        guard DefaultDatabase.depth > 0 else { throw DBManagerError.nothingToPushOnto }
        let migrator = try Migrator(sqlFilePaths: dbDefFilePaths)
        _ = try migrator.migrate(database)
        deleters.set(deleter, for: database)
        DefaultDatabase.push(database)
    }

    /// Opens a database through `driver` and pushes it (see ``push(_:dbDefFilePaths:deleter:)``);
    /// closed again if its files fail.
    public static func push(_ driver: some DatabaseDriver, dbDefFilePaths: [String],
                            configuration: DatabaseConfiguration = DatabaseConfiguration(),
                            deleter: (@Sendable () throws -> Void)? = nil) throws {
        guard DefaultDatabase.depth > 0 else { throw DBManagerError.nothingToPushOnto }
        let database = try Database(driver: driver, configuration: configuration)
        do {
            try push(database, dbDefFilePaths: dbDefFilePaths, deleter: deleter)
        } catch {
            database.close()
            throw error
        }
    }

    /// Closes the database on top of the stack and makes the one below the default again
    /// (sModel's `pop(deleteDB:)`); with `deleteDB`, also runs the deleter it was pushed with
    /// (the SQLite driver's `push` removes the database file; a PostgreSQL push deletes
    /// nothing on the server). Refuses to pop the last database with
    /// ``DBManagerError/cannotPopLastDatabase``: close it with ``close()``.
    public static func pop(deleteDB: Bool) throws {
        guard DefaultDatabase.depth > 1, let top = DefaultDatabase.pop() else {
            throw DBManagerError.cannotPopLastDatabase
        }
        let deleter = deleters.take(for: top)
        if DefaultDatabase.contains(top) { return }
        top.close()
        guard deleteDB, let deleter else { return }
        do {
            try deleter()
        } catch {
            throw DBManagerError.deleteFailed("\(error)")
        }
    }

    /// The path sModel kept its databases at: `<Documents>/<fileName>.sqlite3` in the user's
    /// documents directory (on Linux, `~/Documents`); nil when there is none.
    public static func getDBPath(_ fileName: String) -> String? {
        guard let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first else {
            return nil
        }
        return documents.appendingPathComponent("\(fileName).sqlite3").path
    }

    /// Deletes every row of every table of `db` (the default database when nil), except the
    /// tables named in `excludes` and the migrator's own table (``Migrator/trackingTable``),
    /// in one transaction.
    public static func truncateAllTables(excludes: [String] = [], in db: Database? = nil) throws {
        let database = try resolve(db)
        try database.write { conn in
            let listing: SQLStatement
            if conn.dialect.name == "postgres" {
                listing = .select(SQLSelect(
                    columns: [.column("tablename")], from: .table("pg_tables", alias: nil),
                    where: .binary(.column("schemaname"), .equal, .function(name: "current_schema", arguments: [], distinct: false))))
            } else {
                listing = .select(SQLSelect(
                    columns: [.column("name")], from: .table("sqlite_master", alias: nil),
                    where: .binary(.column("type"), .equal, .bind(.text("table")))
                        && .like(.column("name"), pattern: .bind(.text("sqlite\\_%")), escape: .bind(.text("\\")),
                                 caseInsensitive: false, negated: true)))
            }
            let names = try conn.fetchAll(listing).compactMap { row -> String? in
                guard case .text(let name) = row[0] else { return nil }
                return name
            }
            let skipped = Set(excludes + [Migrator.trackingTable])
            for name in names.sorted() where !skipped.contains(name) {
                _ = try conn.execute(.delete(SQLDelete(from: name)))
            }
        }
    }

    /// Runs a raw statement that returns no rows (sModel's `executeUpdateQuery(_:params:)`),
    /// with `?` placeholders, in a transaction of `db` (the default database when nil);
    /// returns the number of rows changed.
    @discardableResult
    public static func executeUpdateQuery(_ query: String, _ arguments: any DatabaseValueConvertible...,
                                          in db: Database? = nil) throws -> Int {
        let statement = SQLStatement.raw(SQLFragment(query, arguments.map(\.databaseValue)))
        return try resolve(db).write { try $0.execute(statement) }
    }

    /// The rows of a raw query, each as a dictionary from column name to value (sModel's
    /// `resultDictionariesFromQuery(_:params:)`). A NULL is `.null`, so every column is there.
    public static func resultDictionariesFromQuery(_ query: String, _ arguments: any DatabaseValueConvertible...,
                                                   in db: Database? = nil) throws -> [[String: DatabaseValue]] {
        let statement = SQLStatement.raw(SQLFragment(query, arguments.map(\.databaseValue)))
        return try resolve(db).read { conn in
            try conn.fetchAll(statement).map { row in
                var dictionary: [String: DatabaseValue] = [:]
                for (name, value) in row.pairs { dictionary[name] = value }
                return dictionary
            }
        }
    }

    /// Runs one statement in a transaction of `db` (the default database when nil) and hands
    /// `resultHandler` its rows when it is a query (a SELECT, a raw statement that starts
    /// with SELECT, WITH, VALUES, PRAGMA, SHOW or EXPLAIN, or one with RETURNING), nil
    /// otherwise, inside the transaction: a throw from the handler rolls it back.
    public static func executeStatement(_ statement: ModelStatement, in db: Database? = nil,
                                        resultHandler: ([Row]?) throws -> Void) throws {
        try executeStatements([statement], in: db) { results in try resultHandler(results.first ?? nil) }
    }

    /// ``executeStatements(_:in:)`` that hands `resultsHandler` one entry per statement: the
    /// rows of each query (see ``executeStatement(_:in:resultHandler:)``), nil for the others.
    /// The handler runs inside the batch's transaction: a throw from it rolls the batch back.
    public static func executeStatements(_ statements: [ModelStatement], in db: Database? = nil,
                                         resultsHandler: ([[Row]?]) throws -> Void) throws {
        let database = try resolve(db)
        try database.write { conn in
            var results: [[Row]?] = []
            try ModelBatchRunner(dialect: conn.dialect).run(statements, on: conn, results: &results)
            try resultsHandler(results)
        }
    }
}
