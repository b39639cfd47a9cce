import Foundation
import Metrics
import Testing
import Tracing
import Unity
@testable import UnityTelemetry

/// `TelemetryInstrumentation`: the metrics and spans a database reports, checked against
/// literal names, dimensions and values on both backends.
@Suite("Telemetry: metrics and tracing")
struct TelemetryTests {
    /// A database with the telemetry on, a table `t (id, name UNIQUE)`, and the recorders.
    func withInstrumentedDatabase<T>(_ backend: Backend, connections: Int = 3, checkoutTimeout: Double = 10,
                                     _ body: (Database, RecordingMetrics, RecordingTracer) throws -> T) throws -> T {
        let metrics = RecordingMetrics()
        let tracer = RecordingTracer()
        let telemetry = TelemetryInstrumentation(metrics: metrics, tracer: tracer, databaseName: "app")
        let configuration = DatabaseConfiguration(checkoutTimeout: checkoutTimeout, instrumentation: telemetry)
        return try withTestDatabase(backend, readers: 2, connections: connections, configuration: configuration) { db in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
            return try body(db, metrics, tracer)
        }
    }

    static func system(_ backend: Backend) -> String { backend == .sqlite ? "sqlite" : "postgresql" }

    /// The pool whose connections write: SQLite's single writer, PostgreSQL's one pool.
    static func writerPool(_ backend: Backend) -> String { backend == .sqlite ? "app.writer" : "app.primary" }

