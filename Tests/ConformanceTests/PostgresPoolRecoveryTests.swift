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
