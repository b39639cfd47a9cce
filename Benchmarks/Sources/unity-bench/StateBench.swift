import DriverPostgres
import DriverSQLite
import Foundation
import RawLibPQ
import RawSQLite
import Unity
import UnityStateRuntime

// The `state` subject (issue 12), run with `--state`: the state flavor's SQL store against raw
// sqlite3 / libpq doing the same rows in the same tables, in the same run.
//
// - create: N instances with 3 properties each, in one editing-context commit (one transaction)
// - read: every property of the N instances, read through model objects (3N point reads)
// - filter: the instances whose `group` is 7 (a key-path filter, one indexed query)
// - sync (PostgreSQL → SQLite): every instance, paged, from a PostgreSQL store into an empty
//   SQLite store; raw reads the same rows with libpq and inserts them with sqlite3

/// The benchmark's state model, its conformance written by hand (no macros in the release build).
final class BenchStatePerson: ModelProtocol {
    enum PropertyId: Int, CaseIterable { case name = 1, score = 2, group = 3 }
    static var modelId: ModelKey { 1 }
    let id: InstanceKey
    let database: any UnityStateRuntime.Database
    init(database: any UnityStateRuntime.Database, id: InstanceKey) {
        self.database = database
        self.id = id
    }
    @Property(id: 1) var name: String
    @Property(id: 2) var score: Double
    @Property(id: 3) var group: Int
    static func visitProperties<Visitor: PropertyVisitor>(with visitor: inout Visitor) {
        visitor.visit(property: 1, as: String.self)
        visitor.visit(property: 2, as: Double.self)
        visitor.visit(property: 3, as: Int.self)
    }
    func resetPropertiesToDefaults() {
        name = ""
        score = 0
        group = 0
    }
}

enum StateBench {
    static func name(_ id: Int) -> String { "person-\(id)" }
    static func score(_ id: Int) -> Double { Double(id) * 0.5 }
    static func group(_ id: Int) -> Int { id % 10 }

    struct Row {
        var workload: String
        var rows: Int
        var raw: Double
        var unity: Double
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// Times `raw` and `unity` alternately, `iterations` times each (`prepare` runs untimed
    /// before each), and returns the medians.
    static func measure(_ workload: String, rows: Int, iterations: Int, prepare: () throws -> Void = {},
                        raw: () throws -> Void, unity: () throws -> Void) throws -> Row {
        var rawTimes: [Double] = [], unityTimes: [Double] = []
        for _ in 0..<iterations {
            try prepare()
            rawTimes.append(try time(raw))
            try prepare()
            unityTimes.append(try time(unity))
        }
        return Row(workload: workload, rows: rows, raw: median(rawTimes), unity: median(unityTimes))
    }

    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func run(options: BenchOptions, path: String) throws {
        try runSQLite(options: options, path: path)
        if let url = options.postgresURL {
            try runPostgres(options: options, url: url, sqlitePath: path + "-client")
        } else {
            print("\nstate (PostgreSQL): skipped, no --postgres URL")
        }
    }

    static func sizes(_ options: BenchOptions) -> [Int] {
        options.quick ? [2_000] : [options.rows / 10, options.rows]
    }

    static func printTable(_ title: String, _ results: [Row], iterations: Int) {
        print("\n\(title): median of \(iterations) run(s)")
        print("workload     rows      raw          state        vs raw")
        for row in results {
            let line = [row.workload.padding(toLength: 9, withPad: " ", startingAt: 0),
                        String(row.rows).padding(toLength: 9, withPad: " ", startingAt: 0),
                        String(format: "%9.1f ms", row.raw * 1000), String(format: "%9.1f ms", row.unity * 1000),
                        String(format: "%6.2fx", row.unity / row.raw)]
            print(line.joined(separator: "  "))
        }
    }

    static func runSQLite(options: BenchOptions, path: String) throws {
        let sizes = sizes(options)
        let iterations = max(1, options.iterations)
        var results: [Row] = []
        for count in sizes {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            let core = try Unity.Database(driver: SQLiteDriver(path: path))
            defer { core.close() }
            let store = try SQLDatabase(core)
            let raw = try RawSQLiteDatabase(path: path)
            try raw.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
            func clear() throws {
                try raw.execute("DELETE FROM unity_state_instances; DELETE FROM unity_state_values")
            }
            results.append(try measure("create", rows: count, iterations: iterations, prepare: clear,
                                       raw: { try rawCreate(raw, count: count) }, unity: { try unityCreate(store, count: count) }))
            try check(store, count: count)
            results.append(try measure("read", rows: count * 3, iterations: iterations,
                                       raw: { try rawRead(raw, count: count) }, unity: { try unityRead(store, count: count) }))
            results.append(try measure("filter", rows: count, iterations: iterations,
                                       raw: { try rawFilter(raw, count: count) }, unity: { try unityFilter(store, count: count) }))
        }
        printTable("state (SQLite)", results, iterations: iterations)
    }

