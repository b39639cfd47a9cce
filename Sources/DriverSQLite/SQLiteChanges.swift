import CSQLite
import Foundation
import Unity

/// Collects the tables one writer connection changes, per transaction, and reports them to a
/// ``DatabaseChangeSink`` when the transaction commits (a rollback drops them).
///
/// SQLite's update hook names the table of each changed row; the WAL hook (file databases)
/// or the commit hook (in-memory ones) runs once per commit. The WAL hook runs after the
/// commit is durable and visible to readers, so an observer's refetch sees it; setting it
/// replaces SQLite's automatic checkpoint, which ``walCommitted(_:database:frames:)`` does
/// instead, as SQLite's own hook does (a passive checkpoint past 1,000 frames).
final class SQLiteCommitReporter {
    let sink: DatabaseChangeSink
    /// Where a file database's writer records the change counters its commits moved (nil in
    /// memory, where no watcher runs).
    let ledger: SQLiteCounterLedger?
    /// Tables changed by the open transaction, lower-cased (SQLite's names are case-insensitive).
    private var pending: Set<String> = []
    /// The last table name the update hook saw, to skip hashing it again for each row.
    private var lastTable: [CChar] = []
    /// True when the open transaction wrote to the change counters (their triggers ran).
    private(set) var countersTouched = false
    /// The change counters as the open transaction found them when it began, holding the
    /// write lock (see ``SQLiteCounterLedger``); nil when they were not read.
    var countersAtBegin: [String: Int64]?

    /// SQLite's default automatic checkpoint threshold, in WAL frames.
    static let autoCheckpointFrames: Int32 = 1000

    init(sink: DatabaseChangeSink, recordsCounters: Bool) {
        self.sink = sink
        ledger = recordsCounters ? sink.driverState { SQLiteCounterLedger() } : nil
    }

    /// A row of `table` changed.
    func rowChanged(_ table: UnsafePointer<CChar>) {
        if !lastTable.isEmpty, strcmp(lastTable, table) == 0 { return }
        if strcmp(table, Self.counterTable) == 0 {
            countersTouched = true
            return
        }
        let name = String(cString: table)
        lastTable = Array(UnsafeBufferPointer(start: table, count: strlen(table) + 1))
        pending.insert(name.lowercased())
    }

    private static let counterTable: [CChar] = Array(Migration.changeCounterTable.utf8CString)

    /// The transaction committed: report what it changed.
    func committed() {
        endTransaction()
        guard !pending.isEmpty else { return }
        let tables = pending
        pending.removeAll(keepingCapacity: true)
        sink.tablesChanged(tables, local: true)
    }

    /// The transaction rolled back: forget what it changed.
    func rolledBack() {
        endTransaction()
        pending.removeAll(keepingCapacity: true)
    }

    private func endTransaction() {
        lastTable = []
        countersTouched = false
        countersAtBegin = nil
    }
}

/// The change-counter values that this database's own committed transactions moved from and to,
/// so that the `data_version` watcher can tell a commit the writer's hooks already reported
/// from another connection's, and not fetch again for it.
///
/// The writer reads the counters (`unity_change_counters`) when a transaction begins holding
/// the write lock (`BEGIN IMMEDIATE`) and again just before its `COMMIT`: no other connection
/// can commit in between. The pair is announced before the COMMIT runs and kept once it
/// succeeded; the watcher, having read the counters, waits (briefly) for the COMMITs announced
/// by then to end, so that a commit it sees has its pair. A counter only grows (its triggers
/// add 1 per row), so each value is passed once: when the watcher finds a counter moved from
/// the value it saw last to the value it sees now through kept pairs alone, every commit in
/// between was this database's own. Anything else — a gap in the pairs, a COMMIT still
/// running after the wait, a transaction that began without the write lock, a counter that
/// went down — counts as a change: a commit by another connection is never taken for one of
/// ours, and at worst a commit of ours is fetched twice.
final class SQLiteCounterLedger: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `condition`.
    private let condition = NSCondition()
    /// Per counter (table key): the value a commit of ours found → the value it left.
    private var links: [String: [Int64: Int64]] = [:]
    /// The pairs of the COMMITs running now, by ticket.
    private var running: [UInt64: (begin: [String: Int64], end: [String: Int64])] = [:]
    private var nextTicket: UInt64 = 0
    /// The most pairs kept per counter (the watcher forgets those it has passed).
    static let capacity = 4096
    /// The query that reads the counters.
    static let readSQL = "SELECT table_name, changes FROM \(Migration.changeCounterTable)"

    /// A transaction of this database that found the counters at `begin` and leaves them at
    /// `end` is about to COMMIT. Returns the ticket to pass to ``ended(_:committed:)``.
    func committing(begin: [String: Int64], end: [String: Int64]) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        nextTicket &+= 1
        running[nextTicket] = (begin, end)
        return nextTicket
    }

    /// The COMMIT of `ticket` ended: its pair is kept when it committed, dropped otherwise.
    func ended(_ ticket: UInt64, committed: Bool) {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        guard let pair = running.removeValue(forKey: ticket), committed else { return }
        for (key, to) in pair.end {
            guard let from = pair.begin[key], to > from else { continue }
            if links[key, default: [:]].count >= Self.capacity { links[key] = [:] }
            links[key, default: [:]][from] = to
        }
    }

    /// Waits, at most `timeout` seconds, for the COMMITs running now to end.
    func settle(timeout: TimeInterval) {
        condition.lock()
        defer { condition.unlock() }
        let waitingFor = Set(running.keys)
        guard !waitingFor.isEmpty else { return }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !waitingFor.isDisjoint(with: running.keys), condition.wait(until: deadline) {}
    }

    /// True when counter `key` went from `from` to `to` through this database's own commits
    /// alone.
    func explains(_ key: String, from: Int64, to: Int64) -> Bool {
        guard to > from else { return false }
        condition.lock()
        defer { condition.unlock() }
        guard let chain = links[key] else { return false }
        var value = from
        while value < to, let next = chain[value], next > value { value = next }
        return value == to
    }

    /// The watcher saw the counters at `current`: forgets the pairs that begin below them (a
    /// counter does not come back to a value it passed), and those of a counter that is gone.
    func passed(_ current: [String: Int64]?) {
        condition.lock()
        defer { condition.unlock() }
        guard let current else {
            links.removeAll()
            return
        }
        for (key, chain) in links {
            guard let now = current[key] else {
                links[key] = nil
                continue
            }
            let kept = chain.filter { $0.key >= now }
            links[key] = kept.isEmpty ? nil : kept
        }
    }
}

