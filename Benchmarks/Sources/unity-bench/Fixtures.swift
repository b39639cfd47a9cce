import Foundation
import RawLibPQ
import RawSQLite
import Unity

/// Puts a backend's tables into the state a workload starts from, untimed, with the raw C
/// library, and reads tables back for the correctness checks.
protocol BenchFixture: AnyObject {
    /// Seeds the tables for one timed run of `spec`.
    func prepare(_ spec: WorkloadSpec) throws
    /// The checksum of every record in `bench`.
    func benchTableChecksum() throws -> Checksum
}

/// What every subject must return and leave behind; the same for every backend.
enum Expectations {
    /// The checksum a correct subject returns for `spec`, nil for `fts-query`: the order of
    /// its results is the engine's ranking, so every subject must return the checksum of raw's
    /// results, which the harness checks against the generated documents (see ``SearchCorpus``).
    static func output(_ spec: WorkloadSpec) -> Checksum? {
        var checksum = Checksum()
        switch spec.workload {
        case .jsonFilter:
            return JSONData.expected(spec)
        case .ftsQuery:
            return nil
        case .insert, .fetch, .stream:
            for id in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 { checksum.add(BenchData.record(id: id)) }
        case .update, .upsert, .upsertBatch:
            for id in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 { checksum.add(BenchData.record(id: id, generation: 1)) }
        case .delete:
            for id in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 { checksum.add(hash: UInt64(id)) }
        case .lookup, .concurrent:
            for index in 0..<spec.rows {
                checksum.add(BenchData.record(id: BenchData.lookupID(index, tableRows: spec.tableRows)))
            }
        case .query:
            let table = (1...Int64(max(spec.tableRows, 1))).map { BenchData.record(id: $0) }.sorted { $0.score < $1.score }
            for index in 0..<spec.rows {
                let bound = BenchData.queryLowerBound(index)
                var low = 0, high = table.count
                while low < high {
                    let middle = (low + high) / 2
                    if table[middle].score < bound { low = middle + 1 } else { high = middle }
                }
                for record in table[low..<min(low + BenchData.queryLimit, table.count)] { checksum.add(record) }
            }
        case .oneToMany:
            for parentID in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 {
                let children = (0..<Int64(spec.childrenPerParent)).map {
                    BenchData.child(parentID: parentID, index: $0, childrenPerParent: Int64(spec.childrenPerParent))
                }
                checksum.add(BenchParentWithChildren(parent: BenchData.parent(id: parentID), children: children))
            }
        }
        return checksum
    }

    /// The checksum of the `bench` table after a correct write workload, nil for reads.
    static func tableAfter(_ spec: WorkloadSpec) -> Checksum? {
        var checksum = Checksum()
        switch spec.workload {
        case .insert:
            for id in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 { checksum.add(BenchData.record(id: id)) }
        case .update, .upsert, .upsertBatch:
            for id in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 { checksum.add(BenchData.record(id: id, generation: 1)) }
        case .delete:
            for id in Int64(spec.rows + 1)...Int64(spec.rows + deleteSurvivors) { checksum.add(BenchData.record(id: id)) }
        default:
            return nil
        }
        return checksum
    }

    /// Records seeded beyond the ones the `delete` workload deletes, so deleting everything fails the check.
    static let deleteSurvivors = 100
}

