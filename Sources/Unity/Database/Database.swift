import Foundation
import Logging

/// A database: a driver, a bounded pool of its connections, and the closures that lend them.
///
/// `Database` is `Sendable`: share one instance across threads and tasks. Each `read`,
/// `write` or `transaction` closure gets a ``Connection`` of its own for its duration.
/// On SQLite (WAL) writes are serialized through one writer connection while reads run on
/// reader connections in parallel; on PostgreSQL all connections are equal.
///
/// ```swift
/// let db = try Database(driver: SQLiteDriver(path: "app.sqlite"))
/// try db.write { conn in
///     try conn.execute(sql: "INSERT INTO thing (tid, name) VALUES (?, ?)", ["tid1", "thing 1"])
/// }
/// let names = try db.read { conn in try conn.fetchAll(sql: "SELECT name FROM thing") }
/// ```
public final class Database: Sendable {
    /// The SQL dialect of this database's backend.
    public let dialect: SQLDialect
    /// The configuration this database was opened with.
    public let configuration: DatabaseConfiguration
    let writers: ConnectionSubpool
    let readers: ConnectionSubpool?
    /// Runs the async API's work for writer connections (all work on PostgreSQL).
    let writerExecutor: BlockingExecutor
    /// Runs the async API's reads when readers are a pool of their own (SQLite), so that an
    /// async read never queues behind async writes waiting for the one writer.
    let readerExecutor: BlockingExecutor?
    /// ``DatabaseConfiguration/pipelinesConcurrentQueries``, where the driver pipelines.
    let pipelinesQueries: Bool
    /// The read replicas the driver names (``DatabaseDriver/replicas``), or nil without any:
    /// then every statement goes to the one server, exactly as before.
    let replicaSet: ReplicaSet?
    /// The driver, kept for observation's change source.
    let driver: any DatabaseDriver
    /// The hub of this database's observations.
    let changeSink = DatabaseChangeSink()
    /// True when writers report their commits to ``changeSink`` (SQLite's hooks).
    let writersReportCommits: Bool

