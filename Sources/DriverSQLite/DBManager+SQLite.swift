import Foundation
import Unity

extension DBManager {
    /// Opens the SQLite database at `path` (created if missing; an in-memory database when
    /// `path` is nil, as in sModel's `DBManager.open(nil, dbDefFilePaths: paths)`), runs the
    /// `.sql` files of `dbDefFilePaths` that have not run on it yet, in the order given, and
    /// makes it the default database. Returns it.
    @discardableResult
    public static func open(_ path: String?, dbDefFilePaths: [String], readers: Int = 4,
                            configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        let driver = path.map { SQLiteDriver(path: $0, readers: readers) } ?? SQLiteDriver.inMemory()
        return try open(driver, dbDefFilePaths: dbDefFilePaths, configuration: configuration)
    }

    /// Opens the SQLite database at `path` (in memory when nil), runs the `.sql` files of
    /// `dbDefFilePaths` that have not run on it yet, and pushes it above the open database:
    /// it is the default until `DBManager.pop(deleteDB:)`, which can delete its file
    /// (sModel's `push(_:dbDefFilePaths:)`). Throws `DBManagerError.nothingToPushOnto` when
    /// no database is open.
    public static func push(_ path: String?, dbDefFilePaths: [String], readers: Int = 4,
                            configuration: DatabaseConfiguration = DatabaseConfiguration()) throws {
        let driver = path.map { SQLiteDriver(path: $0, readers: readers) } ?? SQLiteDriver.inMemory()
        var deleter: (@Sendable () throws -> Void)?
        if let path {
            deleter = { try removeDatabaseFiles(at: path) }
        }
        try push(driver, dbDefFilePaths: dbDefFilePaths, configuration: configuration, deleter: deleter)
    }

    /// Removes an SQLite database file and its WAL and shared-memory files.
    @Sendable
    private static func removeDatabaseFiles(at path: String) throws {
        for file in [path + "-wal", path + "-shm", path] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.removeItem(atPath: file)
        }
    }
}
