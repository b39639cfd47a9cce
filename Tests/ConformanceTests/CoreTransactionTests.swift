import Foundation
import Testing
import Unity

/// Commit on return, rollback on throw, savepoints for nested transactions.
@Suite("Core: transactions")
struct CoreTransactionTests {
    struct Boom: Error {}

    func makeTable(_ db: Database) throws {
        try db.write { try $0.execute(.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("v", .int64)]))) }
    }

    func insert(_ conn: Connection, _ v: Int) throws {
        try conn.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(Int64(v))])))
    }

    func values(_ db: Database) throws -> [Int] {
        try db.read { conn in
            try conn.fetchAll(.select(SQLSelect(from: "t").orderBy(SQLExpression.column("v").asc))).map { try $0.decode(Int.self, at: 0) }
        }
    }

    @Test(arguments: Backend.allCases)
    func commitOnReturnRollbackOnThrow(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { try insert($0, 1) }
            #expect(throws: Boom.self) {
                try db.write { conn in
                    try insert(conn, 2)
                    throw Boom()
                }
            }
            try db.transaction { try insert($0, 3) }
            #expect(try values(db) == [1, 3])
        }
    }

    @Test(arguments: Backend.allCases)
    func failedStatementRollsBackTheWholeTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            #expect(throws: DatabaseError.self) {
                try db.write { conn in
                    try insert(conn, 1)
                    try conn.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                }
            }
            #expect(try values(db) == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func nestedTransactionsAreSavepoints(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { conn in
                try insert(conn, 1)
                // The inner failure undoes only the inner work; the outer transaction goes on.
                #expect(throws: Boom.self) {
                    try conn.transaction { inner in
                        try insert(inner, 2)
                        throw Boom()
                    }
                }
                // A statement error inside a savepoint (which aborts a PostgreSQL
                // transaction) is recovered the same way.
                #expect(throws: DatabaseError.self) {
                    try conn.transaction { inner in
                        try insert(inner, 3)
                        try inner.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                    }
                }
                try conn.transaction { inner in
                    try insert(inner, 4)
                    try inner.transaction { try insert($0, 5) }
                }
                try insert(conn, 6)
            }
            #expect(try values(db) == [1, 4, 5, 6])
        }
    }

    @Test(arguments: Backend.allCases)
    func outerRollbackUndoesReleasedSavepoints(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            #expect(throws: Boom.self) {
                try db.write { conn in
                    try conn.transaction { try insert($0, 1) }
                    throw Boom()
                }
            }
            #expect(try values(db) == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func readsSeeCommittedWritesOnly(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { conn in
                try insert(conn, 1)
                // Another thread, on another connection, does not see the uncommitted row.
                let seen = try onAnotherThread { try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") } }
                #expect(seen == 0)
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") } == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func aWriteInAReadIsRefusedAsReadOnly(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { try insert($0, 1) }
            for attempt in 0..<2 {
                do {
                    if attempt == 0 {
                        try db.read { try insert($0, 2) }
                    } else {
                        // Raw SQL through a read convenience keeps the read-only transaction.
                        _ = try db.fetchAll(sql: "DELETE FROM t RETURNING v")
                    }
                    Issue.record("a write ran inside a read")
                } catch let error as DatabaseError {
                    guard case .readOnly = error else {
                        Issue.record("expected .readOnly, got \(error)")
                        continue
                    }
                }
            }
            #expect(try db.fetchAll(sql: "SELECT v FROM t").map { try $0.decode(Int.self, at: 0) } == [1])
        }
    }

    /// A SELECT built from the AST runs by itself (no BEGIN/COMMIT around one statement) and
    /// still sees committed data only.
    @Test(arguments: Backend.allCases)
    func oneSelectReadsWithoutATransactionOfItsOwn(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { try insert($0, 1) }
            let select = SQLStatement.select(SQLSelect(columns: [.expression(.countAll, alias: "n")], from: .table("t", alias: nil)))
            try db.write { conn in
                try insert(conn, 2)
                #expect(try onAnotherThread { try db.fetchOne(select)?.decode(Int.self, at: 0) } == 1)
            }
            #expect(try db.fetchAll(select).first?.decode(Int.self, at: 0) == 2)
            if backend == .postgres {
                // Observable on PostgreSQL: in autocommit the statement's transaction is not
                // the read-only one `read` opens.
                let readOnly = try db.fetchOne(.select(SQLSelect(columns: [.expression(.raw("current_setting('transaction_read_only')"), alias: "ro")])))
                #expect(try readOnly?.decode(String.self, at: 0) == "off")
                #expect(try db.read { try $0.fetchValue(String.self, sql: "SELECT current_setting('transaction_read_only')") } == "on")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func asyncVariantsCommitAndRollBack(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try makeTable(db)
            try await db.write { conn in try conn.execute(.insert(SQLInsert(into: "t", values: ["v": 1]))) }
            await #expect(throws: Boom.self) {
                try await db.write { conn in
                    try conn.execute(.insert(SQLInsert(into: "t", values: ["v": 2])))
                    throw Boom()
                }
            }
            let count = try await db.read { conn in try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") }
            #expect(count == 1)
        }
    }

    /// True when `result` is a ``DatabaseError/cancelled(_:)`` failure; records an issue otherwise.
    private func isCancelled<T>(_ result: Result<T, any Error>, _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        if case .failure(let error) = result, case .cancelled = error as? DatabaseError { return true }
        Issue.record("\(what) expected .cancelled, got \(result)", sourceLocation: sourceLocation)
        return false
    }

    /// A query that runs for seconds unless interrupted, but ends on its own, so that a lost
    /// cancel shows up as a success rather than a hang.
    private func slowQuery(_ backend: Backend) -> String {
        backend == .postgres
            ? "SELECT pg_sleep(10)"
            : "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200000000) SELECT COUNT(*) FROM c"
    }

    @Test(arguments: Backend.allCases)
    func cancellingATaskInterruptsItsQuery(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            let slow = slowQuery(backend)
            let task = Task {
                try await db.read { conn in try conn.fetchAll(sql: slow).count }
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            task.cancel()
            let result = await task.result
            guard isCancelled(result) else { return }
            // The connection is usable afterwards.
            let one = try await db.read { conn in try conn.fetchValue(Int.self, sql: "SELECT 1") }
            #expect(one == 1)
        }
    }

    /// A cancel can land at any moment: before the work starts, while a connection is checked
    /// out, during BEGIN, just before the statement reaches the server. None of those may be
    /// lost, and none may leave a connection behind that interrupts its next user.
    @Test(arguments: Backend.allCases)
    func aCancelIsNeverLostWhateverItsTiming(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            let slow = slowQuery(backend)
            for attempt in 0..<24 {
                let task = Task {
                    try await db.read { conn in try conn.fetchAll(sql: slow).count }
                }
                // 0, 1, 2, … 23 ms: sweeps the cancel across the start of the work.
                if attempt > 0 { try await Task.sleep(nanoseconds: UInt64(attempt) * 1_000_000) }
                task.cancel()
                let result = await task.result
                guard isCancelled(result, "attempt \(attempt)") else { return }
                let one = try await db.read { conn in try conn.fetchValue(Int.self, sql: "SELECT 1") }
                #expect(one == 1)
            }
        }
    }

    /// Cancelled while the closure is busy between two statements: the next statement is not
    /// started and the transaction's earlier work is rolled back.
    @Test(arguments: Backend.allCases)
    func aCancelBetweenStatementsStopsTheNextAndRollsBack(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try makeTable(db)
            let started = Flag()
            let cancelSent = Flag()
            let task = Task {
                try await db.write { conn in
                    try conn.execute(.insert(SQLInsert(into: "t", values: ["v": 1])))
                    started.set()
                    // Busy in Swift code, not in the database, when the cancel arrives: the
                    // closure waits for it (bounded), so a loaded machine cannot reorder them.
                    let deadline = Date().addingTimeInterval(30)
                    while !cancelSent.isSet && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
                    try conn.execute(.insert(SQLInsert(into: "t", values: ["v": 2])))
                }
            }
            // Generous: on a 2-core machine the task may wait for a cooperative thread while the
            // parallel suite's synchronous tests hold both.
            let deadline = Date().addingTimeInterval(180)
            while !started.isSet && Date() < deadline { try await Task.sleep(nanoseconds: 5_000_000) }
            #expect(started.isSet, "the write never started")
            task.cancel()
            cancelSent.set()
            let result = await task.result
            guard isCancelled(result) else { return }
            let count = try await db.read { conn in try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") }
            #expect(count == 0)
        }
    }
}

/// Runs `body` on a new thread and waits for its result: work there is not lent the calling
/// thread's connection.
func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        box.result = Result { try body() }
        done.signal()
    }
    done.wait()
    return try #require(box.result).get()
}

/// Carries a result from one thread to the one waiting for it.
final class ResultBox<T>: @unchecked Sendable {
    // @unchecked: written before a semaphore signal, read after the wait.
    var result: Result<T, any Error>?
}

/// A thread-safe one-way flag for tests that coordinate a task with the work it started.
final class Flag: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}
