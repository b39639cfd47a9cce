import DriverPostgres
import DriverSQLite
import Foundation

/// Unity's core API, the layer every flavor is built on, used as its README shows: a
/// ``Database`` with a pool, statements written as AST values (`SQLSelect`, `SQLInsert`,
/// `SQLUpdate`, `SQLDelete`), rows decoded by hand with `row.decode(_:at:)`, batches through
/// `Connection.executeBatch` (one reused prepared statement on SQLite, one pipeline on
/// PostgreSQL) inside `db.write`, and `Connection.cursor` for streaming.
///
/// In the `concurrent` workload each lookup is one call: `try await db.read { conn in try
/// conn.fetchOne(...) }` (the README's form, subject `core`) or the async single-statement
/// `try await db.fetchOne(...)` (subject `core-async`, which runs that workload only), and the
/// same with `DatabaseConfiguration.pipelinesConcurrentQueries` on (subject `core-pipelined`,
/// PostgreSQL only: queued lookups share a pipeline; SQLite ignores the setting).
///
/// What the pooler setting costs: `core-pooler` runs `core`'s insert, fetch, lookup and
/// concurrent workloads with `DatabaseConfiguration.poolerMode = .transaction` straight to the
/// server, and `core-pgbouncer` the same through PgBouncer in transaction mode (its URL from
/// `UNITY_PGBOUNCER_POOLED_URL`, else `UNITY_PGBOUNCER_URL`, which scripts/with-postgres sets;
/// without either it is skipped). PostgreSQL only; the ratio is to raw libpq straight to the
/// server, as for every subject.
///
/// What metrics and tracing cost: `core-telemetry` (built with `--traits Telemetry`) runs
/// `core`'s insert, lookup and concurrent workloads with `UnityTelemetry`'s
/// `TelemetryInstrumentation` on (see TelemetrySupport.swift); `core` itself runs with none.
/// `core-copy` runs the insert workload through `Connection.copy(into:columns:rows:)` (binary
/// COPY on PostgreSQL, a prepared INSERT per row on SQLite) whatever the batch's size: beside
/// `core`'s pipelined INSERTs at small `--rows` it shows where COPY starts to pay
/// (`Connection.copyThreshold`).
struct CoreSubject: BenchSubject {
    /// How the `concurrent` workload calls Unity, or which pooler setting the core runs with.
    enum Form: Sendable { case readClosure, asyncStatement, pipelinedStatement, pooler, pgbouncer, telemetry, copy }

    /// The workloads the pooler forms run: lookups, fetch and insert.
    static let poolerWorkloads: Set<Workload> = [.insert, .fetch, .lookup, .concurrent]

    /// The workloads `core-telemetry` runs: inserts and lookups, one at a time and concurrent.
    static let telemetryWorkloads: Set<Workload> = [.insert, .lookup, .concurrent]

    /// PgBouncer's URL for `core-pgbouncer`, from the environment scripts/with-postgres sets.
    static var pgbouncerURL: String? {
        let environment = ProcessInfo.processInfo.environment
        return [environment["UNITY_PGBOUNCER_POOLED_URL"], environment["UNITY_PGBOUNCER_URL"]]
            .compactMap { $0 }.first { !$0.isEmpty }
    }

    let backend: Backend
    var form: Form = .readClosure
    var name: String {
        switch form {
        case .readClosure: "core"
        case .asyncStatement: "core-async"
        case .pipelinedStatement: "core-pipelined"
        case .pooler: "core-pooler"
        case .pgbouncer: "core-pgbouncer"
        case .telemetry: "core-telemetry"
        case .copy: "core-copy"
        }
    }
    var runsConcurrent: Bool { true }
    var concurrentOnly: Bool { form == .asyncStatement || form == .pipelinedStatement }

