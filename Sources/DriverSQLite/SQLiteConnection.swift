import CSQLite
import Foundation
import Unity

/// Guards a connection handle so that `sqlite3_interrupt` can be called from any thread, even
/// after the connection closed (SQLite forbids interrupting a closed connection).
final class SQLiteInterruptHandle: @unchecked Sendable {
    // @unchecked: `db` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var db: OpaquePointer?

    init(_ db: OpaquePointer) { self.db = db }

    /// Interrupts the running statement, if the connection is still open.
    func interrupt() {
        lock.lock()
        defer { lock.unlock() }
        if let db { sqlite3_interrupt(db) }
    }

    /// Forgets the handle; called before the connection closes.
    func invalidate() {
        lock.lock()
        defer { lock.unlock() }
        db = nil
    }
}

/// One open SQLite connection, used by one thread at a time (the pool's guarantee).
final class SQLiteConnection: DriverConnection {
    /// The most prepared statements kept per connection; the oldest is evicted beyond it.
    static let statementCacheCapacity = 512

    private var db: OpaquePointer?
    private let interruptHandle: SQLiteInterruptHandle
    /// Keyed by the SQL's exact bytes: canonically equivalent names (NFC/NFD) are different
    /// tables to SQLite, though equal as Swift strings.
    private var statementCache: [SQLTextKey: SQLiteStatement] = [:]
    /// Cache keys in insertion order, for evicting the oldest.
    private var cacheOrder: [SQLTextKey] = []
    /// Single-use statements currently open (in cursors), finalized if the connection closes.
    private var uncachedStatements: [ObjectIdentifier: SQLiteStatement] = [:]
    /// True for a writer of a file database, which runs in WAL mode.
    private let usesWAL: Bool
    /// What the commit hooks report to while something is observed (see ``reportCommits(to:)``).
    private var commitReporter: SQLiteCommitReporter?

