import CLibPQ
import Foundation
import Unity

/// A statement prepared on one connection, with what the driver learned about it once
/// through `PQdescribePrepared`.
final class PGPreparedStatement {
    /// The server-side name ("u1", "u2", …).
    let name: String
    /// The number of `$n` parameters the server found.
    let parameterCount: Int
    /// The result columns, shared by every row the statement produces.
    let layout: RowLayout
    /// How each result column is decoded.
    let kinds: [PGColumnKind]
    /// Each result column's type as described; a result is checked against them before it is
    /// decoded (a `FETCH` from a cursor name declared again for another query would otherwise
    /// be decoded with the first query's types).
    let columnTypes: [Oid]
    /// True when every result column has a binary decoder; otherwise results are read as text.
    let binaryResults: Bool
    /// For least-recently-used eviction.
    var lastUse: UInt64

    init(name: String, parameterCount: Int, layout: RowLayout, columnTypes: [Oid], lastUse: UInt64) {
        self.name = name
        self.parameterCount = parameterCount
        self.layout = layout
        self.columnTypes = columnTypes
        let kinds = columnTypes.map(PGColumnKind.init(oid:))
        self.kinds = kinds
        self.binaryResults = !kinds.contains(.other)
        self.lastUse = lastUse
    }

    /// `PQexecPrepared`'s result format code.
    var resultFormat: Int32 { binaryResults ? 1 : 0 }
}

/// The prepared-statement cache key: the same SQL bound with other parameter types is
/// another statement on the server. The SQL is compared by its exact bytes: canonically
/// equivalent names (NFC/NFD) are different tables to the server.
struct PGStatementKey: Hashable {
    let sql: SQLTextKey
    let types: [Oid]
}

/// The cancel handle of a connection, usable from any thread. The lock makes an interrupt
/// that races with `close()` harmless: after close it does nothing.
final class PGCancelHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var cancel: OpaquePointer?

    init(_ cancel: OpaquePointer?) {
        self.cancel = cancel
    }

    /// Asks the server to cancel the statement the connection is running, if any.
    func cancelRunningStatement() {
        lock.lock()
        defer { lock.unlock() }
        guard let cancel else { return }
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &message, Int32(message.count))
    }

    /// Frees the handle; later cancels do nothing.
    func invalidate() {
        lock.lock()
        defer { lock.unlock() }
        if let cancel { PQfreeCancel(cancel) }
        cancel = nil
    }
}

/// One libpq connection. Used by one thread at a time, as the `DriverConnection` contract
/// says; only the interrupter crosses threads.
final class PostgresConnection: DriverConnection {
    /// How many prepared statements a connection keeps before it deallocates the least
    /// recently used one.
    static let statementCacheCapacity = 512
    /// How many statements `executeBatch` sends before it reads their results, so that
    /// neither side's socket buffer can fill up and deadlock the pipeline.
    static let pipelineChunk = 128

    /// Unchecked for exclusive access: a connection is used by one thread at a time, and it is
    /// read for every row a cursor returns.
    @exclusivity(unchecked) private(set) var handle: OpaquePointer?
    let cancelHandle: PGCancelHandle
    private var statements: [PGStatementKey: PGPreparedStatement] = [:] {
        // Any change may have dropped one of them (eviction, `DEALLOCATE`, a stale plan).
        didSet {
            transactionStatements = nil
            lastStatement = nil
        }
    }
    /// The statement found last, with its SQL: a connection that runs one shape again and
    /// again (a server's lookups, whose SQL text the dialect's cache serves as one string)
    /// finds it by the string's identity, without hashing the text. Cleared whenever the
    /// cache changes.
    private var lastStatement: (sql: String, types: [Oid], statement: PGPreparedStatement)?
    /// The prepared BEGIN of the last read begun together with its first statement (by its
    /// SQL) and the COMMIT AND CHAIN prepared beside it (with the COMMIT): each read finds
    /// them without hashing their text three times over. Cleared whenever the cache changes.
    private var transactionStatements: (begin: String, beginStatement: PGPreparedStatement, chainStatement: PGPreparedStatement)?
    private var statementCounter = 0
    /// The start of every statement name this connection prepares: "u", twelve random hex
    /// digits and "_". Two connections (of this process or another) never share a name, so a
    /// pooler that moves a connection to another server connection can never make it run a
    /// statement someone else prepared under the same name; it fails with a typed error
    /// instead (see ``PGErrorMapping/poolerMismatch(sqlState:message:statementPrefix:sql:)``).
    let statementPrefix: String = {
        let digits = String(UInt64.random(in: 0...0xFFFF_FFFF_FFFF), radix: 16)
        return "u" + String(repeating: "0", count: 12 - digits.count) + digits + "_"
    }()
    /// True for `PoolerMode.transaction`: no state is kept on the server between
    /// transactions (see `PoolerMode.transaction`).
    let transactionPooler: Bool
    /// The schema put first on the search path, if any (pinned per transaction by a pooled
    /// connection, set once on the session otherwise).
    let searchPath: String?
    /// True while a cursor opened outside any transaction streams in the transaction a pooled
    /// connection opened for it: the cursor's end ends it.
    private var cursorOwnsTransaction = false
    /// What the server said when a pipeline failed on a lost prepared statement, for the
    /// caller when sending it again does not help.
    private var lastStaleError: DatabaseError?
    /// Why a COMMIT sent without waiting failed (a read-only COMMIT has nothing to report,
    /// but a transaction it left aborted makes the next statement fail with 25P02, which
    /// then reports this instead).
    private var commitReplyFailure: DatabaseError?
    /// What each INSERT text seen on this connection needs to keep identity and serial
    /// sequences ahead of the ids it supplies (see ``keepSequencesAhead(of:)``).
    var sequenceFixes: [String: PGSequenceFix] = [:]
    /// The last INSERT's entry of ``sequenceFixes``, found again by the string's identity.
    var lastSequenceFix: (sql: String, fix: PGSequenceFix)?
    private var useCounter: UInt64 = 0
    /// Statements used at or after this count are in use by the running `executeBatch` and
    /// must not be evicted before it has sent them (0: no batch runs).
    private var evictionFloor: UInt64 = 0
    private var parameters = PGParameterBuffer()
    /// True while a cursor streams a result: nothing else may run on the connection.
    var cursorOpen = false
    /// A BEGIN to send in one pipeline with the next statement (a read's first statement).
    private var pendingBegin: String?
    /// True while the answer to a COMMIT sent without waiting has not been read.
    private var awaitingCommitReply = false
    /// A read-only COMMIT held back to travel with the next statement (the pool asks for it
    /// to be sent at once when no one is waiting for the connection).
    private var heldCommit: String?
    /// The BEGIN that opened the transaction whose COMMIT is held back. A read that begins the
    /// same way ends that transaction and starts its own with one `COMMIT AND CHAIN` (which
    /// keeps the isolation level and read-only mode) instead of a COMMIT and a BEGIN: the
    /// server runs one statement fewer per read.
    private var heldCommitBegin: String?
    /// A cursor's `FETCH` sent ahead by ``fetchCursorBatch(_:count:onRow:)`` whose answer
    /// has not been read yet: its SQL and prepared statement.
    private var cursorBatchInFlight: (sql: String, statement: PGPreparedStatement)?
    /// Answers to `FETCH`es sent ahead, read (because another statement needed the
    /// connection) and kept for the call that asks for them, by SQL. A nil answer means the
    /// connection gave none (it was lost): that call fails rather than fetch past the batch.
    private var cursorBatchesRead: [String: (statement: PGPreparedStatement, result: OpaquePointer?)] = [:]
    /// The BEGIN sent for the transaction now open on the server, when Unity sent it (nil
    /// once that transaction ends, or when it began some other way).
    var runningBegin: String?

    /// The session settings the driver's encoding and decoding rely on, set on every new
    /// connection (so after every reconnect too), after whatever the server's configuration,
    /// `ALTER DATABASE/ROLE … SET`, `PGTZ`, `PGDATESTYLE` or `PGOPTIONS` chose:
    ///
    /// - `TimeZone = 'UTC'`: a `Date` is bound as `timestamptz`; stored into a `timestamp`
    ///   or `date` column it becomes the session's wall-clock time, which Unity reads back
    ///   as UTC. Any other zone would move the value.
    /// - `DateStyle = 'ISO, YMD'`, `IntervalStyle = 'postgres'`: the text form of dates
    ///   Unity parses when a result is read in text format.
    /// - `client_encoding = 'UTF8'`: strings are sent and read as UTF-8.
    /// - `standard_conforming_strings = on`: a backslash in an inline literal is an ordinary
    ///   character.
    /// - `extra_float_digits = 3`: text-format floats carry every digit of the binary value.
    static let sessionSettings: [(name: String, value: String)] = [
        ("TimeZone", "UTC"),
        ("DateStyle", "ISO, YMD"),
        ("IntervalStyle", "postgres"),
        ("client_encoding", "UTF8"),
        ("standard_conforming_strings", "on"),
        ("extra_float_digits", "3"),
    ]

    /// The one statement that pins ``sessionSettings`` (and the search path when asked).
    static func sessionSetup(searchPath: String?) -> String {
        var sql = sessionSettings.map { "SET \($0.name) TO '\($0.value)'" }.joined(separator: "; ")
        if let searchPath {
            sql += "; SET search_path TO " + quoteIdentifier(searchPath)
        }
        return sql
    }