    static func unityCreate(_ store: SQLDatabase, count: Int) throws {
        let context = store.createEditingContext()
        for id in 0..<count {
            let person: BenchStatePerson = context.create(id: id)
            person.name = name(id)
            person.score = score(id)
            person.group = group(id)
        }
        try context.commitChanges()
    }

    static func unityRead(_ store: SQLDatabase, count: Int) throws {
        var sum = 0.0
        for id in 0..<count {
            let person = BenchStatePerson(database: store, id: id)
            sum += Double(person.name.utf8.count) + person.score + Double(person.group)
        }
        guard sum > 0 else { throw BenchError("state read: nothing read") }
    }

    static func unityFilter(_ store: SQLDatabase, count: Int) throws {
        let found = try store.all(BenchStatePerson.self, matching: \.group == 7)
        guard found.count == count / 10 else { throw BenchError("state filter: \(found.count) of \(count / 10)") }
    }

    static func check(_ store: SQLDatabase, count: Int) throws {
        let last = BenchStatePerson(database: store, id: count - 1)
        guard last.name == name(count - 1), last.score == score(count - 1), last.group == group(count - 1),
              last.status == .created else { throw BenchError("state create: wrong values for \(count - 1)") }
    }

    static func rawCreate(_ raw: RawSQLiteDatabase, count: Int) throws {
        let when = Date().timeIntervalSince1970
        try raw.execute("BEGIN IMMEDIATE")
        let instance = try raw.prepare("""
            INSERT INTO unity_state_instances (model, instance, status, written_at) VALUES (1, ?, 1, ?)
            ON CONFLICT (model, instance) DO UPDATE SET status = excluded.status, written_at = excluded.written_at
            """)
        let value = try raw.prepare("""
            INSERT INTO unity_state_values (model, instance, property, kind, int_value, real_value, text_value, blob_value, written_at)
            VALUES (1, ?, ?, ?, ?, ?, ?, NULL, ?)
            ON CONFLICT (model, instance, property) DO UPDATE SET kind = excluded.kind, int_value = excluded.int_value,
            real_value = excluded.real_value, text_value = excluded.text_value, blob_value = excluded.blob_value,
            written_at = excluded.written_at
            """)
        let i = instance.statement, v = value.statement
        for id in 0..<count {
            sqlite3_bind_int64(i, 1, Int64(id)); sqlite3_bind_double(i, 2, when)
            guard sqlite3_step(i) == SQLITE_DONE else { throw raw.error("instance") }
            sqlite3_reset(i)
            // name (text), score (real), group (integer)
            for property in 1...3 {
                sqlite3_bind_int64(v, 1, Int64(id)); sqlite3_bind_int64(v, 2, Int64(property))
                sqlite3_bind_null(v, 4); sqlite3_bind_null(v, 5); sqlite3_bind_null(v, 6)
                switch property {
                case 1:
                    sqlite3_bind_int64(v, 3, 5)
                    var text = name(id)
                    _ = text.withUTF8 { sqlite3_bind_text(v, 6, $0.baseAddress, Int32($0.count), sqliteTransient) }
                case 2:
                    sqlite3_bind_int64(v, 3, 4); sqlite3_bind_double(v, 5, score(id))
                default:
                    sqlite3_bind_int64(v, 3, 1); sqlite3_bind_int64(v, 4, Int64(group(id)))
                }
                sqlite3_bind_double(v, 7, when)
                guard sqlite3_step(v) == SQLITE_DONE else { throw raw.error("value") }
                sqlite3_reset(v)
            }
        }
        try raw.execute("COMMIT")
    }