extension SQLiteConnection {
    /// Installs (or, with nil, removes) the hooks that report this connection's commits.
    ///
    /// While installed, an authorizer also turns off SQLite's truncate optimization
    /// (`DELETE FROM t` without WHERE emptying the table without visiting its rows), which the
    /// update hook would not see. Setting an authorizer makes SQLite prepare cached
    /// statements again, so a cached DELETE loses the optimization too.
    func installCommitHooks(_ reporter: SQLiteCommitReporter?, on db: OpaquePointer, walMode: Bool) {
        guard let reporter else {
            sqlite3_update_hook(db, nil, nil)
            sqlite3_rollback_hook(db, nil, nil)
            sqlite3_commit_hook(db, nil, nil)
            sqlite3_set_authorizer(db, nil, nil)
            if walMode { sqlite3_wal_autocheckpoint(db, SQLiteCommitReporter.autoCheckpointFrames) }
            return
        }
        let context = Unmanaged.passUnretained(reporter).toOpaque()
        sqlite3_update_hook(db, { context, _, _, table, _ in
            guard let context, let table else { return }
            Unmanaged<SQLiteCommitReporter>.fromOpaque(context).takeUnretainedValue().rowChanged(table)
        }, context)
        sqlite3_rollback_hook(db, { context in
            guard let context else { return }
            Unmanaged<SQLiteCommitReporter>.fromOpaque(context).takeUnretainedValue().rolledBack()
        }, context)
        if walMode {
            sqlite3_wal_hook(db, { context, db, schema, frames in
                if let context {
                    Unmanaged<SQLiteCommitReporter>.fromOpaque(context).takeUnretainedValue().committed()
                }
                if frames >= SQLiteCommitReporter.autoCheckpointFrames {
                    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
                return SQLITE_OK
            }, context)
        } else {
            // No WAL (an in-memory database, one connection): the commit hook runs just before
            // the commit, and no one can read before the writer is back in the pool.
            sqlite3_commit_hook(db, { context in
                if let context {
                    Unmanaged<SQLiteCommitReporter>.fromOpaque(context).takeUnretainedValue().committed()
                }
                return 0
            }, context)
        }
        sqlite3_set_authorizer(db, { _, action, table, _, _, _ in
            // IGNORE on a DELETE only turns off the truncate optimization; SQLite's own tables
            // (a DROP TABLE deletes from sqlite_schema) are left alone.
            if action == SQLITE_DELETE, let table, strncmp(table, "sqlite_", 7) != 0 { return SQLITE_IGNORE }
            return SQLITE_OK
        }, nil)
    }
}

/// Sees the commits of other processes (and of other `Database`s of this one) to a SQLite
/// file: `PRAGMA data_version` on a read-only connection of its own, checked every
/// ``interval`` while something is observed. When it changes, the per-table change counters of
/// ``Migration/observeChanges(of:name:)`` say which tables changed; an observed table without a
/// counter is taken as changed.
final class SQLiteChangeSource: DatabaseChangeSource, @unchecked Sendable {
    // @unchecked: `followed`, `stopping` and `thread` are guarded by `condition`; the
    // connection is used by the watcher thread only (and by `start()` before it runs).
    /// How often the watcher checks for other processes' commits.
    static let interval: TimeInterval = 0.01
    /// How long the watcher waits for this database's COMMITs running when it read the
    /// counters (see ``SQLiteCounterLedger``); past it, their commits count as another's.
    static let settleTimeout: TimeInterval = 0.1

