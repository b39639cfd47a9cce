@_exported import Unity

/// The PostgreSQL driver: hand one to ``Database`` to work against a PostgreSQL server
/// through libpq.
///
/// ```swift
/// let db = try Database(PostgresDriver("postgresql://app@127.0.0.1:5432/app"))
/// ```
///
/// Statements run over the extended protocol with a per-connection cache of prepared
/// statements, and results are read in binary format whenever every column has a binary
/// decoder.
public struct PostgresDriver: DatabaseDriver {
    /// The libpq connection string: a URL (`postgresql://user@host:port/db`) or key/value
    /// pairs (`host=127.0.0.1 port=5432 dbname=app`).
    public let connectionString: String
    /// The number of connections the pool may open.
    public let connections: Int
    /// The schema every connection puts first on its `search_path`, or nil to keep the
    /// server's default. Tests give each test a schema of its own this way.
    public let searchPath: String?

    /// Describes how to reach a PostgreSQL server.
    /// - Parameters:
    ///   - connectionString: a libpq URL or key/value connection string.
    ///   - connections: the pool size (at least 1).
    ///   - searchPath: a schema name each connection selects with `SET search_path` after
    ///     connecting; it is quoted as an identifier, so its case is kept.
    public init(_ connectionString: String, connections: Int = 8, searchPath: String? = nil) {
        self.connectionString = connectionString
        self.connections = max(1, connections)
        self.searchPath = searchPath
    }

    /// PostgreSQL's dialect.
    public var dialect: SQLDialect { .postgres }

    /// A uniform pool of ``connections`` connections: PostgreSQL serves concurrent writers.
    public var poolShape: PoolShape { .uniform(connections: connections) }

    /// True: independent queries share one pipeline (one round trip).
    public var pipelinesIndependentQueries: Bool { true }

    /// Opens a connection; `role` is ignored because every PostgreSQL connection may write.
    /// Throws ``DatabaseError/connectionFailed(_:)`` with libpq's message when the server
    /// cannot be reached, refuses the login, or the search path cannot be set.
    public func connect(role: ConnectionRole) throws -> any DriverConnection {
        try PostgresConnection(connectionString: connectionString, searchPath: searchPath)
    }
}