    func unsupportedReason(_ workload: Workload) -> String? {
        if form == .telemetry {
            return Self.telemetryWorkloads.contains(workload) ? nil : "\(name) measures metrics and tracing on inserts and lookups"
        }
        if form == .pooler || form == .pgbouncer {
            if !Self.poolerWorkloads.contains(workload) { return "\(name) measures the pooler setting on insert, fetch and lookups" }
            if form == .pgbouncer && Self.pgbouncerURL == nil {
                return "UNITY_PGBOUNCER_URL is not set (scripts/with-postgres sets it when PgBouncer is installed)"
            }
            return nil
        }
        if form == .copy { return workload == .insert ? nil : "core-copy measures the insert workload only" }
        if concurrentOnly && workload != .concurrent { return "\(name) runs the concurrent workload only" }
        return workload == .upsert ? "the upsert workload measures the SQL-first flavor's duplicate rules; upsert-batch measures the core's upsert call" : nil
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        // A pool of 8 (SQLite: 8 readers beside the writer): the concurrent workload's pool.
        // The other workloads use one connection at a time, so the size does not change them.
        let pool = ConcurrentLookups.poolSize
        let pooled = form == .pooler || form == .pgbouncer
        let configuration = DatabaseConfiguration(pipelinesConcurrentQueries: form == .pipelinedStatement,
                                                  poolerMode: pooled ? .transaction : .none,
                                                  instrumentation: form == .telemetry ? BenchTelemetry.instrumentation() : nil)
        switch backend {
        case .sqlite:
            return CoreSession(database: try Database(driver: SQLiteDriver(path: target.sqlitePath, readers: pool), configuration: configuration), form: form)
        case .postgres:
            guard let url = form == .pgbouncer ? Self.pgbouncerURL : target.postgresURL else {
                throw BenchError(form == .pgbouncer ? "no PgBouncer URL (UNITY_PGBOUNCER_URL)" : "no PostgreSQL URL")
            }
            return CoreSession(database: try Database(driver: PostgresDriver(url, connections: pool), configuration: configuration), form: form)
        }
    }
}

/// One ``Database`` (a pool) for all iterations of a workload.
final class CoreSession: BenchSession {
    private let database: Database
    private let form: CoreSubject.Form

    init(database: Database, form: CoreSubject.Form) {
        self.database = database
        self.form = form
    }

    func close() async throws { database.close() }

    /// The record columns, in `BenchRecord` order.
    static let recordColumns: [SQLSelectColumn] = ["id", "name", "score", "created_at", "rank", "payload"].map {
        SQLSelectColumn.column($0)
    }

    /// `SELECT <record columns> FROM bench`.
    static let selectRecords = SQLSelect(from: "bench").columns(recordColumns)