    /// Opens a database through `driver`. The first connection is opened at once, so a bad
    /// path or URL fails here with ``DatabaseError/connectionFailed(_:)``.
    public init(driver: some DatabaseDriver, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws {
        self.dialect = driver.dialect
        self.configuration = configuration
        self.driver = driver
        writersReportCommits = driver.reportsCommitsThroughConnections
        pipelinesQueries = configuration.pipelinesConcurrentQueries && driver.pipelinesIndependentQueries
            && configuration.poolerMode == .none
        // Nested checkouts (a write inside a read, a read beside a cursor) may open up to one
        // pool's worth of extra connections rather than deadlock; SQLite's single writer
        // never has a second (a nested write there waits for it, which cannot deadlock:
        // the writer's holder never waits for a reader, whose pool has the overflow).
        switch driver.poolShape {
        case .singleWriter(let readerCount):
            writers = ConnectionSubpool(driver: driver, role: .writer, capacity: 1, livenessCheckAfterIdle: configuration.livenessCheckAfterIdle, configuration: configuration)
            readers = readerCount > 0
                ? ConnectionSubpool(driver: driver, role: .reader, capacity: readerCount, overflow: readerCount,
                                    livenessCheckAfterIdle: configuration.livenessCheckAfterIdle, configuration: configuration) : nil
        case .uniform(let count):
            writers = ConnectionSubpool(driver: driver, role: .writer, name: "primary", capacity: count, overflow: max(1, count),
                                        livenessCheckAfterIdle: configuration.livenessCheckAfterIdle, configuration: configuration)
            readers = nil
        }
        let replicaDrivers = driver.replicas
        replicaSet = replicaDrivers.isEmpty ? nil : ReplicaSet(drivers: replicaDrivers, configuration: configuration)
        writerExecutor = BlockingExecutor(threads: configuration.asyncThreads ?? writers.capacity)
        readerExecutor = readers.map { BlockingExecutor(threads: configuration.asyncThreads ?? $0.capacity) }
        // An async call queued for a connection counts as a caller waiting for it: a read's
        // COMMIT then travels with that call's first statement (one server wake-up per lookup,
        // not two). A Unity thread that finds no more work sends whatever is still held, so
        // no connection idles inside a transaction.
        writers.queuedCallers = writerExecutor
        writerExecutor.onIdle = { [weak writers] in writers?.flushIdleHeldWork() }
        if let readers, let readerExecutor {
            readers.queuedCallers = readerExecutor
            readerExecutor.onIdle = { [weak readers] in readers?.flushIdleHeldWork() }
        }
        // Open (and return) the first writer now: it validates the location and, on SQLite,
        // creates the file and switches it to WAL before any reader opens it.
        let first: any DriverConnection
        do {
            first = try writers.checkout(timeout: configuration.checkoutTimeout)
        } catch {
            replicaSet?.close()
            throw error
        }
        writers.checkin(first)
    }

    deinit {
        changeSink.close()
        replicaSet?.close()
        writers.close()
        readers?.close()
        writerExecutor.shutdown()
        readerExecutor?.shutdown()
    }

    /// Closes every idle connection now and the others as they come back. Later calls throw
    /// ``DatabaseError/misuse(_:)``.
    public func close() {
        changeSink.close()
        replicaSet?.close()
        writers.close()
        readers?.close()
    }

    /// The number of connections currently open, idle or in use (for tests and monitoring),
    /// to the primary and to the replicas.
    public var openConnectionCount: Int {
        writers.openCount + (readers?.openCount ?? 0) + (replicaSet?.members.reduce(0) { $0 + $1.pool.openCount } ?? 0)
    }

    /// The number of connections currently idle in the pool.
    public var idleConnectionCount: Int {
        writers.idleCount + (readers?.idleCount ?? 0) + (replicaSet?.members.reduce(0) { $0 + $1.pool.idleCount } ?? 0)
    }

    /// The positions (in ``DatabaseDriver/replicas``) of the replicas that may serve reads
    /// now: up, and not lagging beyond ``DatabaseConfiguration/maxReplicaLag``. Empty without
    /// replicas. For monitoring and tests.
    public var servingReplicas: [Int] {
        guard let replicaSet else { return [] }
        return replicaSet.members.indices.filter { replicaSet.isAvailable($0) }
    }

    // MARK: Lending connections

    /// Lends a connection of `role` to `body` with no transaction of its own: each statement
    /// commits by itself unless `body` opens a transaction. Use this for work that manages its
    /// own transactions (a migrator) or cannot run in one.
    ///
    /// Called on a thread that this database has already lent a connection to (a `write`
    /// inside a `write`, a record's `save()` inside a `transaction`), it lends that same
    /// connection again: nested `read`/`write`/`transaction` become savepoints of the
    /// enclosing transaction and see its changes. A connection lent for reading is shared
    /// with nested reads only; a write inside a `read` gets a writer of its own.
    ///
    /// On a database with read replicas, a connection lent for reading (`role: .reader`)
    /// is one of a replica that has replayed this database's last commit, when one has;
    /// a writer is always the primary's.
    @discardableResult
    public func withConnection<T>(role: ConnectionRole = .writer, _ body: (Connection) throws -> T) throws -> T {
        if let connection = LentConnections.current?.reusable(for: ObjectIdentifier(self), role: role) {
            return try body(connection)
        }
        return try lendPooledConnection(role: role, cancellation: nil, body)
    }

    /// Checks a connection of `role` out of the pool, lends it to `body` (and to the calls
    /// `body` makes on this thread), and returns it to the pool afterwards, its open cursors
    /// closed and any transaction left open rolled back. With `cancellation`, the task's
    /// cancel interrupts the connection's statements while `body` runs.
    ///
    /// With replicas, a reader comes from the replica ``ReplicaSet/pick()`` chooses unless
    /// `source` is `.primary`. A replica that cannot be reached when the connection is
    /// checked out is left out and the primary serves (nothing ran). A replica lost while
    /// `body` runs is left out and the loss thrown, unless `retryLostReplicaRead` (`body` is
    /// one read statement whose rows the caller has not seen): then `body` is sent once to
    /// the primary.
    ///
    /// `context` is what the instrumentation's ``DatabaseInstrumentation/currentContext()``
    /// returned on the caller's task before an async call's hand-off (`.some`); `nil` when
    /// the caller is on this thread, where it is read now.
    private func lendPooledConnection<T>(role: ConnectionRole, source: ReadSource = .replica, retryLostReplicaRead: Bool = false,
                                         cancellation: CancellationControl?, context: (any Sendable)?? = nil,
                                         _ body: (Connection) throws -> T) throws -> T {
        let context = configuration.instrumentation == nil ? nil : context ?? configuration.instrumentation?.currentContext()
        let lent = LentConnections.current
        let nested = lent?.holds(ObjectIdentifier(self)) ?? false
        if role == .reader, source == .replica, let replicaSet, let member = replicaSet.pick() {
            var checkedOut: (any DriverConnection)?
            do {
                checkedOut = try member.pool.checkout(timeout: configuration.checkoutTimeout, nested: nested, cancellation: cancellation)
            } catch DatabaseError.connectionFailed {
                // Down since its last check: nothing ran, so the primary serves.
                replicaSet.markDown(member)
            }
            if let checkedOut {
                do {
                    return try lend(checkedOut, from: member.pool, role: role, onReplica: true, lent: lent, cancellation: cancellation,
                                    context: context, body)
                } catch DatabaseError.connectionLost(let context) {
                    replicaSet.markDown(member)
                    guard retryLostReplicaRead else { throw DatabaseError.connectionLost(context) }
                    // The one read that is sent again: a single statement whose rows no one
                    // has seen, on the primary, once.
                }
            }
        }
        let pool = (role == .reader ? readers : nil) ?? writers
        let driverConnection = try pool.checkout(timeout: configuration.checkoutTimeout, nested: nested, cancellation: cancellation)
        return try lend(driverConnection, from: pool, role: role, onReplica: false, lent: lent, cancellation: cancellation,
                        context: context, body)
    }

    /// Lends a checked-out connection to `body` and returns it to `pool` afterwards.
    private func lend<T>(_ driverConnection: any DriverConnection, from pool: ConnectionSubpool, role: ConnectionRole, onReplica: Bool,
                         lent: LentConnections?, cancellation: CancellationControl?, context: (any Sendable)?,
                         _ body: (Connection) throws -> T) throws -> T {
        cancellation?.setInterrupter(driverConnection.makeInterrupter())
        if writersReportCommits, pool.role == .writer {
            // While something is observed, the writer reports its commits (SQLite's hooks);
            // otherwise its hooks are off and writes pay nothing for observation.
            driverConnection.reportCommits(to: changeSink.isActive ? changeSink : nil)
        }
        let connection = Connection(driverConnection, dialect: dialect, role: pool.role, configuration: configuration, cancellation: cancellation)
        let lentAt = configuration.instrumentation == nil ? 0 : instrumentationNow()
        if configuration.instrumentation != nil {
            connection.poolName = pool.name
            connection.instrumentationContext = context
        }
        if role == .writer, let replicaSet {
            connection.commitPositionSink = { [replicaSet] in replicaSet.noteCommit($0) }
        }
        lent?.push(LentConnections.Lending(database: ObjectIdentifier(self), connection: connection, role: role, onReplica: onReplica))
        defer {
            lent?.pop()
            cancellation?.setInterrupter(nil)
            connection.closeOpenCursors()
            if connection.ranStatementsOutsideTransactions, let replicaSet, driverConnection.isUsable,
               driverConnection.transactionStatus == .idle, let position = try? driverConnection.replicationPosition() {
                // Statements that committed by themselves (a migrator's, `withConnection`'s):
                // one more round trip, on a database with replicas only.
                replicaSet.noteCommit(position)
            }
            pool.checkin(driverConnection, held: configuration.instrumentation == nil ? nil : instrumentationElapsed(since: lentAt))
        }
        return try body(connection)
    }

    /// Runs `body` in a read-only transaction on a reader connection: it sees one consistent
    /// snapshot, commits when it returns and rolls back when it throws.
    ///
    /// The snapshot is taken at the closure's first statement on both backends (SQLite's
    /// deferred transaction, PostgreSQL's `REPEATABLE READ READ ONLY`): a commit made before
    /// that statement is seen, none made after it.
    ///
    /// On a database with read replicas it runs on a replica that has replayed this
    /// database's last commit, else on the primary (see `read(_:_:)`). It is never run
    /// again: a replica lost while it runs makes it throw ``DatabaseError/connectionLost(_:)``.
    @discardableResult
    public func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection(role: .reader) { conn in
            try conn.transaction(.readOnly, body)
        }
    }

