import Foundation
import RawSQLite

/// The SQLite baseline: sqlite3 used directly, one reused prepared statement in one
/// transaction, rows decoded by hand into `BenchRecord`.
struct RawSQLiteSubject: BenchSubject {
    let name = "raw"
    let backend = Backend.sqlite

    var runsConcurrent: Bool { true }

    func unsupportedReason(_ workload: Workload) -> String? { nil }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        try RawSQLiteSession(path: target.sqlitePath)
    }
}

/// The `concurrent` baseline: one sqlite3 connection per thread, each with its lookup prepared;
/// every lookup is a statement of its own (autocommit), as a server's request would be.
final class RawSQLiteLookupThread {
    private let database: RawSQLiteDatabase
    private let statement: RawSQLiteStatement

    init(path: String) throws {
        database = try RawSQLiteDatabase(path: path)
        try database.execute("PRAGMA busy_timeout = 5000")
        statement = try database.prepare("SELECT \(BenchSchema.recordColumns) FROM bench WHERE id = ?")
    }

    /// Looks up the records of `indices` and returns their checksum.
    func run(_ indices: StrideTo<Int>, tableRows: Int) throws -> Checksum {
        var checksum = Checksum()
        for index in indices {
            let id = BenchData.lookupID(index, tableRows: tableRows)
            sqlite3_bind_int64(statement.statement, 1, id)
            guard try statement.step() else {
                statement.reset()
                throw BenchError("raw sqlite: no record \(id)")
            }
            checksum.add(try statement.record())
            statement.reset()
        }
        return checksum
    }
}

