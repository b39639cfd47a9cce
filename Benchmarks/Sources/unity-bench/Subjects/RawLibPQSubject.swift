import Foundation
import RawLibPQ

/// The PostgreSQL baseline: libpq used directly, binary parameters and binary results.
///
/// Two write paths are measured: `raw` sends one prepared statement per row in pipeline mode
/// (batches of ``RawLibPQSession/pipelineBatch`` statements per sync, all in one transaction);
/// `raw-copy` uses binary `COPY` (inserts straight into the table; updates and deletes copy into
/// a temporary table and apply one set-based statement). Ratios divide by `raw`.
struct RawLibPQSubject: BenchSubject {
    /// How writes are sent.
    enum Mode: Sendable { case pipeline, copy }

    let mode: Mode
    var name: String { mode == .pipeline ? "raw" : "raw-copy" }
    let backend = Backend.postgres
    var runsConcurrent: Bool { mode == .pipeline }

    func unsupportedReason(_ workload: Workload) -> String? {
        guard mode == .copy else { return nil }
        switch workload {
        case .insert, .update, .delete: return nil
        case .upsert, .upsertBatch: return "COPY has no upsert; the pipelined \"raw\" is the baseline"
        default: return "COPY is a write path; reads are measured by \"raw\""
        }
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
        return try RawLibPQSession(connection: RawPGConnection(url: url), mode: mode, url: url)
    }
}

/// One libpq connection with the benchmark's statements prepared.
final class RawLibPQSession: BenchSession {
    /// Statements sent between two pipeline syncs.
    static let pipelineBatch = 1_000

    private let connection: RawPGConnection
    private let mode: RawLibPQSubject.Mode
    private var handle: OpaquePointer { connection.handle }
    private let url: String
    /// The `concurrent` workload's threads' connections, opened at its first run.
    private var lookupThreads: [ThreadOwned<RawPGLookupThread>] = []
    /// The statements prepared by ``prepareOnce(_:_:types:)``.
    private var prepared: Set<String> = []

    init(connection: RawPGConnection, mode: RawLibPQSubject.Mode, url: String) throws {
        self.connection = connection
        self.mode = mode
        self.url = url
        let record = [PGType.int8, PGType.text, PGType.float8, PGType.timestamptz, PGType.int8, PGType.bytea]
        let columns = BenchSchema.recordColumns
        try connection.prepare(name: "insert", sql: "INSERT INTO bench (\(columns)) VALUES ($1, $2, $3, $4, $5, $6)", types: record)
        try connection.prepare(
            name: "update",
            sql: "UPDATE bench SET name = $2, score = $3, created_at = $4, rank = $5, payload = $6 WHERE id = $1",
            types: record)
        try connection.prepare(
            name: "upsert",
            sql: """
                INSERT INTO bench (\(columns)) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET
                name = excluded.name, score = excluded.score, created_at = excluded.created_at, rank = excluded.rank,
                payload = excluded.payload
                """,
            types: record)
        try connection.prepare(name: "delete", sql: "DELETE FROM bench WHERE id = $1", types: [PGType.int8])
        try connection.prepare(name: "lookup", sql: "SELECT \(columns) FROM bench WHERE id = $1", types: [PGType.int8])
        try connection.prepare(
            name: "query",
            sql: "SELECT \(columns) FROM bench WHERE score >= $1 ORDER BY score LIMIT \(BenchData.queryLimit)",
            types: [PGType.float8])
    }