/// The SQLite fixture.
final class SQLiteFixture: BenchFixture {
    private let database: RawSQLiteDatabase
    private let dateBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: DateText.length)
    /// Records 1...n of generation 0 are in `bench` (nil: unknown).
    private var seededRecords: Int?
    private var seededParents: Int?
    /// The sizes of `bench_json` and `bench_text` (nil: not made yet).
    private var seededJSON: Int?
    private var seededText: Int?

    init(path: String) throws {
        database = try RawSQLiteDatabase(path: path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        try database.execute(BenchSchema.sqlite)
    }

    deinit { dateBuffer.deallocate() }

    func prepare(_ spec: WorkloadSpec) throws {
        switch spec.workload {
        case .insert:
            try database.execute("DELETE FROM bench")
            seededRecords = nil
        case .fetch, .stream:
            try seed(records: spec.rows)
        case .lookup, .query, .concurrent:
            try seed(records: spec.tableRows)
        case .jsonFilter:
            try seedJSON(rows: spec.tableRows)
        case .ftsQuery:
            try seedText(rows: spec.tableRows)
        case .update:
            try seed(records: spec.rows, force: true)
            seededRecords = nil
        case .upsert, .upsertBatch:
            try seed(records: spec.tableRows, force: true)
            seededRecords = nil
        case .delete:
            try seed(records: spec.rows + Expectations.deleteSurvivors, force: true)
            seededRecords = nil
        case .oneToMany:
            guard seededParents != spec.rows else { return }
            try database.execute("BEGIN; DELETE FROM bench_child; DELETE FROM bench_parent;")
            let parent = try database.prepare("INSERT INTO bench_parent (id, name) VALUES (?, ?)")
            let child = try database.prepare("INSERT INTO bench_child (id, parent_id, name, score) VALUES (?, ?, ?, ?)")
            for parentID in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 {
                let value = BenchData.parent(id: parentID)
                sqlite3_bind_int64(parent.statement, 1, value.id)
                sqlite3_bind_text(parent.statement, 2, value.name, -1, sqliteTransient)
                guard try !parent.step() else { throw database.error("seed parent") }
                parent.reset()
                for index in 0..<Int64(spec.childrenPerParent) {
                    let value = BenchData.child(parentID: parentID, index: index, childrenPerParent: Int64(spec.childrenPerParent))
                    sqlite3_bind_int64(child.statement, 1, value.id)
                    sqlite3_bind_int64(child.statement, 2, value.parentID)
                    sqlite3_bind_text(child.statement, 3, value.name, -1, sqliteTransient)
                    sqlite3_bind_double(child.statement, 4, value.score)
                    guard try !child.step() else { throw database.error("seed child") }
                    child.reset()
                }
            }
            try database.execute("COMMIT")
            seededParents = spec.rows
        }
    }

    /// `bench_json` with `rows` documents and its expression index (the `SQLJSONIndex`).
    private func seedJSON(rows: Int) throws {
        guard seededJSON != rows else { return }
        try database.execute(BenchSchema.jsonTableSQLite + "BEGIN;")
        do {
            let statement = try database.prepare("INSERT INTO bench_json (id, doc) VALUES (?, ?)")
            for id in 1...Int64(max(rows, 1)) where rows > 0 {
                sqlite3_bind_int64(statement.statement, 1, id)
                sqlite3_bind_text(statement.statement, 2, JSONData.text(JSONData.document(id: id, tableRows: rows)), -1, sqliteTransient)
                guard try !statement.step() else { throw database.error("seed bench_json") }
                statement.reset()
            }
        }
        try database.execute("COMMIT")
        for sql in try BenchSchema.jsonIndexes(.sqlite) { try database.execute(sql) }
        try database.execute("ANALYZE bench_json")
        // Raw's hand-written SQL and the core's rendered SQL must both use the index.
        let core = try SQLDialect.sqlite.renderUncached(.select(DocumentStatements.jsonFilter(bucket: 0))).sql
        for (who, sql) in [("raw", BenchSchema.jsonFilterSQLite), ("core", core)] {
            try requirePlan(sql, uses: JSONData.bucketIndex.name, who: who)
        }
        seededJSON = rows
    }

    /// `bench_text` with `rows` documents, then what `FullTextIndex.migration` creates (the
    /// FTS5 table, its triggers, a rebuild that indexes the rows).
    private func seedText(rows: Int) throws {
        guard seededText != rows else { return }
        try database.execute(BenchSchema.textTableSQLite + "BEGIN;")
        do {
            let statement = try database.prepare("INSERT INTO bench_text (id, title, body) VALUES (?, ?, ?)")
            for id in 1...Int64(max(rows, 1)) where rows > 0 {
                let document = SearchData.document(id: id)
                sqlite3_bind_int64(statement.statement, 1, id)
                sqlite3_bind_text(statement.statement, 2, document.title, -1, sqliteTransient)
                sqlite3_bind_text(statement.statement, 3, document.body, -1, sqliteTransient)
                guard try !statement.step() else { throw database.error("seed bench_text") }
                statement.reset()
            }
        }
        try database.execute("COMMIT")
        for sql in try BenchSchema.searchIndexes(.sqlite) { try database.execute(sql) }
        seededText = rows
    }

    /// Throws unless SQLite's plan for `sql` searches the index `index`.
    private func requirePlan(_ sql: String, uses index: String, who: String) throws {
        let statement = try database.prepare("EXPLAIN QUERY PLAN " + sql)
        var plan: [String] = []
        while try statement.step() { plan.append(statement.text(3)) }
        guard plan.contains(where: { $0.contains(index) }) else {
            throw BenchError("sqlite: \(who)'s query does not use the index \(index): \(plan.joined(separator: "; ")) for \(sql)")
        }
    }

    private func seed(records count: Int, force: Bool = false) throws {
        guard force || seededRecords != count else { return }
        try database.execute("BEGIN; DELETE FROM bench;")
        let statement = try database.prepare("INSERT INTO bench (\(BenchSchema.recordColumns)) VALUES (?, ?, ?, ?, ?, ?)")
        for id in 1...Int64(max(count, 1)) where count > 0 {
            try statement.bindRecordAndRun(BenchData.record(id: id), dateBuffer: dateBuffer)
        }
        try database.execute("COMMIT")
        seededRecords = count
    }

    func benchTableChecksum() throws -> Checksum {
        let statement = try database.prepare("SELECT \(BenchSchema.recordColumns) FROM bench ORDER BY id")
        var checksum = Checksum()
        while try statement.step() { checksum.add(try statement.record()) }
        return checksum
    }
}

