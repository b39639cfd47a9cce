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
}