    static func rawRead(_ raw: RawSQLiteDatabase, count: Int) throws {
        let select = try raw.prepare("""
            SELECT kind, int_value, real_value, text_value, blob_value, written_at FROM unity_state_values
            WHERE model = 1 AND instance = ? AND property = ?
            """)
        let s = select.statement
        var sum = 0.0
        for id in 0..<count {
            for property in 1...3 {
                sqlite3_bind_int64(s, 1, Int64(id)); sqlite3_bind_int64(s, 2, Int64(property))
                guard sqlite3_step(s) == SQLITE_ROW else { throw raw.error("read") }
                switch property {
                case 1: sum += Double(sqlite3_column_bytes(s, 3))
                case 2: sum += sqlite3_column_double(s, 2)
                default: sum += Double(sqlite3_column_int64(s, 1))
                }
                sqlite3_reset(s)
            }
        }
        guard sum > 0 else { throw BenchError("raw state read: nothing read") }
    }

    static func rawFilter(_ raw: RawSQLiteDatabase, count: Int) throws {
        let select = try raw.prepare("""
            SELECT i.instance FROM unity_state_instances AS i LEFT JOIN unity_state_values AS v
            ON v.model = i.model AND v.instance = i.instance AND v.property = 3
            WHERE i.model = 1 AND i.status = 1 AND v.kind = 1 AND v.int_value = 7 ORDER BY i.instance
            """)
        var found = 0
        while try select.step() { found += 1 }
        guard found == count / 10 else { throw BenchError("raw state filter: \(found)") }
    }

    // MARK: PostgreSQL