    /// Runs `body` as `read(_:)` does, on the server `source` names: `.primary` for a
    /// read that must see every commit made so far, by any client; `.replica` is what
    /// `read(_:)` does. Without replicas both read the one server.
    @discardableResult
    public func read<T>(_ source: ReadSource, _ body: (Connection) throws -> T) throws -> T {
        if let connection = LentConnections.current?.reusable(for: ObjectIdentifier(self), role: .reader, primaryOnly: source == .primary) {
            return try connection.transaction(.readOnly, body)
        }
        return try lendPooledConnection(role: .reader, source: source, cancellation: nil) { conn in
            try conn.transaction(.readOnly, body)
        }
    }

    /// Runs `body` in a write transaction: commits when it returns, rolls back when it throws,
    /// leaving the database as it was. `conn.transaction { }` inside becomes a savepoint.
    @discardableResult
    public func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection(role: .writer) { conn in
            try conn.transaction(.immediate, body)
        }
    }

    /// Runs `body` in a transaction of the given kind on a writer connection: commits when it
    /// returns, rolls back when it throws. The same as `write(_:)` with a choice of kind.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: (Connection) throws -> T) throws -> T {
        try withConnection(role: .writer) { conn in
            try conn.transaction(kind, body)
        }
    }

    // MARK: One-statement conveniences

    /// Runs one statement in its own write transaction; returns the rows changed.
    @discardableResult
    public func execute(_ statement: SQLStatement) throws -> Int {
        try write { try $0.execute(statement) }
    }

    /// Runs one raw SQL statement with `?` placeholders in its own write transaction.
    @discardableResult
    public func execute(sql: String, _ bindings: [DatabaseValue] = []) throws -> Int {
        try write { try $0.execute(sql: sql, bindings) }
    }

    /// All rows of a statement's result. A SELECT runs by itself (it sees one snapshot
    /// anyway); any other statement runs in a read-only transaction, which refuses writes.
    public func fetchAll(_ statement: SQLStatement) throws -> [Row] {
        try readStatement(statement) { try $0.fetchAll(statement) }
    }

    /// All rows of a raw SQL query, read in a read transaction; on the primary when the
    /// database has replicas (raw SQL may call a function that writes: read it from a
    /// replica with `read { try $0.fetchAll(sql: …) }`).
    public func fetchAll(sql: String, _ bindings: [DatabaseValue] = []) throws -> [Row] {
        try read(.primary) { try $0.fetchAll(sql: sql, bindings) }
    }

    /// The first row of a statement's result, or nil; runs like `fetchAll(_:)`.
    public func fetchOne(_ statement: SQLStatement) throws -> Row? {
        try readStatement(statement) { try $0.fetchOne(statement) }
    }

    /// Runs `body`, which issues `statement` and nothing else, on a reader connection.
    ///
    /// One SELECT reads one consistent snapshot by itself on both backends, so wrapping it in
    /// BEGIN … COMMIT buys nothing and costs two more statements (two more round trips on
    /// PostgreSQL): that is most of the cost of a primary-key lookup. A SELECT built from the
    /// AST cannot write (short of calling a function that does), so it runs alone; anything
    /// else, raw SQL included, keeps the read-only transaction that refuses a write.
    ///
    /// With replicas the SELECT goes to one that has replayed this database's last commit;
    /// when that replica is lost before the rows come back, the SELECT is sent once to the
    /// primary (the caller has seen no row of it).
    func readStatement<T>(_ statement: SQLStatement, _ body: (Connection) throws -> T) throws -> T {
        if case .select = statement {
            if let connection = LentConnections.current?.reusable(for: ObjectIdentifier(self), role: .reader) {
                return try body(connection)
            }
            return try lendPooledConnection(role: .reader, retryLostReplicaRead: true, cancellation: nil, body)
        }
        return try read(body)
    }

    /// The first row of a raw SQL query, or nil; on the primary when the database has
    /// replicas, as `fetchAll(sql:_:)`.
    public func fetchOne(sql: String, _ bindings: [DatabaseValue] = []) throws -> Row? {
        try read(.primary) { try $0.fetchOne(sql: sql, bindings) }
    }

    // MARK: Async

    /// `read` for async code: the blocking work runs on Unity's own threads, never on Swift's
    /// cooperative pool. Cancelling the task interrupts the running statement, which then
    /// fails with ``DatabaseError/cancelled(_:)``.
    @discardableResult
    public func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await runAsync(role: .reader) { conn in try conn.transaction(.readOnly, body) }
    }

    /// ``read(_:_:)`` for async code: `body` reads from the server `source` names.
    @discardableResult
    public func read<T: Sendable>(_ source: ReadSource, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await runAsync(role: .reader, source: source) { conn in try conn.transaction(.readOnly, body) }
    }

    /// `write` for async code; see the async `read(_:)` for how it runs.
    @discardableResult
    public func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await runAsync(role: .writer) { conn in try conn.transaction(.immediate, body) }
    }

    /// `transaction` for async code.
    @discardableResult
    public func transaction<T: Sendable>(_ kind: TransactionKind = .immediate, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await runAsync(role: .writer) { conn in try conn.transaction(kind, body) }
    }

    /// `withConnection` for async code.
    @discardableResult
    public func withConnection<T: Sendable>(role: ConnectionRole = .writer, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await runAsync(role: role, body)
    }

    // MARK: Async one-statement conveniences

    /// ``fetchAll(_:)`` for async code: one AST SELECT runs by itself on a reader (no
    /// BEGIN/COMMIT around it), anything else in a read-only transaction.
    public func fetchAll(_ statement: SQLStatement) async throws -> [Row] {
        if case .select = statement {
            if pipelinesQueries { return try await runQueryAsync(statement, firstRowOnly: false) }
            let rendered = try renderForHandOff(statement)
            return try await runAsync(role: .reader, retryLostReplicaRead: true) { try $0.fetchAll(rendered) }
        }
        return try await read { try $0.fetchAll(statement) }
    }

    /// `fetchOne(_:)` for async code; runs like the async `fetchAll(_:)`.
    public func fetchOne(_ statement: SQLStatement) async throws -> Row? {
        if case .select = statement {
            if pipelinesQueries { return try await runQueryAsync(statement, firstRowOnly: true).first }
            let rendered = try renderForHandOff(statement)
            return try await runAsync(role: .reader, retryLostReplicaRead: true) { try $0.fetchOne(rendered) }
        }
        return try await read { try $0.fetchOne(statement) }
    }

    /// Renders an async call's statement on the caller's thread, before the hand-off to a
    /// Unity thread: the statement was just built there, so its memory is in that core's
    /// cache (rendered on the Unity thread, under load, it cost several times as much), and a
    /// statement that cannot be rendered fails without a hand-off. Rendering never blocks.
    private func renderForHandOff(_ statement: SQLStatement) throws -> RenderedSQL {
        try dialect.render(statement)
    }

    /// ``fetchAll(sql:_:)`` for async code: the raw query runs in a read-only transaction,
    /// on the primary when the database has replicas.
    public func fetchAll(sql: String, _ bindings: [DatabaseValue] = []) async throws -> [Row] {
        try await read(.primary) { try $0.fetchAll(sql: sql, bindings) }
    }

    /// ``fetchOne(sql:_:)`` for async code: the raw query runs in a read-only transaction,
    /// on the primary when the database has replicas.
    public func fetchOne(sql: String, _ bindings: [DatabaseValue] = []) async throws -> Row? {
        try await read(.primary) { try $0.fetchOne(sql: sql, bindings) }
    }

    /// ``execute(_:)`` for async code: one statement in its own write transaction; returns
    /// the rows changed.
    @discardableResult
    public func execute(_ statement: SQLStatement) async throws -> Int {
        let rendered = try renderForHandOff(statement)
        return try await write { try $0.execute(rendered) }
    }

    /// ``execute(sql:_:)`` for async code: one raw statement with `?` placeholders in its own
    /// write transaction; returns the rows changed.
    @discardableResult
    public func execute(sql: String, _ bindings: [DatabaseValue] = []) async throws -> Int {
        try await write { try $0.execute(sql: sql, bindings) }
    }

    /// Runs `body` with a pooled connection on one of Unity's threads and resumes the caller
    /// with its outcome: one hand-off there and one back, nothing else. The call's
    /// cancellation and its continuation share one object (one allocation, one lock).
    private func runAsync<T: Sendable>(role: ConnectionRole, source: ReadSource = .replica, retryLostReplicaRead: Bool = false,
                                       _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let call = AsyncCall<T>()
        let executor = (role == .reader ? readerExecutor : nil) ?? writerExecutor
        // Read on the caller's task: the Unity thread that runs the work has no task-locals.
        let context = configuration.instrumentation?.currentContext()
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<T, Error>) in
                // A task cancelled before it got here is resumed by `attach` at once.
                guard call.attach(continuation) else { return }
                executor.submit { [self] in
                    // False when a cancel resumed the caller while the work waited for a thread.
                    guard call.start() else { return }
                    // Resume only after the connection is back in the pool, so that a caller
                    // who awaits the result never observes it still checked out.
                    let outcome = Result {
                        try self.lendPooledConnection(role: role, source: source, retryLostReplicaRead: retryLostReplicaRead,
                                                      cancellation: call, context: .some(context), body)
                    }
                    call.finish(outcome)
                }
                if self.configuration.instrumentation != nil {
                    ((role == .reader ? self.readers : nil) ?? self.writers).reportQueued()
                }
            }
        } onCancel: {
            call.cancel()
        }
    }
}