    private let driver: SQLiteDriver
    private let sink: DatabaseChangeSink
    /// The counter values this database's own commits moved (shared with its writer).
    private let ledger: SQLiteCounterLedger
    private let condition = NSCondition()
    private var followed: Set<String> = []
    private var stopping = false
    private var running = false

    init(driver: SQLiteDriver, sink: DatabaseChangeSink) {
        self.driver = driver
        self.sink = sink
        ledger = sink.driverState { SQLiteCounterLedger() }
    }

    func keys(for tables: Set<String>, on connection: Connection) throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: tables.map { ($0, $0.lowercased()) })
    }

    func start() throws {
        // An in-memory database has no other connection to watch.
        guard !driver.isInMemory else { return }
        let connection = try driver.connect(role: .reader)
        let version: Int64
        let counters: [String: Int64]?
        do {
            version = try Self.dataVersion(connection)
            counters = try Self.counters(connection)
        } catch {
            connection.close()
            throw error
        }
        condition.lock()
        running = true
        condition.unlock()
        let handle = WatcherConnection(connection)
        let thread = Thread { [self] in watch(handle.connection, version: version, counters: counters) }
        thread.name = "unity.sqlite-observe"
        thread.start()
    }

    func follow(_ keys: Set<String>) {
        condition.lock()
        followed = keys
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        // Wait (briefly) for the watcher to close its connection, unless this is the watcher.
        let deadline = Date().addingTimeInterval(2)
        while running, Thread.current.name != "unity.sqlite-observe", condition.wait(until: deadline) {}
        condition.unlock()
    }

    private func watch(_ connection: any DriverConnection, version: Int64, counters: [String: Int64]?) {
        var version = version
        var counters = counters
        defer {
            connection.close()
            condition.lock()
            running = false
            condition.broadcast()
            condition.unlock()
        }
        while true {
            condition.lock()
            if !stopping { _ = condition.wait(until: Date().addingTimeInterval(Self.interval)) }
            let stop = stopping
            let followed = self.followed
            condition.unlock()
            if stop { return }
            guard let now = try? Self.dataVersion(connection) else {
                // The file cannot be read now (locked by a checkpoint, say): try again later,
                // and refetch everything, since a change may have gone by.
                sink.anythingMayHaveChanged()
                continue
            }
            guard now != version else { continue }
            version = now
            let current: [String: Int64]?
            do {
                current = try Self.counters(connection)
            } catch {
                sink.anythingMayHaveChanged()
                continue
            }
            // A commit of this database that the counters show may still be in its COMMIT:
            // wait for its pair.
            ledger.settle(timeout: Self.settleTimeout)
            if let current {
                var changed: Set<String> = []
                for key in followed {
                    guard let now = current[key], let then = counters?[key] else {
                        // No counter for the table: any commit may have changed it.
                        changed.insert(key)
                        continue
                    }
                    // A counter moved through this database's own commits alone: the writer's
                    // hooks reported them already.
                    if now != then && !ledger.explains(key, from: then, to: now) { changed.insert(key) }
                }
                counters = current
                ledger.passed(current)
                sink.tablesChanged(changed)
            } else {
                counters = nil
                ledger.passed(nil)
                sink.anythingMayHaveChanged()
            }
        }
    }

    private static func dataVersion(_ connection: any DriverConnection) throws -> Int64 {
        var version: Int64 = 0
        try connection.execute("PRAGMA data_version", bindings: [], onRow: { row in
            if case .integer(let v) = row[0] { version = v }
        })
        return version
    }

    /// Each table's change counter, or nil when the database has no counter table.
    private static func counters(_ connection: any DriverConnection) throws -> [String: Int64]? {
        var exists = false
        try connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                               bindings: [.text(Migration.changeCounterTable)], onRow: { _ in exists = true })
        guard exists else { return nil }
        var result: [String: Int64] = [:]
        try connection.execute("SELECT table_name, changes FROM \(Migration.changeCounterTable)", bindings: [], onRow: { row in
            if case .text(let name) = row[0], case .integer(let count) = row[1] { result[name] = count }
        })
        return result
    }
}

/// Hands the watcher's connection to its thread, which alone uses it then.
private final class WatcherConnection: @unchecked Sendable {
    let connection: any DriverConnection
    init(_ connection: any DriverConnection) { self.connection = connection }
}
