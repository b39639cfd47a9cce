import CLibPQ
import Foundation
import Unity

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sees the commits of every client of a PostgreSQL database through `LISTEN`/`NOTIFY`: one
/// listening connection of its own (to ``DatabaseConfiguration/notificationURL`` when set),
/// on a thread that waits on its socket. The triggers of ``Migration/observeChanges(of:name:)``
/// send `schema.table` on ``Migration/changeNotificationChannel`` when a transaction that
/// changed the table commits (NOTIFY is transactional: a rollback sends nothing).
///
/// A lost connection is opened again (every 50 ms at first, then up to every second) and,
/// once listening again, every observer refetches: a notification sent while it was gone is
/// lost.
final class PostgresChangeSource: DatabaseChangeSource, @unchecked Sendable {
    // @unchecked: `stopping`, `running` and `wakeWrite` are guarded by `condition`; the libpq
    // connection belongs to the listener thread.
    private let connectionString: String
    private let sink: DatabaseChangeSink
    private let condition = NSCondition()
    private var stopping = false
    private var running = false
    /// A pipe whose write end wakes the listener from `poll` when it must stop.
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1

    /// How long the listener waits in `poll` before it looks at `stopping` again (the pipe
    /// wakes it sooner).
    static let pollTimeoutMillis: Int32 = 250
    static let threadName = "unity.pg-listen"

    init(connectionString: String, sink: DatabaseChangeSink) {
        self.connectionString = connectionString
        self.sink = sink
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// `schema.table` of each table, after checking it has the change trigger.
    func keys(for tables: Set<String>, on connection: Connection) throws -> [String: String] {
        var keys: [String: String] = [:]
        for table in tables.sorted() {
            let row = try connection.fetchOne(sql: """
                SELECT n.nspname::text, c.relname::text, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = ?)
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE c.oid = to_regclass(quote_ident(?))
                """, [.text(Migration.changeTriggerName), .text(table)])
            guard let row, case .text(let schema) = row[0], case .text(let name) = row[1] else {
                throw ObservationError.unknownTable(table)
            }
            guard case .bool(true) = row[2] else { throw ObservationError.missingChangeTrigger(table: table) }
            keys[table] = schema + "." + name
        }
        return keys
    }

    func start() throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw DatabaseError.connectionFailed(DatabaseErrorContext(message: "could not create the listener's wake-up pipe"))
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        // The first connection is made here, so that a bad URL fails the observation and the
        // first commit after `start()` returns is already heard.
        let conn = try Self.connectAndListen(connectionString)
        condition.lock()
        running = true
        condition.unlock()
        let handle = ListenerHandle(conn)
        let thread = Thread { [self] in listen(handle.conn) }
        thread.name = Self.threadName
        thread.start()
    }

    func follow(_ keys: Set<String>) {
        // One channel carries every table; the sink picks the observers of each.
    }

    func stop() {
        condition.lock()
        stopping = true
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        let deadline = Date().addingTimeInterval(2)
        while running, Thread.current.name != Self.threadName, condition.wait(until: deadline) {}
        condition.unlock()
    }

    private var isStopping: Bool {
        condition.lock()
        defer { condition.unlock() }
        return stopping
    }

    /// The listener thread: reads notifications until stopped, reconnecting when the
    /// connection is lost.
    private func listen(_ first: OpaquePointer) {
        var conn: OpaquePointer? = first
        defer {
            if let conn { PQfinish(conn) }
            condition.lock()
            running = false
            condition.broadcast()
            condition.unlock()
        }
        var retryDelay = 0.05
        while !isStopping {
            guard let current = conn else {
                // Disconnected: try again, then refetch everything (a notification may have
                // been lost meanwhile).
                if let again = try? Self.connectAndListen(connectionString) {
                    conn = again
                    retryDelay = 0.05
                    sink.anythingMayHaveChanged()
                } else {
                    condition.lock()
                    if !stopping { _ = condition.wait(until: Date().addingTimeInterval(retryDelay)) }
                    condition.unlock()
                    retryDelay = min(1, retryDelay * 2)
                }
                continue
            }
            var fds = [pollfd(fd: PQsocket(current), events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, Self.pollTimeoutMillis)
            if ready < 0 && errno == EINTR { continue }
            if fds[1].revents != 0 { break }
            if ready == 0 { continue }
            guard PQconsumeInput(current) == 1, PQstatus(current) == CONNECTION_OK else {
                PQfinish(current)
                conn = nil
                continue
            }
            var tables: Set<String> = []
            while let notification = PQnotifies(current) {
                if let extra = notification.pointee.extra {
                    tables.insert(String(cString: extra))
                }
                PQfreemem(notification)
            }
            sink.tablesChanged(tables)
        }
    }

    /// Connects and listens on the channel; throws ``DatabaseError/connectionFailed(_:)``.
    private static func connectAndListen(_ connectionString: String) throws -> OpaquePointer {
        let keywords = ["dbname", "client_encoding", "fallback_application_name"]
        let values = [connectionString, "UTF8", "unity-listen"]
        let conn = PostgresConnection.withCStringArray(keywords) { kw in
            PostgresConnection.withCStringArray(values) { vals in PQconnectdbParams(kw, vals, 1) }
        }
        guard let conn else {
            throw DatabaseError.connectionFailed(DatabaseErrorContext(message: "libpq could not allocate a connection"))
        }
        guard PQstatus(conn) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(conn)
            throw DatabaseError.connectionFailed(DatabaseErrorContext(
                message: "observation's listening connection failed: " + (message.isEmpty ? "could not connect to PostgreSQL" : message)))
        }
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        let sql = "LISTEN " + PostgresConnection.quoteIdentifier(Migration.changeNotificationChannel)
        let result = PQexec(conn, sql)
        defer { PQclear(result) }
        guard result.map({ PQresultStatus($0) }) == PGRES_COMMAND_OK else {
            let message = String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQfinish(conn)
            throw DatabaseError.connectionFailed(DatabaseErrorContext(message: "LISTEN failed: \(message)", sql: sql))
        }
        return conn
    }
}

/// Hands the first listening connection to the listener thread, which alone uses it then.
private final class ListenerHandle: @unchecked Sendable {
    let conn: OpaquePointer
    init(_ conn: OpaquePointer) { self.conn = conn }
}