    func close() async throws {}

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        var checksum = Checksum()
        switch (workload, mode) {
        case (.insert, .pipeline), (.update, .pipeline), (.upsert, .pipeline), (.upsertBatch, .pipeline):
            // upsert-batch runs the upsert's statement: raw has one way to upsert.
            let records = BenchData.records(count: spec.rows, generation: workload == .insert ? 0 : 1)
            try pipelineTransaction(count: records.count, statement: workload == .upsertBatch ? Workload.upsert.rawValue : workload.rawValue,
                                    parameterCount: 6) { index, parameters in
                parameters.set(record: records[index])
                checksum.add(records[index])
            }
        case (.delete, .pipeline):
            try pipelineTransaction(count: spec.rows, statement: "delete", parameterCount: 1) { index, parameters in
                parameters.set(0, int64: Int64(index) + 1)
                checksum.add(hash: UInt64(index + 1))
            }
        case (.insert, .copy), (.update, .copy):
            let records = BenchData.records(count: spec.rows, generation: workload == .update ? 1 : 0)
            var copy = PGBinaryCopy(reservingCapacity: records.count * 120)
            for record in records {
                copy.appendRecord(record)
                checksum.add(record)
            }
            try connection.execute("BEGIN")
            if workload == .insert {
                try connection.copyIn("COPY bench (\(BenchSchema.recordColumns)) FROM STDIN (FORMAT binary)", copy)
            } else {
                try connection.execute("CREATE TEMP TABLE bench_update (LIKE bench) ON COMMIT DROP")
                try connection.copyIn("COPY bench_update (\(BenchSchema.recordColumns)) FROM STDIN (FORMAT binary)", copy)
                try connection.execute("""
                    UPDATE bench SET name = u.name, score = u.score, created_at = u.created_at, rank = u.rank,
                    payload = u.payload FROM bench_update u WHERE bench.id = u.id
                    """)
            }
            try connection.execute("COMMIT")
        case (.upsert, .copy), (.upsertBatch, .copy):
            throw BenchError("raw-copy: no upsert workload")
        case (.delete, .copy):
            var copy = PGBinaryCopy(reservingCapacity: spec.rows * 14)
            for id in 1...Int64(spec.rows) {
                copy.beginTuple(fieldCount: 1)
                copy.appendInt64Field(id)
                checksum.add(hash: UInt64(id))
            }
            try connection.execute("BEGIN")
            try connection.execute("CREATE TEMP TABLE bench_delete (id BIGINT) ON COMMIT DROP")
            try connection.copyIn("COPY bench_delete (id) FROM STDIN (FORMAT binary)", copy)
            try connection.execute("DELETE FROM bench USING bench_delete d WHERE bench.id = d.id")
            try connection.execute("COMMIT")
        case (.fetch, _):
            let result = try query("SELECT \(BenchSchema.recordColumns) FROM bench ORDER BY id")
            defer { PQclear(result.result) }
            var records: [BenchRecord] = []
            records.reserveCapacity(Int(result.rowCount))
            for row in 0..<result.rowCount { records.append(result.record(row)) }
            for record in records { checksum.add(record) }
        case (.stream, _):
            // Single-row mode: libpq hands over one row at a time, so memory stays flat.
            guard PQsendQueryParams(handle, "SELECT \(BenchSchema.recordColumns) FROM bench ORDER BY id",
                                    0, nil, nil, nil, nil, 1) == 1,
                  PQsetSingleRowMode(handle) == 1
            else { throw BenchError("libpq: \(connection.errorMessage)") }
            var failure: String?
            while let result = PQgetResult(handle) {
                switch PQresultStatus(result) {
                case PGRES_SINGLE_TUPLE: checksum.add(PGBinaryResult(result: result).record(0))
                case PGRES_TUPLES_OK: break
                default: failure = connection.errorMessage
                }
                PQclear(result)
            }
            if let failure { throw BenchError("libpq stream: \(failure)") }
        case (.lookup, _):
            var parameters = PGParameters(count: 1)
            for index in 0..<spec.rows {
                parameters.reset()
                parameters.set(0, int64: BenchData.lookupID(index, tableRows: spec.tableRows))
                let result = try execPrepared("lookup", &parameters)
                defer { PQclear(result.result) }
                guard result.rowCount == 1 else { throw BenchError("libpq: lookup found \(result.rowCount) rows") }
                checksum.add(result.record(0))
            }
        case (.query, _):
            var parameters = PGParameters(count: 1)
            for index in 0..<spec.rows {
                parameters.reset()
                parameters.set(0, double: BenchData.queryLowerBound(index))
                let result = try execPrepared("query", &parameters)
                defer { PQclear(result.result) }
                var page: [BenchRecord] = []
                page.reserveCapacity(Int(result.rowCount))
                for row in 0..<result.rowCount { page.append(result.record(row)) }
                for record in page { checksum.add(record) }
            }
        case (.concurrent, _):
            if lookupThreads.isEmpty {
                lookupThreads = try (0..<ConcurrentLookups.poolSize).map { _ in ThreadOwned(try RawPGLookupThread(url: url)) }
            }
            let threads = lookupThreads
            let (rows, tableRows) = (spec.rows, spec.tableRows)
            checksum = try await ConcurrentLookups.runThreads(threads.count) { thread in
                try threads[thread].value.run(stride(from: thread, to: rows, by: threads.count), tableRows: tableRows)
            }
        case (.jsonFilter, _):
            // The indexed path spelled as the index holds it (`->`, a cast), binary results: jsonb
            // is a version byte and the text, decoded with Foundation's JSONDecoder as every
            // subject decodes it. Containment is `@>` with the tag's document as a parameter.
            let name = spec.jsonContainment ? "json_contains" : "json_filter"
            try prepareOnce(name, spec.jsonContainment ? BenchSchema.jsonContainsPostgres : BenchSchema.jsonFilterPostgres,
                            types: [spec.jsonContainment ? PGType.text : PGType.int8])
            let decoder = JSONDecoder()
            var parameters = PGParameters(count: 1)
            for index in 0..<spec.rows {
                parameters.reset()
                if spec.jsonContainment {
                    parameters.set(0, text: JSONData.containmentJSON(tag: JSONData.tag(forQuery: index, tableRows: spec.tableRows)))
                } else {
                    parameters.set(0, int64: JSONData.bucket(forQuery: index, tableRows: spec.tableRows))
                }
                let result = try execPrepared(name, &parameters)
                defer { PQclear(result.result) }
                var page: [BenchJSONRecord] = []
                page.reserveCapacity(Int(result.rowCount))
                for row in 0..<result.rowCount {
                    let jsonb = result.data(row, 1)
                    guard jsonb.first == 1 else { throw BenchError("libpq: a jsonb value of version \(jsonb.first ?? 0)") }
                    page.append(BenchJSONRecord(id: result.int64(row, 0), doc: try decoder.decode(BenchDocument.self, from: jsonb.dropFirst())))
                }
                for record in page { checksum.add(record) }
            }
        case (.ftsQuery, _):
            // The GIN index's expression, a tsquery per kind as a libpq user writes it, ts_rank.
            for kind in [SearchQuery.Kind.word, .words, .prefix, .phrase] {
                try prepareOnce("search_\(kind)", BenchSchema.searchPostgres(BenchSchema.tsquery(kind)), types: [PGType.text])
            }
            let queries = SearchData.queries(spec)
            var results: [[Int64]] = []
            results.reserveCapacity(queries.count)
            var parameters = PGParameters(count: 1)
            for (index, query) in queries.enumerated() {
                parameters.reset()
                parameters.set(0, text: query.postgresText)
                let result = try execPrepared("search_\(query.kind)", &parameters)
                defer { PQclear(result.result) }
                var page: [BenchTextRecord] = []
                page.reserveCapacity(Int(result.rowCount))
                for row in 0..<result.rowCount {
                    page.append(BenchTextRecord(id: result.int64(row, 0), title: result.text(row, 1), body: result.text(row, 2)))
                }
                for (position, record) in page.enumerated() { checksum.add(search: record, query: index, position: position) }
                results.append(page.map(\.id))
            }
            return WorkloadOutput(checksum: checksum, searchResults: results)
        case (.oneToMany, _):
            let result = try query(BenchSchema.oneToManyJoin)
            defer { PQclear(result.result) }
            var grouper = ParentGrouper()
            for row in 0..<result.rowCount {
                let parent = BenchParent(id: result.int64(row, 0), name: result.text(row, 1))
                let child: BenchChild? = result.isNull(row, 2) ? nil : BenchChild(
                    id: result.int64(row, 2), parentID: result.int64(row, 3),
                    name: result.text(row, 4), score: result.double(row, 5))
                grouper.add(parent: parent, child: child)
            }
            for parent in grouper.result { checksum.add(parent) }
        }
        return WorkloadOutput(checksum: checksum)
    }

    /// Prepares `sql` as `name` the first time it is asked for: the tables of `json-filter` and
    /// `fts-query` exist only once the fixture has made them, after the session opened.
    private func prepareOnce(_ name: String, _ sql: String, types: [Oid]) throws {
        guard !prepared.contains(name) else { return }
        try connection.prepare(name: name, sql: sql, types: types)
        prepared.insert(name)
    }

    /// Runs a query without parameters, binary results.
    private func query(_ sql: String) throws -> PGBinaryResult {
        guard let result = PQexecParams(handle, sql, 0, nil, nil, nil, nil, 1) else {
            throw BenchError("libpq: \(connection.errorMessage)")
        }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else {
            PQclear(result)
            throw BenchError("libpq: \(connection.errorMessage) in \(sql)")
        }
        return PGBinaryResult(result: result)
    }

    /// Runs a prepared statement with binary parameters and results.
    private func execPrepared(_ name: String, _ parameters: inout PGParameters) throws -> PGBinaryResult {
        let result = parameters.withLibPQArrays { values, lengths, formats in
            PQexecPrepared(handle, name, 1, values, lengths, formats, 1)
        }
        guard let result else { throw BenchError("libpq: \(connection.errorMessage)") }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else {
            PQclear(result)
            throw BenchError("libpq: \(connection.errorMessage)")
        }
        return PGBinaryResult(result: result)
    }

    /// Sends `BEGIN`, `count` executions of the prepared `statement` and `COMMIT` in pipeline
    /// mode, syncing every ``pipelineBatch`` statements and checking every result.
    private func pipelineTransaction(
        count: Int, statement: String, parameterCount: Int, fill: (Int, inout PGParameters) -> Void
    ) throws {
        guard PQenterPipelineMode(handle) == 1 else { throw BenchError("libpq: cannot enter pipeline mode") }
        defer { PQexitPipelineMode(handle) }
        func send(_ sql: String) throws {
            guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0) == 1 else {
                throw BenchError("libpq: \(connection.errorMessage)")
            }
        }
        func sync() throws {
            guard PQpipelineSync(handle) == 1 else { throw BenchError("libpq: \(connection.errorMessage)") }
            var failure: String?
            while true {
                guard let result = PQgetResult(handle) else { continue }
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC { break }
                if status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED {
                    failure = failure ?? connection.errorMessage
                }
            }
            if let failure { throw BenchError("libpq pipeline: \(failure)") }
        }
        try send("BEGIN")
        var parameters = PGParameters(count: parameterCount)
        for index in 0..<count {
            parameters.reset()
            fill(index, &parameters)
            let sent = parameters.withLibPQArrays { pointers, lengths, formats in
                PQsendQueryPrepared(handle, statement, Int32(parameterCount), pointers, lengths, formats, 0)
            }
            guard sent == 1 else { throw BenchError("libpq: \(connection.errorMessage)") }
            if (index + 1) % Self.pipelineBatch == 0 { try sync() }
        }
        try send("COMMIT")
        try sync()
    }
}

/// The `concurrent` baseline: one libpq connection per thread with the lookup prepared, binary
/// parameters and results, one `PQexecPrepared` per lookup.
final class RawPGLookupThread {
    private let connection: RawPGConnection

    init(url: String) throws {
        connection = try RawPGConnection(url: url)
        try connection.prepare(name: "lookup", sql: "SELECT \(BenchSchema.recordColumns) FROM bench WHERE id = $1", types: [PGType.int8])
    }

    /// Looks up the records of `indices` and returns their checksum.
    func run(_ indices: StrideTo<Int>, tableRows: Int) throws -> Checksum {
        var checksum = Checksum()
        var parameters = PGParameters(count: 1)
        for index in indices {
            parameters.reset()
            parameters.set(0, int64: BenchData.lookupID(index, tableRows: tableRows))
            let result = parameters.withLibPQArrays { values, lengths, formats in
                PQexecPrepared(connection.handle, "lookup", 1, values, lengths, formats, 1)
            }
            guard let result else { throw BenchError("libpq: \(connection.errorMessage)") }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else {
                throw BenchError("libpq: lookup failed or found no row: \(connection.errorMessage)")
            }
            checksum.add(PGBinaryResult(result: result).record(0))
        }
        return checksum
    }
}
