import Foundation
import Logging

/// A connection lent by a ``Database`` for the length of one `read`, `write` or
/// `transaction` closure. Everything a flavor does to the database goes through it.
///
/// It is not `Sendable` and must not escape its closure: the connection goes back to the pool
/// when the closure returns, and any cursor still open is closed then.
public final class Connection {
    let driverConnection: any DriverConnection
    /// The SQL dialect of this connection's backend.
    public let dialect: SQLDialect
    let configuration: DatabaseConfiguration
    /// The role this connection was checked out for.
    public let role: ConnectionRole
    private var savepointDepth = 0
    /// How many `transaction` scopes this connection has open (the transaction itself and
    /// its savepoints). Zero outside any: then statements run with no transaction checks.
    private var scopeDepth = 0
    /// Set when a statement failed inside an open scope: the transaction cannot commit (on
    /// PostgreSQL the server has aborted it; SQLite is made to agree). Cleared by a rollback
    /// to the innermost savepoint.
    private var abortReason: String?
    /// Set when the transaction ended under an open scope (a raw COMMIT/ROLLBACK, SQLite's
    /// ON CONFLICT ROLLBACK): nothing more may run until the outermost scope ends.
    private var endReason: String?
    /// Set when a statement inside an open scope met a lost connection: the transaction is
    /// gone with it, and later statements and the commit report ``DatabaseError/connectionLost(_:)``
    /// (the cause a caller retries on) rather than an aborted transaction.
    private var lostConnection: DatabaseErrorContext?
    private var openCursors: [Weak] = []
    /// Numbers the server-side cursors of ``forEachRowInBatches(_:batchSize:_:)``, so that
    /// nested ones have names of their own.
    private var serverCursorCount = 0
    /// The async caller's cancellation, if any: checked before each statement so that a
    /// task cancelled between two statements does not start the next one.
    private let cancellation: CancellationControl?
    /// Told the log position of every commit of a transaction that may have written, on a
    /// database with replicas (nil otherwise: the COMMIT then runs as it is).
    var commitPositionSink: ((UInt64) -> Void)?
    /// True once a statement ran outside any transaction of this connection while
    /// ``commitPositionSink`` is set: it may have written, so the lender asks for the log
    /// position when the connection goes back.
    var ranStatementsOutsideTransactions = false
    /// ``DatabaseConfiguration/instrumentation``: told of each statement and transaction.
    private let instrumentation: (any DatabaseInstrumentation)?
    /// The name of the pool this connection came from, for the instrumentation's events.
    var poolName = ""
    /// What the instrumentation's ``DatabaseInstrumentation/currentContext()`` returned when
    /// the call that lent this connection began.
    var instrumentationContext: (any Sendable)?

    init(_ driverConnection: any DriverConnection, dialect: SQLDialect, role: ConnectionRole, configuration: DatabaseConfiguration, cancellation: CancellationControl? = nil) {
        self.driverConnection = driverConnection
        self.dialect = dialect
        self.role = role
        self.configuration = configuration
        self.cancellation = cancellation
        self.instrumentation = configuration.instrumentation
    }

    /// Throws ``DatabaseError/cancelled(_:)`` once the task that borrowed this connection is
    /// cancelled. Rollbacks do not call it: undoing work must still run after a cancel.
    @inline(__always)
    private func checkCancelled(_ sql: String) throws {
        if let cancellation, cancellation.isCancelled {
            throw DatabaseError.cancelled(DatabaseErrorContext(message: "the task was cancelled", sql: sql))
        }
    }

    // MARK: Rendering

    /// Renders a statement in this connection's dialect.
    public func render(_ statement: SQLStatement) throws -> RenderedSQL {
        try dialect.render(statement)
    }

    @inline(__always)
    func log(_ sql: String, _ bindings: [DatabaseValue]) {
        configuration.logStatement(sql, bindings)
    }

    // MARK: Executing

    /// Runs a statement and returns the number of rows it changed.
    @discardableResult
    public func execute(_ statement: SQLStatement) throws -> Int {
        let rendered = try render(statement)
        return try execute(rendered)
    }

    /// Runs already-rendered SQL and returns the number of rows it changed.
    @discardableResult
    public func execute(_ rendered: RenderedSQL) throws -> Int {
        try perform(rendered.sql) { try run(rendered) }
    }

