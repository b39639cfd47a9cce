import Foundation
import Metrics
import Tracing
import Unity

/// Metrics (swift-metrics) and tracing (swift-distributed-tracing) for a Unity `Database`,
/// named after the OpenTelemetry semantic conventions for database clients.
///
/// Set it as the database's instrumentation; without one a database reports nothing:
///
/// ```swift
/// let telemetry = TelemetryInstrumentation(databaseName: "app")
/// let db = try Database(driver: driver, configuration: DatabaseConfiguration(instrumentation: telemetry))
/// ```
///
/// What it reports (see ``TelemetryNames`` for every name):
/// - per pool (dimension `db.client.connection.pool.name`): the connections in use and idle
///   (`db.client.connection.count`, `db.client.connection.state` = `used` / `idle`), the most it
///   keeps (`db.client.connection.max`), the callers waiting
///   (`db.client.connection.pending_requests`), how long each waited for a connection
///   (`db.client.connection.wait_time`) and held it (`db.client.connection.use_time`), and
///   the checkouts that timed out (`db.client.connection.timeouts`);
/// - per statement: its duration (`db.client.operation.duration`, with `error.type` when it
///   failed), and the counters `unity.db.client.statements` and `unity.db.client.errors`;
/// - per transaction: its duration (`unity.db.client.transaction.duration`) and outcome;
/// - with a tracer: a client span per statement, named after the operation (`SELECT`,
///   `INSERT`, …), with `db.system.name`, `db.namespace`, `db.operation.name` and
///   `db.query.text` (the SQL with its placeholders, never the values bound to them), and the
///   error recorded on it. Its parent is the `ServiceContext` of the task that made the call,
///   carried to the thread that runs the statement.
public struct TelemetryInstrumentation: DatabaseInstrumentation {
    private let metrics: any MetricsFactory
    private let tracer: (any Tracer)?
    private let databaseName: String?
    private let poolNamePrefix: String?
    private let recordsStatementText: Bool
    private let cache: MetricCache

    /// Creates an instrumentation.
    ///
    /// - Parameters:
    ///   - metrics: Where the metrics go: the process's bootstrapped factory by default. Pass
    ///     `NOOPMetricsHandler.instance` for tracing alone.
    ///   - tracer: Where the spans go: the bootstrapped tracer by default (read now, so
    ///     bootstrap first); nil for metrics alone.
    ///   - databaseName: The database's name (`db.namespace`): the PostgreSQL database, or a
    ///     name for the SQLite file. Nil leaves the attribute out.
    ///   - poolName: What names this database's pools in `db.client.connection.pool.name`, as
    ///     `NAME.primary`, `NAME.writer`, `NAME.replica-0`…: give each database that shares a
    ///     metrics backend a name of its own. Nil uses `databaseName`, else the system
    ///     (`postgresql`, `sqlite`).
    ///   - recordsStatementText: Whether spans carry `db.query.text`. Unity's statements carry
    ///     placeholders, never values; a raw SQL fragment is reported as its caller wrote it,
    ///     so turn this off if yours paste values into the text.
    public init(metrics: any MetricsFactory = MetricsSystem.factory, tracer: (any Tracer)? = InstrumentationSystem.tracer,
                databaseName: String? = nil, poolName: String? = nil, recordsStatementText: Bool = true) {
        self.metrics = metrics
        self.tracer = tracer
        self.databaseName = databaseName
        self.poolNamePrefix = poolName ?? databaseName
        self.recordsStatementText = recordsStatementText
        self.cache = MetricCache()
    }

    /// The caller's `ServiceContext` (a task-local), when there is a tracer.
    public func currentContext() -> (any Sendable)? {
        tracer == nil ? nil : ServiceContext.current
    }

    /// Updates the pool's gauges and its wait and use timers.
    public func poolChanged(_ event: DatabasePoolEvent) {
        let pool = cache.pool(poolNamePrefix.map { "\($0).\(event.pool)" } ?? "\(Self.system(event.dialect)).\(event.pool)", metrics)
        pool.used.set(event.used)
        pool.idle.set(event.idle)
        pool.pending.set(event.waiting)
        pool.max.set(event.capacity)
        switch event.kind {
        case .checkedOut(let waited):
            pool.waitTime.recordNanoseconds(Self.nanoseconds(waited))
        case .timedOut(let waited):
            pool.waitTime.recordNanoseconds(Self.nanoseconds(waited))
            pool.timeouts.increment()
        case .checkedIn(let held?):
            pool.useTime.recordNanoseconds(Self.nanoseconds(held))
        case .checkedIn(nil), .queued, .waiting:
            break
        }
    }