    /// Connects and prepares the session: the settings of ``sessionSettings`` pinned with one
    /// round trip, NOTICEs dropped, and the search path set when asked. `connectTimeout`
    /// (seconds) bounds the connecting unless the connection string sets `connect_timeout`.
    init(connectionString: String, searchPath: String?, transactionPooler: Bool = false, connectTimeout: Int? = nil) throws {
        if let searchPath, searchPath.utf8.count > 63 {
            // The server would truncate the name and select another schema in silence.
            throw DatabaseError.misuse(
                "the search path schema name is \(searchPath.utf8.count) bytes long; PostgreSQL names hold at most 63 bytes")
        }
        // expand_dbname = 1: the "dbname" value may be a whole URL or key/value string; the
        // keywords after it override what it says, and what it says overrides those before it.
        var keywords = ["dbname", "client_encoding", "fallback_application_name"]
        var values = [connectionString, "UTF8", "unity"]
        if let connectTimeout {
            keywords.insert("connect_timeout", at: 0)
            values.insert(String(max(0, connectTimeout)), at: 0)
        }
        let conn = Self.withCStringArray(keywords) { kw in
            Self.withCStringArray(values) { vals in PQconnectdbParams(kw, vals, 1) }
        }
        guard let conn else {
            throw DatabaseError.connectionFailed(DatabaseErrorContext(message: "libpq could not allocate a connection"))
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(conn)
            throw DatabaseError.connectionFailed(DatabaseErrorContext(message: message.isEmpty ? "could not connect to PostgreSQL" : message))
        }
        // NOTICEs (e.g. "table does not exist, skipping") would otherwise go to stderr.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        self.handle = conn
        self.cancelHandle = PGCancelHandle(PQgetCancel(conn))
        self.searchPath = searchPath
        self.transactionPooler = transactionPooler
        // Through a transaction-mode pooler a session SET would stay on whichever server
        // connection ran it and reach other clients: the settings are pinned per transaction
        // instead (``pinSQL``); client_encoding travels in the startup packet.
        if transactionPooler { return }
        // SET rather than startup `options`: connection poolers such as PgBouncer refuse
        // unknown startup parameters, and a SET outranks every other source of a setting.
        let sql = Self.sessionSetup(searchPath: searchPath)
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        if result.map({ PQresultStatus($0) }) != PGRES_COMMAND_OK {
            let error = PGErrorMapping.error(result: result, connection: conn, sql: sql)
            close()
            throw DatabaseError.connectionFailed(
                error.context ?? DatabaseErrorContext(message: "could not set up the session", sql: sql))
        }
    }

    deinit {
        close()
    }

    /// `"name"` with embedded quotes doubled (per scalar, as the dialect does: a quote
    /// followed by a combining mark is doubled too).
    static func quoteIdentifier(_ name: String) -> String {
        SQLDialect.postgres.quoteIdentifier(name)
    }

    /// Calls `body` with a NULL-terminated array of C strings.
    static func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
        pointers.append(nil)
        defer { for p in pointers { free(p) } }
        let constPointers = pointers.map { $0.map { UnsafePointer($0) } }
        return constPointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    // MARK: - State

    var transactionStatus: DriverTransactionStatus {
        guard let handle else { return .idle }
        if pendingBegin != nil { return .active }
        // A COMMIT on its way, or held back to travel with the next statement, ends the
        // transaction: nothing can run in it any more.
        if awaitingCommitReply || heldCommit != nil { return .idle }
        switch PQtransactionStatus(handle) {
        case PQTRANS_INERROR: return .failed
        case PQTRANS_INTRANS, PQTRANS_ACTIVE: return .active
        default: return .idle
        }
    }

