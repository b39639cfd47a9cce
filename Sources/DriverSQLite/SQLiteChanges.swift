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
    /// Tables changed by the open transaction, lower-cased (SQLite's names are case-insensitive).
    private var pending: Set<String> = []
    /// The last table name the update hook saw, to skip hashing it again for each row.
    private var lastTable: [CChar] = []

    /// SQLite's default automatic checkpoint threshold, in WAL frames.
    static let autoCheckpointFrames: Int32 = 1000

    init(sink: DatabaseChangeSink) {
        self.sink = sink
    }

    /// A row of `table` changed.
    func rowChanged(_ table: UnsafePointer<CChar>) {
        if !lastTable.isEmpty, strcmp(lastTable, table) == 0 { return }
        let name = String(cString: table)
        if name == Migration.changeCounterTable { return }
        lastTable = Array(UnsafeBufferPointer(start: table, count: strlen(table) + 1))
        pending.insert(name.lowercased())
    }

    /// The transaction committed: report what it changed.
    func committed() {
        lastTable = []
        guard !pending.isEmpty else { return }
        let tables = pending
        pending.removeAll(keepingCapacity: true)
        sink.tablesChanged(tables, local: true)
    }

    /// The transaction rolled back: forget what it changed.
    func rolledBack() {
        lastTable = []
        pending.removeAll(keepingCapacity: true)
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

    private let driver: SQLiteDriver
    private let sink: DatabaseChangeSink
    private let condition = NSCondition()
    private var followed: Set<String> = []
    private var stopping = false
    private var running = false

    init(driver: SQLiteDriver, sink: DatabaseChangeSink) {
        self.driver = driver
        self.sink = sink
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
            if let current {
                var changed: Set<String> = []
                for key in followed where current[key] == nil || current[key] != counters?[key] {
                    changed.insert(key)
                }
                counters = current
                sink.tablesChanged(changed)
            } else {
                counters = nil
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
