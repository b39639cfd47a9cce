import Foundation
import Unity

extension DBManager {
    /// Connects to the PostgreSQL database at `postgresURL` (a libpq URL or key/value string)
    /// with a pool of `connections`, optionally working in the schema `searchPath`, runs the
    /// `.sql` files of `dbDefFilePaths` that have not run on it yet, in the order given, and
    /// makes it the default database. Returns it.
    @discardableResult
    public static func open(postgresURL: String, dbDefFilePaths: [String], connections: Int = 8,
                            searchPath: String? = nil,
                            configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        let driver = PostgresDriver(postgresURL, connections: connections, searchPath: searchPath)
        return try open(driver, dbDefFilePaths: dbDefFilePaths, configuration: configuration)
    }

    /// Connects to the PostgreSQL database at `postgresURL` (optionally in the schema
    /// `searchPath`), runs the `.sql` files of `dbDefFilePaths` that have not run on it yet,
    /// and pushes it above the open database: it is the default until
    /// `DBManager.pop(deleteDB:)` (sModel's `push(_:dbDefFilePaths:)`). `pop(deleteDB: true)`
    /// closes its connections but deletes nothing on a server: drop the schema yourself.
    public static func push(postgresURL: String, dbDefFilePaths: [String], connections: Int = 8,
                            searchPath: String? = nil,
                            configuration: DatabaseConfiguration = DatabaseConfiguration()) throws {
        let driver = PostgresDriver(postgresURL, connections: connections, searchPath: searchPath)
        try push(driver, dbDefFilePaths: dbDefFilePaths, configuration: configuration)
    }
}
