import Foundation
import Testing
import Unity

/// The pool under pressure: nested acquisition cannot deadlock it, a task cancelled while it
/// waits wakes at once, async reads do not queue behind async writes, and a mixed load of
/// threads and tasks (nested reads and writes, cursors, cancels) leaves it whole.
@Suite("Core: pool under stress")
struct CorePoolStressTests {
    /// Long enough that a deadlock shows as a failure, never as a pass.
    static let configuration = DatabaseConfiguration(checkoutTimeout: 8)

    func makeTable(_ db: Database) throws {
        try db.write { try $0.execute(.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("v", .int64)]))) }
    }

    func insert(_ conn: Connection, _ v: Int) throws {
        try conn.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(Int64(v))])))
    }

    func count(_ db: Database) throws -> Int {
        try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") } ?? -1
    }

    @Test(arguments: Backend.allCases)
    func aWriteInsideAReadByEveryCallerDoesNotDeadlock(_ backend: Backend) throws {
        let size = 2
        try withTestDatabase(backend, readers: size, connections: size, configuration: Self.configuration) { (db: Database) throws in
            try makeTable(db)
            let barrier = Barrier(size)
            let errors = runThreads(size, timeout: 30) { i in
                try db.read { conn in
                    _ = try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t")
                    // Every caller holds a connection before any asks for a second one.
                    try barrier.arriveAndWait(timeout: 10)
                    try db.write { try insert($0, i) }
                }
            }
            #expect(errors.isEmpty, "\(errors)")
            #expect(try count(db) == size)
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }

    @Test(arguments: Backend.allCases)
    func aReadBesideAnOpenCursorByEveryCallerDoesNotDeadlock(_ backend: Backend) throws {
        let size = 2
        try withTestDatabase(backend, readers: size, connections: size, configuration: Self.configuration) { (db: Database) throws in
            try makeTable(db)
            try db.write { conn in for v in 1...3 { try insert(conn, v) } }
            let barrier = Barrier(size)
            let sums = Mutexed<[Int]>([])
            let errors = runThreads(size, timeout: 30) { _ in
                try db.read { conn in
                    let cursor = try conn.cursor(sql: "SELECT v FROM t ORDER BY v")
                    try barrier.arriveAndWait(timeout: 10)
                    var sum = 0
                    while let row = try cursor.next() {
                        sum += try row.decode(Int.self, at: 0) * (try count(db))
                    }
                    sums.mutate { $0.append(sum) }
                }
            }
            #expect(errors.isEmpty, "\(errors)")
            #expect(sums.value == [18, 18])
        }
    }

    @Test(arguments: Backend.allCases)
    func aTaskCancelledWhileWaitingForAConnectionWakesWithCancelled(_ backend: Backend) async throws {
        // The holder's wait and the checkout timeout are long (minutes, not seconds): the whole
        // suite runs at once on a 2-core machine, where this test's body can be held up for
        // half a minute, and a holder that let go early would let the writes commit.
        try await withTestDatabase(backend, readers: 1, connections: 1, configuration: DatabaseConfiguration(checkoutTimeout: 120)) { (db: Database) async throws in
            try makeTable(db)
            // A thread holds the only writer until told to let go.
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let holder = Mutexed<Result<Void, any Error>?>(nil)
            Thread.detachNewThread {
                let r = Result {
                    try db.write { _ in
                        holding.signal()
                        _ = release.wait(timeout: .now() + 300)
                    }
                }
                holder.mutate { $0 = r }
            }
            #expect(holding.wait(timeout: .now() + 10) == .success)
            // The first waits for the connection on a thread, the others wait for a thread.
            let tasks = (0..<3).map { i in
                Task { try await db.write { conn in try insert(conn, i) } }
            }
            try await Task.sleep(nanoseconds: 200_000_000)
            for task in tasks { task.cancel() }
            var outcomes: [String] = []
            for task in tasks {
                do {
                    _ = try await task.value
                    outcomes.append("committed")
                } catch DatabaseError.cancelled {
                    outcomes.append("cancelled")
                } catch {
                    outcomes.append("\(error)")
                }
            }
            // Released only now: a waiter that ignored its cancel would still be waiting
            // (and time out after 120 s with .poolTimeout).
            release.signal()
            #expect(outcomes == ["cancelled", "cancelled", "cancelled"])
            while holder.value == nil { try await Task.sleep(nanoseconds: 10_000_000) }
            #expect(try count(db) == 0)
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }

    /// SQLite only: its reads and writes have pools of their own, and an async read must not
    /// wait behind async writes that wait for the one writer.
    @Test func anAsyncReadDoesNotQueueBehindAsyncWritesOnSQLite() async throws {
        // Long waits, as in the test above: the writer must still be held when the read runs.
        try await withTestDatabase(.sqlite, readers: 2, configuration: DatabaseConfiguration(checkoutTimeout: 120)) { (db: Database) async throws in
            try makeTable(db)
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                _ = try? db.write { _ in
                    holding.signal()
                    _ = release.wait(timeout: .now() + 300)
                }
            }
            #expect(holding.wait(timeout: .now() + 10) == .success)
            let writes = (0..<8).map { i in Task { try await db.write { try insert($0, i) } } }
            try await Task.sleep(nanoseconds: 100_000_000)
            // The writer is still held: the read must answer anyway.
            let n = try await db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") }
            #expect(n == 0)
            release.signal()
            for w in writes { try await w.value }
            #expect(try count(db) == 8)
        }
    }

    @Test(arguments: Backend.allCases)
    func threadsAndTasksWithNestedCallsAndCancelsLeaveThePoolWhole(_ backend: Backend) async throws {
        let size = 3
        try await withTestDatabase(backend, readers: size, connections: size, configuration: Self.configuration) { (db: Database) async throws in
            try makeTable(db)
            let committed = Mutexed(0)
            let unexpected = Mutexed<[String]>([])
            @Sendable func note(_ error: Error, cancelled allowed: Bool) {
                if allowed, case DatabaseError.cancelled = error { return }
                unexpected.mutate { $0.append("\(error)") }
            }
            // One mixed step; `i` picks what it does.
            @Sendable func step(_ i: Int) throws {
                switch i % 5 {
                case 0:
                    try db.write { try insert($0, i) }
                    committed.mutate { $0 += 1 }
                case 1:
                    try db.read { conn in
                        _ = try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t")
                        try db.write { try insert($0, i) }
                    }
                    committed.mutate { $0 += 1 }
                case 2:
                    try db.write { conn in
                        try insert(conn, i)
                        _ = try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") }
                        _ = try? db.write { inner in
                            try insert(inner, -1)
                            try inner.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                        }
                    }
                    committed.mutate { $0 += 1 }
                case 3:
                    try db.read { conn in
                        let cursor = try conn.cursor(sql: "SELECT v FROM t LIMIT 3")
                        while try cursor.next() != nil {
                            _ = try db.read { try $0.fetchValue(Int.self, sql: "SELECT 1") }
                        }
                    }
                default:
                    _ = try db.fetchAll(.select(SQLSelect(from: "t").limit(2)))
                }
            }
            let threadErrors = runThreads(12, timeout: 60) { t in
                for j in 0..<30 {
                    do { try step(t * 100 + j) } catch { note(error, cancelled: false) }
                }
            }
            #expect(threadErrors.count == 0, "\(threadErrors.first ?? "")")
            // Tasks, a third of them cancelled at once or soon after they start.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 0..<12 {
                    group.addTask {
                        for j in 0..<30 {
                            let i = 10_000 + t * 100 + j
                            let work = Task {
                                if i % 5 == 0 {
                                    try await db.write { try insert($0, i) }
                                    committed.mutate { $0 += 1 }
                                } else {
                                    try await db.read { _ in try step(i) }
                                }
                            }
                            if j % 3 == 0 {
                                if j % 2 == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
                                work.cancel()
                            }
                            do { try await work.value } catch { note(error, cancelled: j % 3 == 0) }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let surprises = unexpected.value
            #expect(surprises.count == 0, "\(surprises.count) unexpected errors, first: \(surprises.first ?? "")")
            // A cancelled write may or may not have committed; every acknowledged one did.
            let rows = try count(db)
            #expect(rows >= committed.value)
            #expect(try await db.fetchOne(sql: "SELECT COUNT(*) FROM t WHERE v = -1")?.decode(Int.self, at: 0) == 0)
            #expect(db.openConnectionCount == db.idleConnectionCount)
            #expect(db.openConnectionCount <= (backend == .sqlite ? 1 + size : size))
        }
    }
}

/// Waits until `count` threads have arrived, or throws after a timeout (a test must fail, not
/// hang).
final class Barrier: @unchecked Sendable {
    // @unchecked: guarded by `condition`.
    private let condition = NSCondition()
    private let count: Int
    private var arrived = 0

    init(_ count: Int) { self.count = count }

    struct TimedOut: Error {}

    func arriveAndWait(timeout: TimeInterval) throws {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while arrived < count {
            if !condition.wait(until: deadline) && arrived < count { throw TimedOut() }
        }
    }
}

/// Runs `body(i)` on `count` threads and returns the errors they threw; a thread still running
/// after `timeout` seconds is reported as an error rather than waited for.
func runThreads(_ count: Int, timeout: TimeInterval, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
    let errors = Mutexed<[String]>([])
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread.detachNewThread {
            do { try body(i) } catch { errors.mutate { $0.append("\(error)") } }
            group.leave()
        }
    }
    if group.wait(timeout: .now() + timeout) == .timedOut {
        errors.mutate { $0.append("threads still running after \(timeout) s") }
    }
    return errors.value
}