    /// Logs and runs rendered SQL without the cancellation and transaction checks.
    @inline(__always)
    private func run(_ rendered: RenderedSQL) throws -> Int {
        log(rendered.sql, rendered.bindings)
        return try driverConnection.execute(rendered.sql, bindings: rendered.bindings, onRow: nil)
    }

    /// True when a statement that fails on a constraint is undone alone and the transaction
    /// goes on (SQLite), so that ``executeRecoverably(_:bindings:recoverable:)`` can try a
    /// statement without a savepoint.
    var undoesFailedStatementAlone: Bool { driverConnection.undoesFailedStatementAlone }

    /// Runs one rendered statement that the caller knows how to do otherwise when it fails
    /// on a constraint: returns nil when it failed with an error `recoverable` accepts and the
    /// engine undid this statement alone, keeping the open transaction (SQLite). The failure
    /// then does not abort the transaction: the caller runs something else instead. Any other
    /// failure, or one that aborted the transaction (PostgreSQL), is thrown as by
    /// ``execute(_:)-(RenderedSQL)``.
    ///
    /// An instrumentation is told of a recovered failure as the error it was: the statement
    /// failed, even though the caller goes on with nil.
    func executeRecoverably(_ sql: String, bindings: [DatabaseValue],
                            recoverable: (DatabaseError) -> Bool) throws -> Int? {
        var recovered: DatabaseError?
        func attempt() throws -> Int? {
            log(sql, bindings)
            do {
                return try driverConnection.execute(sql, bindings: bindings, onRow: nil)
            } catch let error as DatabaseError where recoverable(error)
                && driverConnection.undoesFailedStatementAlone && driverConnection.transactionStatus == .active {
                // Not thrown, so not noted: the transaction goes on.
                recovered = error
                return nil
            }
        }
        guard let instrumentation else { return try performUnobserved(sql, attempt) }
        return try performObserved(instrumentation, sql, batchSize: 1, isScript: false, attempt, recovered: { recovered })
    }

    /// Runs one statement's driver call: refuses it after a cancel or in a transaction that
    /// can no longer commit, and afterwards notes a failure or a transaction ended under an
    /// open scope. Outside any scope of this connection it adds nothing but the cancel check
    /// (and, with an instrumentation, its statement events).
    @inline(__always)
    func perform<R>(_ sql: String, batchSize: Int = 1, isScript: Bool = false, _ body: () throws -> R) throws -> R {
        guard let instrumentation else { return try performUnobserved(sql, body) }
        return try performObserved(instrumentation, sql, batchSize: batchSize, isScript: isScript, body, recovered: { nil })
    }

    /// ``performUnobserved(_:_:)`` between the instrumentation's statement events. The
    /// statement ends with what it threw, else with what `recovered` returns: an error the
    /// body caught and recovered from still reports the statement as failed.
    private func performObserved<R>(_ instrumentation: any DatabaseInstrumentation, _ sql: String, batchSize: Int,
                                    isScript: Bool, _ body: () throws -> R, recovered: () -> (any Error)?) throws -> R {
        let observation = instrumentation.statementStarting(DatabaseStatementEvent(
            sql: sql, dialect: dialect, pool: poolName, batchSize: batchSize, isScript: isScript, context: instrumentationContext))
        let result: R
        do {
            result = try performUnobserved(sql, body)
        } catch {
            observation?.finish(error: error)
            throw error
        }
        observation?.finish(error: recovered())
        return result
    }

    /// Runs transaction control (BEGIN, COMMIT, savepoints) as ``perform(_:batchSize:isScript:_:)``
    /// does, without the instrumentation's statement events: the transaction's own cover it.
    private func executeControl(_ statement: SQLStatement) throws {
        let rendered = try render(statement)
        _ = try performUnobserved(rendered.sql) { try run(rendered) }
    }

    /// ``perform(_:batchSize:isScript:_:)`` without the instrumentation.
    @inline(__always)
    private func performUnobserved<R>(_ sql: String, _ body: () throws -> R) throws -> R {
        try checkCancelled(sql)
        guard scopeDepth > 0 else {
            if commitPositionSink != nil { ranStatementsOutsideTransactions = true }
            return try body()
        }
        try checkTransactionUsable(sql)
        let result: R
        do {
            result = try body()
        } catch {
            noteFailure(error, sql: sql)
            throw error
        }
        if driverConnection.transactionStatus == .idle {
            endReason = "the statement \(Self.abbreviate(sql)) ended the transaction inside its closure"
        }
        return result
    }

