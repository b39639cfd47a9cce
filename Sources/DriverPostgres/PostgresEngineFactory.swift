import Unity

/// Opens a PostgreSQL database from a connection URL (`postgresql://user@host/db`) for a
/// flavor that takes an `EngineFactory`.
public struct PostgresEngineFactory: EngineFactory {
    /// The libpq connection URL or keyword string.
    public let url: String
    /// True when every statement is logged through swift-log.
    public let echo: Bool
    /// The pool size.
    public let connections: Int
    /// The schema to use (`search_path`), if not the server's default.
    public let searchPath: String?

    /// A factory for the database at `url`; `echo: true` logs every statement.
    public init(_ url: String, echo: Bool = false, connections: Int = 8, searchPath: String? = nil) {
        self.url = url
        self.echo = echo
        self.connections = connections
        self.searchPath = searchPath
    }

    /// Opens the database.
    public func connect() throws -> Database {
        try Database(driver: PostgresDriver(url, connections: connections, searchPath: searchPath),
                      configuration: DatabaseConfiguration(echo: echo))
    }
}