extension Database {
    /// Queues one AST SELECT for a Unity thread, which may send it in one pipeline with the
    /// queries queued beside it (``DatabaseConfiguration/pipelinesConcurrentQueries``).
    fileprivate func runQueryAsync(_ statement: SQLStatement, firstRowOnly: Bool) async throws -> [Row] {
        let query = QueuedQuery(database: self, statement: statement, firstRowOnly: firstRowOnly,
                                context: configuration.instrumentation?.currentContext())
        let executor = readerExecutor ?? writerExecutor
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<[Row], Error>) in
                guard query.call.attach(continuation) else { return }
                executor.submit(query)
                if configuration.instrumentation != nil { (readers ?? writers).reportQueued() }
            }
        } onCancel: {
            query.call.cancel()
        }
    }

    /// Runs queries that a Unity thread took from its queue together: one alone as any async
    /// call (on a connection of its own, interruptible), several on one connection with
    /// ``DriverConnection/executeIndependently(_:onRow:)``. Each caller gets its own outcome.
    func runQueries(_ batch: [QueuedQuery]) {
        // Queries cancelled while they waited were resumed already: they do not run.
        let queries = batch.filter { $0.call.start() }
        if queries.count == 1, let query = queries.first {
            let outcome = Result {
                try lendPooledConnection(role: .reader, retryLostReplicaRead: true, cancellation: query.call,
                                         context: .some(query.context)) { conn -> [Row] in
                    if query.firstRowOnly { return try conn.fetchOne(query.statement).map { [$0] } ?? [] }
                    return try conn.fetchAll(query.statement)
                }
            }
            query.call.finish(outcome)
            return
        }
        guard !queries.isEmpty else { return }
        var outcomes = [Result<[Row], Error>?](repeating: nil, count: queries.count)
        // Rendering can refuse a statement (an empty identifier…): that caller alone fails.
        var rendered: [RenderedSQL] = []
        var renderedIndex: [Int] = []
        rendered.reserveCapacity(queries.count)
        for (index, query) in queries.enumerated() {
            do {
                let sql = try dialect.render(query.statement)
                configuration.logStatement(sql.sql, sql.bindings)
                rendered.append(sql)
                renderedIndex.append(index)
            } catch {
                outcomes[index] = .failure(error)
            }
        }
        /// Runs the rendered queries in one pipeline on a connection of `pool`.
        func runPipeline(on pool: ConnectionSubpool, _ connection: any DriverConnection) -> (rows: [[Row]], errors: [Error?]) {
            var rows = [[Row]](repeating: [], count: rendered.count)
            let lentAt = configuration.instrumentation == nil ? 0 : instrumentationNow()
            let observations = configuration.instrumentation.map { instrumentation in
                rendered.indices.map { statement in
                    instrumentation.statementStarting(DatabaseStatementEvent(
                        sql: rendered[statement].sql, dialect: dialect, pool: pool.name,
                        context: queries[renderedIndex[statement]].context))
                }
            }
            let errors = connection.executeIndependently(rendered) { statement, row in
                if rows[statement].isEmpty || !queries[renderedIndex[statement]].firstRowOnly {
                    rows[statement].append(row)
                }
            }
            if let observations {
                for (statement, observation) in observations.enumerated() {
                    observation?.finish(error: statement < errors.count ? errors[statement] : nil)
                }
            }
            pool.checkin(connection, held: configuration.instrumentation == nil ? nil : instrumentationElapsed(since: lentAt))
            return (rows, errors)
        }
        if !rendered.isEmpty {
            let primary = readers ?? writers
            do {
                var result: (rows: [[Row]], errors: [Error?])?
                // With replicas the pipeline goes to one, as each of its queries would alone;
                // a replica lost under it has the pipeline sent once to the primary.
                if let replicaSet, let member = replicaSet.pick() {
                    do {
                        let connection = try member.pool.checkout(timeout: configuration.checkoutTimeout)
                        let onReplica = runPipeline(on: member.pool, connection)
                        if onReplica.errors.contains(where: { if case .connectionLost? = $0 as? DatabaseError { true } else { false } }) {
                            replicaSet.markDown(member)
                        } else {
                            result = onReplica
                        }
                    } catch DatabaseError.connectionFailed {
                        replicaSet.markDown(member)
                    }
                }
                if result == nil {
                    result = runPipeline(on: primary, try primary.checkout(timeout: configuration.checkoutTimeout))
                }
                if let result {
                    for (statement, index) in renderedIndex.enumerated() {
                        outcomes[index] = result.errors[statement].map { .failure($0) } ?? .success(result.rows[statement])
                    }
                }
            } catch {
                for index in renderedIndex { outcomes[index] = .failure(error) }
            }
        }
        for (index, query) in queries.enumerated() {
            query.call.finish(outcomes[index] ?? .failure(DatabaseError.misuse("a pipelined query got no outcome")))
        }
    }
}

