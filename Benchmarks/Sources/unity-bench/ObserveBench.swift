import DriverPostgres
import DriverSQLite
import Foundation
import Unity

// The `observe` workload: how long a commit takes to reach an observer as a new result.
//
// An observer follows `SELECT value FROM counter WHERE id = 1` while a writer sets that value
// to 1, 2, …, N at a steady rate, in this process (another `Database` on the same file or
// server, so SQLite's other-connection path is not what is measured: see below) or in a child
// process (`unity-bench --observe-writer …`). For each commit i, the latency is the time from
// the writer's COMMIT returning to the observer receiving the first result ≥ i (results are
// coalesced, so one result may answer several commits). Reported: p50, p99 and max over every
// commit, at 1 and 1,000 commits/s, on both backends.
//
// - same process: the writer uses the observer's own `Database` (SQLite: its commit hooks;
//   PostgreSQL: NOTIFY like everyone else).
// - other process: SQLite sees it through `PRAGMA data_version` (checked every 10 ms) and the
//   change counters; PostgreSQL through NOTIFY.
//
// A memory case follows 100,000 commits (2,000 with --quick) as fast as the writer goes and
// reports the resident set size before and after: it must stay flat (results are coalesced,
// nothing queues up).
enum ObserveBench {
    struct Case {
        var backend: Backend
        var otherProcess: Bool
        var rate: Double
        var commits: Int
    }

    struct Result {
        var label: String
        var commits: Int
        var deliveries: Int
        var p50: Double
        var p99: Double
        var max: Double
        var ok: Bool
        var note: String
    }

    /// True when `options` selects the workload: no `--only`, or a pattern that says observe.
    static func selected(_ options: BenchOptions) -> Bool {
        options.only.isEmpty || options.only.contains { $0.contains("observe") }
    }

    /// True when `--only` selects the observe workload and nothing else.
    static func selectedAlone(_ options: BenchOptions) -> Bool {
        !options.only.isEmpty && options.only.allSatisfy { $0.contains("observe") }
    }

    static func run(options: BenchOptions, sqlitePath: String) async throws -> Bool {
        var backends: [Backend] = [.sqlite]
        if options.postgresURL != nil { backends.append(.postgres) } else { log("observe: no PostgreSQL URL, SQLite only") }
        var results: [Result] = []
        for backend in backends {
            for otherProcess in [false, true] {
                for rate in [1.0, 1000.0] {
                    let commits = rate == 1 ? (options.quick ? 3 : 30) : (options.quick ? 500 : 10_000)
                    let c = Case(backend: backend, otherProcess: otherProcess, rate: rate, commits: commits)
                    log("observe: \(label(c))…")
                    results.append(try await measure(c, options: options, sqlitePath: sqlitePath))
                }
            }
            log("observe: \(backend.rawValue) memory…")
            results.append(try await memory(backend, commits: options.quick ? 2_000 : 100_000, options: options, sqlitePath: sqlitePath))
        }
        print(table(results))
        return results.allSatisfy(\.ok)
    }

    static func label(_ c: Case) -> String {
        "\(c.backend.rawValue)/observe/\(c.otherProcess ? "other-process" : "same-process")@\(Int(c.rate))/s"
    }

