import Logging

/// How a ``Database`` behaves: pool checkout timeout, statement logging.
public struct DatabaseConfiguration: Sendable {
    /// How long a caller waits for a free connection before ``DatabaseError/poolTimeout(waitedSeconds:poolSize:)``.
    public var checkoutTimeout: Double
    /// When true, every statement is logged (SQL and the number of bindings) through
    /// ``logger`` at `.info` level: Amigo's `echo`.
    public var echo: Bool
    /// Where statements are logged when ``echo`` is on, and where pool events go at `.debug`.
    public var logger: Logger
    /// How many threads run the blocking work of the `async` API. Nil means one per
    /// connection the pool can hold. SQLite's reads have threads of their own beside the
    /// writer's (a number given here applies to each), so async reads never queue behind
    /// async writes waiting for the one writer.
    public var asyncThreads: Int?
    /// How long a connection must have sat idle in the pool, in seconds, before it is checked
    /// for a server that went away (a restart, `pg_terminate_backend`) when lent again.
    ///
    /// The check is a `poll` of the socket: no round trip, but a system call that a server's
    /// lookups would pay on every checkout. A connection that came back a moment ago was
    /// working then, so it is lent unchecked (HikariCP's "alive bypass window" does the same,
    /// at 500 ms). If the server dropped it in between, the call that meets the loss fails
    /// with ``DatabaseError/connectionLost(_:)`` and the pool drops the idle connections
    /// opened before it, so at most that one call fails. 0 checks every checkout.
    public var livenessCheckAfterIdle: Double
    /// When true, the async one-statement reads (`Database.fetchOne(_:)`
    /// and `Database.fetchAll(_:)` of an AST `SELECT`) that queue up while
    /// every connection is busy share a connection: a Unity thread takes the queued ones
    /// together and sends them in one pipeline, one round trip for all, where each would
    /// otherwise cost one round trip and two thread hand-offs. Npgsql calls this
    /// multiplexing. PostgreSQL only (the driver's
    /// ``DatabaseDriver/pipelinesIndependentQueries``); elsewhere it changes nothing.
    ///
    /// Off by default, because queries that share a pipeline wait for each other:
    /// - A slow query delays the queries queued behind it in its pipeline (at most
    ///   ``pipelinedQueriesLimit`` of them), where each would otherwise take the next free
    ///   connection. Turn it on for a server's many short lookups.
    /// - The queries of one pipeline run in one implicit transaction on the server (one Sync:
    ///   PostgreSQL 15's libpq sends every Sync by itself). Each query still takes its own
    ///   snapshot under `READ COMMITTED`, and a query that fails is reported to its own caller
    ///   only: those after it in the pipeline run again. But a function with side effects
    ///   called by an earlier query of a pipeline that then fails is rolled back with it.
    /// - A query that shares a pipeline is not interrupted by its task's cancellation (an
    ///   interrupt would stop whichever query the server runs at that instant): it finishes.
    ///   A task cancelled while its query still waits for a thread is resumed at once.
    public var pipelinesConcurrentQueries: Bool
    /// At most how many queued queries share one pipeline when
    /// ``pipelinesConcurrentQueries`` is on.
    public static let pipelinedQueriesLimit = 16
    /// How the driver talks to the server when a connection pooler sits between them.
    ///
    /// ``PoolerMode/transaction`` is for a transaction-mode pooler (PgBouncer with
    /// `pool_mode = transaction`, and the managed poolers that behave like it), which hands
    /// the client's connection to another server connection after every transaction: the
    /// driver then keeps no state on the server between transactions. PostgreSQL's driver
    /// also takes it as the URL parameter `pooler=transaction`. SQLite ignores it.
    public var poolerMode: PoolerMode
    /// How often, in seconds, a database with read replicas asks each replica how far it has
    /// replayed the primary's log (one small query per replica on a connection of its own).
    /// A replica serves a read only once such a check has seen it reach this database's
    /// last commit, so a read right after a write goes to the primary for up to this long.
    /// Ignored without replicas.
    public var replicaCheckInterval: Double
    /// How far behind, in seconds, a replica may fall before reads skip it: a replica that
    /// has not replayed a commit of this database made longer ago than this is left out (as
    /// is one that is down) until a check sees it caught up. Ignored without replicas.
    public var maxReplicaLag: Double
    /// PostgreSQL: where observation's listening connection goes (a libpq URL or key/value
    /// string), or nil for the driver's own connection string. `LISTEN` needs a session of its
    /// own on the primary, which a transaction-mode pooler never keeps and a hot standby
    /// refuses: with ``poolerMode`` `.transaction` it is required (observation throws
    /// ``ObservationError/notificationURLRequired`` without it). A multi-host URL with
    /// `target_session_attrs=read-write` follows a failover. SQLite ignores it.
    public var notificationURL: String?

    /// Receives the pool's events, each statement and each transaction, for metrics and
    /// tracing (the `UnityTelemetry` module's `TelemetryInstrumentation`, or your own).
    /// Nil (the default) reports nothing, at the cost of one `nil` check per statement,
    /// checkout and transaction.
    public var instrumentation: (any DatabaseInstrumentation)?

    /// Creates a configuration.
    public init(checkoutTimeout: Double = 10, echo: Bool = false, logger: Logger = Logger(label: "unity.sql"), asyncThreads: Int? = nil,
                livenessCheckAfterIdle: Double = 0.5, pipelinesConcurrentQueries: Bool = false,
                poolerMode: PoolerMode = .none, replicaCheckInterval: Double = 0.1, maxReplicaLag: Double = 5,
                notificationURL: String? = nil, instrumentation: (any DatabaseInstrumentation)? = nil) {
        self.notificationURL = notificationURL
        self.instrumentation = instrumentation
        self.replicaCheckInterval = replicaCheckInterval
        self.maxReplicaLag = maxReplicaLag
        self.checkoutTimeout = checkoutTimeout
        self.echo = echo
        self.logger = logger
        self.asyncThreads = asyncThreads
        self.livenessCheckAfterIdle = livenessCheckAfterIdle
        self.pipelinesConcurrentQueries = pipelinesConcurrentQueries
        self.poolerMode = poolerMode
    }
}

/// What sits between a ``Database`` and its server (``DatabaseConfiguration/poolerMode``).
public enum PoolerMode: String, Sendable, Hashable, CaseIterable {
    /// Nothing, or a pooler in session mode: each connection keeps one server connection,
    /// and the driver caches prepared statements on it.
    case none
    /// A transaction-mode pooler: between transactions, the next statement may reach another
    /// server connection. The driver prepares no named statements (each statement is parsed
    /// with its execution), sends BEGIN and COMMIT as they are, pins the session settings it
    /// relies on (time zone, date style, search path, …) inside every transaction, runs every
    /// one-statement call in a transaction of its own, never holds a COMMIT back or chains
    /// transactions, never pipelines independent queries, and ends a cursor's transaction with
    /// the cursor. It costs a parse per statement and a little more per transaction.
    case transaction
}

extension DatabaseConfiguration {
    /// Logs a statement about to run when ``echo`` is on: its SQL and how many values it binds.
    @inline(__always)
    func logStatement(_ sql: String, _ bindings: [DatabaseValue]) {
        if echo {
            logger.info("\(sql)", metadata: bindings.isEmpty ? nil : ["bindings": "\(bindings.count)"])
        }
    }
}
