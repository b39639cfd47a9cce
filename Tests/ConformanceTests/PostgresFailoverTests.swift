import DriverPostgres
import Foundation
import Testing
import Unity

/// A failover on a real pair (the failover pair scripts/with-postgres starts with
/// UNITY_PG_CLUSTERS=1, reached through one multi-host URL with
/// `target_session_attrs=read-write`), and what a lost connection says about its commit.
/// Serialized: the failover stops one server and promotes the other, once per run.
@Suite("PostgreSQL failover", .serialized)
struct PostgresFailoverTests {
    /// What the writers saw.
    struct WriteLog {
        var acknowledged: [Int64] = []
        var notCommitted: [Int64] = []
        var unknown: [Int64] = []
        /// Lost connections without a commit state (none may be).
        var untypedLosses: [String] = []
        /// No primary to connect to (between the stop and the promotion).
        var connectFailures = 0
        var otherErrors: [String] = []
    }

    /// Writes go on while the primary stops and the standby is promoted: they succeed again
    /// through the same URL and pool, only the calls that met the loss fail with
    /// `connectionLost` (each with its commit state), and every acknowledged write is on the
    /// new primary (the pair replicates synchronously: with asynchronous replication a
    /// failover loses the last commits the standby had not received, whatever the client).
    @Test(.enabled(if: PostgresClusters.failoverSuiteEnabled, PostgresClusters.missingMessage))
    func writesResumeAfterAPromotionAndNothingAcknowledgedIsLost() throws {
        let url = try PostgresClusters.require(PostgresClusters.failoverURL, "UNITY_PG_FAILOVER_URL")
        let primaryData = try PostgresClusters.require(PostgresClusters.failoverPrimaryData, "UNITY_PG_FAILOVER_PRIMARY_DATA")
        let standbyData = try PostgresClusters.require(PostgresClusters.failoverStandbyData, "UNITY_PG_FAILOVER_STANDBY_DATA")
        let db = try Database(driver: PostgresDriver(url, connections: 4),
                              configuration: DatabaseConfiguration(checkoutTimeout: 30, livenessCheckAfterIdle: 0))
        defer { db.close() }
        try db.write { conn in
            try conn.execute(sql: "DROP TABLE IF EXISTS failover_acks")
            try conn.execute(sql: "CREATE TABLE failover_acks (id BIGINT PRIMARY KEY, writer INT NOT NULL)")
        }
        #expect(try db.fetchOne(sql: "SELECT pg_is_in_recovery()")?[0] == .bool(false))
        let initialPort = try db.write { try $0.fetchValue(Int.self, sql: "SELECT inet_server_port()") }

        let stop = Locked(false)
        let log = Locked(WriteLog())
        let writerCount = 3
        let done = DispatchGroup()
        for writer in 0..<writerCount {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                var next = Int64(writer) * 1_000_000
                while !stop.current {
                    next += 1
                    let id = next
                    do {
                        try db.write { conn in
                            try conn.execute(sql: "INSERT INTO failover_acks (id, writer) VALUES (?, ?)", [.integer(id), .integer(Int64(writer))])
                        }
                        log.withLock { $0.acknowledged.append(id) }
                    } catch DatabaseError.connectionLost(let context) {
                        log.withLock {
                            switch context.commitState {
                            case .notCommitted?: $0.notCommitted.append(id)
                            case .unknown?: $0.unknown.append(id)
                            case nil: $0.untypedLosses.append(context.message)
                            }
                        }
                    } catch DatabaseError.connectionFailed {
                        log.withLock { $0.connectFailures += 1 }
                        usleep(20_000)
                    } catch {
                        log.withLock { $0.otherErrors.append("\(error)") }
                        usleep(20_000)
                    }
                }
            }
        }
        defer {
            stop.withLock { $0 = true }
            _ = done.wait(timeout: .now() + 60)
        }
        #expect(PostgresClusters.waitUntil(timeout: 20) { log.current.acknowledged.count >= 100 })
        try PostgresClusters.runHelper("stop", primaryData)
        let acknowledgedAtStop = log.current.acknowledged.count
        // Let the writers meet the loss, then promote.
        _ = PostgresClusters.waitUntil(timeout: 2) { log.current.connectFailures > 0 }
        try PostgresClusters.runHelper("promote", standbyData)
        let resumed = PostgresClusters.waitUntil(timeout: 60) { log.current.acknowledged.count >= acknowledgedAtStop + 100 }
        #expect(resumed, "writes did not resume after the promotion")
        stop.withLock { $0 = true }
        #expect(done.wait(timeout: .now() + 60) == .success)