/// One sqlite3 connection with the same settings every SQLite subject uses (WAL, synchronous
/// NORMAL).
final class RawSQLiteSession: BenchSession {
    private let database: RawSQLiteDatabase
    private let dateBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: DateText.length)
    private let path: String
    /// The `concurrent` workload's threads' connections, opened at its first run.
    private var lookupThreads: [ThreadOwned<RawSQLiteLookupThread>] = []

    init(path: String) throws {
        self.path = path
        database = try RawSQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON")
    }

    deinit { dateBuffer.deallocate() }

    func close() async throws {}

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        var checksum = Checksum()
        switch workload {
        case .insert:
            let records = BenchData.records(count: spec.rows)
            let statement = try database.prepare("INSERT INTO bench (\(BenchSchema.recordColumns)) VALUES (?, ?, ?, ?, ?, ?)")
            try transaction {
                for record in records {
                    try statement.bindRecordAndRun(record, dateBuffer: dateBuffer)
                    checksum.add(record)
                }
            }
        case .upsert, .upsertBatch:
            // upsert-batch runs the upsert's statement: raw has one way to upsert.
            let records = BenchData.records(count: spec.rows, generation: 1)
            let statement = try database.prepare("""
                INSERT INTO bench (\(BenchSchema.recordColumns)) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
                name = excluded.name, score = excluded.score, created_at = excluded.created_at, rank = excluded.rank,
                payload = excluded.payload
                """)
            try transaction {
                for record in records {
                    try statement.bindRecordAndRun(record, dateBuffer: dateBuffer)
                    checksum.add(record)
                }
            }
        case .update:
            let records = BenchData.records(count: spec.rows, generation: 1)
            let statement = try database.prepare(
                "UPDATE bench SET name = ?2, score = ?3, created_at = ?4, rank = ?5, payload = ?6 WHERE id = ?1")
            try transaction {
                for record in records {
                    try statement.bindRecordAndRun(record, dateBuffer: dateBuffer)
                    checksum.add(record)
                }
            }
        case .delete:
            let statement = try database.prepare("DELETE FROM bench WHERE id = ?")
            try transaction {
                for id in 1...Int64(spec.rows) {
                    sqlite3_bind_int64(statement.statement, 1, id)
                    let code = sqlite3_step(statement.statement)
                    statement.reset()
                    guard code == SQLITE_DONE else { throw database.error("delete \(id)") }
                    checksum.add(hash: UInt64(id))
                }
            }
        case .fetch, .stream:
            // Fetch keeps the records (an array of model values); stream folds each one in and
            // drops it, so memory stays flat.
            let statement = try database.prepare("SELECT \(BenchSchema.recordColumns) FROM bench ORDER BY id")
            try transaction {
                if workload == .fetch {
                    var records: [BenchRecord] = []
                    while try statement.step() { records.append(try statement.record()) }
                    for record in records { checksum.add(record) }
                } else {
                    while try statement.step() { checksum.add(try statement.record()) }
                }
            }
        case .lookup:
            let statement = try database.prepare("SELECT \(BenchSchema.recordColumns) FROM bench WHERE id = ?")
            try transaction {
                for index in 0..<spec.rows {
                    sqlite3_bind_int64(statement.statement, 1, BenchData.lookupID(index, tableRows: spec.tableRows))
                    guard try statement.step() else { throw BenchError("raw sqlite: lookup found no row") }
                    checksum.add(try statement.record())
                    statement.reset()
                }
            }
        case .query:
            let statement = try database.prepare(BenchSchema.querySQLite)
            try transaction {
                for index in 0..<spec.rows {
                    sqlite3_bind_double(statement.statement, 1, BenchData.queryLowerBound(index))
                    var page: [BenchRecord] = []
                    page.reserveCapacity(BenchData.queryLimit)
                    while try statement.step() { page.append(try statement.record()) }
                    statement.reset()
                    for record in page { checksum.add(record) }
                }
            }
        case .concurrent:
            if lookupThreads.isEmpty {
                lookupThreads = try (0..<ConcurrentLookups.poolSize).map { _ in ThreadOwned(try RawSQLiteLookupThread(path: path)) }
            }
            let threads = lookupThreads
            let (rows, tableRows) = (spec.rows, spec.tableRows)
            checksum = try await ConcurrentLookups.runThreads(threads.count) { thread in
                try threads[thread].value.run(stride(from: thread, to: rows, by: threads.count), tableRows: tableRows)
            }
        case .jsonFilter:
            guard !spec.jsonContainment else { throw BenchError("raw sqlite: containment runs on PostgreSQL only") }
            // The indexed path spelled as the index holds it; each document decoded with
            // Foundation's JSONDecoder, as every subject decodes it.
            let statement = try database.prepare(BenchSchema.jsonFilterSQLite)
            let decoder = JSONDecoder()
            try transaction {
                for index in 0..<spec.rows {
                    sqlite3_bind_int64(statement.statement, 1, JSONData.bucket(forQuery: index, tableRows: spec.tableRows))
                    var page: [BenchJSONRecord] = []
                    page.reserveCapacity(JSONData.limit)
                    while try statement.step() {
                        let id = sqlite3_column_int64(statement.statement, 0)
                        let bytes = Int(sqlite3_column_bytes(statement.statement, 1))
                        let text = sqlite3_column_blob(statement.statement, 1).map { Data(bytes: $0, count: bytes) } ?? Data()
                        page.append(BenchJSONRecord(id: id, doc: try decoder.decode(BenchDocument.self, from: text)))
                    }
                    statement.reset()
                    for record in page { checksum.add(record) }
                }
            }
        case .ftsQuery:
            // FTS5 directly: the FTS5 table joined to its content table, ranked by bm25.
            let statement = try database.prepare(BenchSchema.searchSQLite)
            let queries = SearchData.queries(spec)
            var results: [[Int64]] = []
            results.reserveCapacity(queries.count)
            try transaction {
                for (index, query) in queries.enumerated() {
                    sqlite3_bind_text(statement.statement, 1, query.text, -1, sqliteTransient)
                    var page: [BenchTextRecord] = []
                    page.reserveCapacity(SearchData.limit)
                    while try statement.step() {
                        page.append(BenchTextRecord(id: sqlite3_column_int64(statement.statement, 0), title: statement.text(1),
                                                    body: statement.text(2)))
                    }
                    statement.reset()
                    for (position, record) in page.enumerated() { checksum.add(search: record, query: index, position: position) }
                    results.append(page.map(\.id))
                }
            }
            return WorkloadOutput(checksum: checksum, searchResults: results)
        case .oneToMany:
            let statement = try database.prepare(BenchSchema.oneToManyJoin)
            var grouper = ParentGrouper()
            try transaction {
                let handle = statement.statement
                while try statement.step() {
                    let parent = BenchParent(id: sqlite3_column_int64(handle, 0), name: statement.text(1))
                    let child: BenchChild? = sqlite3_column_type(handle, 2) == SQLITE_NULL ? nil : BenchChild(
                        id: sqlite3_column_int64(handle, 2), parentID: sqlite3_column_int64(handle, 3),
                        name: statement.text(4), score: sqlite3_column_double(handle, 5))
                    grouper.add(parent: parent, child: child)
                }
            }
            for parent in grouper.result { checksum.add(parent) }
        }
        return WorkloadOutput(checksum: checksum)
    }

    private func transaction(_ body: () throws -> Void) throws {
        try database.execute("BEGIN")
        do {
            try body()
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }
}