    /// Opens the database at `path` (`":memory:"` for an in-memory database) and applies the
    /// per-connection settings.
    init(path: String, role: ConnectionRole, isInMemory: Bool, busyTimeout: Double) throws {
        var handle: OpaquePointer?
        let flags: Int32 = role == .writer
            ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            : SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = sqliteMessage(handle, code: rc)
            sqlite3_close_v2(handle)
            throw DatabaseError.connectionFailed(DatabaseErrorContext(
                message: "could not open the SQLite database at \(path) as \(role == .writer ? "writer" : "reader"): \(message)",
                code: String(rc)))
        }
        db = handle
        usesWAL = role == .writer && !isInMemory
        interruptHandle = SQLiteInterruptHandle(handle)
        sqlite3_extended_result_codes(handle, 1)
        let timeoutMillis = max(0, min(busyTimeout * 1000, Double(Int32.max)))
        sqlite3_busy_timeout(handle, Int32(timeoutMillis))
        let registered = registerDecimalSupport(handle)
        if registered != SQLITE_OK {
            let message = sqliteMessage(handle, code: registered)
            close()
            throw DatabaseError.connectionFailed(DatabaseErrorContext(
                message: "could not register Unity's decimal functions on the SQLite database at \(path): \(message)",
                code: String(registered)))
        }
        registerFoldFunction(handle)
        registerJSONContainsFunction(handle)
        var setup = "PRAGMA foreign_keys = ON; PRAGMA case_sensitive_like = ON;"
        if role == .writer {
            // The writer keeps its temporary storage in memory. A statement that writes several
            // rows inside a transaction (a multi-row INSERT, an UPDATE) keeps a statement journal
            // of every page it changes that existed before it; beyond 64 KiB SQLite spills that
            // journal to a file in /var/tmp, and a transaction that reuses free pages (inserts
            // after deletes) or changes pages in the middle of a table wrote and read about a page
            // there per row: batched inserts ran 1.4 times slower. Readers keep SQLite's default,
            // so their large sorts may still spill to files. (Android builds SQLite with all
            // temporary storage in memory.)
            setup += " PRAGMA temp_store = MEMORY;"
        }
        if role == .writer && !isInMemory {
            setup += " PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
        }
        do {
            try executeScript(setup)
        } catch let error as DatabaseError {
            close()
            let message = error.context?.message ?? error.description
            throw DatabaseError.connectionFailed(DatabaseErrorContext(
                message: "could not configure the SQLite database at \(path): \(message)",
                sql: setup, code: error.context?.code))
        }
    }

    deinit {
        close()
    }

    // MARK: - DriverConnection

    @discardableResult
    func execute(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?) throws -> Int {
        let db = try openHandle()
        if let reporter = commitReporter, let ledger = reporter.ledger {
            return try executeRecordingCounters(sql, bindings: bindings, onRow: onRow, db: db, reporter: reporter, ledger: ledger)
        }
        return try executeStatement(sql, bindings: bindings, onRow: onRow, db: db)
    }

    private func executeStatement(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?,
                                  db: OpaquePointer) throws -> Int {
        let statement = try acquireStatement(sql, db: db)
        defer { release(statement) }
        try statement.bind(bindings, db: db)
        return try run(statement, db: db, onRow: onRow)
    }

    /// ``execute(_:bindings:onRow:)`` while something observes a file database: a transaction
    /// that begins holding the write lock reads the change counters, and one that wrote to them
    /// reads them again before its COMMIT; once the COMMIT succeeded, the pair goes to the
    /// ledger (see ``SQLiteCounterLedger``).
    private func executeRecordingCounters(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?,
                                          db: OpaquePointer, reporter: SQLiteCommitReporter,
                                          ledger: SQLiteCounterLedger) throws -> Int {
        let wasIdle = sqlite3_get_autocommit(db) != 0
        var ticket: UInt64?
        if !wasIdle, reporter.countersTouched, let begin = reporter.countersAtBegin, Self.isCommit(sql),
           let end = readCounters(db) {
            ticket = ledger.committing(begin: begin, end: end)
        }
        let changed: Int
        do {
            changed = try executeStatement(sql, bindings: bindings, onRow: onRow, db: db)
        } catch {
            if let ticket { ledger.ended(ticket, committed: false) }
            throw error
        }
        let isIdle = sqlite3_get_autocommit(db) != 0
        if let ticket {
            ledger.ended(ticket, committed: isIdle)
        } else if wasIdle && !isIdle {
            // A transaction began. Only one that holds the write lock already (BEGIN
            // IMMEDIATE) finds the counters as its writes will: a deferred one may read an
            // older snapshot, and reading now would start it early.
            if sqlite3_txn_state(db, "main") == SQLITE_TXN_WRITE { reporter.countersAtBegin = readCounters(db) }
        }
        return changed
    }

    /// True for the statements that commit a transaction as Unity sends them.
    private static func isCommit(_ sql: String) -> Bool {
        guard let first = sql.utf8.first, first == UInt8(ascii: "C") || first == UInt8(ascii: "c")
            || first == UInt8(ascii: "E") || first == UInt8(ascii: "e"), sql.utf8.count <= 20 else { return false }
        switch sql.trimmingCharacters(in: .whitespacesAndNewlines).uppercased() {
        case "COMMIT", "COMMIT TRANSACTION", "END", "END TRANSACTION": return true
        default: return false
        }
    }

    /// The change counters by table key, or nil when there are none (or they cannot be read).
    private func readCounters(_ db: OpaquePointer) -> [String: Int64]? {
        var counters: [String: Int64] = [:]
        do {
            _ = try executeStatement(SQLiteCounterLedger.readSQL, bindings: [], onRow: { row in
                if case .text(let name) = row[0], case .integer(let count) = row[1] { counters[name] = count }
            }, db: db)
        } catch {
            return nil
        }
        return counters
    }

    @discardableResult
    func executeBatch(_ sql: String, bindingSets: [[DatabaseValue]]) throws -> Int {
        let db = try openHandle()
        let statement = try acquireStatement(sql, db: db)
        defer { release(statement) }
        var total = 0
        for bindings in bindingSets {
            try statement.bind(bindings, db: db)
            total += try run(statement, db: db, onRow: nil)
            statement.reset()
        }
        return total
    }

    func openCursor(_ sql: String, bindings: [DatabaseValue]) throws -> any DriverCursor {
        let db = try openHandle()
        let statement = try acquireStatement(sql, db: db)
        do {
            try statement.bind(bindings, db: db)
            return try SQLiteCursor(connection: self, statement: statement, db: db)
        } catch {
            release(statement)
            throw error
        }
    }

    func executeScript(_ sql: String) throws {
        let db = try openHandle()
        try SQLText.refuseNUL(in: sql)
        var cError: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &cError)
        if rc != SQLITE_OK {
            let message = cError.map { String(cString: $0) } ?? sqliteMessage(db, code: rc)
            sqlite3_free(cError)
            throw mapSQLiteError(code: sqlite3_extended_errcode(db), message: message, sql: sql)
        }
    }

    var transactionStatus: DriverTransactionStatus {
        guard let db else { return .idle }
        return sqlite3_get_autocommit(db) == 0 ? .active : .idle
    }

    var isUsable: Bool { db != nil }

    /// True: a statement run while a cursor is open gets a statement of its own.
    var runsStatementsBesideCursors: Bool { true }

    /// True: a constraint failure (SQLite's default ABORT) backs out the failed statement's
    /// changes and keeps the transaction and every earlier statement's changes.
    var undoesFailedStatementAlone: Bool { true }

    func makeInterrupter() -> @Sendable () -> Void {
        let handle = interruptHandle
        return { handle.interrupt() }
    }

    /// Installs the hooks that report each commit's tables to `sink`, or removes them (nil);
    /// nothing when `sink` is the one already set.
    func reportCommits(to sink: DatabaseChangeSink?) {
        if commitReporter?.sink === sink { return }
        guard let db else { return }
        commitReporter = sink.map { SQLiteCommitReporter(sink: $0, recordsCounters: usesWAL) }
        installCommitHooks(commitReporter, on: db, walMode: usesWAL)
    }

    func close() {
        guard let db else { return }
        interruptHandle.invalidate()
        for statement in statementCache.values { statement.finalize() }
        for statement in uncachedStatements.values { statement.finalize() }
        statementCache.removeAll()
        cacheOrder.removeAll()
        uncachedStatements.removeAll()
        sqlite3_close_v2(db)
        self.db = nil
    }

    // MARK: - Running statements

    private func openHandle() throws -> OpaquePointer {
        guard let db else { throw DatabaseError.misuse("the SQLite connection is closed") }
        return db
    }

    /// Steps `statement` to completion, passing each row to `onRow`, and returns the number
    /// of rows it changed. The statement must be bound; the caller resets it.
    private func run(_ statement: SQLiteStatement, db: OpaquePointer, onRow: ((Row) throws -> Void)?) throws -> Int {
        guard let handle = statement.handle else {
            throw DatabaseError.misuse("the statement was finalized because its connection closed")
        }
        let totalBefore = sqlite3_total_changes64(db)
        // Read after the first step: a schema change re-prepares the statement inside step,
        // which can change the columns of `SELECT *`.
        var layout: RowLayout?
        // Storage reused between rows: once `onRow` returns, the row passed to it is gone and
        // the buffer is unique again, unless the caller kept the row (copy-on-write then
        // leaves the kept row intact).
        var values: [DatabaseValue] = []
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_ROW {
                guard let onRow else { continue }
                let rowLayout: RowLayout
                if let layout {
                    rowLayout = layout
                } else {
                    values = [DatabaseValue](repeating: .null, count: Int(sqlite3_column_count(handle)))
                    rowLayout = statement.layout()
                    layout = rowLayout
                }
                values.withUnsafeMutableBufferPointer { SQLiteStatement.readRow(handle, into: $0) }
                try onRow(Row(layout: rowLayout, values: values))
            } else if rc == SQLITE_DONE {
                break
            } else {
                throw mapSQLiteError(code: rc, message: sqliteMessage(db, code: rc), sql: statement.sql)
            }
        }
        // DDL and statements that touched nothing leave sqlite3_changes at the count of an
        // earlier statement, so only report it when this statement changed the total.
        if sqlite3_stmt_readonly(handle) != 0 || sqlite3_total_changes64(db) == totalBefore {
            return 0
        }
        return Int(sqlite3_changes64(db))
    }

    // MARK: - Statement cache

    /// The cached statement for `sql`, or a single-use one when the cached statement is held
    /// by an open cursor. The result is marked in use until ``release(_:)``.
    func acquireStatement(_ sql: String, db: OpaquePointer) throws -> SQLiteStatement {
        let key = SQLTextKey(sql)
        if let cached = statementCache[key] {
            if !cached.isInUse {
                cached.isInUse = true
                return cached
            }
            let fresh = try prepare(sql, db: db, persistent: false)
            fresh.isInUse = true
            uncachedStatements[ObjectIdentifier(fresh)] = fresh
            return fresh
        }
        let statement = try prepare(sql, db: db, persistent: true)
        statement.isCached = true
        if statementCache.count >= Self.statementCacheCapacity {
            evictOldest()
        }
        statementCache[key] = statement
        cacheOrder.append(key)
        statement.isInUse = true
        return statement
    }

    /// Returns a statement after use: reset and kept when cached, finalized otherwise.
    func release(_ statement: SQLiteStatement) {
        statement.reset()
        statement.isInUse = false
        if !statement.isCached {
            uncachedStatements.removeValue(forKey: ObjectIdentifier(statement))
            statement.finalize()
        }
    }

    private func evictOldest() {
        guard !cacheOrder.isEmpty else { return }
        let key = cacheOrder.removeFirst()
        guard let statement = statementCache.removeValue(forKey: key) else { return }
        statement.isCached = false
        if statement.isInUse {
            // Its cursor finalizes it on release; track it so close() can finalize it too.
            uncachedStatements[ObjectIdentifier(statement)] = statement
        } else {
            statement.finalize()
        }
    }

    private func prepare(_ sql: String, db: OpaquePointer, persistent: Bool) throws -> SQLiteStatement {
        try SQLText.refuseNUL(in: sql)
        var handle: OpaquePointer?
        var hasMoreStatements = false
        let flags: UInt32 = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let rc = sql.withCString { cSQL -> Int32 in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(db, cSQL, Int32(clamping: sql.utf8.count + 1), flags, &handle, &tail)
            if rc == SQLITE_OK, let tail, tail.pointee != 0 {
                hasMoreStatements = Self.tailHasStatement(tail, db: db)
            }
            return rc
        }
        guard rc == SQLITE_OK else {
            let message = sqliteMessage(db, code: rc)
            sqlite3_finalize(handle)
            throw mapSQLiteError(code: rc, message: message, sql: sql)
        }
        guard let handle else {
            throw DatabaseError.misuse("the SQL contains no statement: \(sql.debugDescription)")
        }
        if hasMoreStatements {
            sqlite3_finalize(handle)
            throw DatabaseError.misuse(
                "the SQL contains more than one statement; run scripts with executeScript: \(sql)")
        }
        return SQLiteStatement(handle: handle, sql: sql, isCached: false)
    }

    /// True when the text after the first statement holds another statement (not just
    /// whitespace, semicolons or comments).
    private static func tailHasStatement(_ tail: UnsafePointer<CChar>, db: OpaquePointer) -> Bool {
        var p = tail
        while p.pointee != 0 {
            switch UInt8(bitPattern: p.pointee) {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: ";"):
                p += 1
            default:
                // Something else (a comment or a statement): let SQLite decide.
                var next: OpaquePointer?
                let rc = sqlite3_prepare_v3(db, p, -1, 0, &next, nil)
                sqlite3_finalize(next)
                return rc != SQLITE_OK || next != nil
            }
        }
        return false
    }
}

