import Foundation
import Testing
import Unity

/// `DatabaseInstrumentation`: what the core reports, in order, to an instrumentation of the
/// tests' own (the `UnityTelemetry` module is one user of these hooks).
@Suite("Core: instrumentation hooks")
struct CoreInstrumentationTests {
    /// Keeps every event as a line of text.
    final class Recorder: DatabaseInstrumentation, @unchecked Sendable {
        // @unchecked: guarded by `lock`.
        private let lock = NSLock()
        private var recorded: [String] = []
        private var context: String?

        private var failedStatements: [String] = []

        var events: [String] { lock.withLock { recorded } }
        /// Each statement that ended with an error: its first word and the error's kind.
        var failures: [String] { lock.withLock { failedStatements } }
        func clear() { lock.withLock { recorded.removeAll(); failedStatements.removeAll() } }
        func record(_ line: String) { lock.withLock { recorded.append(line) } }
        func recordFailure(_ sql: String, _ error: any Error) {
            let word = sql.prefix { !$0.isWhitespace }
            let kind: String
            switch error as? DatabaseError {
            case .constraintViolation(let constraint, _)?: kind = "constraintViolation(\(constraint))"
            case let other?: kind = String(describing: other).prefix { $0 != "(" }.description
            case nil: kind = String(reflecting: type(of: error))
            }
            lock.withLock { failedStatements.append("\(word) \(kind)") }
        }

        func currentContext() -> (any Sendable)? { Self.current }

        func statementStarting(_ statement: DatabaseStatementEvent) -> (any DatabaseStatementObservation)? {
            let context = statement.context as? String
            record("start \(statement.sql) pool=\(statement.pool) batch=\(statement.batchSize) script=\(statement.isScript) context=\(context ?? "-")")
            return Observation(recorder: self, sql: statement.sql)
        }

        func transactionStarting(_ transaction: DatabaseTransactionEvent) -> (any DatabaseTransactionObservation)? {
            record("begin \(transaction.kind) pool=\(transaction.pool) context=\((transaction.context as? String) ?? "-")")
            return Observation(recorder: self, sql: "")
        }

        func poolChanged(_ event: DatabasePoolEvent) {
            switch event.kind {
            case .checkedOut: record("checkout \(event.pool) used=\(event.used) idle=\(event.idle)")
            case .checkedIn: record("checkin \(event.pool) used=\(event.used) idle=\(event.idle)")
            case .waiting: record("waiting \(event.pool) waiting=\(event.waiting)")
            case .timedOut: record("timeout \(event.pool)")
            case .queued: record("queued \(event.pool)")
            }
        }

        struct Observation: DatabaseStatementObservation, DatabaseTransactionObservation {
            let recorder: Recorder
            let sql: String
            func finish(error: (any Error)?) {
                recorder.record("end \(sql)" + (error == nil ? "" : " failed"))
                if let error { recorder.recordFailure(sql, error) }
            }
            func finish(committed: Bool, error: (any Error)?) {
                recorder.record(committed ? "commit" : "rollback" + (error == nil ? "" : " failed"))
            }
        }

        @TaskLocal static var current: String?
    }

    static func pool(_ backend: Backend) -> String { backend == .sqlite ? "writer" : "primary" }

