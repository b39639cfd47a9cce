import Foundation
import Logging
import Testing
import Unity

/// The pool under concurrency: bounded, no leaked connections, a clear timeout.
@Suite("Core: connection pool")
struct CorePoolTests {
    func makeCounter(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("counter", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("n", .int64, notNull: true),
            ])))
            try conn.execute(.insert(SQLInsert(into: "counter", values: ["id": 1, "n": 0])))
            try conn.execute(.createTable(SQLCreateTable("log", columns: [SQLColumnDefinition("who", .int64)])))
        }
    }

    func increment(_ conn: Connection, _ who: Int) throws {
        try conn.execute(.update(SQLUpdate("counter", set: [SQLAssignment("n", .binary(.column("n"), .add, .value(1)))],
                                           where: SQLExpression.column("id").equals(1))))
        try conn.execute(.insert(SQLInsert(into: "log", values: ["who": .integer(Int64(who))])))
    }

    @Test(arguments: Backend.allCases)
    func sixteenThreads(_ backend: Backend) throws {
        try withTestDatabase(backend, readers: 4, connections: 6) { (db: Database) throws in
            try makeCounter(db)
            let failures = Mutexed<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 16) { i in
                do {
                    for _ in 0..<10 {
                        try db.write { try increment($0, i) }
                        let n = try db.read { try $0.fetchValue(Int.self, sql: "SELECT n FROM counter WHERE id = 1") }
                        if n == nil { failures.mutate { $0.append("no counter") } }
                    }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                }
            }
            #expect(failures.value == [])
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT n FROM counter") } == 160)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM log") } == 160)
            // No connection leaked: all are back and idle, and never more than the pool holds.
            #expect(db.openConnectionCount == db.idleConnectionCount)
            #expect(db.openConnectionCount <= (backend == .sqlite ? 5 : 6))
        }
    }

    @Test(arguments: Backend.allCases)
    func sixteenTasks(_ backend: Backend) async throws {
        try await withTestDatabase(backend, readers: 4, connections: 6) { (db: Database) async throws in
            try makeCounter(db)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<16 {
                    group.addTask {
                        for _ in 0..<10 {
                            try await db.write { conn in
                                try conn.execute(.update(SQLUpdate("counter", set: [SQLAssignment("n", .binary(.column("n"), .add, .value(1)))],
                                                                   where: SQLExpression.column("id").equals(1))))
                                try conn.execute(.insert(SQLInsert(into: "log", values: ["who": .integer(Int64(i))])))
                            }
                            _ = try await db.read { conn in try conn.fetchValue(Int.self, sql: "SELECT n FROM counter") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let n = try await db.read { conn in try conn.fetchValue(Int.self, sql: "SELECT n FROM counter") }
            #expect(n == 160)
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }

    @Test(arguments: Backend.allCases)
    func exhaustionGivesTheTimeoutError(_ backend: Backend) throws {
        let config = DatabaseConfiguration(checkoutTimeout: 0.3)
        try withTestDatabase(backend, readers: 1, connections: 1, configuration: config) { (db: Database) throws in
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                _ = try? db.withConnection(role: .writer) { _ in
                    holding.signal()
                    release.wait()
                }
                done.signal()
            }
            holding.wait()
            #expect(throws: DatabaseError.poolTimeout(waitedSeconds: 0.3, poolSize: 1)) {
                try db.withConnection(role: .writer) { _ in }
            }
            release.signal()
            done.wait()
            // Once returned, the connection is lent again.
            #expect(try db.withConnection(role: .writer) { try $0.fetchValue(Int.self, sql: "SELECT 1") } == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func connectionReturnedMidTransactionIsRolledBack(_ backend: Backend) throws {
        try withTestDatabase(backend, readers: 1, connections: 1) { (db: Database) throws in
            try db.write { try $0.execute(.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("v", .int64)]))) }
            try db.withConnection(role: .writer) { conn in
                try conn.execute(.begin(.immediate))
                try conn.execute(.insert(SQLInsert(into: "t", values: ["v": 1])))
                // Returned without COMMIT.
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") } == 0)
            try db.write { try $0.execute(.insert(SQLInsert(into: "t", values: ["v": 2]))) }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") } == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func echoLogsEveryStatement(_ backend: Backend) throws {
        let captured = Mutexed<[String]>([])
        var logger = Logger(label: "unity.test.echo") { _ in CapturingLogHandler(captured) }
        logger.logLevel = .info
        let config = DatabaseConfiguration(echo: true, logger: logger)
        try withTestDatabase(backend, configuration: config) { (db: Database) throws in
            try db.write { try $0.execute(.createTable(SQLCreateTable("echoed", columns: [SQLColumnDefinition("v", .int64)]))) }
            _ = try db.read { try $0.fetchAll(.select(SQLSelect(from: "echoed"))) }
        }
        let lines = captured.value
        #expect(lines.contains { $0.contains("CREATE TABLE") && $0.contains("echoed") })
        #expect(lines.contains { $0.hasPrefix("SELECT") && $0.contains("echoed") })
        #expect(lines.contains { $0 == "COMMIT" })
    }
}

/// A value behind a lock, for collecting results from several threads in a test.
final class Mutexed<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
    func mutate(_ f: (inout T) -> Void) {
        lock.lock()
        f(&stored)
        lock.unlock()
    }
}

struct CapturingLogHandler: LogHandler {
    let sink: Mutexed<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    init(_ sink: Mutexed<[String]>) { self.sink = sink }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        sink.mutate { $0.append(event.message.description) }
    }
}
