import Foundation
import RawLibPQ
import RawSQLite

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
    /// The checksum a correct subject returns for `spec`.
    static func output(_ spec: WorkloadSpec) -> Checksum {
        var checksum = Checksum()
        switch spec.workload {
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
