import Foundation

/// The SQL-first flavor's entry point: opens a database, brings its schema up to date by
/// running the application's `.sql` files once each, and remembers it as the default
/// database that ``ModelDef`` methods use when they are not given one.
///
/// ```swift
/// let paths = try DBManager.getDBDefFiles(directory: "Resources/schema")
/// try DBManager.open(nil, dbDefFilePaths: paths)          // import DriverSQLite: in memory
/// try Thing(tid: "tid1", name: "thing 1").save()
/// let things = try Thing.allInstances()
/// ```
///
/// The default database and ``blindlyReplaceDuplicates`` are process-wide and guarded by a
/// lock, so any thread or task may read and set them.
public enum DBManager {
    /// The process-wide flag, behind a lock. (`Synchronization.Mutex` would say the same but
    /// needs macOS 15; the package supports macOS 13.)
    private final class SharedFlag: @unchecked Sendable {
        // @unchecked: `value` is read and written only under `lock`.
        private let lock = NSLock()
        private var value = false

        var current: Bool {
            get { lock.lock(); defer { lock.unlock() }; return value }
            set { lock.lock(); defer { lock.unlock() }; value = newValue }
        }
    }

    private static let replaceDuplicatesFlag = SharedFlag()

    /// The database that ``ModelDef`` methods use when no `in:` database is passed: the core's
    /// ``DefaultDatabase/current`` (a task-local `DefaultDatabase.withDatabase(_:operation:)`
    /// scope, else the top of the process-wide stack), shared with every other flavor. The
    /// `open` functions set it and ``close()`` clears it; setting it replaces the top of the
    /// stack and does not open, migrate or close anything.
    public static var defaultDatabase: Database? {
        get { DefaultDatabase.current }
        set { DefaultDatabase.replaceTop(with: newValue) }
    }

    /// When true, a ``ModelDef/save(in:)`` (or a batch's save statement) whose key is taken
    /// replaces the row instead of updating it or leaving it (``ModelDef/syncable``) and
    /// throwing ``ModelError/duplicate(existing:)``, for every model type: the stored row
    /// becomes the saved model, a column the model leaves nil takes its default (as SQLite's
    /// `INSERT OR REPLACE`), another row holding its secondary key is deleted, and nothing is
    /// thrown. It is read when the save or its statement is made. It is process-wide:
    /// set it once at start-up (for example in an app that mirrors a server), not around
    /// individual saves while other threads save.
    public static var blindlyReplaceDuplicates: Bool {
        get { replaceDuplicatesFlag.current }
        set { replaceDuplicatesFlag.current = newValue }
    }

    /// Opens a database through `driver`, runs every `.sql` file of `dbDefFilePaths` that has
    /// not run on it yet (in the order given: sort them the same way every time), makes it
    /// the default database and returns it. A previous default database is closed.
    @discardableResult
    public static func open(_ driver: some DatabaseDriver, dbDefFilePaths: [String],
                            configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        let database = try Database(driver: driver, configuration: configuration)
        do {
            return try open(database, dbDefFilePaths: dbDefFilePaths)
        } catch {
            database.close()
            throw error
        }
    }

    /// Adopts an already open `database`: runs the `.sql` files of `dbDefFilePaths` that have
    /// not run on it yet, makes it the default database and returns it. A previous default
    /// database (if it is another one) is closed.
    @discardableResult
    public static func open(_ database: Database, dbDefFilePaths: [String]) throws -> Database {
        let migrator = try Migrator(sqlFilePaths: dbDefFilePaths)
        _ = try migrator.migrate(database)
        let previous = DefaultDatabase.replaceTop(with: database)
        if let previous, previous !== database, !DefaultDatabase.contains(previous) { previous.close() }
        return database
    }

    /// The paths of the `.sql` files directly inside `directory`, sorted by file name: the
    /// order in which ``open(_:dbDefFilePaths:configuration:)`` should run them. (sModel
    /// read them from an app bundle; a directory works on every platform.) Throws
    /// ``DatabaseError/misuse(_:)`` when the directory cannot be read.
    public static func getDBDefFiles(directory: String) throws -> [String] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw DatabaseError.misuse("cannot list the schema directory \(directory): \(error.localizedDescription)")
        }
        let base = URL(fileURLWithPath: directory, isDirectory: true)
        return names
            .filter { $0.lowercased().hasSuffix(".sql") }
            .sorted()
            .map { base.appendingPathComponent($0).path }
    }

    /// Closes every database on the stack (the opened one and any pushed above it) and
    /// forgets them, as sModel's `close()`; afterwards there is no default database. Pushed
    /// databases are not deleted (``pop(deleteDB:)`` does that). The stack is the core's
    /// ``DefaultDatabase`` stack, shared with the other flavors.
    public static func close() {
        while let previous = DefaultDatabase.pop() {
            if !DefaultDatabase.contains(previous) { previous.close() }
        }
    }

    /// Runs `statements` in order in ONE write transaction of `db` (the default database when
    /// nil): if any of them fails, none of them is kept, and the error is thrown.
    ///
    /// It is much faster than saving one model at a time: consecutive inserts into the same
    /// table with the same columns become multi-row INSERTs (chunked to stay under the
    /// backend's limit on bind parameters), and other consecutive statements with the same
    /// SQL run through one reused prepared statement (SQLite) or one pipeline (PostgreSQL).
    public static func executeStatements(_ statements: [ModelStatement], in db: Database? = nil) throws {
        if statements.isEmpty { return }
        let database = try resolve(db)
        _ = try database.write { conn in
            try ModelBatchRunner(dialect: conn.dialect).run(statements, on: conn)
        }
    }

    /// Runs `statements` in order on `connection`, batched as
    /// ``executeStatements(_:in:)`` does, inside the connection's current transaction (or,
    /// when none is open, inside a new one): use it to combine model statements with other
    /// work in one transaction of your own.
    public static func executeStatements(_ statements: [ModelStatement], on connection: Connection) throws {
        if statements.isEmpty { return }
        _ = try connection.transaction { conn in
            try ModelBatchRunner(dialect: conn.dialect).run(statements, on: conn)
        }
    }

    /// `db`, or the default database; throws ``DatabaseError/misuse(_:)`` when both are missing.
    static func resolve(_ db: Database?) throws -> Database {
        if let db { return db }
        if let db = DefaultDatabase.current { return db }
        throw DatabaseError.misuse(
            "no database: call DBManager.open(…) first to set the default database, or pass one with `in:`")
    }
}