    @Test(arguments: Backend.allCases)
    func aTransactionsStatementsAndItsSavepointInOrder(_ backend: Backend) throws {
        let recorder = Recorder()
        try withTestDatabase(backend, configuration: DatabaseConfiguration(instrumentation: recorder)) { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
            recorder.clear()
            let p = backend == .sqlite ? "?" : "$1"
            try db.write { conn in
                try conn.execute(sql: "INSERT INTO t (id) VALUES (?)", [1])
                // A savepoint that fails: its statement is reported failed, the savepoint itself not at all.
                _ = try? conn.transaction { inner in try inner.execute(sql: "INSERT INTO t (id) VALUES (?)", [1]) }
            }
            let pool = Self.pool(backend)
            #expect(recorder.events == [
                "checkout \(pool) used=1 idle=0",
                "begin immediate pool=\(pool) context=-",
                "start INSERT INTO t (id) VALUES (\(p)) pool=\(pool) batch=1 script=false context=-",
                "end INSERT INTO t (id) VALUES (\(p))",
                "start INSERT INTO t (id) VALUES (\(p)) pool=\(pool) batch=1 script=false context=-",
                "end INSERT INTO t (id) VALUES (\(p)) failed",
                "commit",
                "checkin \(pool) used=0 idle=1",
            ])
            // What was committed: the first row only.
            #expect(try db.fetchAll(sql: "SELECT id FROM t").map { try $0.decode(Int.self, at: 0) } == [1])
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailedTransactionReportsItsRollbackAndAScriptIsOneStatement(_ backend: Backend) throws {
        let recorder = Recorder()
        try withTestDatabase(backend, configuration: DatabaseConfiguration(instrumentation: recorder)) { db in
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try db.write { conn in
                    try conn.executeScript("CREATE TABLE a (x INTEGER); CREATE TABLE b (y INTEGER)")
                    throw Refused()
                }
            }
            let lines = recorder.events.filter { !$0.hasPrefix("check") }
            #expect(lines == [
                "begin immediate pool=\(Self.pool(backend)) context=-",
                "start CREATE TABLE a (x INTEGER); CREATE TABLE b (y INTEGER) pool=\(Self.pool(backend)) batch=1 script=true context=-",
                "end CREATE TABLE a (x INTEGER); CREATE TABLE b (y INTEGER)",
                "rollback failed",
            ])
            // Rolled back: no table a.
            #expect(throws: DatabaseError.self) { try db.fetchAll(sql: "SELECT x FROM a") }
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: Backend.allCases)
    func anAsyncCallCarriesTheCallersContextToUnitysThread(_ backend: Backend) async throws {
        let recorder = Recorder()
        try await withTestDatabase(backend, configuration: DatabaseConfiguration(instrumentation: recorder)) { (db: Database) async throws in
            try await db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
            recorder.clear()
            try await Recorder.$current.withValue("request-7") {
                try await db.write { conn in try conn.execute(sql: "INSERT INTO t (id) VALUES (?)", [1]) }
            }
            let p = backend == .sqlite ? "?" : "$1"
            let lines = recorder.events.filter { !$0.hasPrefix("check") && !$0.hasPrefix("queued") }
            #expect(lines == [
                "begin immediate pool=\(Self.pool(backend)) context=request-7",
                "start INSERT INTO t (id) VALUES (\(p)) pool=\(Self.pool(backend)) batch=1 script=false context=request-7",
                "end INSERT INTO t (id) VALUES (\(p))",
                "commit",
            ])
            #expect(recorder.events.contains("queued \(Self.pool(backend))"))
        }
    }

    /// A batch of saves first tries its INSERTs plainly; one that meets a taken key is undone
    /// and the batch goes on with the duplicate rules. The caller sees no error, but the
    /// statement failed, and the instrumentation is told so, with the constraint's kind
    /// (SQLite undoes the one statement; PostgreSQL rolls back a savepoint).
    @Test(arguments: Backend.allCases)
    func aConstraintFailureTheBatchRecoversFromIsReportedAsFailed(_ backend: Backend) throws {
        typealias Gadget = ModelDefDuplicateFixtures.Gadget
        let recorder = Recorder()
        try withTestDatabase(backend, configuration: DatabaseConfiguration(instrumentation: recorder)) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            recorder.clear()
            try DBManager.executeStatements([
                Gadget(id: 2, serverId: "s2", name: "two", color: "blue", qty: 2).createSaveStatement(),
                Gadget(id: 1, serverId: "s1", name: "batch", color: "pink", qty: 3).createSaveStatement(),
            ], in: db)
            #expect(recorder.failures == ["INSERT constraintViolation(unique)"])
            #expect(recorder.events.last == "checkin \(Self.pool(backend)) used=0 idle=1")
            #expect(recorder.events.contains("commit"))
            #expect(try Gadget.allInstances(orderedBy: [.ascending("id")], in: db) == [
                Gadget(id: 1, serverId: "s1", name: "batch", color: "pink", qty: 3, existsInDatabase: true),
                Gadget(id: 2, serverId: "s2", name: "two", color: "blue", qty: 2, existsInDatabase: true),
            ])
        }
    }
}