    /// Throws ``DatabaseError/transactionAborted(_:)`` when the open transaction cannot take
    /// another statement.
    private func checkTransactionUsable(_ sql: String) throws {
        if let lostConnection {
            throw DatabaseError.connectionLost(DatabaseErrorContext(
                message: "the connection was lost inside the transaction at the statement "
                    + "\(lostConnection.sql.map(Self.abbreviate) ?? "before this one") (\(lostConnection.message)); "
                    + "the transaction did not commit and runs nothing more",
                sql: sql, code: lostConnection.code))
        }
        if endReason == nil && abortReason == nil {
            // Cheap local reads: catches what a cursor's statement did after it was opened.
            switch driverConnection.transactionStatus {
            case .active: return
            case .idle: endReason = "the transaction was ended inside its closure"
            case .failed: abortReason = "a statement failed in the transaction"
            }
        }
        if let endReason {
            throw DatabaseError.transactionAborted(DatabaseErrorContext(
                message: endReason + "; later statements are refused, and the transaction will not report a commit",
                sql: sql))
        }
        if let abortReason {
            throw DatabaseError.transactionAborted(DatabaseErrorContext(
                message: abortReason + "; the transaction is aborted and runs nothing more (wrap the statement that may fail "
                    + "in a nested transaction { } to undo only it)",
                sql: sql))
        }
    }

    /// Records what a failed statement did to the open transaction. On PostgreSQL any
    /// failure the server saw aborts the transaction; SQLite keeps it open, but Unity treats
    /// it the same so that a caught error means the same on both backends. A failure that
    /// never reached the engine (a value refused before binding, a row that did not decode,
    /// an error thrown by the caller's row closure) leaves the transaction as it was.
    private func noteFailure(_ error: Error, sql: String) {
        if case .connectionLost(var context)? = error as? DatabaseError {
            if context.sql == nil { context.sql = sql }
            if lostConnection == nil { lostConnection = context }
            return
        }
        switch driverConnection.transactionStatus {
        case .idle:
            endReason = "the statement \(Self.abbreviate(sql)) failed and the engine rolled the whole transaction back"
            return
        case .failed:
            abortReason = "the statement \(Self.abbreviate(sql)) failed (\(error))"
            return
        case .active:
            break
        }
        guard let error = error as? DatabaseError else { return }
        switch error {
        case .misuse, .typeConversion:
            return
        default:
            abortReason = "the statement \(Self.abbreviate(sql)) failed (\(error))"
        }
    }

    /// `sql`, cut to a length that fits in a message.
    private static func abbreviate(_ sql: String) -> String {
        let limit = 200
        guard sql.count > limit else { return "\"" + sql + "\"" }
        return "\"" + sql.prefix(limit) + "…\""
    }

    /// Runs one raw SQL statement whose `?` placeholders take `bindings`; the dialect
    /// rewrites the placeholders (`$1…` on PostgreSQL) and leaves quoted text alone.
    @discardableResult
    public func execute(sql: String, _ bindings: [DatabaseValue] = []) throws -> Int {
        try execute(.raw(SQLFragment(sql, bindings)))
    }

    /// Runs a script of several raw statements with no bindings, as written (migrations).
    public func executeScript(_ sql: String) throws {
        try perform(sql, isScript: true) {
            log(sql, [])
            try driverConnection.executeScript(sql)
        }
    }