/// An AST SELECT queued by the async API for a Unity thread (see
/// ``DatabaseConfiguration/pipelinesConcurrentQueries``).
final class QueuedQuery: Sendable {
    /// The database whose connections run it (every query of one executor has the same).
    let database: Database
    let statement: SQLStatement
    /// True for `fetchOne`: rows after the first are not kept.
    let firstRowOnly: Bool
    let call = AsyncCall<[Row]>()
    /// The instrumentation's context, read on the caller's task (nil without an instrumentation).
    let context: (any Sendable)?

    init(database: Database, statement: SQLStatement, firstRowOnly: Bool, context: (any Sendable)? = nil) {
        self.context = context
        self.database = database
        self.statement = statement
        self.firstRowOnly = firstRowOnly
    }
}

/// One async call: its cancellation (what ``CancellationControl`` carries to the connection)
/// and its continuation, resumed exactly once: by the work when it finishes, or by a cancel
/// while the work still waits for a thread (the work then never starts).
final class AsyncCall<T: Sendable>: CancellationControl, @unchecked Sendable {
    // @unchecked: `state` and `continuation` are guarded by the inherited `lock`.
    private var state = State.queued
    private var continuation: UnsafeContinuation<T, Error>?

    private enum State { case queued, running, done }

    private static var cancelledBeforeStart: DatabaseError {
        DatabaseError.cancelled(DatabaseErrorContext(message: "the task was cancelled before the work started"))
    }