    /// Starts the statement's span and clock.
    public func statementStarting(_ statement: DatabaseStatementEvent) -> (any DatabaseStatementObservation)? {
        let system = Self.system(statement.dialect)
        var operation = statement.isScript ? nil : Self.operationName(statement.sql)
        if let single = operation, statement.batchSize > 1 { operation = "BATCH " + single }
        var span: (any Span)?
        if let tracer {
            let parent = (statement.context as? ServiceContext) ?? ServiceContext.current ?? .topLevel
            let started = tracer.startSpan(operation ?? system, context: parent, ofKind: .client)
            started.updateAttributes { attributes in
                attributes[TelemetryNames.systemName] = system
                if let databaseName { attributes[TelemetryNames.namespace] = databaseName }
                if let operation { attributes[TelemetryNames.operationName] = operation }
                if recordsStatementText { attributes[TelemetryNames.queryText] = statement.sql }
                if statement.batchSize > 1 { attributes[TelemetryNames.batchSize] = statement.batchSize }
            }
            span = started
        }
        return StatementObservation(instrumentation: self, system: system, operation: operation, span: span,
                                    start: DispatchTime.now().uptimeNanoseconds)
    }

    /// Starts the transaction's clock.
    public func transactionStarting(_ transaction: DatabaseTransactionEvent) -> (any DatabaseTransactionObservation)? {
        TransactionObservation(instrumentation: self, system: Self.system(transaction.dialect),
                               readOnly: transaction.kind == .readOnly, start: DispatchTime.now().uptimeNanoseconds)
    }

    // MARK: Recording

    fileprivate func statementFinished(_ observation: StatementObservation, error: (any Error)?) {
        let elapsed = Self.elapsed(since: observation.start)
        let errorType = error.map(Self.errorType)
        var dimensions = [(TelemetryNames.systemName, observation.system)]
        if let databaseName { dimensions.append((TelemetryNames.namespace, databaseName)) }
        if let operation = observation.operation { dimensions.append((TelemetryNames.operationName, operation)) }
        let metrics = cache.statement(dimensions: dimensions, errorType: errorType, metrics)
        metrics.duration.recordNanoseconds(elapsed)
        metrics.statements.increment()
        metrics.errors?.increment()
        if let span = observation.span {
            if let error, let errorType {
                span.recordError(error)
                span.updateAttributes { attributes in
                    attributes[TelemetryNames.errorType] = errorType
                    if let code = (error as? DatabaseError)?.context?.code { attributes[TelemetryNames.responseStatusCode] = code }
                }
                span.setStatus(SpanStatus(code: .error, message: errorType))
            }
            span.end()
        }
    }

    fileprivate func transactionFinished(_ observation: TransactionObservation, committed: Bool) {
        var dimensions = [(TelemetryNames.systemName, observation.system)]
        if let databaseName { dimensions.append((TelemetryNames.namespace, databaseName)) }
        dimensions.append((TelemetryNames.transactionKind, observation.readOnly ? "read_only" : "read_write"))
        dimensions.append((TelemetryNames.transactionOutcome, committed ? "committed" : "rolled_back"))
        cache.transactionTimer(dimensions: dimensions, metrics).recordNanoseconds(Self.elapsed(since: observation.start))
    }

    // MARK: Names

    /// The OpenTelemetry `db.system.name` of a dialect.
    static func system(_ dialect: SQLDialect) -> String {
        switch dialect.name {
        case SQLDialect.postgres.name: "postgresql"
        case SQLDialect.sqlite.name: "sqlite"
        default: dialect.name
        }
    }

    /// The statement's first keyword, upper-cased, when it is a known SQL command (nil
    /// otherwise, so that the metric's dimension stays a short list).
    static func operationName(_ sql: String) -> String? {
        var scalars = sql.unicodeScalars[...]
        // Skip white space and comments.
        while let first = scalars.first {
            if first.properties.isWhitespace {
                scalars.removeFirst()
            } else if scalars.starts(with: "--".unicodeScalars) {
                guard let end = scalars.firstIndex(of: "\n") else { return nil }
                scalars = scalars[scalars.index(after: end)...]
            } else if scalars.starts(with: "/*".unicodeScalars) {
                guard let end = scalars.indices.dropFirst(2).first(where: { scalars[$0...].starts(with: "*/".unicodeScalars) }) else {
                    return nil
                }
                scalars = scalars[scalars.index(end, offsetBy: 2)...]
            } else {
                break
            }
        }
        let word = String(String.UnicodeScalarView(scalars.prefix { $0.properties.isAlphabetic && $0.isASCII })).uppercased()
        return knownOperations.contains(word) ? word : nil
    }

