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

    /// Creates a configuration.
    public init(checkoutTimeout: Double = 10, echo: Bool = false, logger: Logger = Logger(label: "unity.sql"), asyncThreads: Int? = nil,
                livenessCheckAfterIdle: Double = 0.5) {
        self.checkoutTimeout = checkoutTimeout
        self.echo = echo
        self.logger = logger
        self.asyncThreads = asyncThreads
        self.livenessCheckAfterIdle = livenessCheckAfterIdle
    }
}
