import Foundation

/// The command line of `unity-bench`, parsed by hand (no dependency needed for a dozen flags).
struct BenchOptions: Sendable {
    /// The base row count (100,000 by default); every workload's size scales with it.
    var rows = 100_000
    /// Selection patterns on `backend/workload/subject` (substring, or glob with `*`/`?`).
    var only: [String] = []
    /// Small sizes, one iteration, no warm-up; correctness is the point.
    var quick = false
    /// Run the state flavor's workloads (`--state`) instead of the table.
    var state = false
    /// Timed iterations per case (the median is reported).
    var iterations = 5
    /// Untimed warm-up runs per case.
    var warmups = 1
    /// Pair every timed run of a subject with a raw run just before it (`--paired`).
    var paired = false
    /// The subject the pairs and the ratios are taken against (`--baseline`, `raw` by default):
    /// `raw-copy` judges a bulk load against libpq's binary COPY.
    var baseline = "raw"
    /// Where to write the JSON report.
    var jsonPath: String?
    /// The PostgreSQL URL (`--postgres` or `UNITY_POSTGRES_URL`).
    var postgresURL: String?
    /// Fail when no PostgreSQL URL is given.
    var requirePostgres = false
    /// The SQLite database file (a temporary file by default).
    var sqlitePath: String?
    /// Set in the child process that runs one `stream` case (see ``PeakMemory``).
    var child: ChildCase?
    /// Set in the child process that writes for the `observe` workload (see ``ObserveBench``).
    var observeWriter: ObserveWriterArguments?

    /// One `stream` case handed to a child process.
    struct ChildCase: Sendable {
        var backend: Backend
        var subject: String
        var rows: Int
    }

    static let usage = """
        usage: unity-bench [--quick] [--rows N] [--only PATTERN[,PATTERN…]] [--iterations N] [--warmup N]
                           [--json FILE] [--postgres URL] [--require-postgres] [--sqlite-path FILE]

          --quick             small row counts, 1 iteration, no warm-up; checks every result (< 1 minute)
          --state             the state flavor's workloads (create / read / filter, SQLite) instead
          --rows N            base row count (default 100000; 2000 with --quick); all sizes scale with it
          --only PATTERN      run only cases whose "backend/workload/subject" contains PATTERN
                              (workload "concurrent-8" / "concurrent-64" for the concurrent lookups)
                              (or matches it as a glob when it has * or ?); comma-separated list allowed.
                              The "raw" baseline of a selected case always runs too (for the ratio).
          --iterations N      timed runs per case (default 5); the median is reported
          --warmup N          untimed warm-up runs per case (default 1)
          --paired            time each subject run right after a raw run of its own and report the
                              median of the per-pair ratios: drift on a shared machine cancels out
          --baseline SUBJECT  the subject that pairs and ratios are taken against (default raw;
                              e.g. raw-copy for PostgreSQL inserts); raw still runs and is checked
          --json FILE         also write the results as JSON
          --postgres URL      PostgreSQL to use (default: $UNITY_POSTGRES_URL); without one it is skipped
          --require-postgres  make a missing PostgreSQL URL an error
          --sqlite-path FILE  SQLite database file (default: a temporary file, removed at the end)

        The `observe` workload (--only observe) measures how long a commit takes to reach an
        observer, with the writer in this process and in another, at 1 and 1,000 commits/s, and the
        memory of an observer over 100,000 commits (2,000 with --quick).
        """