    var isUsable: Bool {
        guard let handle else { return false }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Whether the server is still there, at no round trip when nothing happened: an idle
    /// connection's socket has nothing to read, so one `poll` with a zero timeout says so.
    /// A server that terminated the backend (a restart, `pg_terminate_backend`) has sent a
    /// FATAL message and closed the socket: reading that input marks the connection bad. Any
    /// other input on an idle connection (a notification) is unusual enough to be settled
    /// with one empty query.
    func isAliveAfterIdling() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK, !cursorOpen else { return false }
        if awaitingCommitReply {
            // The answer to the last read's COMMIT is the input expected: it is read with the
            // next statement's. A server that closed the connection shows here or there.
            return PQconsumeInput(handle) == 1 && PQstatus(handle) == CONNECTION_OK
        }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        var readInput = false
        for _ in 0..<4 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready == 0 { break }
            if ready < 0 {
                if errno == EINTR { continue }
                return false
            }
            readInput = true
            // Reads what arrived; at end of file libpq marks the connection bad.
            if PQconsumeInput(handle) == 0 || PQstatus(handle) != CONNECTION_OK { return false }
        }
        guard readInput else { return true }
        let result = PQexec(handle, "")
        defer { PQclear(result) }
        return PQstatus(handle) == CONNECTION_OK && result.map({ PQresultStatus($0) }) == PGRES_EMPTY_QUERY
            && (PQtransactionStatus(handle) == PQTRANS_IDLE || heldCommit != nil)
    }

    func beginWithNextStatement(_ sql: String) -> Bool {
        guard handle != nil, !cursorOpen else { return false }
        pendingBegin = sql
        return true
    }

    func commitWithoutWaiting(_ sql: String) -> Bool {
        // Through a pooler the transaction must end before the connection goes back.
        guard !transactionPooler else { return false }
        // A FETCH still in flight is read first, by the COMMIT run the usual way.
        guard cursorBatchInFlight == nil else { return false }
        guard handle != nil, !cursorOpen else { return false }
        if pendingBegin != nil {
            // Nothing ran: there is no transaction on the server to end.
            pendingBegin = nil
            return true
        }
        heldCommit = sql
        heldCommitBegin = runningBegin
        runningBegin = nil
        return true
    }

    /// Sends a held-back COMMIT now, without waiting for its answer: the pool calls this when
    /// it puts the connection back with no one waiting for it, so that an idle connection
    /// never sits in a transaction (holding back the server's vacuum).
    var holdsWork: Bool { heldCommit != nil }

    func flushHeldWork() {
        guard let handle, let sql = heldCommit else { return }
        heldCommit = nil
        heldCommitBegin = nil
        if !sendCommitInPipeline(sql, on: handle) {
            // Could not pipeline it: run it and read its answer now.
            PQclear(PQexec(handle, sql))
        }
    }

    /// Sends `sql` (a COMMIT) in pipeline mode and leaves the connection in it: the next
    /// read's BEGIN and first statement join the same pipeline, and all their answers come
    /// back in one round trip.
    private func sendCommitInPipeline(_ sql: String, on handle: OpaquePointer) -> Bool {
        guard !awaitingCommitReply else { return false }
        guard PQenterPipelineMode(handle) == 1 else { return false }
        guard sendHeld(sql, on: handle), PQpipelineSync(handle) == 1 else {
            Self.drainResults(on: handle)
            _ = PQexitPipelineMode(handle)
            return false
        }
        awaitingCommitReply = true
        return true
    }

    /// True when `sql` (a statement, or with `anywhere` a script) may drop this connection's
    /// prepared statements on the server (`DEALLOCATE`, `DISCARD ALL`): the cache then forgets
    /// them at once, so that the next statement prepares again instead of failing with 26000,
    /// which inside a transaction would abort it.
    static func dropsPreparedStatements(_ sql: String, anywhere: Bool = false) -> Bool {
        let keywords = ["DEALLOCATE", "DISCARD"]
        if anywhere {
            let upper = sql.uppercased()
            return keywords.contains { upper.contains($0) }
        }
        // One statement: only its first word counts, and most statements fail the first byte.
        guard let first = sql.utf8.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x0D }),
              first == UInt8(ascii: "D") || first == UInt8(ascii: "d") else { return false }
        let word = sql.drop { $0.isWhitespace }.prefix { $0.isLetter }.uppercased()
        return keywords.contains(word)
    }

    /// The COMMIT that ends a read-only transaction (what `SQLDialect` renders).
    static let commitSQL = "COMMIT"

    /// Ends a held read and begins the next one with the same characteristics.
    static let commitAndChainSQL = "COMMIT AND CHAIN"

    /// Queues a held-back statement (a read's COMMIT) in the pipeline: as the prepared
    /// statement when it is one already, so the server does not parse it again.
    private func sendHeld(_ sql: String, on conn: OpaquePointer) -> Bool {
        if let prepared = statements[PGStatementKey(sql: SQLTextKey(sql), types: [])] {
            useCounter &+= 1
            prepared.lastUse = useCounter
            return PQsendQueryPrepared(conn, prepared.name, 0, nil, nil, nil, 0) == 1
        }
        return PQsendQueryParams(conn, sql, 0, nil, nil, nil, nil, 0) == 1
    }

    /// Sends a held COMMIT and reads every pending answer, leaving pipeline mode: before
    /// anything that runs outside a pipeline.
    private func settleCommit(_ conn: OpaquePointer) {
        flushHeldWork()
        finishCommitReply(conn)
    }

    /// Reads the answers to a COMMIT sent without waiting, up to its sync point. A read-only
    /// COMMIT has nothing to report; a lost connection shows in the next statement.
    private func readCommitReply(_ conn: OpaquePointer) {
        guard awaitingCommitReply else { return }
        awaitingCommitReply = false
        commitReplyFailure = nil
        var emptyReads = 0
        while PQstatus(conn) != CONNECTION_BAD {
            guard let result = PQgetResult(conn) else {
                emptyReads += 1
                if emptyReads > 4 { break }
                continue
            }
            emptyReads = 0
            let status = PQresultStatus(result)
            if status == PGRES_FATAL_ERROR, commitReplyFailure == nil {
                commitReplyFailure = pgError(result: result, connection: conn, sql: Self.commitSQL)
            }
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
    }

    /// Reads a pending COMMIT's answers and leaves pipeline mode, before anything that runs
    /// outside a pipeline.
    private func finishCommitReply(_ conn: OpaquePointer) {
        guard awaitingCommitReply else { return }
        readCommitReply(conn)
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
    }

    /// Runs a BEGIN that was waiting for a statement to travel with, on its own (before a
    /// cursor, a batch or a script).
    func flushPendingBegin(_ conn: OpaquePointer) throws {
        guard let begin = pendingBegin else { return }
        pendingBegin = nil
        if transactionPooler {
            try openPooledTransaction(begin, on: conn)
            return
        }
        let result = PQexec(conn, begin)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw pgError(result: result, connection: conn, sql: begin)
        }
        runningBegin = begin
    }

    func makeInterrupter() -> @Sendable () -> Void {
        let cancelHandle = self.cancelHandle
        return { cancelHandle.cancelRunningStatement() }
    }

    func close() {
        guard let handle else { return }
        for batch in cursorBatchesRead.values { PQclear(batch.result) }
        cursorBatchesRead.removeAll()
        cursorBatchInFlight = nil
        cancelHandle.invalidate()
        PQfinish(handle)
        self.handle = nil
        statements.removeAll()
        forgetSequenceFixes()
        cursorOpen = false
        cursorOwnsTransaction = false
        commitReplyFailure = nil
        lastStaleError = nil
        pendingBegin = nil
        awaitingCommitReply = false
        heldCommit = nil
        heldCommitBegin = nil
        runningBegin = nil
    }

    /// The libpq handle, or a `DatabaseError.misuse(_:)` when the connection is closed or
    /// a cursor is streaming on it.
    func readyHandle(keepingCommitReply: Bool = false) throws -> OpaquePointer {
        guard let handle else {
            throw DatabaseError.misuse("this PostgreSQL connection is closed; open a new one")
        }
        guard !cursorOpen else {
            throw DatabaseError.misuse(
                "a cursor is open on this PostgreSQL connection: read it to the end or close it before running another statement")
        }
        if cursorBatchInFlight != nil { settleCursorBatch(handle) }
        if !keepingCommitReply && (awaitingCommitReply || heldCommit != nil) { settleCommit(handle) }
        return handle
    }

    // MARK: - Cursor batches

    func fetchCursorBatch(_ sql: String, count: Int, onRow: (Row) throws -> Void) throws -> Int {
        // Reads a FETCH in flight (this one's, or another cursor's) into `cursorBatchesRead`.
        let conn = try readyHandle()
        let statement: PGPreparedStatement
        let answer: OpaquePointer?
        if let read = cursorBatchesRead.removeValue(forKey: sql) {
            statement = read.statement
            answer = read.result
        } else {
            statement = try self.statement(for: sql, types: [], on: conn)
            parameters.reset()
            answer = execStatement(statement, sql: sql, count: 0, on: conn)
        }
        guard let answer else { throw pgError(result: nil, connection: conn, sql: sql) }
        defer { PQclear(answer) }
        guard PQresultStatus(answer) == PGRES_TUPLES_OK else {
            throw pgError(result: answer, connection: conn, sql: sql)
        }
        let rows = Int(PQntuples(answer))
        // A full batch: ask for the next one now, before decoding this one, so that the
        // server reads it while this side decodes and the caller works through the rows. A
        // send that fails leaves nothing in flight: the next call fetches (and meets the
        // connection's failure) itself.
        parameters.reset()
        if rows == count, sendStatement(statement, sql: sql, count: 0, resultFormat: statement.resultFormat, on: conn) {
            cursorBatchInFlight = (sql, statement)
        }
        if transactionPooler {
            try readPooledRows(answer, statement: statement, sql: sql, onRow: onRow)
        } else {
            try Self.readRows(answer, statement: statement, sql: sql, onRow: onRow)
        }
        return rows
    }

    func discardCursorBatch(_ sql: String) {
        if let handle, cursorBatchInFlight?.sql == sql { settleCursorBatch(handle) }
        if let read = cursorBatchesRead.removeValue(forKey: sql) { PQclear(read.result) }
    }

    /// Reads the answer to the `FETCH` sent ahead and keeps it for the call that asks for it.
    private func settleCursorBatch(_ conn: OpaquePointer) {
        guard let inFlight = cursorBatchInFlight else { return }
        cursorBatchInFlight = nil
        var answer: OpaquePointer?
        while let result = PQgetResult(conn) {
            if answer == nil { answer = result } else { PQclear(result) }
        }
        if let earlier = cursorBatchesRead[inFlight.sql] { PQclear(earlier.result) }
        cursorBatchesRead[inFlight.sql] = (inFlight.statement, answer)
    }

    // MARK: - Prepared statements

    /// The prepared statement for `sql` with parameters of `types`, if the cache has it.
    @inline(__always)
    private func cachedStatement(_ sql: String, types: [Oid]) -> PGPreparedStatement? {
        if let last = lastStatement, SQLTextKey.sameRepresentation(last.sql, sql), last.types == types {
            return last.statement
        }
        guard let found = statements[PGStatementKey(sql: SQLTextKey(sql), types: types)] else { return nil }
        lastStatement = (sql, types, found)
        return found
    }

    /// The cached prepared statement for `sql` with these parameter types, preparing and
    /// describing it on first use.
    func statement(for sql: String, types: [Oid], on conn: OpaquePointer) throws -> PGPreparedStatement {
        useCounter &+= 1
        if let cached = cachedStatement(sql, types: types) {
            cached.lastUse = useCounter
            return cached
        }
        let key = PGStatementKey(sql: SQLTextKey(sql), types: types)
        try SQLText.refuseNUL(in: sql)
        // libpq drops the connection when the server describes more parameters than
        // `maxBindParameters` (see SQLDialect.maxBindParameters): refuse the statement before
        // anything is sent, so the connection and its transaction stay as they were.
        let maxParameters = SQLDialect.postgres.maxBindParameters
        guard types.count <= maxParameters else {
            throw DatabaseError.misuse(
                "this statement has \(types.count) bind parameters; PostgreSQL through libpq takes at most "
                    + "\(maxParameters) in one statement: split it (for example an IN list into several queries, "
                    + "or a multi-row INSERT into several statements)")
        }
        while statements.count >= Self.statementCacheCapacity, evictLeastRecentlyUsed(on: conn) {}
        statementCounter += 1
        if transactionPooler {
            let statement = try describeUnnamed(sql, types: types, on: conn)
            statements[key] = statement
            return statement
        }
        let name = statementPrefix + String(statementCounter)
        let prepared = types.withUnsafeBufferPointer { buffer in
            PQprepare(conn, name, sql, Int32(clamping: types.count), buffer.baseAddress)
        }
        defer { PQclear(prepared) }
        guard let prepared, PQresultStatus(prepared) == PGRES_COMMAND_OK else {
            throw pgError(result: prepared, connection: conn, sql: sql)
        }
        let described = PQdescribePrepared(conn, name)
        defer { PQclear(described) }
        guard let described, PQresultStatus(described) == PGRES_COMMAND_OK else {
            throw pgError(result: described, connection: conn, sql: sql)
        }
        let fieldCount = Int(PQnfields(described))
        var names = [String]()
        var types = [Oid]()
        names.reserveCapacity(fieldCount)
        types.reserveCapacity(fieldCount)
        for i in 0..<Int32(fieldCount) {
            names.append(PQfname(described, i).map { String(cString: $0) } ?? "?column?")
            types.append(PQftype(described, i))
        }
        let statement = PGPreparedStatement(
            name: name,
            parameterCount: Int(PQnparams(described)),
            layout: RowLayout(columnNames: names),
            columnTypes: types,
            lastUse: useCounter
        )
        statements[key] = statement
        return statement
    }

    /// Deallocates the least recently used statement that the running batch does not need;
    /// when the batch needs them all, the cache grows past its capacity until the next one.
    /// Returns false when there was none to evict.
    private func evictLeastRecentlyUsed(on conn: OpaquePointer) -> Bool {
        let floor = evictionFloor == 0 ? UInt64.max : evictionFloor
        guard let victim = statements.lazy.filter({ $0.value.lastUse < floor }).min(by: { $0.value.lastUse < $1.value.lastUse }) else {
            return false
        }
        statements.removeValue(forKey: victim.key)
        deallocate(victim.value, on: conn)
        return true
    }

    /// Frees a statement on the server. In an aborted transaction this fails; the name is
    /// never reused, so the leftover statement is harmless.
    private func deallocate(_ statement: PGPreparedStatement, on conn: OpaquePointer) {
        // A description kept by a pooled connection names nothing on the server.
        guard !statement.name.isEmpty else { return }
        PQclear(PQexec(conn, "DEALLOCATE " + statement.name))
    }

    private func checkParameterCount(_ statement: PGPreparedStatement, _ count: Int, sql: String) throws {
        guard statement.parameterCount == count else {
            throw DatabaseError.misuse(
                "the statement has \(statement.parameterCount) parameter(s) but \(count) value(s) were bound: \(sql)")
        }
    }

    /// Forgets cached statements after an error that says they are stale: the server lost
    /// them (26000, after `DEALLOCATE ALL` or `DISCARD ALL`) or a table changed under a
    /// cached result type (0A000 "cached plan must not change result type").
    /// Returns true when the statement can simply be prepared again and retried.
    func forgetStaleStatement(after result: OpaquePointer?, statement: PGPreparedStatement, sql: String, on conn: OpaquePointer) -> Bool {
        switch Self.staleStatement(result) {
        case .lost:
            statements.removeAll()
            return true
        case .resultTypeChanged:
            statements = statements.filter { $0.value !== statement }
            deallocate(statement, on: conn)
            return true
        case nil:
            return false
        }
    }

    /// Why a failed statement's prepared form is stale, if that is why it failed.
    enum StaleStatement {
        /// 26000: the server no longer has it (`DEALLOCATE ALL`, `DISCARD ALL`).
        case lost
        /// 0A000 "cached plan must not change result type": a table changed under it.
        case resultTypeChanged
    }

    /// Reads a failed result's SQLSTATE (and message) for a stale prepared statement.
    static func staleStatement(_ result: OpaquePointer?) -> StaleStatement? {
        guard let result, let state = PQresultErrorField(result, PGErrorMapping.fieldSQLState) else { return nil }
        switch String(cString: state) {
        case "26000":
            return .lost
        case "0A000":
            let message = PQresultErrorMessage(result).map { String(cString: $0) } ?? ""
            return message.contains("cached plan must not change result type") ? .resultTypeChanged : nil
        default:
            return nil
        }
    }

    // MARK: - Running statements

    @discardableResult
    func execute(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?) throws -> Int {
        let changed = transactionPooler
            ? try executePooled(sql, bindings: bindings, onRow: onRow)
            : try executeStatement(sql, bindings: bindings, onRow: onRow)
        if Self.mayInsert(sql) {
            try keepSequencesAhead(of: sql)
        } else if Self.mayChangeSchema(sql) {
            forgetSequenceFixes()
        }
        return changed
    }

    /// Runs one statement (without a pooler).
    private func executeStatement(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?) throws -> Int {
        let conn = try readyHandle(keepingCommitReply: pendingBegin != nil)
        if pendingBegin != nil, sql == "COMMIT" || sql == "ROLLBACK" {
            // The transaction never reached the server: nothing to end.
            pendingBegin = nil
            return 0
        }
        parameters.reset()
        try parameters.append(contentsOf: bindings)
        if let begin = pendingBegin {
            // Preparing runs outside the pipeline: only a statement not prepared yet on this
            // connection pays for it (and for the wait for a pending COMMIT's answer). The
            // transaction's BEGIN and COMMIT are prepared statements too, so the server
            // parses neither again.
            let beginStatement: PGPreparedStatement
            let chainStatement: PGPreparedStatement
            let statement: PGPreparedStatement
            if let memo = transactionStatements, SQLTextKey.sameBytes(memo.begin, begin),
               let cached = cachedStatement(sql, types: parameters.types) {
                // Everything is prepared: one lookup, and the three stay the most recently used.
                useCounter &+= 1
                memo.beginStatement.lastUse = useCounter
                memo.chainStatement.lastUse = useCounter
                cached.lastUse = useCounter
                (beginStatement, chainStatement, statement) = (memo.beginStatement, memo.chainStatement, cached)
            } else {
                if statements[PGStatementKey(sql: SQLTextKey(sql), types: parameters.types)] == nil
                    || statements[PGStatementKey(sql: SQLTextKey(begin), types: [])] == nil
                    || statements[PGStatementKey(sql: SQLTextKey(Self.commitSQL), types: [])] == nil
                    || statements[PGStatementKey(sql: SQLTextKey(Self.commitAndChainSQL), types: [])] == nil {
                    settleCommit(conn)
                }
                beginStatement = try self.statement(for: begin, types: [], on: conn)
                _ = try self.statement(for: Self.commitSQL, types: [], on: conn)
                chainStatement = try self.statement(for: Self.commitAndChainSQL, types: [], on: conn)
                statement = try self.statement(for: sql, types: parameters.types, on: conn)
                // Set after every insertion above (each one clears it). The least recently
                // used statement is evicted first, so none of these four was.
                transactionStatements = (begin, beginStatement, chainStatement)
            }
            try checkParameterCount(statement, bindings.count, sql: sql)
            pendingBegin = nil
            do {
                return try executeAfterBegin(begin, beginStatement: beginStatement, chainStatement: chainStatement,
                                             statement: statement, sql: sql, bindingCount: bindings.count, onRow: onRow, on: conn)
            } catch PGPipelineFailure.staleStatements {
                // Once: a second loss is reported as what the server said.
                // The server had lost the prepared statements (`DEALLOCATE ALL`, `DISCARD ALL`)
                // before anything of this transaction ran: prepare them again and retry once.
                statements.removeAll()
                if PQtransactionStatus(conn) == PQTRANS_INERROR || PQtransactionStatus(conn) == PQTRANS_INTRANS {
                    // Only a held read-only COMMIT can have failed before the BEGIN: that
                    // transaction's reads are done, so ending it with a ROLLBACK loses nothing.
                    PQclear(PQexec(conn, "ROLLBACK"))
                }
                guard PQstatus(conn) == CONNECTION_OK, PQtransactionStatus(conn) == PQTRANS_IDLE else {
                    throw pgError(result: nil, connection: conn, sql: sql)
                }
                pendingBegin = begin
                let retried = try self.statement(for: sql, types: parameters.types, on: conn)
                let retriedBegin = try self.statement(for: begin, types: [], on: conn)
                _ = try self.statement(for: Self.commitSQL, types: [], on: conn)
                let retriedChain = try self.statement(for: Self.commitAndChainSQL, types: [], on: conn)
                pendingBegin = nil
                do {
                    return try executeAfterBegin(begin, beginStatement: retriedBegin, chainStatement: retriedChain,
                                                 statement: retried, sql: sql, bindingCount: bindings.count, onRow: onRow, on: conn)
                } catch PGPipelineFailure.staleStatements {
                    statements.removeAll()
                    throw lastStaleError ?? pgError(result: nil, connection: conn, sql: sql)
                }
            }
        }
        var mayRetry = true
        while true {
            let wasIdle = PQtransactionStatus(conn) == PQTRANS_IDLE
            let statement = try statement(for: sql, types: parameters.types, on: conn)
            try checkParameterCount(statement, bindings.count, sql: sql)
            let result = parameters.withPointers { values, lengths, formats in
                PQexecPrepared(conn, statement.name, Int32(bindings.count), values, lengths, formats, statement.resultFormat)
            }
            defer { PQclear(result) }
            guard let result else {
                throw pgError(result: nil, connection: conn, sql: sql)
            }
            if runningBegin != nil, Self.changesTransaction(result) { runningBegin = nil }
            switch PQresultStatus(result) {
            case PGRES_TUPLES_OK:
                if let onRow { try Self.readRows(result, statement: statement, sql: sql, onRow: onRow) }
                return Self.changedRows(result)
            case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                if Self.dropsPreparedStatements(sql) { statements.removeAll() }
                return Self.changedRows(result)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                Self.abandonCopy(result, on: conn)
                throw DatabaseError.misuse("COPY is not supported by Unity's PostgreSQL driver: \(sql)")
            default:
                let error = pgError(result: result, connection: conn, sql: sql)
                if forgetStaleStatement(after: result, statement: statement, sql: sql, on: conn), mayRetry, wasIdle {
                    mayRetry = false
                    continue
                }
                throw error
            }
        }
    }

    /// Sends `begin` and the prepared `statement` in one pipeline and reads both answers: one
    /// round trip where two statements would cost two. A previous read's COMMIT held back goes
    /// first, or, when that read began with the same `begin`, one `COMMIT AND CHAIN` ends it
    /// and begins this one.
    private func executeAfterBegin(
        _ begin: String, beginStatement: PGPreparedStatement, chainStatement: PGPreparedStatement,
        statement: PGPreparedStatement, sql: String, bindingCount: Int, onRow: ((Row) throws -> Void)?, on conn: OpaquePointer
    ) throws -> Int {
        // A previous read's COMMIT may still be on its way in this pipeline.
        let commitInFlight = awaitingCommitReply
        guard commitInFlight || PQenterPipelineMode(conn) == 1 else {
            throw pgError(result: nil, connection: conn, sql: begin)
        }
        let held = heldCommit
        let chains = held != nil && heldCommitBegin == begin
        heldCommit = nil
        heldCommitBegin = nil
        let preamble = held == nil || chains ? 1 : 2
        var firstError: Error?
        var stale = false
        var changed = 0
        var changesTransaction = false
        let opened = chains
            ? PQsendQueryPrepared(conn, chainStatement.name, 0, nil, nil, nil, 0) == 1
            : (held.map { sendHeld($0, on: conn) } ?? true)
                && PQsendQueryPrepared(conn, beginStatement.name, 0, nil, nil, nil, 0) == 1
        let sent = opened
            && parameters.withPointers { values, lengths, formats in
                PQsendQueryPrepared(conn, statement.name, Int32(bindingCount), values, lengths, formats, statement.resultFormat)
            } == 1
            && PQpipelineSync(conn) == 1
        if commitInFlight { readCommitReply(conn) }
        if sent {
            // Answers: BEGIN's result and NULL, the statement's result and NULL, then the sync.
            Self.readPipeline(conn) { query, result in
                switch PQresultStatus(result) {
                case PGRES_PIPELINE_ABORTED:
                    return
                case PGRES_TUPLES_OK where query >= preamble:
                    changesTransaction = changesTransaction || Self.changesTransaction(result)
                    if let onRow, firstError == nil {
                        do {
                            try Self.readRows(result, statement: statement, sql: sql, onRow: onRow)
                        } catch {
                            firstError = error
                        }
                    }
                    changed = Self.changedRows(result)
                case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_TUPLES_OK:
                    if query >= preamble {
                        changesTransaction = changesTransaction || Self.changesTransaction(result)
                        changed = Self.changedRows(result)
                        if Self.dropsPreparedStatements(sql) { statements.removeAll() }
                    }
                default:
                    if firstError == nil {
                        firstError = pgError(result: result, connection: conn, sql: query >= preamble ? sql : begin)
                        stale = PQresultErrorField(result, PGErrorMapping.fieldSQLState).map { String(cString: $0) } == "26000"
                    }
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        if PQstatus(conn) == CONNECTION_BAD || !sent {
            throw firstError ?? pgError(result: nil, connection: conn, sql: sql)
        }
        runningBegin = changesTransaction ? nil : begin
        if stale {
            lastStaleError = firstError as? DatabaseError
            throw PGPipelineFailure.staleStatements
        }
        if let firstError { throw firstError }
        return changed
    }

    /// Reads a pipeline's results up to its sync point, passing each to `body` with the position
    /// of the statement it answers (each statement's results end with a NULL). A lost
    /// connection, or more NULLs in a row than a pipeline gives, ends the reading early.
    static func readPipeline(_ conn: OpaquePointer, _ body: (_ position: Int, _ result: OpaquePointer) -> Void) {
        var position = 0
        var emptyReads = 0
        while PQstatus(conn) != CONNECTION_BAD {
            guard let result = PQgetResult(conn) else {
                position += 1
                emptyReads += 1
                if emptyReads > 4 { return }
                continue
            }
            emptyReads = 0
            defer { PQclear(result) }
            if PQresultStatus(result) == PGRES_PIPELINE_SYNC { return }
            body(position, result)
        }
    }

    /// Passes every row of `result` to `onRow`, reusing one row's value storage.
    /// `binary` overrides the statement's result format (a result read with a description
    /// built from it).
    private static func readRows(_ result: OpaquePointer, statement: PGPreparedStatement, sql: String, binary: Bool? = nil,
                                 onRow: (Row) throws -> Void) throws {
        let binary = binary ?? statement.binaryResults
        let columnCount = Int(PQnfields(result))
        guard columnCount == statement.kinds.count else {
            throw DatabaseError.other(DatabaseErrorContext(
                message: "the result has \(columnCount) columns but the prepared statement described \(statement.kinds.count)",
                sql: sql))
        }
        for c in 0..<columnCount where PQftype(result, Int32(truncatingIfNeeded: c)) != statement.columnTypes[c] {
            throw DatabaseError.other(DatabaseErrorContext(
                message: "result column \(c + 1) has type \(PQftype(result, Int32(truncatingIfNeeded: c))) but the prepared statement "
                    + "described type \(statement.columnTypes[c]) (a cursor declared again for another query?)",
                sql: sql))
        }
        let rowCount = PQntuples(result)
        var row = Row(layout: statement.layout, values: [DatabaseValue](repeating: .null, count: columnCount))
        for r in 0..<rowCount {
            try row.values.withUnsafeMutableBufferPointer { values in
                try decodeRow(result, row: r, kinds: statement.kinds, binary: binary, layout: statement.layout, into: values)
            }
            try onRow(row)
        }
    }

    /// Writes the values of row `r` of `result` over `values` (one per column), in place:
    /// emptying and appending to an array cost a tenth of a row.
    @inline(__always)
    static func decodeRow(
        _ result: OpaquePointer, row r: Int32, kinds: [PGColumnKind], binary: Bool, layout: RowLayout,
        into values: UnsafeMutableBufferPointer<DatabaseValue>
    ) throws {
        for c in 0..<min(kinds.count, values.count) {
            let column = Int32(truncatingIfNeeded: c)
            // libpq gives a NULL a length of 0, so only an empty value needs the NULL check
            // (a call per value that raw libpq code skips for NOT NULL columns).
            let length = Int(PQgetlength(result, r, column))
            if length == 0, PQgetisnull(result, r, column) != 0 {
                values[c] = .null
                continue
            }
            guard let pointer = PQgetvalue(result, r, column) else {
                values[c] = .null
                continue
            }
            let raw = UnsafeRawPointer(pointer)
            if binary {
                values[c] = try PGValueDecoder.decodeBinary(kinds[c], raw, length, column: layout.columnNames[c])
            } else {
                values[c] = try PGValueDecoder.decodeText(kinds[c], raw, length, column: layout.columnNames[c])
            }
        }
    }

    /// Whether a statement may have begun, ended or reconfigured a transaction (its command
    /// tag is BEGIN, START TRANSACTION, COMMIT, ROLLBACK, SET, RESET or PREPARE TRANSACTION):
    /// a read's `COMMIT AND CHAIN` would then carry the wrong characteristics to the next
    /// read, so the connection stops chaining until its next BEGIN.
    static func changesTransaction(_ result: OpaquePointer) -> Bool {
        guard let status = PQcmdStatus(result) else { return true }
        switch UInt8(bitPattern: status.pointee) {
        case UInt8(ascii: "B"): return commandTag(status, startsWith: "BEGIN")
        case UInt8(ascii: "S"): return commandTag(status, startsWith: "START") || commandTag(status, startsWith: "SET")
        case UInt8(ascii: "C"): return commandTag(status, startsWith: "COMMIT")
        case UInt8(ascii: "R"): return commandTag(status, startsWith: "ROLLBACK") || commandTag(status, startsWith: "RESET")
        case UInt8(ascii: "P"): return commandTag(status, startsWith: "PREPARE")
        default: return false
        }
    }

    /// Rows changed by an INSERT, UPDATE, DELETE or MERGE; 0 for queries and DDL (libpq
    /// also counts the rows a SELECT returned, which the contract does not want).
    static func changedRows(_ result: OpaquePointer) -> Int {
        guard let status = PQcmdStatus(result) else { return 0 }
        let changes: Bool
        switch UInt8(bitPattern: status.pointee) {
        case UInt8(ascii: "I"): changes = commandTag(status, startsWith: "INSERT")
        case UInt8(ascii: "U"): changes = commandTag(status, startsWith: "UPDATE")
        case UInt8(ascii: "D"): changes = commandTag(status, startsWith: "DELETE")
        case UInt8(ascii: "M"): changes = commandTag(status, startsWith: "MERGE")
        default: changes = false
        }
        guard changes, let tuples = PQcmdTuples(result) else { return 0 }
        // The count is ASCII digits (empty for a command without one); one beyond `Int` is 0,
        // as it was when parsed from a `String`.
        var count = 0
        var pointer = tuples
        while pointer.pointee >= 0x30 && pointer.pointee <= 0x39 {
            let (product, overflow) = count.multipliedReportingOverflow(by: 10)
            let (sum, carry) = product.addingReportingOverflow(Int(pointer.pointee - 0x30))
            guard !overflow, !carry else { return 0 }
            count = sum
            pointer += 1
        }
        return count
    }

    /// Whether the C string `tag` (a result's command tag, ASCII) begins with `prefix`: a byte
    /// comparison, because every statement's result is asked twice (whether it changed rows,
    /// whether it ended a transaction) and building a `String` each time was a measurable
    /// share of a lookup.
    @inline(__always)
    static func commandTag(_ tag: UnsafePointer<CChar>, startsWith prefix: StaticString) -> Bool {
        prefix.withUTF8Buffer { bytes in
            for (index, byte) in bytes.enumerated() where UInt8(bitPattern: tag[index]) != byte {
                // A shorter tag ends with NUL, which differs from every byte of the prefix.
                return false
            }
            return true
        }
    }

    /// Leaves COPY mode so the connection stays usable.
    private static func abandonCopy(_ result: OpaquePointer, on conn: OpaquePointer) {
        switch PQresultStatus(result) {
        case PGRES_COPY_IN:
            _ = PQputCopyEnd(conn, "COPY is not supported by Unity")
        case PGRES_COPY_OUT:
            var buffer: UnsafeMutablePointer<CChar>?
            while PQgetCopyData(conn, &buffer, 0) > 0 {
                PQfreemem(buffer)
                buffer = nil
            }
        default:
            break
        }
        drainResults(on: conn)
    }

    /// Reads and frees every pending result.
    static func drainResults(on conn: OpaquePointer) {
        while let pending = PQgetResult(conn) {
            let status = PQresultStatus(pending)
            PQclear(pending)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH { break }
        }
    }

    // MARK: - Batches

    @discardableResult
    func executeBatch(_ sql: String, bindingSets: [[DatabaseValue]]) throws -> Int {
        let conn = try readyHandle()
        guard !bindingSets.isEmpty else { return 0 }
        try flushPendingBegin(conn)
        // Batched statements are not looked at one by one: the transaction is not chained.
        runningBegin = nil

        // Validate and prepare everything before the pipeline starts: a value that cannot
        // be bound must fail the batch before any of it reaches the server.
        var statementsBySet = [PGPreparedStatement]()
        statementsBySet.reserveCapacity(bindingSets.count)
        // A batch whose binding sets need more statements than the cache holds (NULLs in
        // other places give other parameter types) must not evict one it prepared itself.
        evictionFloor = useCounter + 1
        defer { evictionFloor = 0 }
        var previous: PGPreparedStatement?
        var previousTypes: [Oid] = []
        for set in bindingSets {
            parameters.reset()
            try parameters.append(contentsOf: set)
            let statement: PGPreparedStatement
            if let previous, previousTypes == parameters.types {
                statement = previous
            } else {
                statement = try self.statement(for: sql, types: parameters.types, on: conn)
                try checkParameterCount(statement, set.count, sql: sql)
                previous = statement
                previousTypes = parameters.types
            }
            statementsBySet.append(statement)
        }

        // Through a pooler a batch outside a transaction is one implicit transaction (one
        // Sync), whose first statement pins the settings.
        let pins = transactionPooler && PQtransactionStatus(conn) == PQTRANS_IDLE
        guard PQenterPipelineMode(conn) == 1 else {
            throw pgError(result: nil, connection: conn, sql: sql)
        }
        var firstError: DatabaseError?
        var changed = 0
        var unreadPins = 0
        if pins {
            guard sendPin(on: conn) else {
                Self.drainResults(on: conn)
                _ = PQexitPipelineMode(conn)
                throw pgError(result: nil, connection: conn, sql: sql)
            }
            unreadPins = 1
        }

        func record(_ error: DatabaseError) {
            if firstError == nil { firstError = error }
        }
        /// Reads the results of one pipelined statement (up to its terminating NULL).
        func readStatementResults() {
            while let result = PQgetResult(conn) {
                defer { PQclear(result) }
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                    changed += Self.changedRows(result)
                case PGRES_PIPELINE_ABORTED, PGRES_PIPELINE_SYNC:
                    break
                default:
                    record(pgError(result: result, connection: conn, sql: sql))
                }
            }
        }

        var index = 0
        sending: while index < bindingSets.count {
            let end = min(index + Self.pipelineChunk, bindingSets.count)
            var sent = 0
            for i in index..<end {
                parameters.reset()
                do {
                    try parameters.append(contentsOf: bindingSets[i])
                } catch let error as DatabaseError {
                    record(error)
                    break
                } catch {
                    record(.misuse("\(error)"))
                    break
                }
                let statement = statementsBySet[i]
                guard sendStatement(statement, sql: sql, count: parameters.count, resultFormat: 1, on: conn) else {
                    record(pgError(result: nil, connection: conn, sql: sql))
                    break
                }
                sent += 1
            }
            if sent > 0, PQsendFlushRequest(conn) != 1 || PQflush(conn) != 0 {
                record(pgError(result: nil, connection: conn, sql: sql))
            }
            for _ in 0..<(sent + unreadPins) { readStatementResults() }
            unreadPins = 0
            if sent < end - index || PQstatus(conn) == CONNECTION_BAD { break sending }
            index = end
        }

        if PQstatus(conn) != CONNECTION_BAD, PQpipelineSync(conn) == 1 {
            // Read up to the sync point; a lost connection ends the results early.
            var emptyReads = 0
            while PQstatus(conn) != CONNECTION_BAD {
                guard let result = PQgetResult(conn) else {
                    emptyReads += 1
                    if emptyReads > 2 { break }
                    continue
                }
                let status = PQresultStatus(result)
                defer { PQclear(result) }
                if status == PGRES_PIPELINE_SYNC { break }
                if status != PGRES_PIPELINE_ABORTED, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK {
                    record(pgError(result: result, connection: conn, sql: sql))
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            // Results are still pending: drain them, then leave pipeline mode.
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        if PQstatus(conn) == CONNECTION_BAD {
            record(pgError(result: nil, connection: conn, sql: sql))
        }
        if let firstError { throw firstError }
        if Self.mayInsert(sql) { try keepSequencesAhead(of: sql) }
        return changed
    }

    // MARK: - Independent queries

    /// Sends the queries in one pipeline and reads their answers: one round trip for all.
    ///
    /// One Sync ends the pipeline, since libpq 15 sends each Sync on its own: the queries run
    /// in one implicit transaction, each with its own snapshot under the session's
    /// `READ COMMITTED`. When one fails, the server skips the rest of the pipeline; those are
    /// sent again in a new one, so each caller sees only its own query's failure. A held
    /// read's COMMIT goes first in the same pipeline.
    func executeIndependently(_ queries: [RenderedSQL], onRow: (_ statement: Int, _ row: Row) throws -> Void) -> [Error?] {
        var outcomes = [Error?](repeating: nil, count: queries.count)
        let conn: OpaquePointer
        do {
            conn = try readyHandle(keepingCommitReply: true)
        } catch {
            return outcomes.map { _ in error }
        }
        // Only on a connection with nothing open but a held read's COMMIT (how the pool lends
        // one); anything else runs the queries one by one.
        let idle = PQtransactionStatus(conn) == PQTRANS_IDLE || heldCommit != nil || awaitingCommitReply
        // Through a pooler each query runs in a transaction of its own, with the settings pinned.
        guard !transactionPooler, pendingBegin == nil, idle, queries.count > 1 else { return executeOneByOne(queries, onRow: onRow) }
        var pending = Array(queries.indices)
        // Each round runs at least its first query to an outcome, so the rounds end.
        var retriedStale = false
        while !pending.isEmpty {
            let round = runPipelineRound(queries, pending, onRow: onRow, on: conn, outcomes: &outcomes)
            pending = round.notRun
            if round.staleStatements && !retriedStale {
                // The server had lost prepared statements: prepare them again once.
                retriedStale = true
                statements.removeAll()
                pending = (round.stale + pending).sorted()
                for index in round.stale { outcomes[index] = nil }
            }
        }
        return outcomes
    }

    /// One pipeline over `indices`: returns the queries the server skipped after a failure
    /// (to send again) and those that failed on a lost prepared statement.
    private func runPipelineRound(
        _ queries: [RenderedSQL], _ indices: [Int], onRow: (_ statement: Int, _ row: Row) throws -> Void,
        on conn: OpaquePointer, outcomes: inout [Error?]
    ) -> (notRun: [Int], stale: [Int], staleStatements: Bool) {
        func failAll(_ list: [Int], _ error: Error) {
            for index in list where outcomes[index] == nil { outcomes[index] = error }
        }
        // Prepare outside the pipeline (only a query not prepared yet on this connection pays
        // for it, and for the wait for a held COMMIT's answer first).
        evictionFloor = useCounter + 1
        defer { evictionFloor = 0 }
        var types: [Int: [Oid]] = [:]
        for index in indices {
            parameters.reset()
            do {
                try parameters.append(contentsOf: queries[index].bindings)
                types[index] = parameters.types
            } catch {
                outcomes[index] = error
            }
        }
        if types.contains(where: { statements[PGStatementKey(sql: SQLTextKey(queries[$0.key].sql), types: $0.value)] == nil }) {
            settleCommit(conn)
        }
        var prepared: [(index: Int, statement: PGPreparedStatement)] = []
        for index in indices {
            guard let parameterTypes = types[index] else { continue }
            do {
                let statement = try statement(for: queries[index].sql, types: parameterTypes, on: conn)
                try checkParameterCount(statement, queries[index].bindings.count, sql: queries[index].sql)
                prepared.append((index, statement))
            } catch {
                outcomes[index] = error
            }
        }
        guard !prepared.isEmpty else { return ([], [], false) }
        if heldCommit != nil { flushHeldWork() }
        let commitInFlight = awaitingCommitReply
        guard commitInFlight || PQenterPipelineMode(conn) == 1 else {
            failAll(prepared.map(\.index), pgError(result: nil, connection: conn, sql: queries[prepared[0].index].sql))
            return ([], [], false)
        }
        var sent = 0
        for (index, statement) in prepared {
            parameters.reset()
            let encoded = (try? parameters.append(contentsOf: queries[index].bindings)) != nil
            guard encoded, parameters.withPointers({ values, lengths, formats in
                PQsendQueryPrepared(conn, statement.name, Int32(queries[index].bindings.count), values, lengths, formats, statement.resultFormat)
            }) == 1 else { break }
            sent += 1
        }
        let synced = sent > 0 && PQpipelineSync(conn) == 1
        if commitInFlight { readCommitReply(conn) }
        var notRun: [Int] = []
        var stale: [Int] = []
        if synced {
            Self.readPipeline(conn) { position, result in
                guard position < sent else { return }
                let (index, statement) = prepared[position]
                let sql = queries[index].sql
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK:
                    guard outcomes[index] == nil else { return }
                    do {
                        try Self.readRows(result, statement: statement, sql: sql) { try onRow(index, $0) }
                    } catch {
                        outcomes[index] = error
                    }
                case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                    return
                case PGRES_PIPELINE_ABORTED:
                    notRun.append(index)
                default:
                    if Self.staleStatement(result) != nil { stale.append(index) }
                    outcomes[index] = pgError(result: result, connection: conn, sql: sql)
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        runningBegin = nil
        if PQstatus(conn) == CONNECTION_BAD || !synced {
            // What did not come back is lost with the connection.
            let error = pgError(result: nil, connection: conn, sql: queries[prepared[0].index].sql)
            failAll(prepared.map(\.index), error)
            return ([], [], false)
        }
        // Queries never sent (a send that failed on a healthy connection) go in the next round.
        notRun.append(contentsOf: prepared.dropFirst(sent).map(\.index))
        for index in notRun { outcomes[index] = nil }
        return (notRun, stale, !stale.isEmpty)
    }

    // MARK: - Cursors

    func openCursor(_ sql: String, bindings: [DatabaseValue]) throws -> any DriverCursor {
        let conn = try readyHandle()
        try flushPendingBegin(conn)
        parameters.reset()
        try parameters.append(contentsOf: bindings)
        let inTransaction = PQtransactionStatus(conn) != PQTRANS_IDLE
        // Through a pooler the rows stream in a transaction the cursor's end ends, so the
        // server connection stays this connection's until then and the settings are pinned.
        let ownsTransaction = transactionPooler && !inTransaction
        if ownsTransaction { try openPooledTransaction("BEGIN", on: conn) }
        let statement: PGPreparedStatement
        do {
            statement = try self.statement(for: sql, types: parameters.types, on: conn)
            try checkParameterCount(statement, bindings.count, sql: sql)
            guard sendStatement(statement, sql: sql, count: bindings.count, resultFormat: statement.resultFormat, on: conn) else {
                throw pgError(result: nil, connection: conn, sql: sql)
            }
            guard PQsetSingleRowMode(conn) == 1 else {
                Self.drainResults(on: conn)
                throw DatabaseError.other(DatabaseErrorContext(message: "libpq refused single-row mode", sql: sql))
            }
        } catch {
            if ownsTransaction, PQstatus(conn) != CONNECTION_BAD { PQclear(PQexec(conn, "ROLLBACK")) }
            throw error
        }
        cursorOpen = true
        cursorOwnsTransaction = ownsTransaction
        return PostgresCursor(connection: self, statement: statement, sql: sql, cancelOnEarlyClose: !inTransaction)
    }

    // MARK: - Scripts

    func executeScript(_ sql: String) throws {
        let conn = try readyHandle()
        try SQLText.refuseNUL(in: sql)
        try flushPendingBegin(conn)
        // A script may end, begin or reconfigure transactions: the transaction is not chained.
        runningBegin = nil
        // Through a pooler a script outside a transaction runs in one of its own, pinned.
        let ownsTransaction = transactionPooler && PQtransactionStatus(conn) == PQTRANS_IDLE && !Self.runsOutsideTransactions(sql)
        if ownsTransaction { try openPooledTransaction("BEGIN", on: conn) }
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        let succeeded = result.map { [PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY].contains(PQresultStatus($0)) } ?? false
        if ownsTransaction, PQstatus(conn) != CONNECTION_BAD {
            // A script that ended the transaction itself leaves nothing to end.
            switch PQtransactionStatus(conn) {
            case PQTRANS_INTRANS where succeeded:
                let commit = PQexec(conn, "COMMIT")
                defer { PQclear(commit) }
                guard let commit, PQresultStatus(commit) == PGRES_COMMAND_OK else {
                    throw pgError(result: commit, connection: conn, sql: "COMMIT")
                }
            case PQTRANS_INTRANS, PQTRANS_INERROR:
                PQclear(PQexec(conn, "ROLLBACK"))
            default:
                break
            }
        }
        guard let result else {
            throw pgError(result: nil, connection: conn, sql: sql)
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            if Self.dropsPreparedStatements(sql, anywhere: true) { statements.removeAll() }
            forgetSequenceFixes()
            return
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            Self.abandonCopy(result, on: conn)
            throw DatabaseError.misuse("COPY is not supported by Unity's PostgreSQL driver: \(sql)")
        default:
            throw pgError(result: result, connection: conn, sql: sql)
        }
    }
}

// MARK: - Through a transaction-mode pooler

extension PostgresConnection {
    /// Maps a failure to a `DatabaseError`, recognizing a statement name of this connection
    /// that the server does not hold as it was prepared.
    func pgError(result: OpaquePointer?, connection: OpaquePointer?, sql: String?) -> DatabaseError {
        if let commitFailure = commitReplyFailure, let result,
           let state = PQresultErrorField(result, PGErrorMapping.fieldSQLState), String(cString: state) == "25P02" {
            // The transaction is aborted because the previous read's COMMIT failed: that is the cause.
            commitReplyFailure = nil
            return commitFailure
        }
        return PGErrorMapping.error(result: result, connection: connection, sql: sql,
                                    statementPrefix: transactionPooler ? nil : statementPrefix)
    }

    /// The statement that pins, for the rest of the transaction it runs in, every setting the
    /// value coding relies on (``sessionSettings`` but client_encoding, which travels in the
    /// startup packet) and, as `$1`, the search path.
    static func pinSQL(searchPath: Bool) -> String {
        var calls = sessionSettings.filter { $0.name != "client_encoding" }.map {
            "set_config('\($0.name)', '\($0.value)', true)"
        }
        if searchPath { calls.append("set_config('search_path', $1, true)") }
        return "SELECT " + calls.joined(separator: ", ")
    }

    static let pinWithoutSearchPath = pinSQL(searchPath: false)
    static let pinWithSearchPath = pinSQL(searchPath: true)

    /// Queues the pinning statement in the pipeline (its answer is one row, read as any other).
    func sendPin(on conn: OpaquePointer) -> Bool {
        guard let searchPath else {
            return PQsendQueryParams(conn, Self.pinWithoutSearchPath, 0, nil, nil, nil, nil, 0) == 1
        }
        let quoted = Self.quoteIdentifier(searchPath)
        return quoted.withCString { value in
            var values: [UnsafePointer<CChar>?] = [value]
            return values.withUnsafeMutableBufferPointer { buffer in
                PQsendQueryParams(conn, Self.pinWithSearchPath, 1, nil, buffer.baseAddress, nil, nil, 0)
            } == 1
        }
    }

    /// Whether PostgreSQL refuses to run `sql` inside a transaction or a pipeline (VACUUM,
    /// CREATE INDEX CONCURRENTLY, CREATE DATABASE, …): a pooled connection runs it by itself.
    static func runsOutsideTransactions(_ sql: String) -> Bool {
        let upper = sql.uppercased()
        let words = upper.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == ";" })
        guard let first = words.first else { return false }
        if first == "VACUUM" || upper.contains("CONCURRENTLY") { return true }
        if words.count >= 2, first == "CREATE" || first == "DROP" || first == "ALTER",
           ["DATABASE", "TABLESPACE", "SYSTEM"].contains(words[1]) {
            return true
        }
        return false
    }

    /// Parses `sql` as the unnamed statement and describes it, under one Sync (pinned first
    /// when no transaction is open, so that names resolve in the right schema): whichever
    /// server connection the pooler picks, the description is of this statement. The
    /// description is kept on this side only.
    func describeUnnamed(_ sql: String, types: [Oid], on conn: OpaquePointer) throws -> PGPreparedStatement {
        let idle = PQtransactionStatus(conn) == PQTRANS_IDLE
        guard PQenterPipelineMode(conn) == 1 else {
            throw pgError(result: nil, connection: conn, sql: sql)
        }
        let sent = (!idle || sendPin(on: conn))
            && types.withUnsafeBufferPointer({ PQsendPrepare(conn, "", sql, Int32(clamping: types.count), $0.baseAddress) }) == 1
            && PQsendDescribePrepared(conn, "") == 1
            && PQpipelineSync(conn) == 1
        var firstError: DatabaseError?
        var statement: PGPreparedStatement?
        let describePosition = idle ? 2 : 1
        if sent {
            Self.readPipeline(conn) { position, result in
                switch PQresultStatus(result) {
                case PGRES_COMMAND_OK where position == describePosition:
                    let fieldCount = PQnfields(result)
                    var names = [String]()
                    var columnTypes = [Oid]()
                    for i in 0..<fieldCount {
                        names.append(PQfname(result, i).map { String(cString: $0) } ?? "?column?")
                        columnTypes.append(PQftype(result, i))
                    }
                    statement = PGPreparedStatement(
                        name: "", parameterCount: Int(PQnparams(result)), layout: RowLayout(columnNames: names),
                        columnTypes: columnTypes, lastUse: useCounter)
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_PIPELINE_ABORTED:
                    return
                default:
                    if firstError == nil { firstError = pgError(result: result, connection: conn, sql: sql) }
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        if let firstError { throw firstError }
        guard sent, let statement, PQstatus(conn) != CONNECTION_BAD else {
            throw pgError(result: nil, connection: conn, sql: sql)
        }
        return statement
    }

    /// Sends `statement` with the bound ``parameters``: the named statement, or through a
    /// pooler its SQL as the unnamed statement (Parse, Bind and Execute together).
    func sendStatement(_ statement: PGPreparedStatement, sql: String, count: Int, resultFormat: Int32, on conn: OpaquePointer) -> Bool {
        if statement.name.isEmpty {
            let types = parameters.types
            return parameters.withPointers { values, lengths, formats in
                types.withUnsafeBufferPointer {
                    PQsendQueryParams(conn, sql, Int32(count), count == 0 ? nil : $0.baseAddress, values, lengths, formats, resultFormat)
                }
            } == 1
        }
        return parameters.withPointers { values, lengths, formats in
            PQsendQueryPrepared(conn, statement.name, Int32(count), values, lengths, formats, resultFormat)
        } == 1
    }

    /// Runs `statement` with the bound ``parameters`` and waits for its answer (see
    /// ``sendStatement(_:sql:count:resultFormat:on:)``).
    func execStatement(_ statement: PGPreparedStatement, sql: String, count: Int, on conn: OpaquePointer) -> OpaquePointer? {
        if statement.name.isEmpty {
            let types = parameters.types
            return parameters.withPointers { values, lengths, formats in
                types.withUnsafeBufferPointer {
                    PQexecParams(conn, sql, Int32(count), count == 0 ? nil : $0.baseAddress, values, lengths, formats, statement.resultFormat)
                }
            }
        }
        return parameters.withPointers { values, lengths, formats in
            PQexecPrepared(conn, statement.name, Int32(count), values, lengths, formats, statement.resultFormat)
        }
    }

    /// Reads the rows of a pooled statement's result. A description kept on this side can be
    /// stale (a table changed since): the result's own columns then replace it, and its rows
    /// are decoded with them when the format asked for allows.
    func readPooledRows(_ result: OpaquePointer, statement: PGPreparedStatement, sql: String, onRow: (Row) throws -> Void) throws {
        let columnCount = Int(PQnfields(result))
        let matches = columnCount == statement.kinds.count
            && (0..<columnCount).allSatisfy { PQftype(result, Int32($0)) == statement.columnTypes[$0] }
        if matches {
            try Self.readRows(result, statement: statement, sql: sql, onRow: onRow)
            return
        }
        var names = [String]()
        var columnTypes = [Oid]()
        for i in 0..<Int32(columnCount) {
            names.append(PQfname(result, i).map { String(cString: $0) } ?? "?column?")
            columnTypes.append(PQftype(result, i))
        }
        let fresh = PGPreparedStatement(name: "", parameterCount: statement.parameterCount, layout: RowLayout(columnNames: names),
                                        columnTypes: columnTypes, lastUse: useCounter)
        if let key = statements.first(where: { $0.value === statement })?.key { statements[key] = fresh }
        let binary = columnCount > 0 && PQfformat(result, 0) == 1
        guard !binary || fresh.binaryResults else {
            throw DatabaseError.other(DatabaseErrorContext(
                message: "the statement's result columns changed since it was described (a table changed?); run it again", sql: sql))
        }
        try Self.readRows(result, statement: fresh, sql: sql, binary: binary, onRow: onRow)
    }

    /// Opens a transaction on a pooled connection: `begin` and the pinning statement in one
    /// pipeline, so that both reach the same server connection.
    func openPooledTransaction(_ begin: String, on conn: OpaquePointer) throws {
        guard PQenterPipelineMode(conn) == 1 else { throw pgError(result: nil, connection: conn, sql: begin) }
        let sent = PQsendQueryParams(conn, begin, 0, nil, nil, nil, nil, 0) == 1 && sendPin(on: conn) && PQpipelineSync(conn) == 1
        var firstError: DatabaseError?
        if sent {
            Self.readPipeline(conn) { _, result in
                switch PQresultStatus(result) {
                case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_PIPELINE_ABORTED: return
                default: if firstError == nil { firstError = pgError(result: result, connection: conn, sql: begin) }
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        if firstError != nil || !sent || PQstatus(conn) == CONNECTION_BAD {
            if PQstatus(conn) != CONNECTION_BAD, PQtransactionStatus(conn) != PQTRANS_IDLE { PQclear(PQexec(conn, "ROLLBACK")) }
            throw firstError ?? pgError(result: nil, connection: conn, sql: begin)
        }
    }

    /// Ends the transaction a pooled connection opened for a cursor: COMMIT after a cursor
    /// read to its end, ROLLBACK after one that failed or was cancelled. Returns the error of
    /// a COMMIT that failed.
    func endCursorTransaction() -> DatabaseError? {
        guard cursorOwnsTransaction, let conn = handle else {
            cursorOwnsTransaction = false
            return nil
        }
        cursorOwnsTransaction = false
        let end = PQtransactionStatus(conn) == PQTRANS_INTRANS ? "COMMIT" : "ROLLBACK"
        let result = PQexec(conn, end)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else {
            return pgError(result: result, connection: conn, sql: end)
        }
        return nil
    }

    /// One statement through a transaction-mode pooler: inside a transaction as it is (the
    /// transaction pinned the settings when it began); outside one, in a transaction of its
    /// own with the settings pinned (a BEGIN waiting for it, or the implicit transaction of
    /// one pipeline under one Sync). Nothing is left on the server afterwards.
    func executePooled(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?) throws -> Int {
        let conn = try readyHandle()
        if pendingBegin != nil, sql == "COMMIT" || sql == "ROLLBACK" {
            // The transaction never reached the server: nothing to end.
            pendingBegin = nil
            return 0
        }
        parameters.reset()
        try parameters.append(contentsOf: bindings)
        let statement = try self.statement(for: sql, types: parameters.types, on: conn)
        try checkParameterCount(statement, bindings.count, sql: sql)
        let begin = pendingBegin
        pendingBegin = nil
        let idle = PQtransactionStatus(conn) == PQTRANS_IDLE
        if begin == nil && (!idle || Self.runsOutsideTransactions(sql)) {
            let result = execStatement(statement, sql: sql, count: bindings.count, on: conn)
            defer { PQclear(result) }
            guard let result else { throw pgError(result: nil, connection: conn, sql: sql) }
            switch PQresultStatus(result) {
            case PGRES_TUPLES_OK:
                if let onRow { try readPooledRows(result, statement: statement, sql: sql, onRow: onRow) }
                return Self.changedRows(result)
            case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                return Self.changedRows(result)
            case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                Self.abandonCopy(result, on: conn)
                throw DatabaseError.misuse("COPY is not supported by Unity's PostgreSQL driver: \(sql)")
            default:
                throw pgError(result: result, connection: conn, sql: sql)
            }
        }
        guard PQenterPipelineMode(conn) == 1 else { throw pgError(result: nil, connection: conn, sql: begin ?? sql) }
        let preamble = begin == nil ? 1 : 2
        let sent = (begin.map { PQsendQueryParams(conn, $0, 0, nil, nil, nil, nil, 0) == 1 } ?? true)
            && sendPin(on: conn)
            && sendStatement(statement, sql: sql, count: bindings.count, resultFormat: statement.resultFormat, on: conn)
            && PQpipelineSync(conn) == 1
        var firstError: Error?
        var changed = 0
        if sent {
            Self.readPipeline(conn) { position, result in
                switch PQresultStatus(result) {
                case PGRES_PIPELINE_ABORTED:
                    return
                case PGRES_TUPLES_OK where position >= preamble:
                    if let onRow, firstError == nil {
                        do {
                            try readPooledRows(result, statement: statement, sql: sql, onRow: onRow)
                        } catch {
                            firstError = error
                        }
                    }
                    changed = Self.changedRows(result)
                case PGRES_COMMAND_OK, PGRES_EMPTY_QUERY, PGRES_TUPLES_OK:
                    if position >= preamble { changed = Self.changedRows(result) }
                case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
                    if firstError == nil { firstError = DatabaseError.misuse("COPY is not supported by Unity's PostgreSQL driver: \(sql)") }
                default:
                    if firstError == nil {
                        firstError = pgError(result: result, connection: conn, sql: position >= preamble ? sql : (begin ?? Self.pinWithSearchPath))
                    }
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        if PQstatus(conn) == CONNECTION_BAD || !sent {
            throw firstError ?? pgError(result: nil, connection: conn, sql: sql)
        }
        if let firstError { throw firstError }
        return changed
    }
}

/// Streams the rows of one statement in libpq's single-row mode.
final class PostgresCursor: DriverCursor {
    let layout: RowLayout
    private let connection: PostgresConnection
    private let statement: PGPreparedStatement
    private let sql: String
    /// Outside a transaction an early close cancels the statement; inside one it reads the
    /// rest instead, because a cancel would abort the caller's transaction.
    private let cancelOnEarlyClose: Bool
    // Unchecked for exclusive access: a cursor is used by one thread at a time, and the checks
    // (a thread-local lookup each) were a sixth of the cost of a row.
    @exclusivity(unchecked) private var row: Row
    @exclusivity(unchecked) private var finished = false

    init(connection: PostgresConnection, statement: PGPreparedStatement, sql: String, cancelOnEarlyClose: Bool) {
        self.connection = connection
        self.statement = statement
        self.sql = sql
        self.layout = statement.layout
        self.cancelOnEarlyClose = cancelOnEarlyClose
        self.row = Row(layout: statement.layout, values: [DatabaseValue](repeating: .null, count: statement.kinds.count))
    }

    deinit {
        close()
    }

    func next() throws -> Row? {
        if finished { return nil }
        guard let conn = connection.handle else {
            finished = true
            throw DatabaseError.misuse("the PostgreSQL connection of this cursor was closed")
        }
        guard let result = PQgetResult(conn) else {
            if let failedCommit = finish() { throw failedCommit }
            return nil
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_SINGLE_TUPLE:
            guard PQnfields(result) == Int32(statement.kinds.count), PQntuples(result) == 1 else {
                close()
                throw DatabaseError.other(DatabaseErrorContext(
                    message: "the result's shape differs from the prepared statement's description", sql: sql))
            }
            do {
                try row.values.withUnsafeMutableBufferPointer { values in
                    try PostgresConnection.decodeRow(
                        result, row: 0, kinds: statement.kinds, binary: statement.binaryResults, layout: layout, into: values)
                }
            } catch {
                close()
                throw error
            }
            return row
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            PostgresConnection.drainResults(on: conn)
            if let failedCommit = finish() { throw failedCommit }
            return nil
        default:
            let error = connection.pgError(result: result, connection: conn, sql: sql)
            _ = connection.forgetStaleStatement(after: result, statement: statement, sql: sql, on: conn)
            PostgresConnection.drainResults(on: conn)
            finish()
            throw error
        }
    }

    func close() {
        if finished { return }
        defer { _ = finish() }
        guard let conn = connection.handle else { return }
        // What already arrived is read without blocking (a bounded amount: a fast server
        // keeps rows coming); if the statement is still running after that, it is
        // cancelled (or, in a transaction, read to the end).
        var complete = false
        var budget = 1024
        if PQconsumeInput(conn) == 1 {
            while budget > 0, PQisBusy(conn) == 0 {
                guard let pending = PQgetResult(conn) else {
                    complete = true
                    break
                }
                PQclear(pending)
                budget -= 1
            }
        }
        if !complete {
            if cancelOnEarlyClose { connection.cancelHandle.cancelRunningStatement() }
            PostgresConnection.drainResults(on: conn)
        }
    }

    /// Marks the cursor finished and frees the connection; a transaction a pooled connection
    /// opened for it ends here (returns the error of its COMMIT, if that failed).
    @discardableResult
    private func finish() -> DatabaseError? {
        finished = true
        connection.cursorOpen = false
        return connection.endCursorTransaction()
    }
}

/// Why a pipelined statement failed, when the caller can do better than report it.
private enum PGPipelineFailure: Error {
    /// A prepared statement the pipeline used no longer exists on the server (26000).
    case staleStatements
}

// MARK: - Replication positions

extension PostgresConnection {
    /// What follows a COMMIT, in the same simple-protocol message, when the database has
    /// replicas: the primary's log position after the commit.
    static let commitPositionSuffix = "; SELECT pg_current_wal_lsn()::text"

    /// The position a standby has replayed, or a primary's own when the server is not in
    /// recovery (a promoted standby), as text.
    static let replicationPositionSQL =
        "SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text"

    /// Parses a log position's text form, `X/Y` (two hex numbers of 32 bits), into one
    /// comparable number; nil for anything else.
    static func parseLogPosition(_ text: String) -> UInt64? {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let high = UInt32(parts[0], radix: 16), let low = UInt32(parts[1], radix: 16) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    func commitReportingPosition(_ sql: String) throws -> UInt64? {
        let conn = try readyHandle()
        if pendingBegin != nil {
            // Nothing of the transaction reached the server: nothing to commit.
            pendingBegin = nil
            return nil
        }
        if PQpipelineStatus(conn) != PQ_PIPELINE_OFF {
            // Not expected (whatever was pipelined is read before a statement runs); if it
            // happens, two round trips rather than a simple query refused in pipeline mode.
            _ = try execute(sql, bindings: [], onRow: nil)
            return try replicationPosition()
        }
        // One message, one round trip: the COMMIT, then (only when it succeeded) the position.
        guard PQsendQuery(conn, sql + Self.commitPositionSuffix) == 1 else {
            throw pgError(result: nil, connection: conn, sql: sql)
        }
        var failure: DatabaseError?
        var position: UInt64?
        var results = 0
        while let result = PQgetResult(conn) {
            defer { PQclear(result) }
            results += 1
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK:
                continue
            case PGRES_TUPLES_OK:
                if PQntuples(result) == 1, PQgetisnull(result, 0, 0) == 0, let text = PQgetvalue(result, 0, 0) {
                    position = Self.parseLogPosition(String(cString: text))
                }
            default:
                if failure == nil { failure = pgError(result: result, connection: conn, sql: results == 1 ? sql : Self.commitPositionSuffix) }
            }
        }
        runningBegin = nil
        if let failure { throw failure }
        if PQstatus(conn) == CONNECTION_BAD || results == 0 { throw pgError(result: nil, connection: conn, sql: sql) }
        return position
    }

    func replicationPosition() throws -> UInt64? {
        var text: String?
        _ = try execute(Self.replicationPositionSQL, bindings: []) { row in
            if case .text(let value) = row[0] { text = value }
        }
        return text.flatMap(Self.parseLogPosition)
    }
}