    static func table(_ results: [Result]) -> String {
        var lines = ["| case | commits | results | p50 ms | p99 ms | max ms | check |", "|---|--:|--:|--:|--:|--:|---|"]
        for r in results {
            func ms(_ s: Double) -> String { s.isNaN ? "–" : String(format: "%.2f", s * 1000) }
            lines.append("| \(r.label) | \(r.commits) | \(r.deliveries) | \(ms(r.p50)) | \(ms(r.p99)) | \(ms(r.max)) | \(r.ok ? "ok" : "FAILED") \(r.note) |")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Setup

    static func open(_ backend: Backend, options: BenchOptions, sqlitePath: String, schema: String?) throws -> Database {
        switch backend {
        case .sqlite: return try Database(driver: SQLiteDriver(path: sqlitePath, readers: 2))
        case .postgres:
            guard let url = options.postgresURL else { throw BenchError("observe: no PostgreSQL URL") }
            return try Database(driver: PostgresDriver(url, connections: 4, searchPath: schema))
        }
    }

    /// A fresh `counter` table with its change triggers (a fresh schema on PostgreSQL).
    static func prepare(_ backend: Backend, options: BenchOptions, sqlitePath: String) throws -> String? {
        var schema: String?
        switch backend {
        case .sqlite:
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlitePath + suffix) }
        case .postgres:
            let name = "observe_bench_\(getpid())"
            let admin = try open(.postgres, options: options, sqlitePath: sqlitePath, schema: nil)
            defer { admin.close() }
            try admin.withConnection { conn in
                try conn.execute(sql: "DROP SCHEMA IF EXISTS \"\(name)\" CASCADE")
                try conn.execute(sql: "CREATE SCHEMA \"\(name)\"")
            }
            schema = name
        }
        let db = try open(backend, options: options, sqlitePath: sqlitePath, schema: schema)
        defer { db.close() }
        _ = try Migrator(migrations: [
            Migration("0001_counter", sql: """
                CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
                INSERT INTO counter (id, value) VALUES (1, 0);
                """),
            Migration.observeChanges(of: ["counter"]),
        ]).migrate(db)
        return schema
    }

    static let query = SQLStatement.select(SQLSelect(from: "counter").columns(.column("value")).where(.column("id").equals(1)))

    static func update(_ value: Int) -> SQLStatement {
        .update(SQLUpdate("counter", set: [SQLAssignment("value", value: value)], where: .column("id").equals(1)))
    }

    /// Resident set size of this process, in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    // MARK: Measuring

