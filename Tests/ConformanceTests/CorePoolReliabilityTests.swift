import DriverPostgres
import Foundation
import Testing
import Unity

/// PostgreSQL only (SQLite has no server to drop a connection): after the server drops every
/// idle connection, at most the call that met the loss fails.
@Suite("Core: pool after the server drops connections")
struct CorePoolReliabilityTests {
    /// Makes the pool open `count` connections at once (each caller holds its connection
    /// until all have one) and returns their backend pids.
    func openConnections(_ db: Database, count: Int) throws -> [Int] {
        let state = OpenState()
        for _ in 0..<count {
            Thread.detachNewThread {
                do {
                    try db.withConnection { conn in
                        let pid = try conn.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") ?? -1
                        state.condition.lock()
                        state.pids.append(pid)
                        state.condition.broadcast()
                        let deadline = Date(timeIntervalSinceNow: 20)
                        while state.pids.count < count && state.condition.wait(until: deadline) {}
                        state.condition.unlock()
                    }
                } catch {
                    state.condition.lock()
                    state.errors.append("\(error)")
                    state.condition.unlock()
                }
                state.condition.lock()
                state.finished += 1
                state.condition.broadcast()
                state.condition.unlock()
            }
        }
        state.condition.lock()
        let deadline = Date(timeIntervalSinceNow: 30)
        while state.finished < count && state.condition.wait(until: deadline) {}
        let result = (state.pids, state.errors, state.finished)
        state.condition.unlock()
        #expect(result.1.isEmpty, "\(result.1)")
        #expect(result.2 == count, "the threads did not finish in time")
        return result.0
    }

    final class OpenState: @unchecked Sendable {
        // @unchecked: every field is guarded by `condition`.
        let condition = NSCondition()
        var pids: [Int] = []
        var errors: [String] = []
        var finished = 0
    }

    /// Terminates the given backends from a connection of another pool and waits until they
    /// have exited.
    func terminate(_ pids: [Int]) throws {
        let url = try #require(postgresURL)
        let killer = try Database(driver: PostgresDriver(url, connections: 1))
        defer { killer.close() }
        for pid in pids {
            let done = try killer.withConnection {
                try $0.fetchValue(Bool.self, sql: "SELECT pg_terminate_backend(CAST(? AS INTEGER), 30000)", [.integer(Int64(pid))])
            }
            #expect(done == true)
        }
    }

    @Test func afterEveryIdleConnectionIsTerminatedAtMostOneCallFails() throws {
        try withTestDatabase(.postgres, connections: 3) { (db: Database) throws in
            let pids = try openConnections(db, count: 3)
            #expect(Set(pids).count == 3)
            #expect(db.idleConnectionCount == 3)
            try terminate(pids)
            var failures = 0
            var answered: [Int] = []
            for _ in 0..<6 {
                do {
                    let pid = try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") }
                    answered.append(pid ?? -1)
                } catch DatabaseError.connectionLost {
                    failures += 1
                }
            }
            #expect(failures <= 1, "\(failures) calls failed after the server dropped the idle connections")
            #expect(answered.count >= 5)
            #expect(Set(answered).isDisjoint(with: pids), "a call was answered by a terminated backend")
            #expect(db.openConnectionCount <= 3)
        }
    }

    @Test func afterEveryIdleConnectionIsTerminatedAsyncCallsGoOn() async throws {
        try await withTestDatabase(.postgres, connections: 3) { (db: Database) async throws in
            let pids = try openConnections(db, count: 3)
            try terminate(pids)
            var failures = 0
            for _ in 0..<6 {
                do {
                    _ = try await db.read { try $0.fetchValue(Int.self, sql: "SELECT 1") }
                } catch DatabaseError.connectionLost {
                    failures += 1
                }
            }
            #expect(failures <= 1)
        }
    }

    @Test func aLostConnectionMakesThePoolDropItsIdleConnections() throws {
        try withTestDatabase(.postgres, connections: 3) { (db: Database) throws in
            let pids = try openConnections(db, count: 3)
            #expect(db.idleConnectionCount == 3)
            // The connection in use is terminated under its caller: that call fails ...
            do {
                try db.withConnection { conn in
                    let pid = try conn.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") ?? -1
                    #expect(pids.contains(pid))
                    try terminate([pid])
                    _ = try conn.fetchValue(Int.self, sql: "SELECT 1")
                }
                Issue.record("a terminated connection answered")
            } catch DatabaseError.connectionLost {
            }
            // ... and the pool has dropped the idle ones opened before the loss, which a
            // failover or a network cut may have killed without a word.
            #expect(db.idleConnectionCount == 0)
            #expect(db.openConnectionCount == 0)
            #expect(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT 1") } == 1)
        }
    }

    @Test func aHealthyIdleConnectionIsLentAgainWithoutAReconnect() throws {
        try withTestDatabase(.postgres, connections: 2) { (db: Database) throws in
            let first = try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") }
            for _ in 0..<20 {
                let pid = try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") }
                #expect(pid == first)
            }
        }
    }
}
