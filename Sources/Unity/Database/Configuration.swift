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

    /// Creates a configuration.
    public init(checkoutTimeout: Double = 10, echo: Bool = false, logger: Logger = Logger(label: "unity.sql"), asyncThreads: Int? = nil) {
        self.checkoutTimeout = checkoutTimeout
        self.echo = echo
        self.logger = logger
        self.asyncThreads = asyncThreads
    }
}