    /// Decodes a row whose columns are `recordColumns`, by position.
    @inline(__always)
    static func record(_ row: Row) throws -> BenchRecord {
        BenchRecord(
            id: try row.decode(Int64.self, at: 0),
            name: try row.decode(String.self, at: 1),
            score: try row.decode(Double.self, at: 2),
            createdAt: try row.decode(Date.self, at: 3),
            rank: try row.decode(Int64?.self, at: 4),
            payload: try row.decode(Data.self, at: 5))
    }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        let rows = spec.rows
        let tableRows = spec.tableRows
        let checksum: Checksum
        switch workload {
        case .upsert:
            throw BenchError("core: no upsert workload")
        case .insert where form == .copy:
            let records = BenchData.records(count: rows)
            checksum = try await database.withConnection { conn in
                var checksum = Checksum()
                try conn.copy(into: "bench", columns: ["id", "name", "score", "created_at", "rank", "payload"],
                              rows: records.lazy.map { record in
                                  checksum.add(record)
                                  return [.integer(record.id), .text(record.name), .double(record.score), .date(record.createdAt),
                                          record.rank.databaseValue, .blob(record.payload)]
                              })
                return checksum
            }
        case .upsertBatch:
            // The core's upsert call: rows in, the rows as stored (RETURNING) out.
            let records = BenchData.records(count: rows, generation: 1)
            checksum = try await database.write { conn in
                let values: [[DatabaseValue]] = records.map {
                    [.integer($0.id), .text($0.name), .double($0.score), .date($0.createdAt), $0.rank.databaseValue, .blob($0.payload)]
                }
                let stored = try conn.upsert(into: "bench", columns: ["id", "name", "score", "created_at", "rank", "payload"],
                                             rows: values, onConflict: ["id"],
                                             action: .update(columns: ["name", "score", "created_at", "rank", "payload"], where: nil),
                                             returning: Self.recordColumns)
                var checksum = Checksum()
                for result in stored { checksum.add(try Self.record(result.row)) }
                return checksum
            }
        case .insert:
            let records = BenchData.records(count: rows)
            checksum = try await database.write { conn in
                var checksum = Checksum()
                var statements: [SQLStatement] = []
                statements.reserveCapacity(records.count)
                for record in records {
                    statements.append(.insert(SQLInsert(into: "bench", values: [
                        "id": .integer(record.id), "name": .text(record.name), "score": .double(record.score),
                        "created_at": .date(record.createdAt), "rank": record.rank.databaseValue,
                        "payload": .blob(record.payload),
                    ])))
                    checksum.add(record)
                }
                try conn.executeBatch(statements)
                return checksum
            }
        case .update:
            let records = BenchData.records(count: rows, generation: 1)
            checksum = try await database.write { conn in
                var checksum = Checksum()
                var statements: [SQLStatement] = []
                statements.reserveCapacity(records.count)
                for record in records {
                    statements.append(.update(SQLUpdate("bench", set: [
                        SQLAssignment("name", value: record.name), SQLAssignment("score", value: record.score),
                        SQLAssignment("created_at", value: record.createdAt), SQLAssignment("rank", value: record.rank),
                        SQLAssignment("payload", value: record.payload),
                    ], where: SQLExpression.column("id").equals(record.id))))
                    checksum.add(record)
                }
                try conn.executeBatch(statements)
                return checksum
            }
        case .delete:
            checksum = try await database.write { conn in
                var checksum = Checksum()
                var statements: [SQLStatement] = []
                statements.reserveCapacity(rows)
                for id in 1...Int64(rows) {
                    statements.append(.delete(SQLDelete(from: "bench", where: SQLExpression.column("id").equals(id))))
                    checksum.add(hash: UInt64(id))
                }
                try conn.executeBatch(statements)
                return checksum
            }
        case .fetch:
            let records = try await database.read { conn in
                var records: [BenchRecord] = []
                try conn.forEachRow(.select(Self.selectRecords.orderBy(SQLExpression.column("id").asc))) { row in
                    records.append(try Self.record(row))
                }
                return records
            }
            var sum = Checksum()
            for record in records { sum.add(record) }
            checksum = sum
        case .stream:
            checksum = try await database.read { conn in
                var checksum = Checksum()
                let cursor = try conn.cursor(.select(Self.selectRecords.orderBy(SQLExpression.column("id").asc)))
                while let row = try cursor.next() { checksum.add(try Self.record(row)) }
                return checksum
            }
        case .lookup:
            checksum = try await database.read { conn in
                var checksum = Checksum()
                for index in 0..<rows {
                    let id = BenchData.lookupID(index, tableRows: tableRows)
                    guard let row = try conn.fetchOne(.select(Self.selectRecords.where(SQLExpression.column("id").equals(id))))
                    else { throw BenchError("core: no record \(id)") }
                    checksum.add(try Self.record(row))
                }
                return checksum
            }
        case .query:
            checksum = try await database.read { conn in
                var checksum = Checksum()
                for index in 0..<rows {
                    let query = Self.selectRecords
                        .where(SQLExpression.column("score").greaterThanOrEquals(BenchData.queryLowerBound(index)))
                        .orderBy(SQLExpression.column("score").asc)
                        .limit(BenchData.queryLimit)
                    var page: [BenchRecord] = []
                    try conn.forEachRow(.select(query)) { row in page.append(try Self.record(row)) }
                    for record in page { checksum.add(record) }
                }
                return checksum
            }
        case .concurrent:
            let database = database
            let tableRows = spec.tableRows
            switch form {
            case .readClosure, .pooler, .pgbouncer, .telemetry, .copy:
                checksum = try await ConcurrentLookups.runTasks(spec.tasks, rows: rows) { indices in
                    var checksum = Checksum()
                    for index in indices {
                        let id = BenchData.lookupID(index, tableRows: tableRows)
                        let record = try await database.read { conn in
                            guard let row = try conn.fetchOne(.select(Self.selectRecords.where(SQLExpression.column("id").equals(id))))
                            else { throw BenchError("core: no record \(id)") }
                            return try Self.record(row)
                        }
                        checksum.add(record)
                    }
                    return checksum
                }
            case .asyncStatement, .pipelinedStatement:
                let name = form == .asyncStatement ? "core-async" : "core-pipelined"
                checksum = try await ConcurrentLookups.runTasks(spec.tasks, rows: rows) { indices in
                    var checksum = Checksum()
                    for index in indices {
                        let id = BenchData.lookupID(index, tableRows: tableRows)
                        guard let row = try await database.fetchOne(.select(Self.selectRecords.where(SQLExpression.column("id").equals(id))))
                        else { throw BenchError("\(name): no record \(id)") }
                        checksum.add(try Self.record(row))
                    }
                    return checksum
                }
            }
        case .jsonFilter:
            // The AST's JSON nodes: `jsonValue(at:as:)` (the expression the SQLJSONIndex holds)
            // or `jsonContains`; each document decoded as a `DatabaseJSONConvertible`.
            let containment = spec.jsonContainment
            checksum = try await database.read { conn in
                var checksum = Checksum()
                for index in 0..<rows {
                    let query = containment
                        ? DocumentStatements.jsonContains(tag: JSONData.tag(forQuery: index, tableRows: tableRows))
                        : DocumentStatements.jsonFilter(bucket: JSONData.bucket(forQuery: index, tableRows: tableRows))
                    var page: [BenchJSONRecord] = []
                    try conn.forEachRow(.select(query)) { row in
                        page.append(BenchJSONRecord(id: try row.decode(Int64.self, at: 0), doc: try row.decode(BenchDocument.self, at: 1)))
                    }
                    for record in page { checksum.add(record) }
                }
                return checksum
            }
        case .ftsQuery:
            // The AST's full-text node: `FullTextIndex.matches`, ordered by `relevance`, ties by id.
            let queries = SearchData.queries(spec)
            checksum = try await database.read { conn in
                var checksum = Checksum()
                for (index, query) in queries.enumerated() {
                    var page: [BenchTextRecord] = []
                    try conn.forEachRow(.select(DocumentStatements.search(query.text))) { row in
                        page.append(BenchTextRecord(id: try row.decode(Int64.self, at: 0), title: try row.decode(String.self, at: 1),
                                                    body: try row.decode(String.self, at: 2)))
                    }
                    for (position, record) in page.enumerated() { checksum.add(search: record, query: index, position: position) }
                }
                return checksum
            }
        case .oneToMany:
            // One LEFT JOIN, grouped while reading (rows come ordered by parent).
            let parents = try await database.read { conn in
                let query = SQLSelect(from: "bench_parent", as: "p")
                    .columns(.expression(.column("p", "id")), .expression(.column("p", "name")),
                             .expression(.column("c", "id")), .expression(.column("c", "parent_id")),
                             .expression(.column("c", "name")), .expression(.column("c", "score")))
                    .join(.left, "bench_child", as: "c", on: SQLExpression.column("c", "parent_id").equals(.column("p", "id")))
                    .orderBy(SQLExpression.column("p", "id").asc)
                var grouper = ParentGrouper()
                try conn.forEachRow(.select(query)) { row in
                    let parent = BenchParent(id: try row.decode(Int64.self, at: 0), name: try row.decode(String.self, at: 1))
                    let child: BenchChild? = row[2].isNull ? nil : BenchChild(
                        id: try row.decode(Int64.self, at: 2), parentID: try row.decode(Int64.self, at: 3),
                        name: try row.decode(String.self, at: 4), score: try row.decode(Double.self, at: 5))
                    grouper.add(parent: parent, child: child)
                }
                return grouper.result
            }
            var sum = Checksum()
            for parent in parents { sum.add(parent) }
            checksum = sum
        }
        return WorkloadOutput(checksum: checksum)
    }
}