    /// Hands over the caller's continuation. Returns false, having resumed it with
    /// ``DatabaseError/cancelled(_:)``, when the task was cancelled already.
    func attach(_ continuation: UnsafeContinuation<T, Error>) -> Bool {
        lock.lock()
        guard state == .queued, !cancelledLocked else {
            state = .done
            lock.unlock()
            continuation.resume(throwing: Self.cancelledBeforeStart)
            return false
        }
        self.continuation = continuation
        lock.unlock()
        return true
    }

    /// Claims the call for the thread that runs it; false when a cancel already resumed the
    /// caller (or resumes it now, when the cancel came just before).
    func start() -> Bool {
        lock.lock()
        guard state == .queued, let continuation else {
            lock.unlock()
            return false
        }
        if cancelledLocked {
            state = .done
            self.continuation = nil
            lock.unlock()
            continuation.resume(throwing: Self.cancelledBeforeStart)
            return false
        }
        state = .running
        lock.unlock()
        return true
    }

    /// Resumes the caller with the work's outcome.
    func finish(_ outcome: Result<T, Error>) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        state = .done
        lock.unlock()
        continuation?.resume(with: outcome)
    }

    /// A cancel while the work waits for a thread resumes the caller at once.
    override func didCancel() {
        lock.lock()
        guard state == .queued, let continuation else {
            lock.unlock()
            return
        }
        state = .done
        self.continuation = nil
        lock.unlock()
        continuation.resume(throwing: Self.cancelledBeforeStart)
    }
}