    @Test(arguments: Backend.allCases)
    func statementsAndErrorsAreCountedByOperationAndKind(_ backend: Backend) throws {
        try withInstrumentedDatabase(backend) { db, metrics, _ in
            try db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [1, "a"])
            try db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [2, "b"])
            #expect(throws: DatabaseError.self) {
                try db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [3, "a"])
            }
            let insert = [("db.system.name", Self.system(backend)), ("db.namespace", "app"), ("db.operation.name", "INSERT")]
            let failed = insert + [("error.type", "unique_violation")]
            #expect(metrics.counter("unity.db.client.statements", insert) == 3)
            #expect(metrics.counter("unity.db.client.errors", failed) == 1)
            #expect(metrics.timer("db.client.operation.duration", insert)?.count == 2)
            #expect(metrics.timer("db.client.operation.duration", failed)?.count == 1)
            // The CREATE TABLE before: one statement of its own, no error.
            let create = [("db.system.name", Self.system(backend)), ("db.namespace", "app"), ("db.operation.name", "CREATE")]
            #expect(metrics.counter("unity.db.client.statements", create) == 1)
            #expect(metrics.counter("unity.db.client.errors", create + [("error.type", "unique_violation")]) == nil)
            // Each execute is a write transaction: three (with the CREATE's) committed, one rolled back.
            let transaction = [("db.system.name", Self.system(backend)), ("db.namespace", "app"), ("unity.transaction.kind", "read_write")]
            #expect(metrics.timer("unity.db.client.transaction.duration", transaction + [("unity.transaction.outcome", "committed")])?.count == 3)
            #expect(metrics.timer("unity.db.client.transaction.duration", transaction + [("unity.transaction.outcome", "rolled_back")])?.count == 1)
            // No series counts BEGIN or COMMIT as a statement.
            #expect(!metrics.seriesKeys.contains { $0.contains("db.operation.name=BEGIN") || $0.contains("db.operation.name=COMMIT") })
        }
    }

    @Test(arguments: Backend.allCases)
    func poolGaugesFollowAHeldConnection(_ backend: Backend) throws {
        try withInstrumentedDatabase(backend) { db, metrics, _ in
            let pool = [("db.client.connection.pool.name", Self.writerPool(backend))]
            let used = pool + [("db.client.connection.state", "used")]
            let idle = pool + [("db.client.connection.state", "idle")]
            try db.write { conn in
                try conn.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [1, "a"])
                #expect(metrics.meter("db.client.connection.count", used) == 1)
                #expect(metrics.meter("db.client.connection.count", idle) == 0)
            }
            #expect(metrics.meter("db.client.connection.count", used) == 0)
            #expect(metrics.meter("db.client.connection.count", idle) == 1)
            #expect(metrics.meter("db.client.connection.max", pool) == (backend == .sqlite ? 1 : 3))
            #expect(metrics.meter("db.client.connection.pending_requests", pool) == 0)
            // Checked out for the CREATE TABLE and for the write; held by both (the first
            // connection a database opens is the pool's own: no use time).
            #expect(metrics.timer("db.client.connection.wait_time", pool)?.count == 3)
            #expect(metrics.timer("db.client.connection.use_time", pool)?.count == 2)
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: Backend.allCases)
    func aWaitingCallerIsPendingAndATimeoutIsCounted(_ backend: Backend) throws {
        try withInstrumentedDatabase(backend, connections: 1, checkoutTimeout: 0.3) { db, metrics, _ in
            let pool = [("db.client.connection.pool.name", Self.writerPool(backend))]
            let outcome = ThreadOutcome()
            try db.write { conn in
                try conn.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [1, "a"])
                // Another thread finds the only connection taken, waits, and times out.
                let thread = Thread {
                    do {
                        try db.write { try $0.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [2, "b"]) }
                        outcome.set("wrote")
                    } catch let error as DatabaseError {
                        if case .poolTimeout = error { outcome.set("timed out") } else { outcome.set("\(error)") }
                    } catch {
                        outcome.set("\(error)")
                    }
                }
                thread.start()
                #expect(outcome.wait(seconds: 10) == "timed out")
            }
            #expect(metrics.meterHistory("db.client.connection.pending_requests", pool).contains(1))
            #expect(metrics.meter("db.client.connection.pending_requests", pool) == 0)
            #expect(metrics.counter("db.client.connection.timeouts", pool) == 1)
            // The write that timed out ran no statement: one row.
            #expect(try db.fetchOne(sql: "SELECT COUNT(*) FROM t")?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func aSpanPerStatementWithTheSQLAndNoValues(_ backend: Backend) throws {
        try withInstrumentedDatabase(backend) { db, _, tracer in
            try db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [1, "secret value"])
            #expect(throws: DatabaseError.self) {
                try db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [2, "secret value"])
            }
            let spans = tracer.spans
            // CREATE TABLE, then the two INSERTs: BEGIN and COMMIT have no spans.
            #expect(spans.map(\.operationName) == ["CREATE", "INSERT", "INSERT"])
            let text = backend == .sqlite ? "INSERT INTO t (id, name) VALUES (?, ?)" : "INSERT INTO t (id, name) VALUES ($1, $2)"
            for span in spans.dropFirst() {
                #expect(span.kind == .client)
                #expect(span.string("db.system.name") == Self.system(backend))
                #expect(span.string("db.namespace") == "app")
                #expect(span.string("db.operation.name") == "INSERT")
                #expect(span.string("db.query.text") == text)
                #expect(span.ended == 1)
                #expect(span.parentID == nil)
            }
            #expect(!spans.contains { span in
                "\(span.attributes)".contains("secret")
            })
            let ok = spans[1], failed = spans[2]
            #expect(ok.errors.isEmpty)
            #expect(ok.status == nil)
            #expect(ok.string("error.type") == nil)
            #expect(failed.errors.count == 1)
            #expect(failed.status?.code == .error)
            #expect(failed.string("error.type") == "unique_violation")
            #expect(failed.string("db.response.status_code") == (backend == .sqlite ? "2067" : "23505"))
        }
    }

    @Test(arguments: Backend.allCases)
    func aBatchIsOneSpanWithItsSize(_ backend: Backend) throws {
        try withInstrumentedDatabase(backend) { db, metrics, tracer in
            try db.write { conn in
                try conn.executeBatch((1...4).map { id in
                    .insert(SQLInsert(into: "t", values: ["id": .integer(Int64(id)), "name": .text("n\(id)")]))
                })
            }
            let batch = tracer.spans.last
            #expect(batch?.operationName == "BATCH INSERT")
            #expect(batch?.int("db.operation.batch.size") == 4)
            let dimensions = [("db.system.name", Self.system(backend)), ("db.namespace", "app"), ("db.operation.name", "BATCH INSERT")]
            #expect(metrics.counter("unity.db.client.statements", dimensions) == 1)
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: Backend.allCases)
    func anAsyncCallsSpansHaveTheCallersSpanAsParent(_ backend: Backend) async throws {
        let metrics = RecordingMetrics()
        let tracer = RecordingTracer()
        let telemetry = TelemetryInstrumentation(metrics: metrics, tracer: tracer, databaseName: "app")
        // Pipelined queries too: their path does not go through a lent connection.
        let configuration = DatabaseConfiguration(pipelinesConcurrentQueries: true, instrumentation: telemetry)
        try await withTestDatabase(backend, readers: 2, connections: 2, configuration: configuration) { (db: Database) async throws in
            try await db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
            let request = tracer.startSpan("request", context: .topLevel, ofKind: .server)
            try await ServiceContext.withValue(request.context) {
                try await db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [1, "a"])
                try await db.write { conn in try conn.execute(sql: "UPDATE t SET name = ? WHERE id = ?", ["b", 1]) }
                _ = try await db.fetchAll(.select(SQLSelect(from: "t").columns(.column("name"))))
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 {
                        group.addTask { _ = try await db.fetchOne(.select(SQLSelect(from: "t").columns(.column("id")))) }
                    }
                    try await group.waitForAll()
                }
                // A blocking call made from the task, on its own thread.
                _ = try Self.blockingRead(db)
            }
            let spans = tracer.spans
            let children = spans.filter { $0.id != request.id && $0.operationName != "CREATE" }
            #expect(children.map(\.operationName) == ["INSERT", "UPDATE"] + Array(repeating: "SELECT", count: 10))
            #expect(children.allSatisfy { $0.parentID == request.id })
            #expect(spans.first { $0.operationName == "CREATE" }?.parentID == nil)
        }
    }

    /// The blocking `read`, called from async code.
    static func blockingRead(_ db: Database) throws -> [Row] {
        try db.read { conn in try conn.fetchAll(sql: "SELECT name FROM t") }
    }

    @Test
    func operationNamesAndErrorTypes() {
        #expect(TelemetryInstrumentation.operationName("  select 1") == "SELECT")
        #expect(TelemetryInstrumentation.operationName("-- note\n/* more */ INSERT INTO t VALUES (1)") == "INSERT")
        #expect(TelemetryInstrumentation.operationName("WITH x AS (SELECT 1) SELECT * FROM x") == "WITH")
        #expect(TelemetryInstrumentation.operationName("frobnicate the table") == nil)
        #expect(TelemetryInstrumentation.operationName("/* unterminated") == nil)
        #expect(TelemetryInstrumentation.errorType(DatabaseError.poolTimeout(waitedSeconds: 1, poolSize: 2)) == "pool_timeout")
        #expect(TelemetryInstrumentation.errorType(DatabaseError.constraintViolation(.foreignKey, DatabaseErrorContext(message: "")))
                    == "foreign_key_violation")
        #expect(TelemetryInstrumentation.system(.postgres) == "postgresql")
        #expect(TelemetryInstrumentation.system(.sqlite) == "sqlite")
    }
}

/// What a helper thread reports, waited for with a timeout.
final class ThreadOutcome: @unchecked Sendable {
    // @unchecked: guarded by `condition`.
    private let condition = NSCondition()
    private var value: String?

    func set(_ value: String) {
        condition.lock()
        self.value = value
        condition.broadcast()
        condition.unlock()
    }

    /// The value, or nil when none came within `seconds`.
    func wait(seconds: Double) -> String? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while value == nil {
            if !condition.wait(until: deadline) { break }
        }
        return value
    }
}