    /// Runs many statements as fast as the backend allows: consecutive statements that render
    /// to the same SQL run as one batch (one reused prepared statement on SQLite, one pipeline
    /// on PostgreSQL). Returns the total number of rows changed. A batch is all-or-nothing on
    /// both backends: outside a transaction it runs in one of its own, inside one it is a
    /// savepoint's worth of work that the enclosing transaction commits or rolls back.
    @discardableResult
    public func executeBatch(_ statements: [SQLStatement]) throws -> Int {
        if driverConnection.transactionStatus == .idle {
            return try transaction(.immediate) { try $0.executeBatch(statements) }
        }
        var total = 0
        var currentSQL: String?
        var sets: [[DatabaseValue]] = []
        func flush() throws {
            guard let sql = currentSQL, !sets.isEmpty else { return }
            total += try perform(sql, batchSize: sets.count) {
                log(sql, sets.count == 1 ? sets[0] : [])
                if sets.count == 1 {
                    return try driverConnection.execute(sql, bindings: sets[0], onRow: nil)
                }
                return try driverConnection.executeBatch(sql, bindingSets: sets)
            }
            sets.removeAll(keepingCapacity: true)
        }
        for statement in statements {
            let rendered = try render(statement)
            // Byte comparison: canonically equivalent names (NFC/NFD) are different SQL.
            if currentSQL.map({ !SQLTextKey.sameBytes($0, rendered.sql) }) ?? true {
                try flush()
                currentSQL = rendered.sql
            }
            sets.append(rendered.bindings)
        }
        try flush()
        return total
    }

    /// Runs one SQL text once per binding set, as one batch, all-or-nothing like
    /// ``executeBatch(_:)-([SQLStatement])``. Returns the rows changed.
    @discardableResult
    public func executeBatch(_ rendered: String, bindingSets: [[DatabaseValue]]) throws -> Int {
        if driverConnection.transactionStatus == .idle {
            return try transaction(.immediate) { try $0.executeBatch(rendered, bindingSets: bindingSets) }
        }
        return try perform(rendered, batchSize: bindingSets.count) {
            log(rendered, [])
            return try driverConnection.executeBatch(rendered, bindingSets: bindingSets)
        }
    }

    // MARK: Fetching

    /// Calls `body` for each row of the statement's result, without collecting them.
    /// The row passed may share storage with the next one: keep it (it is a value) but do not
    /// rely on identity.
    public func forEachRow(_ statement: SQLStatement, _ body: (Row) throws -> Void) throws {
        let rendered = try render(statement)
        try forEachRow(rendered, body)
    }

    /// Calls `body` for each row of already-rendered SQL.
    public func forEachRow(_ rendered: RenderedSQL, _ body: (Row) throws -> Void) throws {
        try perform(rendered.sql) {
            log(rendered.sql, rendered.bindings)
            // The driver calls `onRow` only during `execute`; the closure never outlives the call.
            try withoutActuallyEscaping(body) { onRow in
                _ = try driverConnection.execute(rendered.sql, bindings: rendered.bindings, onRow: onRow)
            }
        }
    }

