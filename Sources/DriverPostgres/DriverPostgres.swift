@_exported import Unity

/// The PostgreSQL driver: hand one to `Database` to work against a PostgreSQL server
/// through libpq.
///
/// ```swift
/// let db = try Database(PostgresDriver("postgresql://app@127.0.0.1:5432/app"))
/// ```
///
/// Statements run over the extended protocol with a per-connection cache of prepared
/// statements, and results are read in binary format whenever every column has a binary
/// decoder.
///
/// Through a transaction-mode pooler (PgBouncer with `pool_mode = transaction`), turn on
/// `PoolerMode.transaction`: in `DatabaseConfiguration.poolerMode`, as this initializer's
/// `poolerMode`, or as the URL parameter `pooler=transaction`
/// (`postgresql://app@127.0.0.1:6432/app?pooler=transaction`), which the driver takes out of
/// the URL before libpq sees it.
///
/// With read replicas, ``init(primary:replicas:connections:searchPath:poolerMode:replicaConnectTimeout:)``
/// names the primary and each replica; a multi-host URL with `target_session_attrs=read-write`
/// (`postgresql://db1:5432,db2:5432/app?target_session_attrs=read-write`) follows a failover
/// to whichever host is the primary now, on every new connection.
public struct PostgresDriver: DatabaseDriver {
    /// The libpq connection string as given: a URL (`postgresql://user@host:port/db`) or
    /// key/value pairs (`host=127.0.0.1 port=5432 dbname=app`).
    public let connectionString: String
    /// The connection string libpq gets: ``connectionString`` without the `pooler` parameter.
    let libpqConnectionString: String
    /// `PoolerMode.transaction` when the initializer or the URL's `pooler` parameter asked
    /// for it; a `DatabaseConfiguration.poolerMode` of `.transaction` turns it on too.
    public let poolerMode: PoolerMode
    /// The URL's `pooler` value when it names no mode: connecting then fails with a message.
    private let invalidPoolerParameter: String?
    /// The number of connections the pool may open.
    public let connections: Int
    /// The schema every connection puts first on its `search_path`, or nil to keep the
    /// server's default. Tests give each test a schema of its own this way.
    public let searchPath: String?
    /// The connection strings of the read replicas (streaming standbys of this server), in
    /// the order given; empty for none.
    public private(set) var replicaConnectionStrings: [String]
    /// How long, in whole seconds, opening a connection may take before it fails (libpq's
    /// `connect_timeout`), or nil for libpq's default: no bound unless the connection string
    /// sets one. A `connect_timeout` in the connection string wins. The replicas' drivers
    /// get the `replicaConnectTimeout` of
    /// ``init(primary:replicas:connections:searchPath:poolerMode:replicaConnectTimeout:)``.
    public private(set) var connectTimeout: Int?
    /// The ``connectTimeout`` each replica's driver gets.
    public private(set) var replicaConnectTimeout: Int?

    /// Describes how to reach a PostgreSQL server.
    /// - Parameters:
    ///   - connectionString: a libpq URL or key/value connection string.
    ///   - connections: the pool size (at least 1).
    ///   - searchPath: a schema name each connection selects with `SET search_path` after
    ///     connecting; it is quoted as an identifier, so its case is kept.
    ///   - poolerMode: `.transaction` behind a transaction-mode pooler (see
    ///     `DatabaseConfiguration.poolerMode`); the URL parameter `pooler=transaction` says
    ///     the same.
    public init(_ connectionString: String, connections: Int = 8, searchPath: String? = nil, poolerMode: PoolerMode = .none) {
        self.connectionString = connectionString
        self.connections = max(1, connections)
        self.searchPath = searchPath
        self.replicaConnectionStrings = []
        self.connectTimeout = nil
        self.replicaConnectTimeout = nil
        let (stripped, requested) = Self.takePoolerParameter(from: connectionString)
        self.libpqConnectionString = stripped
        if let requested, let mode = PoolerMode(rawValue: requested.lowercased()) {
            self.poolerMode = poolerMode == .transaction ? .transaction : mode
            self.invalidPoolerParameter = nil
        } else {
            self.poolerMode = poolerMode
            self.invalidPoolerParameter = requested
        }
    }

