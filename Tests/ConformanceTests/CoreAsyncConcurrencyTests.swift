import DriverPostgres
import Foundation
import Testing
import Unity

/// Many tasks doing lookups through a small pool (a server's load): every answer is the right
/// one, whatever form the call takes, and a read's COMMIT that waited for a queued call never
/// leaves a connection idling inside a transaction.
@Suite("Core: async lookups under load")
struct CoreAsyncConcurrencyTests {
    static let names = (1...40).map { "name-\($0)-ü" }

    static func seed(_ db: Database) async throws {
        try await db.execute(.createTable(SQLCreateTable("person", columns: [
            SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("name", .text),
        ])))
        try await db.write { conn in
            for (index, name) in names.enumerated() {
                try conn.execute(.insert(SQLInsert(into: "person", values: ["id": .integer(Int64(index + 1)), "name": .text(name)])))
            }
        }
    }

    static func lookup(_ id: Int64) -> SQLStatement {
        .select(SQLSelect(from: "person").columns(.column("name")).where(SQLExpression.column("id").equals(id)))
    }

    @Test(arguments: Backend.allCases)
    func sixtyFourTasksThroughTwoConnectionsGetTheirOwnRows(_ backend: Backend) async throws {
        try await withTestDatabase(backend, readers: 2, connections: 2) { (db: Database) async throws in
            try await Self.seed(db)
            let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<64 {
                    group.addTask {
                        var mismatches = 0
                        for round in 0..<10 {
                            let id = Int64((task * 7 + round) % Self.names.count + 1)
                            let expected = Self.names[Int(id) - 1]
                            // The README's form, the single-statement form, and a read of two statements.
                            let viaRead = try await db.read { conn in try conn.fetchOne(Self.lookup(id))?.decode(String.self, at: 0) }
                            let viaStatement = try await db.fetchOne(Self.lookup(id))?.decode(String.self, at: 0)
                            let pair = try await db.read { conn in
                                (try conn.fetchOne(Self.lookup(id))?.decode(String.self, at: 0),
                                 try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM person"))
                            }
                            if viaRead != expected || viaStatement != expected || pair.0 != expected || pair.1 != 40 {
                                mismatches += 1
                            }
                        }
                        return mismatches
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(mismatches == 0)
            // Every connection goes back to the pool. A task gets its answer before the Unity
            // thread that ran it has checked the connection in, so wait for that (5 s at most).
            let deadline = Date().addingTimeInterval(5)
            while db.openConnectionCount != db.idleConnectionCount && Date() < deadline {
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            #expect(db.openConnectionCount == db.idleConnectionCount)
            #expect(db.openConnectionCount <= 2 + 1)  // a pool of 2 (SQLite: 2 readers and the writer)
        }
    }

    /// Under load a read's COMMIT is held for the async call queued next; once the calls stop,
    /// the Unity thread that finds no more work sends it, so every backend ends up `idle`.
    @Test func postgresBackendsIdleOutsideATransactionAfterConcurrentReads() async throws {
        try await withTestDatabase(.postgres, connections: 2) { (db: Database) async throws in
            try await Self.seed(db)
            let pids = try await withThrowingTaskGroup(of: Int?.self) { group in
                for task in 0..<32 {
                    group.addTask {
                        var pid: Int?
                        for round in 0..<5 {
                            let id = Int64((task + round) % Self.names.count + 1)
                            pid = try await db.read { conn in
                                _ = try conn.fetchOne(Self.lookup(id))
                                return try conn.fetchValue(Int.self, sql: "SELECT pg_backend_pid()")
                            }
                        }
                        return pid
                    }
                }
                var pids = Set<Int>()
                for try await pid in group { if let pid { pids.insert(pid) } }
                return pids
            }
            #expect(!pids.isEmpty && pids.count <= 2)
            let url = try #require(postgresURL)
            let observer = try Database(driver: PostgresDriver(url, connections: 1))
            defer { observer.close() }
            var states: [String] = []
            let deadline = Date(timeIntervalSinceNow: 10)
            repeat {
                states = try pids.map { pid in
                    try observer.withConnection {
                        try $0.fetchValue(String.self, sql: "SELECT state FROM pg_stat_activity WHERE pid = CAST(? AS INTEGER)",
                                          [.integer(Int64(pid))]) ?? "gone"
                    }
                }
                if states.allSatisfy({ $0 == "idle" }) { break }
                try await Task.sleep(nanoseconds: 50_000_000)
            } while Date() < deadline
            #expect(states.allSatisfy { $0 == "idle" }, "backend states: \(states)")
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }
}
