import DriverPostgres
import Foundation
import Testing
import Unity

/// PostgreSQL-only: a server can drop a connection; SQLite has no server to do so.
@Suite("PostgreSQL: broken connections are replaced")
struct PostgresPoolRecoveryTests {
    @Test func aTerminatedConnectionIsReplacedByThePool() throws {
        // Every checkout checks (no idle threshold), so no call meets the dead connection.
        try withTestDatabase(.postgres, connections: 1, configuration: DatabaseConfiguration(livenessCheckAfterIdle: 0)) { (db: Database) throws in
            let pid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            // Kill the pool's only connection from outside.
            try terminateBackend(pid)
            // The pool notices at checkout (the socket has reached its end, no round trip)
            // and replaces it: the next use works on a new backend, no call fails.
            let newPid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            #expect(newPid != pid)
            #expect(db.openConnectionCount == 1)
        }
    }

    /// A connection back in the pool for less than ``DatabaseConfiguration/livenessCheckAfterIdle``
    /// is lent without the check (a server's lookups pay no system call for it): if the server
    /// dropped it meanwhile, the one call that meets it fails and the next gets a new backend.
    @Test func aConnectionUsedAMomentAgoIsLentUnchecked() throws {
        let configuration = DatabaseConfiguration(livenessCheckAfterIdle: 3600)
        try withTestDatabase(.postgres, connections: 1, configuration: configuration) { (db: Database) throws in
            let pid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            try terminateBackend(pid)
            do {
                _ = try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") }
                Issue.record("the terminated backend answered: the connection was checked after all")
            } catch DatabaseError.connectionLost {
            }
            let newPid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            #expect(newPid != pid)
            #expect(db.openConnectionCount == 1)
        }
    }

    /// The pool's default liveness window: a connection idle longer than the default
    /// ``DatabaseConfiguration/livenessCheckAfterIdle`` (half a second) is checked before it
    /// is lent, so after a server dropped it no call fails.
    @Test func theDefaultLivenessWindowChecksAConnectionIdleLongerThanIt() throws {
        #expect(DatabaseConfiguration().livenessCheckAfterIdle == 0.5)
        try withTestDatabase(.postgres, connections: 1) { (db: Database) throws in
            let pid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            try terminateBackend(pid)
            Thread.sleep(forTimeInterval: 0.8)
            let newPid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            #expect(newPid != pid)
        }
    }

    /// A transaction whose connection died says so: after the closure caught the first error,
    /// the next statement, and the `write` itself, throw `connectionLost` (the error a caller
    /// retries on), naming the statement that met the loss; nothing was committed.
    @Test func aLostConnectionInsideAWriteIsReportedAsLostAfterACaughtError() throws {
        try withTestDatabase(.postgres, connections: 1) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)") }
            var firstError: Error?
            var secondError: Error?
            do {
                try db.write { conn in
                    try conn.execute(sql: "INSERT INTO t (id) VALUES (1)")
                    let pid = try #require(try conn.fetchValue(Int.self, sql: "SELECT pg_backend_pid()"))
                    try terminateBackend(pid)
                    do {
                        try conn.execute(sql: "INSERT INTO t (id) VALUES (2)")
                    } catch {
                        firstError = error
                    }
                    do {
                        try conn.execute(sql: "INSERT INTO t (id) VALUES (3)")
                    } catch {
                        secondError = error
                        throw error
                    }
                }
                Issue.record("a write on a dead connection reported a commit")
            } catch let error as DatabaseError {
                guard case .connectionLost(let context) = error else {
                    Issue.record("the write threw \(error), not connectionLost")
                    return
                }
                #expect(context.message.contains("INSERT INTO t (id) VALUES (2)"))
            }
            guard case .connectionLost? = firstError as? DatabaseError else {
                Issue.record("the first statement threw \(String(describing: firstError))")
                return
            }
            guard case .connectionLost(let context)? = secondError as? DatabaseError else {
                Issue.record("the statement after the caught error threw \(String(describing: secondError)), not connectionLost")
                return
            }
            #expect(context.sql == "INSERT INTO t (id) VALUES (3)")
            // The pool replaced the connection; nothing of the write was kept.
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM t") } == 0)
        }
    }

    /// The same inside nested transactions: a savepoint that met the loss and was caught,
    /// then a following nested `transaction { }` and the `write`, all report `connectionLost`.
    @Test func aLostConnectionInsideANestedTransactionIsReportedAsLost() throws {
        try withTestDatabase(.postgres, connections: 1) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)") }
            var nestedError: Error?
            do {
                try db.write { conn in
                    try conn.execute(sql: "INSERT INTO t (id) VALUES (1)")
                    do {
                        try conn.transaction { inner in
                            let pid = try #require(try inner.fetchValue(Int.self, sql: "SELECT pg_backend_pid()"))
                            try terminateBackend(pid)
                            try inner.execute(sql: "INSERT INTO t (id) VALUES (2)")
                        }
                    } catch {}
                    do {
                        try conn.transaction { inner in try inner.execute(sql: "INSERT INTO t (id) VALUES (3)") }
                    } catch {
                        nestedError = error
                    }
                }
                Issue.record("a write on a dead connection reported a commit")
            } catch let error as DatabaseError {
                guard case .connectionLost = error else {
                    Issue.record("the write threw \(error), not connectionLost")
                    return
                }
            }
            guard case .connectionLost? = nestedError as? DatabaseError else {
                Issue.record("the nested transaction after the loss threw \(String(describing: nestedError)), not connectionLost")
                return
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM t") } == 0)
        }
    }

    /// Ends backend `pid` from another connection, as an administrator or a server restart
    /// would. With a timeout, pg_terminate_backend waits until the backend has exited, so a
    /// test does not depend on how fast a loaded machine gets there.
    private func terminateBackend(_ pid: Int) throws {
        let url = try #require(postgresURL)
        let killer = try Database(driver: PostgresDriver(url, connections: 1))
        defer { killer.close() }
        let terminated = try killer.withConnection {
            try $0.fetchValue(Bool.self, sql: "SELECT pg_terminate_backend(CAST(? AS INTEGER), 30000)", [.integer(Int64(pid))])
        }
        #expect(terminated == true)
    }

    @Test func aBadURLFailsWithConnectionFailed() {
        do {
            _ = try Database(driver: PostgresDriver("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2", connections: 1))
            Issue.record("connected to nothing")
        } catch let error as DatabaseError {
            guard case .connectionFailed = error else {
                Issue.record("expected .connectionFailed, got \(error)")
                return
            }
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
