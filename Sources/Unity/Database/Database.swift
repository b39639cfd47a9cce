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

    /// Opens a database through `driver`. The first connection is opened at once, so a bad
    /// path or URL fails here with ``DatabaseError/connectionFailed(_:)``.
    public init(driver: some DatabaseDriver, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws {
        self.dialect = driver.dialect
        self.configuration = configuration
        pipelinesQueries = configuration.pipelinesConcurrentQueries && driver.pipelinesIndependentQueries
        // Nested checkouts (a write inside a read, a read beside a cursor) may open up to one
        // pool's worth of extra connections rather than deadlock; SQLite's single writer
        // never has a second (a nested write there waits for it, which cannot deadlock:
        // the writer's holder never waits for a reader, whose pool has the overflow).
        switch driver.poolShape {
        case .singleWriter(let readerCount):
            writers = ConnectionSubpool(driver: driver, role: .writer, capacity: 1, livenessCheckAfterIdle: configuration.livenessCheckAfterIdle)
            readers = readerCount > 0
                ? ConnectionSubpool(driver: driver, role: .reader, capacity: readerCount, overflow: readerCount,
                                    livenessCheckAfterIdle: configuration.livenessCheckAfterIdle) : nil
        case .uniform(let count):
            writers = ConnectionSubpool(driver: driver, role: .writer, capacity: count, overflow: max(1, count),
                                        livenessCheckAfterIdle: configuration.livenessCheckAfterIdle)
            readers = nil
        }
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
        let first = try writers.checkout(timeout: configuration.checkoutTimeout)
        writers.checkin(first)
    }

    deinit {
        writers.close()
        readers?.close()
        writerExecutor.shutdown()
        readerExecutor?.shutdown()
    }

    /// Closes every idle connection now and the others as they come back. Later calls throw
    /// ``DatabaseError/misuse(_:)``.
    public func close() {
        writers.close()
        readers?.close()
    }

    /// The number of connections currently open, idle or in use (for tests and monitoring).
    public var openConnectionCount: Int { writers.openCount + (readers?.openCount ?? 0) }

    /// The number of connections currently idle in the pool.
    public var idleConnectionCount: Int { writers.idleCount + (readers?.idleCount ?? 0) }

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
    private func lendPooledConnection<T>(role: ConnectionRole, cancellation: CancellationControl?, _ body: (Connection) throws -> T) throws -> T {
        let pool = (role == .reader ? readers : nil) ?? writers
        let lent = LentConnections.current
        let nested = lent?.holds(ObjectIdentifier(self)) ?? false
        let driverConnection = try pool.checkout(timeout: configuration.checkoutTimeout, nested: nested, cancellation: cancellation)
        cancellation?.setInterrupter(driverConnection.makeInterrupter())
        let connection = Connection(driverConnection, dialect: dialect, role: pool.role, configuration: configuration, cancellation: cancellation)
        lent?.push(LentConnections.Lending(database: ObjectIdentifier(self), connection: connection, role: role))
        defer {
            lent?.pop()
            cancellation?.setInterrupter(nil)
            connection.closeOpenCursors()
            pool.checkin(driverConnection)
        }
        return try body(connection)
    }

    /// Runs `body` in a read-only transaction on a reader connection: it sees one consistent
    /// snapshot, commits when it returns and rolls back when it throws.
    ///
    /// The snapshot is taken at the closure's first statement on both backends (SQLite's
    /// deferred transaction, PostgreSQL's `REPEATABLE READ READ ONLY`): a commit made before
    /// that statement is seen, none made after it.
    @discardableResult
    public func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try withConnection(role: .reader) { conn in
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

    /// All rows of a raw SQL query, read in a read transaction.
    public func fetchAll(sql: String, _ bindings: [DatabaseValue] = []) throws -> [Row] {
        try read { try $0.fetchAll(sql: sql, bindings) }
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
    func readStatement<T>(_ statement: SQLStatement, _ body: (Connection) throws -> T) throws -> T {
        if case .select = statement {
            return try withConnection(role: .reader, body)
        }
        return try read(body)
    }

    /// The first row of a raw SQL query, or nil.
    public func fetchOne(sql: String, _ bindings: [DatabaseValue] = []) throws -> Row? {
        try read { try $0.fetchOne(sql: sql, bindings) }
    }

    // MARK: Async

    /// `read` for async code: the blocking work runs on Unity's own threads, never on Swift's
    /// cooperative pool. Cancelling the task interrupts the running statement, which then
    /// fails with ``DatabaseError/cancelled(_:)``.
    @discardableResult
    public func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await runAsync(role: .reader) { conn in try conn.transaction(.readOnly, body) }
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
            return try await runAsync(role: .reader) { try $0.fetchAll(rendered) }
        }
        return try await read { try $0.fetchAll(statement) }
    }

    /// `fetchOne(_:)` for async code; runs like the async `fetchAll(_:)`.
    public func fetchOne(_ statement: SQLStatement) async throws -> Row? {
        if case .select = statement {
            if pipelinesQueries { return try await runQueryAsync(statement, firstRowOnly: true).first }
            let rendered = try renderForHandOff(statement)
            return try await runAsync(role: .reader) { try $0.fetchOne(rendered) }
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

    /// ``fetchAll(sql:_:)`` for async code: the raw query runs in a read-only transaction.
    public func fetchAll(sql: String, _ bindings: [DatabaseValue] = []) async throws -> [Row] {
        try await read { try $0.fetchAll(sql: sql, bindings) }
    }

    /// ``fetchOne(sql:_:)`` for async code: the raw query runs in a read-only transaction.
    public func fetchOne(sql: String, _ bindings: [DatabaseValue] = []) async throws -> Row? {
        try await read { try $0.fetchOne(sql: sql, bindings) }
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
    private func runAsync<T: Sendable>(role: ConnectionRole, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let call = AsyncCall<T>()
        let executor = (role == .reader ? readerExecutor : nil) ?? writerExecutor
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<T, Error>) in
                // A task cancelled before it got here is resumed by `attach` at once.
                guard call.attach(continuation) else { return }
                executor.submit { [self] in
                    // False when a cancel resumed the caller while the work waited for a thread.
                    guard call.start() else { return }
                    // Resume only after the connection is back in the pool, so that a caller
                    // who awaits the result never observes it still checked out.
                    let outcome = Result { try self.lendPooledConnection(role: role, cancellation: call, body) }
                    call.finish(outcome)
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
        let query = QueuedQuery(database: self, statement: statement, firstRowOnly: firstRowOnly)
        let executor = readerExecutor ?? writerExecutor
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<[Row], Error>) in
                guard query.call.attach(continuation) else { return }
                executor.submit(query)
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
                try lendPooledConnection(role: .reader, cancellation: query.call) { conn -> [Row] in
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
        if !rendered.isEmpty {
            let pool = readers ?? writers
            do {
                let connection = try pool.checkout(timeout: configuration.checkoutTimeout)
                var rows = [[Row]](repeating: [], count: rendered.count)
                let errors = connection.executeIndependently(rendered) { statement, row in
                    if rows[statement].isEmpty || !queries[renderedIndex[statement]].firstRowOnly {
                        rows[statement].append(row)
                    }
                }
                pool.checkin(connection)
                for (statement, index) in renderedIndex.enumerated() {
                    outcomes[index] = errors[statement].map { .failure($0) } ?? .success(rows[statement])
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

    init(database: Database, statement: SQLStatement, firstRowOnly: Bool) {
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