/// Carries a task's cancellation to the thread running its database work.
///
/// An interrupt only stops a statement the server is running at that instant: PostgreSQL
/// ignores a cancel request that arrives while the backend waits for the next command, and
/// `sqlite3_interrupt` does nothing when no statement runs. So a cancel that lands between
/// two statements would be lost. Two things close that gap: ``Connection`` checks
/// ``isCancelled`` before it starts each statement, and after a cancel the interrupt is sent
/// again every ``refireInterval`` for as long as the work runs, which catches a statement
/// that was already on its way to the server when the cancel came.
class CancellationControl: @unchecked Sendable {
    // @unchecked: guarded by `lock` (which ``AsyncCall`` shares for its own state).
    let lock = NSLock()
    private var cancelled = false
    private var interrupter: (@Sendable () -> Void)?
    /// Wakes the caller while it waits (for a thread, for a connection); called outside the
    /// lock, since it takes the lock of what is waited for.
    private var waker: (@Sendable () -> Void)?
    private var refiring = false
    /// How often the interrupt is repeated while cancelled work still runs.
    static let refireInterval: TimeInterval = 0.1

    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }

    /// ``isCancelled`` for a caller that holds `lock`.
    var cancelledLocked: Bool { cancelled }

    /// Installs the interrupter of the connection the work runs on, or removes it (nil) when
    /// the work is done. Interrupts fire under the lock, so once removal returns no interrupt
    /// can reach the connection, which may then go back to the pool and serve someone else.
    func setInterrupter(_ f: (@Sendable () -> Void)?) {
        lock.lock()
        defer { lock.unlock() }
        interrupter = f
        if cancelled, let f {
            f()
            startRefiring()
        }
    }

    /// Installs what wakes the waiting caller on a cancel, or removes it (nil). Installed
    /// after the cancel, it runs at once.
    func setWaker(_ f: (@Sendable () -> Void)?) {
        lock.lock()
        waker = f
        let fire = cancelled ? f : nil
        lock.unlock()
        fire?()
    }

    func cancel() {
        lock.lock()
        cancelled = true
        if let f = interrupter {
            f()
            startRefiring()
        }
        let wake = waker
        lock.unlock()
        wake?()
        didCancel()
    }

    /// Called once a cancel has been recorded, outside the lock: ``AsyncCall`` resumes a
    /// caller whose work has not started.
    func didCancel() {}

    /// Must be called with `lock` held.
    private func startRefiring() {
        guard !refiring else { return }
        refiring = true
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: Self.refireInterval)
                lock.lock()
                guard let f = interrupter else {
                    refiring = false
                    lock.unlock()
                    return
                }
                f()
                lock.unlock()
            }
        }
        thread.name = "unity-cancel"
        thread.start()
    }
}