    /// FNV-1a of `sql`, in hex: the same in every process, so a name made from it is too.
    static func queryHash(_ sql: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    /// Calls `body` for each row of `select`, holding a batch of at most `batchSize` rows at a
    /// time (on PostgreSQL, beside the next batch's answer as it arrives), and leaving the
    /// connection free between rows: `body` may run other statements on it.
    ///
    /// - PostgreSQL: a server-side cursor (`DECLARE … NO SCROLL CURSOR`, then `FETCH FORWARD
    ///   batchSize` until a short batch, then `CLOSE`), in the open transaction, or in one of
    ///   its own (committed at the end, rolled back when `body` throws). libpq would otherwise
    ///   buffer the whole result, and single-row mode keeps the connection busy until the last
    ///   row. After a full batch the next `FETCH` is sent at once, so the server reads it while
    ///   `body` works (each side waiting for the other made a stream twice as slow); a
    ///   statement `body` runs first reads that answer and keeps it. The cursor reads the
    ///   snapshot it was declared in, so running `body`'s statements after that `FETCH`
    ///   changes none of its rows.
    /// - SQLite: the statement is stepped row by row, which already holds one row and lets
    ///   other statements run.
    public func forEachRowInBatches(_ select: SQLSelect, batchSize: Int = 1_000, _ body: (Row) throws -> Void) throws {
        guard batchSize > 0 else { throw DatabaseError.misuse("forEachRowInBatches needs a batch size of at least 1, not \(batchSize)") }
        guard dialect.supportsServerCursors else { return try forEachRow(.select(select), body) }
        if driverConnection.transactionStatus == .idle {
            // A cursor lives in a transaction; `body` may write, so not a read-only one.
            return try transaction(.deferred) { try $0.forEachRowInBatches(select, batchSize: batchSize, body) }
        }
        serverCursorCount += 1
        // The name carries a hash of the query: a driver caches the prepared `FETCH` by its
        // text, with the columns it described, and the count restarts with every lend of the
        // connection, so another query must not reuse the name.
        let name = "unity_cursor_\(serverCursorCount)_" + Self.queryHash(try render(.select(select)).sql)
        _ = try execute(.declareCursor(name, select))
        let fetch = try render(.fetchCursor(name, count: batchSize))
        // An answer a driver kept for a cursor of this name on an earlier lend is not this
        // cursor's (every way out of the loop below drops it; this makes sure).
        driverConnection.discardCursorBatch(fetch.sql)
        do {
            var batch: [Row] = []
            batch.reserveCapacity(batchSize)
            while true {
                // The batch is read whole before `body` sees its rows. The driver may already
                // have sent the next FETCH (PostgreSQL does), so the server reads the next
                // batch while `body` works; a statement `body` runs reads that answer first.
                batch.removeAll(keepingCapacity: true)
                _ = try perform(fetch.sql) {
                    log(fetch.sql, fetch.bindings)
                    return try driverConnection.fetchCursorBatch(fetch.sql, count: batchSize) { batch.append($0) }
                }
                for row in batch { try body(row) }
                if batch.count < batchSize { break }
            }
        } catch {
            driverConnection.discardCursorBatch(fetch.sql)
            // The transaction's end drops the cursor anyway; close it now when the
            // transaction can still run statements, so that a caller who goes on does not
            // keep the server's result open.
            if driverConnection.transactionStatus == .active { _ = try? execute(.closeCursor(name)) }
            throw error
        }
        _ = try execute(.closeCursor(name))
    }

    /// All rows of a statement's result.
    public func fetchAll(_ statement: SQLStatement) throws -> [Row] {
        try fetchAll(try render(statement))
    }

    /// All rows of already-rendered SQL.
    public func fetchAll(_ rendered: RenderedSQL) throws -> [Row] {
        var rows: [Row] = []
        try forEachRow(rendered) { rows.append($0) }
        return rows
    }

    /// All rows of a raw SQL query with `?` placeholders.
    public func fetchAll(sql: String, _ bindings: [DatabaseValue] = []) throws -> [Row] {
        try fetchAll(.raw(SQLFragment(sql, bindings)))
    }

    /// The first row of a statement's result, or nil. The caller should add a LIMIT when the
    /// result may be large; the rest of the result is discarded.
    public func fetchOne(_ statement: SQLStatement) throws -> Row? {
        try fetchOne(try render(statement))
    }

    /// The first row of already-rendered SQL, or nil; runs like ``fetchOne(_:)-(SQLStatement)``.
    public func fetchOne(_ rendered: RenderedSQL) throws -> Row? {
        var first: Row?
        try forEachRow(rendered) { row in
            if first == nil { first = row }
        }
        return first
    }

    /// The first row of a raw SQL query, or nil.
    public func fetchOne(sql: String, _ bindings: [DatabaseValue] = []) throws -> Row? {
        try fetchOne(.raw(SQLFragment(sql, bindings)))
    }

    /// The first column of the first row as `T`, or nil when there is no row or it is NULL.
    public func fetchValue<T: DatabaseValueConvertible>(_ type: T.Type = T.self, _ statement: SQLStatement) throws -> T? {
        guard let row = try fetchOne(statement), row.count > 0, !row[0].isNull else { return nil }
        return try row.decode(T.self, at: 0)
    }

    /// The first column of the first row of a raw query as `T`, or nil.
    public func fetchValue<T: DatabaseValueConvertible>(_ type: T.Type = T.self, sql: String, _ bindings: [DatabaseValue] = []) throws -> T? {
        try fetchValue(T.self, .raw(SQLFragment(sql, bindings)))
    }

    /// Opens a cursor that streams the statement's rows one at a time, for results too large
    /// to hold in memory. While it is open the connection runs nothing else; it is closed at
    /// the end of the rows, by ``RowCursor/close()``, or when the closure that lent this
    /// connection returns.
    public func cursor(_ statement: SQLStatement) throws -> RowCursor {
        let rendered = try render(statement)
        let cursor = try perform(rendered.sql) {
            log(rendered.sql, rendered.bindings)
            return RowCursor(try driverConnection.openCursor(rendered.sql, bindings: rendered.bindings))
        }
        if scopeDepth > 0 {
            // A row that fails after the cursor opened fails its statement: inside a
            // transaction that aborts it, as any failed statement does (SQLite would go on).
            cursor.onFailure = { [weak self] error in
                if let self, self.scopeDepth > 0 { self.noteFailure(error, sql: rendered.sql) }
            }
        }
        openCursors.removeAll { $0.cursor == nil }
        openCursors.append(Weak(cursor))
        return cursor
    }

    /// Opens a cursor over a raw SQL query.
    public func cursor(sql: String, _ bindings: [DatabaseValue] = []) throws -> RowCursor {
        try cursor(.raw(SQLFragment(sql, bindings)))
    }

    // MARK: Transactions

    /// True while a transaction is open on this connection.
    public var isInTransaction: Bool { driverConnection.transactionStatus != .idle }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    /// Called inside another transaction it becomes a savepoint, so an inner failure undoes
    /// only the inner work.
    ///
    /// A statement that fails inside the transaction aborts it on both backends, even when
    /// `body` catches the error: later statements and the commit throw
    /// ``DatabaseError/transactionAborted(_:)`` and nothing is committed (PostgreSQL aborts
    /// the transaction itself; SQLite is made to agree). Inside a savepoint the failure
    /// aborts only the savepoint: it is rolled back, this call throws, and the enclosing
    /// transaction goes on. A transaction ended inside `body` (a raw `COMMIT` or `ROLLBACK`,
    /// SQLite's `ON CONFLICT ROLLBACK`) is noticed after the statement that ended it: later
    /// statements and this call throw ``DatabaseError/transactionAborted(_:)``; a commit that
    /// did not happen is never reported.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: (Connection) throws -> T) throws -> T {
        if driverConnection.transactionStatus == .idle && scopeDepth == 0 {
            // The BEGIN travels with the first statement where the driver can (PostgreSQL:
            // one pipeline; its BEGIN takes no lock and its snapshot starts at the first
            // statement anyway), so a read of one statement costs one round trip. SQLite
            // runs it now (BEGIN IMMEDIATE takes the write lock).
            let observation = instrumentation?.transactionStarting(DatabaseTransactionEvent(
                kind: kind, dialect: dialect, pool: poolName, context: instrumentationContext))
            var committed = false
            var failure: Error?
            defer { observation?.finish(committed: committed, error: failure) }
            let begin: RenderedSQL
            do {
                begin = try render(.begin(kind))
                if driverConnection.beginWithNextStatement(begin.sql) {
                    log(begin.sql, [])
                } else {
                    _ = try performUnobserved(begin.sql) { try run(begin) }
                }
            } catch {
                failure = error
                throw error
            }
            scopeDepth = 1
            abortReason = nil
            endReason = nil
            lostConnection = nil
            defer {
                scopeDepth = 0
                abortReason = nil
                endReason = nil
                lostConnection = nil
            }
            let result: T
            do {
                result = try body(self)
            } catch {
                rollbackQuietly()
                failure = error
                throw Self.markingCommitState(error, .notCommitted)
            }
            do {
                try refuseCommitIfUnusable()
            } catch {
                failure = error
                throw Self.markingCommitState(error, .notCommitted)
            }
            do {
                // A read-only COMMIT has nothing to refuse: its answer is read before the
                // connection runs anything else, rather than waited for now.
                let commit = try render(.commit)
                if kind == .readOnly, driverConnection.commitWithoutWaiting(commit.sql) {
                    log(commit.sql, [])
                } else if kind != .readOnly, let commitPositionSink {
                    // A database with replicas learns the log position of each commit in the
                    // same round trip, so that reads wait for a replica that has replayed it.
                    let position = try performUnobserved(commit.sql) { () throws -> UInt64? in
                        log(commit.sql, [])
                        return try driverConnection.commitReportingPosition(commit.sql)
                    }
                    if let position { commitPositionSink(position) }
                } else {
                    _ = try performUnobserved(commit.sql) { try run(commit) }
                }
            } catch {
                failure = error
                rollbackQuietly()
                // A read-only transaction has nothing to commit: whatever became of its
                // COMMIT, running it again is safe.
                throw Self.markingCommitState(error, kind == .readOnly ? .notCommitted : .unknown)
            }
            committed = true
            return result
        }
        // A savepoint: the enclosing transaction must still be usable to open one.
        if scopeDepth > 0 { try checkTransactionUsable("SAVEPOINT") }
        savepointDepth += 1
        let name = "unity_sp_\(savepointDepth)"
        defer { savepointDepth -= 1 }
        try executeControl(.savepoint(name))
        scopeDepth += 1
        defer { scopeDepth -= 1 }
        let result: T
        do {
            result = try body(self)
        } catch {
            // Undo the inner work and drop the savepoint; the outer transaction lives on.
            rollbackToSavepoint(name)
            throw error
        }
        do {
            try checkTransactionUsable("RELEASE SAVEPOINT")
        } catch {
            rollbackToSavepoint(name)
            throw error
        }
        try executeControl(.releaseSavepoint(name))
        return result
    }