    private static let knownOperations: Set<String> = [
        "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "WITH", "VALUES", "REPLACE", "UPSERT",
        "CREATE", "DROP", "ALTER", "TRUNCATE", "COMMENT", "GRANT", "REVOKE",
        "DECLARE", "FETCH", "CLOSE", "MOVE", "COPY", "CALL", "DO", "EXPLAIN", "ANALYZE", "VACUUM", "REINDEX",
        "PRAGMA", "ATTACH", "DETACH", "SET", "SHOW", "RESET", "LOCK", "LISTEN", "UNLISTEN", "NOTIFY", "REFRESH",
        "PREPARE", "EXECUTE", "DEALLOCATE", "DISCARD",
    ]

    /// A short, stable name for what went wrong (`error.type`): the ``DatabaseError`` case,
    /// else the error's type.
    static func errorType(_ error: any Error) -> String {
        guard let error = error as? DatabaseError else { return String(reflecting: type(of: error)) }
        switch error {
        case .constraintViolation(let kind, _):
            switch kind {
            case .unique: return "unique_violation"
            case .foreignKey: return "foreign_key_violation"
            case .notNull: return "not_null_violation"
            case .check: return "check_violation"
            case .other: return "constraint_violation"
            }
        case .syntax: return "syntax"
        case .undefinedTable: return "undefined_table"
        case .undefinedColumn: return "undefined_column"
        case .typeConversion: return "type_conversion"
        case .busy: return "busy"
        case .readOnly: return "read_only"
        case .connectionLost: return "connection_lost"
        case .recoveryConflict: return "recovery_conflict"
        case .diskFull: return "disk_full"
        case .poolTimeout: return "pool_timeout"
        case .cancelled: return "cancelled"
        case .connectionFailed: return "connection_failed"
        case .misuse: return "misuse"
        case .other: return "other"
        case .transactionAborted: return "transaction_aborted"
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ attoseconds / 1_000_000_000
    }

    private static func elapsed(since start: UInt64) -> Int64 {
        let now = DispatchTime.now().uptimeNanoseconds
        return now >= start ? Int64(truncatingIfNeeded: now - start) : 0
    }
}

/// The names of the metrics, dimensions and span attributes ``TelemetryInstrumentation``
/// reports. Those of the OpenTelemetry conventions for database clients keep their names
/// there; Unity's own start with `unity.`.
public enum TelemetryNames {
    /// Connections of a pool, by ``connectionState`` (a meter).
    public static let connectionCount = "db.client.connection.count"
    /// The most connections a pool keeps (a meter).
    public static let connectionMax = "db.client.connection.max"
    /// Callers waiting for a connection of a pool (a meter).
    public static let pendingRequests = "db.client.connection.pending_requests"
    /// How long a caller waited for a connection (a timer).
    public static let waitTime = "db.client.connection.wait_time"
    /// How long a caller held a connection (a timer).
    public static let useTime = "db.client.connection.use_time"
    /// Checkouts that gave up waiting (a counter).
    public static let timeouts = "db.client.connection.timeouts"
    /// How long each statement took (a timer).
    public static let operationDuration = "db.client.operation.duration"
    /// Statements run (a counter).
    public static let statements = "unity.db.client.statements"
    /// Statements that failed (a counter, by ``errorType``).
    public static let errors = "unity.db.client.errors"
    /// How long each transaction took, BEGIN to COMMIT or ROLLBACK (a timer).
    public static let transactionDuration = "unity.db.client.transaction.duration"

    /// The pool's name (dimension).
    public static let poolName = "db.client.connection.pool.name"
    /// `used` or `idle` (dimension of ``connectionCount``).
    public static let connectionState = "db.client.connection.state"
    /// `postgresql` or `sqlite`.
    public static let systemName = "db.system.name"
    /// The database's name, when one was given.
    public static let namespace = "db.namespace"
    /// The statement's command: `SELECT`, `INSERT`, … (`BATCH INSERT` for a batch).
    public static let operationName = "db.operation.name"
    /// The statement's SQL, with placeholders (span attribute).
    public static let queryText = "db.query.text"
    /// How many sets of values a batch ran with (span attribute).
    public static let batchSize = "db.operation.batch.size"
    /// What went wrong: `unique_violation`, `syntax`, `pool_timeout`, … (see ``TelemetryInstrumentation``).
    public static let errorType = "error.type"
    /// The code the database gave for an error: PostgreSQL's SQLSTATE, SQLite's result code
    /// (span attribute).
    public static let responseStatusCode = "db.response.status_code"
    /// `read_only` or `read_write` (dimension of ``transactionDuration``).
    public static let transactionKind = "unity.transaction.kind"
    /// `committed` or `rolled_back` (dimension of ``transactionDuration``).
    public static let transactionOutcome = "unity.transaction.outcome"
}

/// A statement's span and clock until it ends.
private struct StatementObservation: DatabaseStatementObservation {
    let instrumentation: TelemetryInstrumentation
    let system: String
    let operation: String?
    let span: (any Span)?
    let start: UInt64