/// A fixed set of threads of Unity's own that run blocking database work for the async API,
/// so that a slow query never occupies one of Swift's cooperative threads.
final class BlockingExecutor: @unchecked Sendable {
    // @unchecked: guarded by `condition`; `onIdle` is set once, before any job is submitted.
    private let condition = NSCondition()
    /// Run by a thread that finds no job, before it waits for one.
    var onIdle: (@Sendable () -> Void)?
    private var jobs = JobQueue()

    /// Work for a Unity thread: a closure, or a query that may run with the queries queued
    /// right after it (see ``Database/runQueries(_:)``).
    private enum Job {
        case work(@Sendable () -> Void)
        case query(QueuedQuery)
    }

    /// The queued jobs, first in first out: a ring buffer, so that taking a job never moves
    /// the others (a queue as deep as a server's waiting callers stays cheap).
    private struct JobQueue {
        private var slots: [Job?] = Array(repeating: nil, count: 64)
        private var start = 0
        private(set) var count = 0

        var isEmpty: Bool { count == 0 }

        /// The job ``pop()`` would return.
        var first: Job? { count == 0 ? nil : slots[start] }

        mutating func push(_ job: Job) {
            if count == slots.count {
                // Full: unroll into a buffer twice the size, oldest first.
                var grown: [Job?] = (0..<count).map { slots[(start + $0) % slots.count] }
                grown.append(contentsOf: repeatElement(nil, count: slots.count))
                slots = grown
                start = 0
            }
            slots[(start + count) % slots.count] = job
            count += 1
        }

        mutating func pop() -> Job? {
            guard count > 0 else { return nil }
            let job = slots[start]
            slots[start] = nil
            start = (start + 1) % slots.count
            count -= 1
            return job
        }
    }
    private var started = 0
    private var idleThreads = 0
    private var stopping = false
    private let maxThreads: Int

    init(threads: Int) {
        maxThreads = max(1, threads)
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        enqueue(.work(job))
    }

    /// Queues a query that may share a pipeline with the queries queued beside it.
    func submit(_ query: QueuedQuery) {
        enqueue(.query(query))
    }

    private func enqueue(_ job: Job) {
        condition.lock()
        jobs.push(job)
        let needThread = idleThreads == 0 && started < maxThreads
        if needThread { started += 1 }
        condition.signal()
        condition.unlock()
        if needThread {
            let thread = Thread { [self] in self.work() }
            thread.name = "unity.blocking"
            thread.start()
        }
    }

    /// The jobs submitted and not yet taken by a thread.
    var queuedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count
    }

    private func work() {
        condition.lock()
        while true {
            var idleHookRan = false
            while jobs.isEmpty && !stopping {
                if let onIdle, !idleHookRan {
                    idleHookRan = true
                    condition.unlock()
                    onIdle()
                    condition.lock()
                    continue
                }
                idleThreads += 1
                condition.wait()
                idleThreads -= 1
            }
            guard let job = jobs.pop() else {
                // Stopping, and nothing is left to run.
                started -= 1
                condition.unlock()
                return
            }
            var queries: [QueuedQuery] = []
            if case .query(let first) = job {
                // A thread takes its share of the queries queued in a row (the queue split
                // over the threads, up to the limit), so every connection keeps working.
                let share = min(DatabaseConfiguration.pipelinedQueriesLimit, (jobs.count + maxThreads) / maxThreads)
                queries.append(first)
                while queries.count < share, case .query(let next)? = jobs.first {
                    queries.append(next)
                    _ = jobs.pop()
                }
            }
            condition.unlock()
            switch job {
            case .work(let work): work()
            case .query(let first): first.database.runQueries(queries)
            }
            condition.lock()
        }
    }

    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }
}