    /// `error` with `state` as its commit state when it is a lost connection that has none.
    private static func markingCommitState(_ error: Error, _ state: CommitState) -> Error {
        guard let error = error as? DatabaseError else { return error }
        return error.withCommitState(state)
    }

    /// Rolls back to and releases savepoint `name`, which clears a failure inside it. After
    /// the transaction ended under the scope there is no savepoint left to roll back to.
    private func rollbackToSavepoint(_ name: String) {
        guard endReason == nil, driverConnection.transactionStatus != .idle else { return }
        do {
            _ = try executeUnchecked(.rollbackToSavepoint(name))
            abortReason = nil
            _ = try? executeUnchecked(.releaseSavepoint(name))
        } catch {
            // The savepoint could not be restored: the whole transaction stays aborted.
            if abortReason == nil { abortReason = "rolling back to savepoint \(name) failed (\(error))" }
        }
    }

    /// Before COMMIT: throws (after rolling back) when the transaction was aborted or ended
    /// under the closure, or the engine reports it failed, so that a COMMIT answered with a
    /// rollback (PostgreSQL's reply in an aborted transaction) is never reported as a commit.
    private func refuseCommitIfUnusable() throws {
        do {
            try checkTransactionUsable("COMMIT")
            return
        } catch {
            rollbackQuietly()
            throw error
        }
    }