    func finish(error: (any Error)?) {
        instrumentation.statementFinished(self, error: error)
    }
}

/// A transaction's clock until it ends.
private struct TransactionObservation: DatabaseTransactionObservation {
    let instrumentation: TelemetryInstrumentation
    let system: String
    let readOnly: Bool
    let start: UInt64

    func finish(committed: Bool, error: (any Error)?) {
        instrumentation.transactionFinished(self, committed: committed)
    }
}

/// The metric objects made so far, by name and dimensions: a backend's handler is made once
/// per series, not once per statement.
private final class MetricCache: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`.
    private let lock = NSLock()
    private var pools: [String: PoolMetrics] = [:]
    private var operations: [String: (duration: Metrics.Timer, statements: Counter)] = [:]
    private var failures: [String: (duration: Metrics.Timer, errors: Counter)] = [:]
    private var transactions: [String: Metrics.Timer] = [:]

    struct PoolMetrics {
        let used: Meter
        let idle: Meter
        let pending: Meter
        let max: Meter
        let waitTime: Metrics.Timer
        let useTime: Metrics.Timer
        let timeouts: Counter
    }

    struct StatementMetrics {
        let duration: Metrics.Timer
        let statements: Counter
        let errors: Counter?
    }

    func pool(_ name: String, _ factory: any MetricsFactory) -> PoolMetrics {
        lock.lock()
        defer { lock.unlock() }
        if let found = pools[name] { return found }
        let pool = [(TelemetryNames.poolName, name)]
        let made = PoolMetrics(
            used: Meter(label: TelemetryNames.connectionCount, dimensions: pool + [(TelemetryNames.connectionState, "used")], factory: factory),
            idle: Meter(label: TelemetryNames.connectionCount, dimensions: pool + [(TelemetryNames.connectionState, "idle")], factory: factory),
            pending: Meter(label: TelemetryNames.pendingRequests, dimensions: pool, factory: factory),
            max: Meter(label: TelemetryNames.connectionMax, dimensions: pool, factory: factory),
            waitTime: Self.timer(TelemetryNames.waitTime, pool, factory),
            useTime: Self.timer(TelemetryNames.useTime, pool, factory),
            timeouts: Counter(label: TelemetryNames.timeouts, dimensions: pool, factory: factory))
        pools[name] = made
        return made
    }

    /// The metrics of a statement with these dimensions: its duration goes to the failed
    /// series (with `error.type`) when `errorType` is set.
    func statement(dimensions: [(String, String)], errorType: String?, _ factory: any MetricsFactory) -> StatementMetrics {
        let key = Self.key(dimensions)
        lock.lock()
        defer { lock.unlock() }
        let operation: (duration: Metrics.Timer, statements: Counter)
        if let found = operations[key] {
            operation = found
        } else {
            operation = (Self.timer(TelemetryNames.operationDuration, dimensions, factory),
                         Counter(label: TelemetryNames.statements, dimensions: dimensions, factory: factory))
            operations[key] = operation
        }
        guard let errorType else {
            return StatementMetrics(duration: operation.duration, statements: operation.statements, errors: nil)
        }
        let failureKey = key + "\u{0}" + TelemetryNames.errorType + "=" + errorType
        let failure: (duration: Metrics.Timer, errors: Counter)
        if let found = failures[failureKey] {
            failure = found
        } else {
            let withError = dimensions + [(TelemetryNames.errorType, errorType)]
            failure = (Self.timer(TelemetryNames.operationDuration, withError, factory),
                       Counter(label: TelemetryNames.errors, dimensions: withError, factory: factory))
            failures[failureKey] = failure
        }
        return StatementMetrics(duration: failure.duration, statements: operation.statements, errors: failure.errors)
    }

    func transactionTimer(dimensions: [(String, String)], _ factory: any MetricsFactory) -> Metrics.Timer {
        let key = Self.key(dimensions)
        lock.lock()
        defer { lock.unlock() }
        if let found = transactions[key] { return found }
        let made = Self.timer(TelemetryNames.transactionDuration, dimensions, factory)
        transactions[key] = made
        return made
    }

    private static func timer(_ label: String, _ dimensions: [(String, String)], _ factory: any MetricsFactory) -> Metrics.Timer {
        Metrics.Timer(label: label, dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
    }

    private static func key(_ dimensions: [(String, String)]) -> String {
        dimensions.map { $0.0 + "=" + $0.1 }.joined(separator: "\u{0}")
    }
}
