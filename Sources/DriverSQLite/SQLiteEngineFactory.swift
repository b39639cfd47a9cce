import Unity

/// Opens a SQLite database for a flavor that takes an `EngineFactory` (Amigo's
/// `SQLiteEngineFactory(":memory:", echo: true)`): a file path, or `":memory:"` for an
/// in-memory database (one connection, so its data lives as long as the `Database`).
public struct SQLiteEngineFactory: EngineFactory {
    /// The file path, or `":memory:"`.
    public let path: String
    /// True when every statement is logged through swift-log.
    public let echo: Bool
    /// Reader connections beside the writer (none for `":memory:"`).
    public let readers: Int

    /// A factory for the database at `path` (`":memory:"` for an in-memory one); `echo: true`
    /// logs every statement.
    public init(_ path: String, echo: Bool = false, readers: Int = 4) {
        self.path = path
        self.echo = echo
        self.readers = readers
    }

    /// Opens the database.
    public func connect() throws -> Database {
        try Database(driver: SQLiteDriver(path: path, readers: readers), configuration: DatabaseConfiguration(echo: echo))
    }
}
