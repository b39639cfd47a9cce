import DriverSQLite
import Foundation
import RawSQLite
import Unity
import UnityStateRuntime

// The `state` subject (issue 12), run with `--state`: the state flavor's SQL store against raw
// sqlite3 doing the same rows in the same tables, in the same run. SQLite only so far.
//
// - create: N instances with 3 properties each, in one editing-context commit (one transaction)
// - read: every property of the N instances, read through model objects (3N point reads)
// - filter: the instances whose `group` is 7 (a key-path filter, one indexed query)

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

    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    static func run(options: BenchOptions, path: String) throws {
        let sizes = options.quick ? [2_000] : [options.rows / 10, options.rows]
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
            var rawTimes: [Double] = [], unityTimes: [Double] = []
            for _ in 0..<iterations {
                try clear()
                rawTimes.append(try time { try rawCreate(raw, count: count) })
                try clear()
                unityTimes.append(try time { try unityCreate(store, count: count) })
            }
            try check(store, count: count)
            results.append(Row(workload: "create", rows: count, raw: median(rawTimes), unity: median(unityTimes)))

            rawTimes = []; unityTimes = []
            for _ in 0..<iterations {
                rawTimes.append(try time { try rawRead(raw, count: count) })
                unityTimes.append(try time { try unityRead(store, count: count) })
            }
            results.append(Row(workload: "read", rows: count * 3, raw: median(rawTimes), unity: median(unityTimes)))

            rawTimes = []; unityTimes = []
            for _ in 0..<iterations {
                rawTimes.append(try time { try rawFilter(raw, count: count) })
                unityTimes.append(try time { try unityFilter(store, count: count) })
            }
            results.append(Row(workload: "filter", rows: count, raw: median(rawTimes), unity: median(unityTimes)))
        }
        print("\nstate (SQLite): median of \(iterations) run(s)")
        print("workload     rows      raw          state        vs raw")
        for row in results {
            let line = [row.workload.padding(toLength: 9, withPad: " ", startingAt: 0),
                        String(row.rows).padding(toLength: 9, withPad: " ", startingAt: 0),
                        String(format: "%9.1f ms", row.raw * 1000), String(format: "%9.1f ms", row.unity * 1000),
                        String(format: "%6.2fx", row.unity / row.raw)]
            print(line.joined(separator: "  "))
        }
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
}