    /// Describes a primary and its read replicas: a `Database` opened with it writes to
    /// the primary and routes reads to the replicas (see `ReadSource`).
    ///
    /// ```swift
    /// let db = try Database(driver: PostgresDriver(
    ///     primary: "postgresql://app@db-primary:5432/app",
    ///     replicas: ["postgresql://app@db-replica1:5432/app", "postgresql://app@db-replica2:5432/app"]))
    /// ```
    /// - Parameters:
    ///   - primary: the primary's libpq URL or key/value string; a multi-host URL with
    ///     `target_session_attrs=read-write` follows a failover.
    ///   - replicas: one connection string per replica (hot standbys of the primary).
    ///   - connections: the pool size, for the primary and for each replica.
    ///   - searchPath: as in ``init(_:connections:searchPath:poolerMode:)``, on every server.
    ///   - poolerMode: as in ``init(_:connections:searchPath:poolerMode:)``, on every server.
    ///   - replicaConnectTimeout: how long, in whole seconds, opening a connection to a
    ///     replica may take (libpq's `connect_timeout`; libpq takes 1 as 2), for the replica's
    ///     pool and for its health check, which asks each replica in turn how far it has
    ///     replayed: a standby that stops answering (a black hole) is then marked down after
    ///     this long rather than stalling every replica's check. Nil leaves it unbounded. A
    ///     `connect_timeout` in a replica's connection string wins.
    public init(primary: String, replicas: [String], connections: Int = 8, searchPath: String? = nil, poolerMode: PoolerMode = .none,
                replicaConnectTimeout: Int? = 3) {
        var driver = PostgresDriver(primary, connections: connections, searchPath: searchPath, poolerMode: poolerMode)
        driver.replicaConnectionStrings = replicas
        driver.replicaConnectTimeout = replicaConnectTimeout
        self = driver
    }

    /// One driver per replica of ``replicaConnectionStrings``, with this driver's pool size,
    /// search path and pooler mode, and ``replicaConnectTimeout`` as its ``connectTimeout``.
    public var replicas: [any DatabaseDriver] {
        replicaConnectionStrings.map {
            var replica = PostgresDriver($0, connections: connections, searchPath: searchPath, poolerMode: poolerMode)
            replica.connectTimeout = replicaConnectTimeout
            return replica
        }
    }

    /// Takes the `pooler` parameter out of a `postgresql://` or `postgres://` URL's query
    /// (libpq refuses parameters it does not know). Returns the URL without it and its value.
    /// A key/value connection string is returned as it is.
    static func takePoolerParameter(from connectionString: String) -> (String, String?) {
        guard connectionString.hasPrefix("postgresql://") || connectionString.hasPrefix("postgres://"),
              let questionMark = connectionString.firstIndex(of: "?") else {
            return (connectionString, nil)
        }
        let base = connectionString[..<questionMark]
        var query = connectionString[connectionString.index(after: questionMark)...]
        var fragment = Substring("")
        if let hash = query.firstIndex(of: "#") {
            fragment = query[hash...]
            query = query[..<hash]
        }
        var kept: [Substring] = []
        var value: String?
        for item in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts[0] == "pooler" {
                value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            } else {
                kept.append(item)
            }
        }
        guard value != nil else { return (connectionString, nil) }
        let rest = kept.isEmpty ? "" : "?" + kept.joined(separator: "&")
        return (String(base) + rest + String(fragment), value)
    }

    /// PostgreSQL's dialect.
    public var dialect: SQLDialect { .postgres }

    /// A uniform pool of ``connections`` connections: PostgreSQL serves concurrent writers.
    public var poolShape: PoolShape { .uniform(connections: connections) }

    /// True: independent queries share one pipeline (one round trip).
    public var pipelinesIndependentQueries: Bool { true }

    /// A listener of `NOTIFY`s on a connection of its own (see `DatabaseConfiguration.notificationURL`).
    /// Throws `ObservationError.notificationURLRequired` in pooler mode without a notification URL.
    public func makeChangeSource(configuration: DatabaseConfiguration, sink: DatabaseChangeSink) throws -> (any DatabaseChangeSource)? {
        let pooled = poolerMode == .transaction || configuration.poolerMode == .transaction
        let target: String
        if let url = configuration.notificationURL {
            target = Self.takePoolerParameter(from: url).0
        } else if pooled {
            throw ObservationError.notificationURLRequired
        } else {
            target = libpqConnectionString
        }
        return PostgresChangeSource(connectionString: target, sink: sink)
    }

    /// Opens a connection; `role` is ignored because every PostgreSQL connection may write.
    /// Throws `DatabaseError.connectionFailed(_:)` with libpq's message when the server
    /// cannot be reached, refuses the login, or the search path cannot be set.
    public func connect(role: ConnectionRole) throws -> any DriverConnection {
        try connect(role: role, configuration: DatabaseConfiguration())
    }

    /// Opens a connection that follows ``poolerMode`` or, when that is `.none`, the
    /// configuration's `DatabaseConfiguration.poolerMode`. Throws
    /// `DatabaseError.connectionFailed(_:)` as ``connect(role:)`` does, and for a `pooler`
    /// URL parameter that names no mode.
    public func connect(role: ConnectionRole, configuration: DatabaseConfiguration) throws -> any DriverConnection {
        if let invalidPoolerParameter {
            throw DatabaseError.connectionFailed(DatabaseErrorContext(
                message: "the URL parameter pooler=\(invalidPoolerParameter) names no pooler mode: use pooler=transaction "
                    + "(behind a transaction-mode pooler such as PgBouncer) or pooler=none"))
        }
        let pooled = poolerMode == .transaction || configuration.poolerMode == .transaction
        return try PostgresConnection(connectionString: libpqConnectionString, searchPath: searchPath, transactionPooler: pooled,
                                      connectTimeout: connectTimeout)
    }
}