/// Registers `unity_fold(x)`: `TextFolding.fold(_:)` of a text value (NULL stays NULL, other
/// values are folded as their text), so SQLite folds case and accents as PostgreSQL's
/// `translate` does with the same table.
private func registerFoldFunction(_ db: OpaquePointer) {
    sqlite3_create_function_v2(
        db, TextFolding.sqliteFunctionName, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
        { context, count, args in
            guard count == 1, let args, let value = args[0], sqlite3_value_type(value) != SQLITE_NULL,
                  let text = sqlite3_value_text(value) else {
                sqlite3_result_null(context)
                return
            }
            let length = Int(sqlite3_value_bytes(value))
            let input = String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)
            let folded = TextFolding.fold(input)
            let byteCount = Int32(clamping: folded.utf8.count)
            folded.withCString { sqlite3_result_text(context, $0, byteCount, sqliteTransient) }
        }, nil, nil, nil)
}

/// `unity_json_contains(document, value)`: PostgreSQL's `jsonb @>` (see `JSONContainment`);
/// NULL when either is NULL, an error when either is not JSON.
private func registerJSONContainsFunction(_ db: OpaquePointer) {
    sqlite3_create_function_v2(
        db, "unity_json_contains", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
        { context, count, args in
            guard count == 2, let args, let d = args[0], let v = args[1],
                  sqlite3_value_type(d) != SQLITE_NULL, sqlite3_value_type(v) != SQLITE_NULL,
                  let dText = sqlite3_value_text(d), let vText = sqlite3_value_text(v) else {
                sqlite3_result_null(context)
                return
            }
            let document = String(decoding: UnsafeBufferPointer(start: dText, count: Int(sqlite3_value_bytes(d))), as: UTF8.self)
            let value = String(decoding: UnsafeBufferPointer(start: vText, count: Int(sqlite3_value_bytes(v))), as: UTF8.self)
            guard let result = JSONContainment.contains(document: document, value: value) else {
                sqlite3_result_error(context, "unity_json_contains: malformed JSON", -1)
                return
            }
            sqlite3_result_int(context, result ? 1 : 0)
        }, nil, nil, nil)
}