    /// Parses `arguments` (without the program name).
    static func parse(_ arguments: [String], environment: [String: String]) throws -> BenchOptions {
        var options = BenchOptions()
        var rowsGiven = false
        var iterationsGiven = false
        var warmupsGiven = false
        var remaining = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let value = remaining.popFirst() else { throw BenchError("\(flag) needs a value\n\n\(usage)") }
            return value
        }
        func count(_ flag: String, minimum: Int) throws -> Int {
            let text = try value(flag)
            guard let number = Int(text.replacingOccurrences(of: "_", with: "")), number >= minimum else {
                throw BenchError("\(flag) needs a whole number ≥ \(minimum), got \"\(text)\"")
            }
            return number
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick": options.quick = true
            case "--state": options.state = true
            case "--rows": options.rows = try count(argument, minimum: 1); rowsGiven = true
            case "--only": options.only += try value(argument).split(separator: ",").map(String.init)
            case "--iterations": options.iterations = try count(argument, minimum: 1); iterationsGiven = true
            case "--warmup": options.warmups = try count(argument, minimum: 0); warmupsGiven = true
            case "--paired": options.paired = true
            case "--baseline": options.baseline = try value(argument)
            case "--json": options.jsonPath = try value(argument)
            case "--postgres": options.postgresURL = try value(argument)
            case "--require-postgres": options.requirePostgres = true
            case "--sqlite-path": options.sqlitePath = try value(argument)
            case "--child-stream":
                // Internal: `--child-stream BACKEND/SUBJECT ROWS` (see PeakMemory).
                let target = try value(argument).split(separator: "/", maxSplits: 1).map(String.init)
                let rows = try count(argument, minimum: 1)
                guard target.count == 2, let backend = Backend(rawValue: target[0]) else {
                    throw BenchError("--child-stream needs BACKEND/SUBJECT")
                }
                options.child = ChildCase(backend: backend, subject: target[1], rows: rows)
            case "--observe-writer":
                // Internal: `--observe-writer BACKEND COMMITS RATE` (see ObserveBench).
                guard let backend = Backend(rawValue: try value(argument)) else { throw BenchError("--observe-writer needs a backend") }
                let commits = try count(argument, minimum: 1)
                guard let rate = Double(try value(argument)), rate >= 0 else { throw BenchError("--observe-writer needs a rate ≥ 0") }
                options.observeWriter = ObserveWriterArguments(backend: backend, commits: commits, rate: rate,
                                                               schema: options.observeWriter?.schema)
            case "--observe-schema":
                let schema = try value(argument)
                if options.observeWriter == nil { throw BenchError("--observe-schema follows --observe-writer") }
                options.observeWriter?.schema = schema
            case "--help", "-h": throw BenchError(usage)
            default: throw BenchError("unknown argument \"\(argument)\"\n\n\(usage)")
            }
        }
        if options.quick {
            if !rowsGiven { options.rows = 2_000 }
            if !iterationsGiven { options.iterations = 1 }
            if !warmupsGiven { options.warmups = 0 }
        }
        if options.postgresURL == nil, let url = environment["UNITY_POSTGRES_URL"], !url.isEmpty {
            options.postgresURL = url
        }
        if options.requirePostgres, options.postgresURL == nil {
            throw BenchError("--require-postgres: no PostgreSQL URL (give --postgres URL or set UNITY_POSTGRES_URL)")
        }
        return options
    }

    /// Whether the case `backend/workload/subject` is selected.
    /// `label` names the case when it is not just the workload (`concurrent-64`).
    func selects(backend: Backend, workload: Workload, label: String? = nil, subject: String) -> Bool {
        guard !only.isEmpty else { return true }
        let key = "\(backend.rawValue)/\(label ?? workload.rawValue)/\(subject)"
        return only.contains { pattern in
            if pattern.contains("*") || pattern.contains("?") {
                return fnmatch(pattern, key, 0) == 0
            }
            return key.contains(pattern)
        }
    }

    /// The cases of `backend`, scaled from the nominal base of 100,000 rows.
    func specs(for backend: Backend) -> [WorkloadSpec] {
        func scaled(_ nominal: Int) -> Int { max(1, Int((Double(nominal) * Double(rows) / 100_000).rounded())) }
        let base = scaled(100_000)
        var specs = [WorkloadSpec(workload: .insert, rows: base, tableRows: 0)]
        // Both backends load 10× the base too: 1,000,000 rows by default (the COPY target on
        // PostgreSQL), 20,000 with --quick (above Connection.copyThreshold, so CI runs the
        // flavors' COPY path and checks what it stored).
        specs.append(WorkloadSpec(workload: .insert, rows: scaled(1_000_000), tableRows: 0))
        let fetchRows = backend == .sqlite ? scaled(1_000_000) : scaled(200_000)
        specs += [
            WorkloadSpec(workload: .fetch, rows: fetchRows, tableRows: fetchRows),
            WorkloadSpec(workload: .lookup, rows: scaled(10_000), tableRows: base),
            WorkloadSpec(workload: .query, rows: scaled(10_000), tableRows: base),
            WorkloadSpec(workload: .update, rows: base, tableRows: base),
            WorkloadSpec(workload: .delete, rows: base, tableRows: base),
            WorkloadSpec(workload: .upsert, rows: base, tableRows: base / 2),
            WorkloadSpec(workload: .upsertBatch, rows: base, tableRows: base / 2),
            WorkloadSpec(workload: .oneToMany, rows: scaled(1_000), tableRows: 0, childrenPerParent: 20),
            WorkloadSpec(workload: .stream, rows: scaled(1_000_000), tableRows: scaled(1_000_000)),
        ]
        // JSON documents (equality on an indexed path; containment on PostgreSQL, where a GIN
        // index serves it: SQLite has no index for it) and full-text search: DocumentData.swift.
        // Sized so that both workloads' full run stays within a couple of minutes (a search's
        // cost grows with its matches, on SQLite through Unity with their square: see the README);
        // the floors keep every query kind in `--quick`.
        specs.append(WorkloadSpec(workload: .jsonFilter, rows: max(40, scaled(1_000)), tableRows: base))
        if backend == .postgres {
            specs.append(WorkloadSpec(workload: .jsonFilter, rows: max(20, scaled(500)), tableRows: base, jsonContainment: true))
        }
        specs.append(WorkloadSpec(workload: .ftsQuery, rows: max(20, scaled(200)), tableRows: max(1_000, scaled(5_000))))
        // A server's load: W tasks share the lookups through a pool of 8 (see Concurrent.swift).
        let concurrentRows = backend == .sqlite ? scaled(50_000) : scaled(20_000)
        for tasks in ConcurrentLookups.taskCounts {
            specs.append(WorkloadSpec(workload: .concurrent, rows: concurrentRows, tableRows: base, tasks: tasks))
        }
        return specs
    }
}
