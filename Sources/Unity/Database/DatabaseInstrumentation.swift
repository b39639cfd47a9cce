import Foundation

/// Receives what a ``Database`` does, for metrics and tracing: its pools' connections, each
/// statement it runs, each transaction.
///
/// Set one as ``DatabaseConfiguration/instrumentation``. Without one (the default) a
/// database reports nothing and pays one `nil` check per statement, checkout and transaction.
/// The `UnityTelemetry` module implements it on swift-metrics and swift-distributed-tracing
/// (`TelemetryInstrumentation`); write your own to feed another system.
///
/// Every method is called on the thread that does the work, often one of Unity's own threads
/// rather than the caller's task, and must return quickly: a statement's hooks run on the
/// statement's path. Each method has a default that does nothing.
public protocol DatabaseInstrumentation: Sendable {
    /// Called on the calling thread when a call to the database begins, before the work of an
    /// `async` call leaves the caller's task for one of Unity's threads: what it returns
    /// (a tracing context, typically read from a task-local) travels with the call and is
    /// handed back as the ``DatabaseStatementEvent/context`` and
    /// ``DatabaseTransactionEvent/context`` of its events.
    func currentContext() -> (any Sendable)?

    /// A pool lent or took back a connection, or a caller queued for one.
    func poolChanged(_ event: DatabasePoolEvent)

    /// A statement is about to run. The observation returned, if any, is told when it ends.
    func statementStarting(_ statement: DatabaseStatementEvent) -> (any DatabaseStatementObservation)?

    /// A transaction is about to begin (the outermost one: a savepoint inside it is not
    /// reported). The observation returned, if any, is told how it ended.
    func transactionStarting(_ transaction: DatabaseTransactionEvent) -> (any DatabaseTransactionObservation)?
}

extension DatabaseInstrumentation {
    /// No context: events carry `nil`.
    public func currentContext() -> (any Sendable)? { nil }
    /// Ignores the event.
    public func poolChanged(_ event: DatabasePoolEvent) {}
    /// Observes nothing.
    public func statementStarting(_ statement: DatabaseStatementEvent) -> (any DatabaseStatementObservation)? { nil }
    /// Observes nothing.
    public func transactionStarting(_ transaction: DatabaseTransactionEvent) -> (any DatabaseTransactionObservation)? { nil }
}

/// One running statement, as ``DatabaseInstrumentation/statementStarting(_:)`` observes it.
public protocol DatabaseStatementObservation {
    /// The statement ended: `error` is nil when it succeeded, else what it threw.
    func finish(error: (any Error)?)
}

/// One running transaction, as ``DatabaseInstrumentation/transactionStarting(_:)`` observes it.
public protocol DatabaseTransactionObservation {
    /// The transaction ended: `committed` is true when its COMMIT succeeded; otherwise it was
    /// rolled back (or its COMMIT failed) and `error` says why.
    func finish(committed: Bool, error: (any Error)?)
}

/// A statement about to run (see ``DatabaseInstrumentation/statementStarting(_:)``).
///
/// Transaction control (BEGIN, COMMIT, ROLLBACK, savepoints) is not reported as statements:
/// ``DatabaseInstrumentation/transactionStarting(_:)`` covers it.
public struct DatabaseStatementEvent: Sendable {
    /// The SQL text as rendered for the backend, with its placeholders (`?` or `$1…`): never
    /// the values bound to them. A raw SQL fragment is reported as its caller wrote it.
    public var sql: String
    /// The dialect of the database that runs it.
    public var dialect: SQLDialect
    /// The pool whose connection runs it (see ``DatabasePoolEvent/pool``).
    public var pool: String
    /// How many sets of values it runs with: 1 for one statement, more for a batch that runs
    /// the same SQL once per set.
    public var batchSize: Int
    /// True for a script of several statements run as written (a migration file).
    public var isScript: Bool
    /// What ``DatabaseInstrumentation/currentContext()`` returned when the call began.
    public var context: (any Sendable)?

    /// Creates an event (for tests of an instrumentation).
    public init(sql: String, dialect: SQLDialect, pool: String, batchSize: Int = 1, isScript: Bool = false, context: (any Sendable)? = nil) {
        self.sql = sql
        self.dialect = dialect
        self.pool = pool
        self.batchSize = batchSize
        self.isScript = isScript
        self.context = context
    }
}

/// A transaction about to begin (see ``DatabaseInstrumentation/transactionStarting(_:)``).
public struct DatabaseTransactionEvent: Sendable {
    /// The kind of transaction (a `read {}` is ``TransactionKind/readOnly``).
    public var kind: TransactionKind
    /// The dialect of the database that runs it.
    public var dialect: SQLDialect
    /// The pool whose connection runs it.
    public var pool: String
    /// What ``DatabaseInstrumentation/currentContext()`` returned when the call began.
    public var context: (any Sendable)?

    /// Creates an event (for tests of an instrumentation).
    public init(kind: TransactionKind, dialect: SQLDialect, pool: String, context: (any Sendable)? = nil) {
        self.kind = kind
        self.dialect = dialect
        self.pool = pool
        self.context = context
    }
}

/// A change in one of a database's connection pools, with the pool's counts right after it.
public struct DatabasePoolEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// A connection was lent after the caller waited `waited` for it (zero or nearly so
        /// when one was idle).
        case checkedOut(waited: Duration)
        /// A caller found no connection to take and starts waiting for one (it is counted in
        /// ``DatabasePoolEvent/waiting``).
        case waiting
        /// A caller gave up after waiting `waited`: ``DatabaseError/poolTimeout(waitedSeconds:poolSize:)``.
        case timedOut(waited: Duration)
        /// A connection came back after being held for `held` (nil when the pool lent it for
        /// its own work, such as the first connection a database opens).
        case checkedIn(held: Duration?)
        /// An `async` call queued for one of Unity's threads, which will check a connection out.
        case queued
    }

    /// What happened.
    public var kind: Kind
    /// The pool's name within its database: `primary` (PostgreSQL's one pool), `writer` and
    /// `reader` (SQLite's single writer and its readers), `replica-0`, `replica-1`, … (read
    /// replicas, in the order the driver names them).
    public var pool: String
    /// The dialect of the database the pool belongs to.
    public var dialect: SQLDialect
    /// How many connections the pool keeps at most (nested calls may open a few more).
    public var capacity: Int
    /// Connections open, idle or lent.
    public var open: Int
    /// Connections idle in the pool.
    public var idle: Int
    /// Callers waiting: threads waiting in a checkout, plus `async` calls queued for one of
    /// Unity's threads to check a connection out for them.
    public var waiting: Int

    /// Connections lent out: ``open`` less ``idle``.
    public var used: Int { max(0, open - idle) }

    /// Creates an event (for tests of an instrumentation).
    public init(kind: Kind, pool: String, dialect: SQLDialect, capacity: Int, open: Int, idle: Int, waiting: Int) {
        self.kind = kind
        self.pool = pool
        self.dialect = dialect
        self.capacity = capacity
        self.open = open
        self.idle = idle
        self.waiting = waiting
    }
}

/// A monotonic instant for the instrumentation's durations, read only when an instrumentation
/// is set.
@inline(__always)
func instrumentationNow() -> UInt64 {
    DispatchTime.now().uptimeNanoseconds
}

/// The time since `start` (an ``instrumentationNow()``).
@inline(__always)
func instrumentationElapsed(since start: UInt64) -> Duration {
    let now = instrumentationNow()
    return .nanoseconds(Int64(truncatingIfNeeded: now >= start ? now - start : 0))
}