    /// Collects (value, time) of each result.
    final class Deliveries: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [(Int, Double)] = []
        func append(_ value: Int) {
            let now = Date().timeIntervalSince1970
            lock.withLock { items.append((value, now)) }
        }
        var all: [(Int, Double)] { lock.withLock { items } }
        var last: Int? { lock.withLock { items.last?.0 } }
    }

    static func observe(_ db: Database) -> (Task<Void, Error>, Deliveries) {
        let deliveries = Deliveries()
        let task = Task {
            for try await rows in db.observe(query) {
                if case .integer(let v)? = rows.first?[0] { deliveries.append(Int(v)) }
            }
        }
        return (task, deliveries)
    }

    static func waitFor(_ deliveries: Deliveries, value: Int, timeout: Double) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while deliveries.last != value {
            if Date() > deadline { return false }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
        return true
    }

    static func measure(_ c: Case, options: BenchOptions, sqlitePath: String) async throws -> Result {
        let schema = try prepare(c.backend, options: options, sqlitePath: sqlitePath)
        let db = try open(c.backend, options: options, sqlitePath: sqlitePath, schema: schema)
        defer { db.close() }
        let (task, deliveries) = observe(db)
        defer { task.cancel() }
        guard await waitFor(deliveries, value: 0, timeout: 10) else { throw BenchError("observe: no first result") }
        let commitTimes: [Double]
        if c.otherProcess {
            commitTimes = try await writeInChild(c, options: options, sqlitePath: sqlitePath, schema: schema)
        } else {
            commitTimes = try await writeHere(db, commits: c.commits, rate: c.rate)
        }
        let complete = await waitFor(deliveries, value: c.commits, timeout: 30)
        let seen = deliveries.all
        var latencies: [Double] = []
        latencies.reserveCapacity(c.commits)
        var next = 0
        for (index, committed) in commitTimes.enumerated() {
            let value = index + 1
            while next < seen.count && seen[next].0 < value { next += 1 }
            guard next < seen.count else { break }
            latencies.append(max(0, seen[next].1 - committed))
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let ordered = zip(seen, seen.dropFirst()).allSatisfy { $0.0 < $1.0 }
        let ok = complete && ordered && latencies.count == c.commits
        return Result(label: label(c), commits: c.commits, deliveries: seen.count - 1, p50: percentile(0.5), p99: percentile(0.99),
                      max: latencies.last ?? .nan, ok: ok,
                      note: ok ? "" : "(final state \(complete ? "seen" : "missing"), \(ordered ? "in order" : "out of order"))")
    }

    /// Commits 1…N on `db` at `rate` per second, on a thread; returns each commit's time.
    static func writeHere(_ db: Database, commits: Int, rate: Double) async throws -> [Double] {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                var times: [Double] = []
                times.reserveCapacity(commits)
                let start = Date()
                do {
                    for i in 1...commits {
                        if rate > 0 {
                            let wait = start.addingTimeInterval(Double(i - 1) / rate).timeIntervalSinceNow
                            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                        }
                        try db.execute(update(i))
                        times.append(Date().timeIntervalSince1970)
                    }
                    continuation.resume(returning: times)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    /// Runs `unity-bench --observe-writer …` and reads each commit's time from its output.
    static func writeInChild(_ c: Case, options: BenchOptions, sqlitePath: String, schema: String?) async throws -> [Double] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var arguments = ["--observe-writer", c.backend.rawValue, String(c.commits), String(c.rate), "--sqlite-path", sqlitePath]
        if let url = options.postgresURL { arguments += ["--postgres", url] }
        if let schema { arguments += ["--observe-schema", schema] }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = try await Task.detached { try output.fileHandleForReading.readToEnd() ?? Data() }.value
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("observe: the writer process failed (\(process.terminationStatus))") }
        var times = [Double](repeating: 0, count: c.commits)
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 3, parts[0] == "commit", let i = Int(parts[1]), let t = Double(parts[2]), i >= 1, i <= c.commits {
                times[i - 1] = t
            }
        }
        return times
    }

    /// The child side: commits 1…N at `rate`, printing `commit i T` after each.
    static func runWriter(options: BenchOptions, sqlitePath: String, arguments: ObserveWriterArguments) throws {
        let db = try open(arguments.backend, options: options, sqlitePath: sqlitePath, schema: arguments.schema)
        defer { db.close() }
        let start = Date()
        var out = ""
        for i in 1...arguments.commits {
            if arguments.rate > 0 {
                let wait = start.addingTimeInterval(Double(i - 1) / arguments.rate).timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            try db.execute(update(i))
            out += "commit \(i) \(Date().timeIntervalSince1970)\n"
        }
        FileHandle.standardOutput.write(Data(out.utf8))
    }

    /// Memory: the resident set before and after following `commits` commits.
    static func memory(_ backend: Backend, commits: Int, options: BenchOptions, sqlitePath: String) async throws -> Result {
        let schema = try prepare(backend, options: options, sqlitePath: sqlitePath)
        let db = try open(backend, options: options, sqlitePath: sqlitePath, schema: schema)
        defer { db.close() }
        let (task, deliveries) = observe(db)
        defer { task.cancel() }
        guard await waitFor(deliveries, value: 0, timeout: 10) else { throw BenchError("observe: no first result") }
        // Warm up (caches, the first allocations), then measure from there.
        let warm = min(1_000, commits / 10)
        _ = try await writeHere(db, commits: warm, rate: 0)
        _ = await waitFor(deliveries, value: warm, timeout: 30)
        let before = residentBytes()
        let writer = db
        let final = commits
        let times = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, Error>) in
            Thread {
                do {
                    for i in (warm + 1)...final { try writer.execute(update(i)) }
                    continuation.resume(returning: final)
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
        let complete = await waitFor(deliveries, value: times, timeout: 60)
        let after = residentBytes()
        let growth = Double(after - before) / 1_048_576
        let ok = complete && growth < 16
        return Result(label: "\(backend.rawValue)/observe/memory", commits: commits, deliveries: deliveries.all.count - 1,
                      p50: .nan, p99: .nan, max: .nan, ok: ok,
                      note: String(format: "RSS %.1f → %.1f MiB (%+.1f)", Double(before) / 1_048_576, Double(after) / 1_048_576, growth))
    }
}

/// `--observe-writer BACKEND COMMITS RATE` (internal: the child side of the observe workload).
struct ObserveWriterArguments: Sendable {
    var backend: Backend
    var commits: Int
    var rate: Double
    var schema: String?
}