/// The PostgreSQL fixture (seeds with binary COPY).
final class PostgresFixture: BenchFixture {
    private let connection: RawPGConnection
    private var seededRecords: Int?
    private var seededParents: Int?
    /// The sizes of `bench_json` and `bench_text` (nil: not made yet).
    private var seededJSON: Int?
    private var seededText: Int?

    init(url: String) throws {
        connection = try RawPGConnection(url: url)
        try connection.execute("SET client_min_messages = warning")
        try connection.execute(BenchSchema.postgres)
    }

    func prepare(_ spec: WorkloadSpec) throws {
        switch spec.workload {
        case .insert:
            try connection.execute("TRUNCATE bench")
            seededRecords = nil
        case .fetch, .stream:
            try seed(records: spec.rows)
        case .lookup, .query, .concurrent:
            try seed(records: spec.tableRows)
        case .jsonFilter:
            try seedJSON(rows: spec.tableRows)
        case .ftsQuery:
            try seedText(rows: spec.tableRows)
        case .update:
            try seed(records: spec.rows, force: true)
            seededRecords = nil
        case .upsert, .upsertBatch:
            try seed(records: spec.tableRows, force: true)
            seededRecords = nil
        case .delete:
            try seed(records: spec.rows + Expectations.deleteSurvivors, force: true)
            seededRecords = nil
        case .oneToMany:
            guard seededParents != spec.rows else { return }
            try connection.execute("TRUNCATE bench_child, bench_parent")
            var parents = PGBinaryCopy()
            var children = PGBinaryCopy()
            for parentID in 1...Int64(max(spec.rows, 1)) where spec.rows > 0 {
                let parent = BenchData.parent(id: parentID)
                parents.beginTuple(fieldCount: 2)
                parents.appendInt64Field(parent.id)
                parents.appendTextField(parent.name)
                for index in 0..<Int64(spec.childrenPerParent) {
                    let child = BenchData.child(parentID: parentID, index: index, childrenPerParent: Int64(spec.childrenPerParent))
                    children.beginTuple(fieldCount: 4)
                    children.appendInt64Field(child.id)
                    children.appendInt64Field(child.parentID)
                    children.appendTextField(child.name)
                    children.appendDoubleField(child.score)
                }
            }
            try connection.copyIn("COPY bench_parent (id, name) FROM STDIN (FORMAT binary)", parents)
            try connection.copyIn("COPY bench_child (id, parent_id, name, score) FROM STDIN (FORMAT binary)", children)
            try connection.execute("VACUUM (ANALYZE) bench_parent, bench_child")
            seededParents = spec.rows
        }
    }

    /// `bench_json` with `rows` documents (JSONB), the `SQLJSONIndex` on the bucket and a GIN
    /// index for containment.
    private func seedJSON(rows: Int) throws {
        guard seededJSON != rows else { return }
        try connection.execute(BenchSchema.jsonTablePostgres)
        var copy = PGBinaryCopy(reservingCapacity: rows * 100)
        for id in 1...Int64(max(rows, 1)) where rows > 0 {
            copy.beginTuple(fieldCount: 2)
            copy.appendInt64Field(id)
            // jsonb's binary form: a version byte (1), then the text.
            copy.appendBytesField(Data([1]) + Data(JSONData.text(JSONData.document(id: id, tableRows: rows)).utf8))
        }
        try connection.copyIn("COPY bench_json (id, doc) FROM STDIN (FORMAT binary)", copy)
        for sql in try BenchSchema.jsonIndexes(.postgres) { try connection.execute(sql) }
        try connection.execute("VACUUM (ANALYZE) bench_json")
        let filter = try SQLDialect.postgres.renderUncached(.select(DocumentStatements.jsonFilter(bucket: 0)))
        let contains = try SQLDialect.postgres.renderUncached(.select(DocumentStatements.jsonContains(tag: "t0")))
        try requirePlan(BenchSchema.jsonFilterPostgres, ["0"], uses: JSONData.bucketIndex.name, who: "raw", rows: rows)
        try requirePlan(filter.sql, try Self.text(filter.bindings), uses: JSONData.bucketIndex.name, who: "core", rows: rows)
        try requirePlan(BenchSchema.jsonContainsPostgres, [JSONData.containmentJSON(tag: "t0")], uses: "bench_json_doc", who: "raw", rows: rows)
        try requirePlan(contains.sql, try Self.text(contains.bindings), uses: "bench_json_doc", who: "core", rows: rows)
        seededJSON = rows
    }