    static func runPostgres(options: BenchOptions, url: String, sqlitePath: String) throws {
        let iterations = max(1, options.iterations)
        let schema = "unity_state_bench"
        let admin = try RawPGConnection(url: url)
        var results: [Row] = []
        for count in sizes(options) {
            try admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE; CREATE SCHEMA \(schema)")
            let core = try Unity.Database(driver: PostgresDriver(url, connections: 2, searchPath: schema))
            defer { core.close() }
            let store = try SQLDatabase(core)
            let raw = try RawPGConnection(url: url)
            try raw.execute("SET search_path TO \(schema)")
            try raw.prepare(name: "si", sql: """
                INSERT INTO unity_state_instances (model, instance, status, written_at) VALUES (1, $1, 1, $2)
                ON CONFLICT (model, instance) DO UPDATE SET status = excluded.status, written_at = excluded.written_at
                """, types: [PGType.int8, PGType.float8])
            try raw.prepare(name: "sv", sql: """
                INSERT INTO unity_state_values (model, instance, property, kind, int_value, real_value, text_value, blob_value, written_at)
                VALUES (1, $1, $2, $3, $4, $5, $6, NULL, $7)
                ON CONFLICT (model, instance, property) DO UPDATE SET kind = excluded.kind, int_value = excluded.int_value,
                real_value = excluded.real_value, text_value = excluded.text_value, blob_value = excluded.blob_value,
                written_at = excluded.written_at
                """, types: [PGType.int8, PGType.int8, PGType.int8, PGType.int8, PGType.float8, PGType.text, PGType.float8])
            try raw.prepare(name: "sr", sql: """
                SELECT kind, int_value, real_value, text_value, blob_value, written_at FROM unity_state_values
                WHERE model = 1 AND instance = $1 AND property = $2
                """, types: [PGType.int8, PGType.int8])
            func clear() throws { try raw.execute("DELETE FROM unity_state_instances; DELETE FROM unity_state_values") }

            results.append(try measure("create", rows: count, iterations: iterations, prepare: clear,
                                       raw: { try rawCreatePG(raw, count: count) }, unity: { try unityCreate(store, count: count) }))
            try check(store, count: count)
            results.append(try measure("read", rows: count * 3, iterations: iterations,
                                       raw: { try rawReadPG(raw, count: count) }, unity: { try unityRead(store, count: count) }))
            results.append(try measure("filter", rows: count, iterations: iterations,
                                       raw: { try rawFilterPG(raw, count: count) }, unity: { try unityFilter(store, count: count) }))

            var rawTimes: [Double] = [], unityTimes: [Double] = []
            for _ in 0..<iterations {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlitePath + suffix) }
                let client = try RawSQLiteDatabase(path: sqlitePath)
                try client.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
                let clientCore = try Unity.Database(driver: SQLiteDriver(path: sqlitePath))
                let clientStore = try SQLDatabase(clientCore)   // the same tables, empty
                rawTimes.append(try time { try rawSync(raw, client, count: count) })
                try client.execute("DELETE FROM unity_state_instances; DELETE FROM unity_state_values")
                unityTimes.append(try time { try unitySync(store, clientStore, count: count) })
                try check(clientStore, count: count)
                clientCore.close()
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlitePath + suffix) }
            results.append(Row(workload: "sync", rows: count, raw: median(rawTimes), unity: median(unityTimes)))
        }
        try admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        printTable("state (PostgreSQL; sync: PostgreSQL → SQLite)", results, iterations: iterations)
    }

    /// Runs `body` for each row in pipeline mode inside one transaction, syncing every 1,000.
    static func pipelined(_ raw: RawPGConnection, count: Int, _ body: (Int) throws -> Void) throws {
        let handle = raw.handle
        guard PQenterPipelineMode(handle) == 1 else { throw BenchError("libpq: cannot enter pipeline mode") }
        defer { PQexitPipelineMode(handle) }
        func sync() throws {
            guard PQpipelineSync(handle) == 1 else { throw BenchError("libpq: \(raw.errorMessage)") }
            var failure: String?
            while true {
                guard let result = PQgetResult(handle) else { continue }
                let status = PQresultStatus(result)
                PQclear(result)
                if status == PGRES_PIPELINE_SYNC { break }
                if status == PGRES_FATAL_ERROR || status == PGRES_PIPELINE_ABORTED { failure = failure ?? raw.errorMessage }
            }
            if let failure { throw BenchError("libpq pipeline: \(failure)") }
        }
        guard PQsendQueryParams(handle, "BEGIN", 0, nil, nil, nil, nil, 0) == 1 else { throw BenchError("libpq: \(raw.errorMessage)") }
        for index in 0..<count {
            try body(index)
            if (index + 1) % 250 == 0 { try sync() }
        }
        guard PQsendQueryParams(handle, "COMMIT", 0, nil, nil, nil, nil, 0) == 1 else { throw BenchError("libpq: \(raw.errorMessage)") }
        try sync()
    }

    static func rawCreatePG(_ raw: RawPGConnection, count: Int) throws {
        let when = Date().timeIntervalSince1970
        var instance = PGParameters(count: 2)
        var value = PGParameters(count: 7)
        let handle = raw.handle
        func send(_ name: String, _ parameters: inout PGParameters, _ n: Int32) throws {
            let sent = parameters.withLibPQArrays { PQsendQueryPrepared(handle, name, n, $0, $1, $2, 0) }
            guard sent == 1 else { throw BenchError("libpq: \(raw.errorMessage)") }
        }
        try pipelined(raw, count: count) { id in
            instance.reset()
            instance.set(0, int64: Int64(id))
            instance.set(1, double: when)
            try send("si", &instance, 2)
            for property in 1...3 {
                value.reset()
                value.set(0, int64: Int64(id))
                value.set(1, int64: Int64(property))
                value.setNull(3); value.setNull(4); value.setNull(5)
                switch property {
                case 1: value.set(2, int64: 5); value.set(5, text: name(id))
                case 2: value.set(2, int64: 4); value.set(4, double: score(id))
                default: value.set(2, int64: 1); value.set(3, int64: Int64(group(id)))
                }
                value.set(6, double: when)
                try send("sv", &value, 7)
            }
        }
    }

    static func rawReadPG(_ raw: RawPGConnection, count: Int) throws {
        var parameters = PGParameters(count: 2)
        var sum = 0.0
        for id in 0..<count {
            for property in 1...3 {
                parameters.reset()
                parameters.set(0, int64: Int64(id))
                parameters.set(1, int64: Int64(property))
                let result = parameters.withLibPQArrays { PQexecPrepared(raw.handle, "sr", 2, $0, $1, $2, 1) }
                guard let result else { throw BenchError("libpq: \(raw.errorMessage)") }
                defer { PQclear(result) }
                guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1 else {
                    throw BenchError("libpq: state read: \(raw.errorMessage)")
                }
                let row = PGBinaryResult(result: result)
                switch property {
                case 1: sum += Double(PQgetlength(result, 0, 3))
                case 2: sum += Double(bitPattern: UInt64(bitPattern: row.int64(0, 2)))
                default: sum += Double(row.int64(0, 1))
                }
            }
        }
        guard sum > 0 else { throw BenchError("raw state read: nothing read") }
    }

    static func rawFilterPG(_ raw: RawPGConnection, count: Int) throws {
        let result = PQexecParams(raw.handle, """
            SELECT i.instance FROM unity_state_instances AS i LEFT JOIN unity_state_values AS v
            ON v.model = i.model AND v.instance = i.instance AND v.property = 3
            WHERE i.model = 1 AND i.status = 1 AND v.kind = 1 AND v.int_value = 7 ORDER BY i.instance
            """, 0, nil, nil, nil, nil, 1)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, Int(PQntuples(result)) == count / 10 else {
            throw BenchError("raw state filter: \(raw.errorMessage)")
        }
    }

    /// Reads every status and value row from PostgreSQL and inserts them into SQLite.
    static func rawSync(_ raw: RawPGConnection, _ client: RawSQLiteDatabase, count: Int) throws {
        let statuses = PQexecParams(raw.handle, "SELECT instance, status, written_at FROM unity_state_instances WHERE model = 1",
                                    0, nil, nil, nil, nil, 1)
        defer { PQclear(statuses) }
        let values = PQexecParams(raw.handle, """
            SELECT instance, property, kind, int_value, real_value, text_value, written_at FROM unity_state_values WHERE model = 1
            """, 0, nil, nil, nil, nil, 1)
        defer { PQclear(values) }
        guard let statuses, let values, PQresultStatus(statuses) == PGRES_TUPLES_OK,
              PQresultStatus(values) == PGRES_TUPLES_OK else {
            throw BenchError("raw state sync: \(raw.errorMessage)")
        }
        let s = PGBinaryResult(result: statuses), v = PGBinaryResult(result: values)
        try client.execute("BEGIN IMMEDIATE")
        let instance = try client.prepare("INSERT INTO unity_state_instances (model, instance, status, written_at) VALUES (1, ?, ?, ?)")
        for row in 0..<PQntuples(statuses) {
            sqlite3_bind_int64(instance.statement, 1, s.int64(row, 0))
            sqlite3_bind_int64(instance.statement, 2, s.int64(row, 1))
            sqlite3_bind_double(instance.statement, 3, Double(bitPattern: UInt64(bitPattern: s.int64(row, 2))))
            guard try !instance.step() else { throw BenchError("raw sync: unexpected row") }
            instance.reset()
        }
        let value = try client.prepare("""
            INSERT INTO unity_state_values (model, instance, property, kind, int_value, real_value, text_value, blob_value, written_at)
            VALUES (1, ?, ?, ?, ?, ?, ?, NULL, ?)
            """)
        let st = value.statement
        for row in 0..<PQntuples(values) {
            sqlite3_bind_int64(st, 1, v.int64(row, 0))
            sqlite3_bind_int64(st, 2, v.int64(row, 1))
            sqlite3_bind_int64(st, 3, v.int64(row, 2))
            if v.isNull(row, 3) { sqlite3_bind_null(st, 4) } else { sqlite3_bind_int64(st, 4, v.int64(row, 3)) }
            if v.isNull(row, 4) { sqlite3_bind_null(st, 5) } else { sqlite3_bind_double(st, 5, Double(bitPattern: UInt64(bitPattern: v.int64(row, 4)))) }
            if v.isNull(row, 5) {
                sqlite3_bind_null(st, 6)
            } else if let text = PQgetvalue(values, row, 5) {
                sqlite3_bind_text(st, 6, text, PQgetlength(values, row, 5), sqliteTransient)
            }
            sqlite3_bind_double(st, 7, Double(bitPattern: UInt64(bitPattern: v.int64(row, 6))))
            guard try !value.step() else { throw BenchError("raw sync: unexpected row") }
            value.reset()
        }
        try client.execute("COMMIT")
        guard PQntuples(statuses) == Int32(count) else { throw BenchError("raw sync: \(PQntuples(statuses)) instances") }
    }

    static func unitySync(_ server: SQLDatabase, _ client: SQLDatabase, count: Int) throws {
        let map: ModelMap = { $0 == 1 ? BenchStatePerson.self : nil }
        let processor = RequestProcessor(database: server, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let consumer = UpdateConsumer(database: client, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        var next: InstanceKey?
        repeat {
            let request = try consumer.modelUpdateRequest(for: BenchStatePerson.self, limit: 4_000, startingAt: next)
            next = try consumer.apply(modelUpdate: processor.process(modelUpdateRequest: request))
        } while next != nil
        guard client.all(of: BenchStatePerson.self).count == count else { throw BenchError("state sync: missing instances") }
    }
}
