@_exported import Unity

/// The SQLite driver: how to open a database file (or an in-memory database) and how the
/// pool should be shaped for it.
///
/// A file database runs in WAL mode with one writer and `readers` read-only connections, so
/// reads never wait for writes and writes are serialized by the pool rather than failing with
/// SQLITE_BUSY. Every connection has `busy_timeout` set, foreign keys enforced and a
/// case-sensitive `LIKE` (as on PostgreSQL). The writer keeps its temporary storage in memory
/// (`temp_store = MEMORY`), so that the statement journals of multi-row writes never go to a
/// temporary file.
public struct SQLiteDriver: DatabaseDriver {
    /// The database file's path, or `":memory:"` for an in-memory database.
    public let path: String
    /// The number of read-only connections the pool may open next to the writer.
    public let readers: Int
    /// How long, in seconds, a connection waits for a lock held by another process before
    /// failing with `DatabaseError.busy(_:)`.
    public let busyTimeout: Double
    /// True for a database that lives only in memory, in a single connection.
    public let isInMemory: Bool
    /// True when every connection, the writer included, is opened read-only: for a file
    /// that cannot (or must not) be written. Writes fail with `DatabaseError.readOnly(_:)`.
    public let isReadOnly: Bool

    /// A driver for the database file at `path`, created if missing, with one writer and
    /// up to `readers` read-only connections.
    ///
    /// `":memory:"` and `""` name a database private to one SQLite connection (each new
    /// connection would get an empty one of its own), so they give ``inMemory()``: one
    /// database per `Database`, in a single connection that serves reads and writes.
    ///
    /// With `readOnly: true` the file must exist and is only read: no connection opens it
    /// for writing or changes its journal mode, so a write-protected file (or one on
    /// read-only media) can be opened, and every write fails with
    /// `DatabaseError.readOnly(_:)`. A file in WAL mode still needs its directory to be
    /// writable (SQLite creates the `-shm` index beside it) unless its `-wal` and `-shm`
    /// files exist.
    public init(path: String, readers: Int = 4, busyTimeout: Double = 5, readOnly: Bool = false) {
        self.path = path
        self.busyTimeout = busyTimeout
        self.isReadOnly = readOnly && !Self.isPrivateToConnection(path)
        if Self.isPrivateToConnection(path) {
            self.readers = 0
            self.isInMemory = true
        } else {
            self.readers = max(0, readers)
            self.isInMemory = false
        }
    }

    /// True for the paths SQLite gives every connection a database of its own for.
    static func isPrivateToConnection(_ path: String) -> Bool {
        path == ":memory:" || path.isEmpty
    }

    private init(inMemoryWithBusyTimeout busyTimeout: Double) {
        self.path = ":memory:"
        self.readers = 0
        self.busyTimeout = busyTimeout
        self.isInMemory = true
        self.isReadOnly = false
    }

    /// A driver for a private in-memory database. It is a single connection (every
    /// connection to `:memory:` is a separate database), so the pool runs reads on the writer.
    public static func inMemory() -> SQLiteDriver {
        SQLiteDriver(inMemoryWithBusyTimeout: 5)
    }

    /// `SQLDialect.sqlite`.
    public var dialect: SQLDialect { .sqlite }

    /// `.singleWriter(readers:)`: one writer, `readers` readers (none for an in-memory database).
    public var poolShape: PoolShape { .singleWriter(readers: readers) }

    /// True: a writer reports its commits through SQLite's hooks while something is observed.
    public var reportsCommitsThroughConnections: Bool { true }

    /// A watcher of other connections' commits to the file: `PRAGMA data_version`, checked
    /// every 10 ms while something is observed (nothing for an in-memory database, which no
    /// other connection can reach).
    public func makeChangeSource(configuration: DatabaseConfiguration, sink: DatabaseChangeSink) throws -> (any DatabaseChangeSource)? {
        SQLiteChangeSource(driver: self, sink: sink)
    }

    /// Opens a connection: read-write (creating the file) for `.writer`, read-only for
    /// `.reader` (and for every role when ``isReadOnly``). Throws `DatabaseError.connectionFailed(_:)` naming the path and SQLite's
    /// message when the database cannot be opened, and `DatabaseError.misuse(_:)` when a
    /// reader is asked of an in-memory database.
    public func connect(role: ConnectionRole) throws -> any DriverConnection {
        if isInMemory && role == .reader {
            throw DatabaseError.misuse(
                "an in-memory SQLite database is a single connection and has no readers; run reads on the writer")
        }
        return try SQLiteConnection(path: path, role: isReadOnly ? .reader : role, isInMemory: isInMemory,
                                    busyTimeout: busyTimeout)
    }
}