    /// `bench_text` with `rows` documents, then what `FullTextIndex.migration` creates (the
    /// GIN index on the documents' `tsvector`).
    private func seedText(rows: Int) throws {
        guard seededText != rows else { return }
        try connection.execute(BenchSchema.textTablePostgres)
        var copy = PGBinaryCopy(reservingCapacity: rows * 300)
        for id in 1...Int64(max(rows, 1)) where rows > 0 {
            let document = SearchData.document(id: id)
            copy.beginTuple(fieldCount: 3)
            copy.appendInt64Field(id)
            copy.appendTextField(document.title)
            copy.appendTextField(document.body)
        }
        try connection.copyIn("COPY bench_text (id, title, body) FROM STDIN (FORMAT binary)", copy)
        for sql in try BenchSchema.searchIndexes(.postgres) { try connection.execute(sql) }
        try connection.execute("VACUUM (ANALYZE) bench_text")
        let word = SearchData.query(0, tableRows: rows)
        let core = try SQLDialect.postgres.renderUncached(.select(DocumentStatements.search(word.text)))
        try requirePlan(BenchSchema.searchPostgres(BenchSchema.tsquery(word.kind)), [word.postgresText],
                        uses: SearchData.index.name, who: "raw", rows: rows)
        try requirePlan(core.sql, try Self.text(core.bindings), uses: SearchData.index.name, who: "core", rows: rows)
        seededText = rows
    }

    /// Bind values in PostgreSQL's text form, for EXPLAIN (integers, text and JSON are all
    /// these statements bind).
    private static func text(_ bindings: [DatabaseValue]) throws -> [String] {
        try bindings.map { value in
            switch value {
            case .integer(let integer): return String(integer)
            case .text(let text), .json(let text): return text
            default: throw BenchError("postgres: EXPLAIN with a bound \(value)")
            }
        }
    }

    /// Throws unless PostgreSQL's plan for `sql` (its parameters given as text) uses the
    /// index `index`. Below 10,000 rows the planner may rightly prefer a scan of the table, so
    /// a plan without the index is only logged there.
    private func requirePlan(_ sql: String, _ parameters: [String], uses index: String, who: String, rows: Int) throws {
        let plan = try connection.explain(sql, parameters)
        guard !plan.contains(index) else { return }
        let message = "postgres: \(who)'s query does not use the index \(index) at \(rows) rows: \(plan)"
        if rows >= 10_000 { throw BenchError(message) }
        log("  (\(message))")
    }

    private func seed(records count: Int, force: Bool = false) throws {
        guard force || seededRecords != count else { return }
        try connection.execute("TRUNCATE bench")
        var copy = PGBinaryCopy(reservingCapacity: count * 120)
        for id in 1...Int64(max(count, 1)) where count > 0 { copy.appendRecord(BenchData.record(id: id)) }
        try connection.copyIn("COPY bench (\(BenchSchema.recordColumns)) FROM STDIN (FORMAT binary)", copy)
        // VACUUM as well as ANALYZE: it sets the rows' hint bits and the visibility map now,
        // so that neither the first subject's scan nor an autovacuum woken by a million new
        // rows (it runs beside the timed runs on a 2-core machine) lands inside a measurement.
        try connection.execute("VACUUM (ANALYZE) bench")
        seededRecords = count
    }

    func benchTableChecksum() throws -> Checksum {
        guard let result = PQexecParams(connection.handle, "SELECT \(BenchSchema.recordColumns) FROM bench ORDER BY id",
                                        0, nil, nil, nil, nil, 1)
        else { throw BenchError("libpq: \(connection.errorMessage)") }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw BenchError("libpq: \(connection.errorMessage)") }
        let rows = PGBinaryResult(result: result)
        var checksum = Checksum()
        for row in 0..<rows.rowCount { checksum.add(rows.record(row)) }
        return checksum
    }
}