        let result = log.current
        print("failover: \(result.acknowledged.count) writes acknowledged (\(acknowledgedAtStop) before the stop), "
            + "\(result.notCommitted.count) lost not committed, \(result.unknown.count) lost during COMMIT, "
            + "\(result.connectFailures) refused while no primary was up")
        // At most the call each writer had in flight met the loss (the pool drops the other
        // connections at the first loss).
        #expect(result.notCommitted.count + result.unknown.count <= writerCount)
        #expect(result.untypedLosses.isEmpty, "lost connections without a commit state: \(result.untypedLosses)")
        #expect(result.otherErrors.isEmpty, "other errors: \(result.otherErrors.prefix(5))")
        // The writes now reach the promoted standby, through the same URL.
        let port = try db.write { try $0.fetchValue(Int.self, sql: "SELECT inet_server_port()") }
        #expect(port != nil && port != initialPort)
        #expect(try db.fetchOne(sql: "SELECT pg_is_in_recovery()")?[0] == .bool(false))
        // Nothing acknowledged is lost; nothing reported as not committed is there.
        let stored = Set(try db.read(.primary) { try $0.fetchAll(sql: "SELECT id FROM failover_acks") }.compactMap { row -> Int64? in
            if case .integer(let id) = row[0] { return id } else { return nil }
        })
        let missing = result.acknowledged.filter { !stored.contains($0) }
        #expect(missing.isEmpty, "acknowledged writes lost: \(missing.prefix(10))")
        #expect(result.notCommitted.allSatisfy { !stored.contains($0) }, "a write reported as not committed is there")
        #expect(stored.count >= result.acknowledged.count)
    }

    /// A server connection lost in the middle of a transaction: the `write` throws
    /// `connectionLost` with `.notCommitted` (retryable), and nothing of it is there.
    @Test func aLossBeforeTheCommitIsNotCommitted() throws {
        let test = try TestDatabase(.postgres)
        defer { test.tearDown() }
        let db = test.database
        try db.write { try $0.execute(sql: "CREATE TABLE t (id BIGINT PRIMARY KEY)") }
        let killer = try test.openAgain()
        defer { killer.close() }
        var thrown: Error?
        do {
            try db.write { conn in
                try conn.execute(sql: "INSERT INTO t (id) VALUES (1)")
                let pid = try #require(try conn.fetchValue(Int.self, sql: "SELECT pg_backend_pid()"))
                _ = try killer.withConnection { try $0.fetchOne(sql: "SELECT pg_terminate_backend(CAST(? AS integer))", [.integer(Int64(pid))]) }
                _ = PostgresClusters.waitUntil(timeout: 5) {
                    (try? killer.withConnection { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM pg_stat_activity WHERE pid = CAST(? AS integer)",
                                                                    [.integer(Int64(pid))]) }) == 0
                }
                try conn.execute(sql: "INSERT INTO t (id) VALUES (2)")
            }
        } catch {
            thrown = error
        }
        guard case .connectionLost(let context)? = thrown as? DatabaseError else {
            Issue.record("expected connectionLost, got \(String(describing: thrown))")
            return
        }
        #expect(context.commitState == .notCommitted)
        #expect((thrown as? DatabaseError)?.isRetryable == true)
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM t") } == 0)
        // The pool replaced the connection: the retry succeeds.
        try db.write { try $0.execute(sql: "INSERT INTO t (id) VALUES (1)") }
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM t") } == 1)
    }

    /// A server connection lost while the COMMIT runs (a deferred trigger makes the COMMIT
    /// wait for an advisory lock another connection holds; the backend is terminated then):
    /// the `write` throws `connectionLost` with `.unknown`, which is not retryable.
    @Test func aLossDuringTheCommitIsUnknown() throws {
        let test = try TestDatabase(.postgres)
        defer { test.tearDown() }
        let db = test.database
        let key = Int64.random(in: 1_000_000...9_000_000_000)
        try db.write { conn in
            try conn.execute(sql: "CREATE TABLE t (id BIGINT PRIMARY KEY)")
            try conn.execute(sql: """
                CREATE FUNCTION wait_for_lock() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_advisory_xact_lock(\(key)); RETURN NULL; END $$
                """)
            try conn.execute(sql: """
                CREATE CONSTRAINT TRIGGER t_wait AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION wait_for_lock()
                """)
        }
        let holder = try test.openAgain()
        defer { holder.close() }
        // A session lock, kept by the idle connection in the holder's pool.
        _ = try holder.withConnection { try $0.fetchOne(sql: "SELECT pg_advisory_lock(?)", [.integer(key)]) }

        let outcome = Locked<Result<Void, Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result = Result<Void, Error> { _ = try db.write { conn in try conn.execute(sql: "INSERT INTO t (id) VALUES (1)") } }
            outcome.withLock { $0 = result }
            finished.signal()
        }
        // The COMMIT waits for the lock: terminate its backend then.
        var waitingPid: Int?
        let found = try PostgresClusters.waitUntil(timeout: 20) {
            waitingPid = try holder.withConnection {
                try $0.fetchValue(Int.self, sql: """
                    SELECT pid FROM pg_stat_activity
                    WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND datname = current_database()
                      AND pid <> pg_backend_pid() AND query ILIKE 'COMMIT%'
                    """)
            }
            return waitingPid != nil
        }
        #expect(found, "the COMMIT never waited for the lock")
        if let waitingPid {
            _ = try holder.withConnection { try $0.fetchOne(sql: "SELECT pg_terminate_backend(CAST(? AS integer))", [.integer(Int64(waitingPid))]) }
        }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        _ = try holder.withConnection { try $0.fetchOne(sql: "SELECT pg_advisory_unlock_all()") }
        guard case .failure(let error)? = outcome.current, case .connectionLost(let context)? = error as? DatabaseError else {
            Issue.record("expected connectionLost from the write, got \(String(describing: outcome.current))")
            return
        }
        #expect(context.commitState == .unknown)
        #expect((error as? DatabaseError)?.isRetryable == false)
        #expect("\(error)".contains("unknown"))
    }
}