    private func rollbackQuietly() {
        if driverConnection.transactionStatus != .idle {
            _ = try? executeUnchecked(.rollback)
        }
    }

    /// Runs a statement that must run even after a cancel (the undo of a transaction).
    private func executeUnchecked(_ statement: SQLStatement) throws -> Int {
        try run(render(statement))
    }

    /// True while a cursor opened on this connection has rows left: the connection is busy
    /// streaming them and must not be lent to a nested call.
    var hasOpenCursors: Bool {
        openCursors.contains { $0.cursor?.isOpen ?? false }
    }

    func closeOpenCursors() {
        for w in openCursors { w.cursor?.close() }
        openCursors.removeAll()
    }

    private struct Weak {
        weak var cursor: RowCursor?
        init(_ c: RowCursor) { cursor = c }
    }
}

/// A forward-only stream of rows, opened by ``Connection/cursor(_:)``.
public final class RowCursor {
    private let base: any DriverCursor
    // Unchecked for exclusive access (read on every row): a cursor is used by one thread at a time.
    @exclusivity(unchecked) private var finished = false

    /// Told of an error that ended the rows early (the lending connection notes it).
    var onFailure: ((Error) -> Void)?

    init(_ base: any DriverCursor) { self.base = base }

    /// False once the rows are exhausted or the cursor is closed.
    var isOpen: Bool { !finished }

    /// The result columns.
    public var layout: RowLayout { base.layout }

    /// The next row, or nil at the end.
    public func next() throws -> Row? {
        if finished { return nil }
        do {
            if let row = try base.next() { return row }
        } catch {
            close()
            onFailure?(error)
            throw error
        }
        finished = true
        return nil
    }

    /// Calls `body` for each remaining row.
    public func forEach(_ body: (Row) throws -> Void) throws {
        while let row = try next() { try body(row) }
    }

    /// Stops early and frees the statement. Safe to call more than once.
    public func close() {
        if !finished {
            finished = true
            base.close()
        }
    }

    deinit { close() }
}
