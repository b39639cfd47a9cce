import Foundation

/// One row of the report: a subject running a workload case on a backend.
struct CaseResult: Sendable {
    /// How the case ended.
    enum Status: Sendable {
        case measured
        case skipped(String)
        case failed(String)
    }

    var backend: Backend
    var workload: Workload
    /// The case's name (`WorkloadSpec.label`), nil when it is the workload's.
    var label: String? = nil
    var subject: String
    var rows: Int
    var medianSeconds: Double?
    /// The fastest and the slowest timed run, for the spread printed beside the median.
    var minSeconds: Double?
    var maxSeconds: Double?
    var ratioToRaw: Double?
    /// The fastest and slowest run as ratios to raw's median: the spread that a ratio is
    /// judged against (a ratio within it is "no worse").
    var ratioSpread: (low: Double, high: Double)?
    var peakMemoryBytes: Int?
    /// With `--paired`: each timed run over the raw run just before it.
    var pairedRatios: [Double]?
    var checksum: Checksum?
    var status: Status

    /// Rows per second at the median.
    var rowsPerSecond: Double? {
        guard let medianSeconds, medianSeconds > 0 else { return nil }
        return Double(rows) / medianSeconds
    }
}

/// Runs every selected case: warm-up, timed iterations, median, checks, ratio to raw.
final class BenchRunner {
    private let options: BenchOptions
    private let target: BenchTarget
    private(set) var results: [CaseResult] = []

    init(options: BenchOptions, target: BenchTarget) {
        self.options = options
        self.target = target
    }

    /// Whether any case failed a check or an operation.
    var hasFailures: Bool {
        results.contains { if case .failed = $0.status { true } else { false } }
    }

    /// Runs every selected case of every backend.
    func runAll() async throws {
        for backend in Backend.allCases {
            let subjects = SubjectRegistry.all.filter { $0.backend == backend }
            let specs = options.specs(for: backend).filter { spec in
                subjects.contains { options.selects(backend: backend, workload: spec.workload, label: spec.label, subject: $0.name) }
            }
            guard !specs.isEmpty else { continue }
            if backend == .postgres, target.postgresURL == nil {
                log("postgres: skipped (no URL: give --postgres URL or set UNITY_POSTGRES_URL)")
                for spec in specs {
                    for subject in subjects where options.selects(backend: backend, workload: spec.workload, label: spec.label, subject: subject.name) {
                        results.append(CaseResult(backend: backend, workload: spec.workload, label: spec.label, subject: subject.name, rows: spec.rows,
                                                  status: .skipped("no PostgreSQL URL")))
                    }
                }
                continue
            }
            let fixture: any BenchFixture = switch backend {
            case .sqlite: try SQLiteFixture(path: target.sqlitePath)
            case .postgres: try PostgresFixture(url: target.postgresURL ?? "")
            }
            for spec in specs {
                try await run(spec, backend: backend, subjects: subjects, fixture: fixture)
            }
        }
    }

    private func run(_ spec: WorkloadSpec, backend: Backend, subjects: [any BenchSubject], fixture: any BenchFixture) async throws {
        // The raw baseline always runs with a selected case: the ratio needs it (and its results
        // are the checked ones); so does the --baseline subject.
        let baselineName = options.baseline
        let selected = subjects.filter {
            ($0.name == "raw" || $0.name == baselineName
                || options.selects(backend: backend, workload: spec.workload, label: spec.label, subject: $0.name))
                && (spec.workload == .concurrent ? $0.runsConcurrent : !$0.concurrentOnly)
        }
        // nil for fts-query until raw's results have passed the check against the documents.
        var expected = Expectations.output(spec)
        let expectedTable = Expectations.tableAfter(spec)
        /// Checks a raw run's output; for fts-query, its checksum becomes the expected one.
        func acceptRaw(_ output: WorkloadOutput) throws {
            if spec.workload == .ftsQuery {
                guard let results = output.searchResults else { throw BenchError("raw returned no search results to check") }
                if let fault = SearchData.corpus(tableRows: spec.tableRows).check(results, spec: spec) { throw BenchError("raw: \(fault)") }
                if let expected, expected != output.checksum {
                    throw BenchError("raw returned \(output.checksum), and \(expected) before: the ranking changed between runs")
                }
                expected = output.checksum
            } else if output.checksum != expected {
                throw BenchError("raw returned \(output.checksum), expected \(expected.map { "\($0)" } ?? "nothing")")
            }
        }
        /// Checks a baseline run's output: raw's own check, or the expected checksum for another.
        func acceptBaseline(_ output: WorkloadOutput) throws {
            if baselineName == "raw" { return try acceptRaw(output) }
            if output.checksum != expected {
                throw BenchError("\(baselineName) returned \(output.checksum), expected \(expected.map { "\($0)" } ?? "nothing")")
            }
        }
        var caseResults: [CaseResult] = []
        // With --paired: the baseline's runs, one beside each timed run of another subject (the
        // baseline runs on its own when no other subject runs this case; raw, when it is not the
        // baseline, runs on its own first).
        let baseline = selected.first { $0.name == baselineName && $0.unsupportedReason(spec.workload) == nil }
        var pairedBaseline: [Double] = []
        let pairsWithBaseline = options.paired && baseline != nil
            && selected.contains { $0.name != baselineName && $0.name != "raw" && $0.unsupportedReason(spec.workload) == nil }
        for subject in selected {
            var result = CaseResult(backend: backend, workload: spec.workload, label: spec.label, subject: subject.name, rows: spec.rows,
                                    status: .measured)
            if let reason = subject.unsupportedReason(spec.workload) {
                result.status = .skipped(reason)
                caseResults.append(result)
                continue
            }
            if pairsWithBaseline, subject.name == baselineName {
                // The baseline runs beside each other subject's runs; its row is filled in below.
                caseResults.append(result)
                continue
            }
            log("\(backend.rawValue)/\(spec.label)/\(subject.name): \(spec.rows) rows …")
            do {
                var seconds: [Double] = []
                var checksum = Checksum()
                if pairsWithBaseline, subject.name != "raw", let baseline {
                    // One baseline run, then one run of the subject, each after its own warm-up;
                    // the ratio of each pair, so that a slow minute of the machine slows both.
                    var single = options
                    single.iterations = 1
                    var ratios: [Double] = []
                    for _ in 0..<options.iterations {
                        let (baseSeconds, baseOutput, _) = try await measure(baseline, spec: spec, backend: backend, options: single, fixture: fixture)
                        try acceptBaseline(baseOutput)
                        let measured = try await measure(subject, spec: spec, backend: backend, options: single, fixture: fixture)
                        seconds += measured.seconds
                        checksum = measured.output.checksum
                        if let peak = measured.peak { result.peakMemoryBytes = max(result.peakMemoryBytes ?? 0, peak) }
                        pairedBaseline.append(contentsOf: baseSeconds)
                        if let subjectRun = measured.seconds.first, let baseRun = baseSeconds.first, baseRun > 0 {
                            ratios.append(subjectRun / baseRun)
                        }
                    }
                    result.pairedRatios = ratios
                } else {
                    let measured = try await measure(subject, spec: spec, backend: backend, options: options, fixture: fixture)
                    (seconds, checksum, result.peakMemoryBytes) = (measured.seconds, measured.output.checksum, measured.peak)
                    if subject.name == "raw" { try acceptRaw(measured.output) }
                }
                result.medianSeconds = Self.median(seconds)
                result.minSeconds = seconds.min()
                result.maxSeconds = seconds.max()
                result.checksum = checksum
                if let expected, checksum != expected {
                    result.status = .failed("returned \(checksum), expected \(expected)")
                } else if expected == nil {
                    result.status = .failed("returned \(checksum), and raw has no checked result to compare it with")
                } else if let expectedTable {
                    let table = try fixture.benchTableChecksum()
                    if table != expectedTable {
                        result.status = .failed("left the table with \(table), expected \(expectedTable)")
                    }
                }
            } catch {
                result.status = .failed("\(error)")
            }
            if case .failed(let message) = result.status { log("  FAILED: \(message)") }
            caseResults.append(result)
        }
        if options.paired, !pairedBaseline.isEmpty, let baseIndex = caseResults.firstIndex(where: { $0.subject == baselineName }) {
            // The baseline's row shows every baseline run of the pairs.
            caseResults[baseIndex].medianSeconds = Self.median(pairedBaseline)
            caseResults[baseIndex].minSeconds = pairedBaseline.min()
            caseResults[baseIndex].maxSeconds = pairedBaseline.max()
        }
        let baseMedian = caseResults.first { $0.subject == baselineName }?.medianSeconds
        for index in caseResults.indices {
            if let ratios = caseResults[index].pairedRatios, let median = Self.median(ratios), let low = ratios.min(),
               let high = ratios.max() {
                caseResults[index].ratioToRaw = median
                caseResults[index].ratioSpread = (low, high)
                continue
            }
            if let baseMedian, baseMedian > 0, let median = caseResults[index].medianSeconds {
                caseResults[index].ratioToRaw = median / baseMedian
                if let low = caseResults[index].minSeconds, let high = caseResults[index].maxSeconds {
                    caseResults[index].ratioSpread = (low / baseMedian, high / baseMedian)
                }
            }
        }
        // Cases the user did not select (raw run only for the ratio) still show: they are measured.
        results += caseResults
    }

    /// Times `subject` on one case with `options`' warm-ups and iterations: in a child process
    /// for a stream (its peak memory is the point), in this one otherwise.
    private func measure(
        _ subject: any BenchSubject, spec: WorkloadSpec, backend: Backend, options: BenchOptions, fixture: any BenchFixture
    ) async throws -> (seconds: [Double], output: WorkloadOutput, peak: Int?) {
        if spec.workload == .stream {
            try fixture.prepare(spec)
            let (report, peak) = try PeakMemory.runInChild(
                backend: backend, subject: subject.name, rows: spec.rows, options: options, sqlitePath: target.sqlitePath)
            return (report.seconds, WorkloadOutput(checksum: Checksum(count: report.count, value: UInt64(report.checksum, radix: 16) ?? 0)), peak)
        }
        let (seconds, output) = try await Self.iterate(subject: subject, spec: spec, target: target, options: options, fixture: fixture)
        return (seconds, output, nil)
    }

    /// Opens a session and runs warm-ups plus timed iterations, seeding before each run.
    /// Returns the timed seconds and the output of the last run.
    static func iterate(
        subject: any BenchSubject, spec: WorkloadSpec, target: BenchTarget, options: BenchOptions,
        fixture: (any BenchFixture)?
    ) async throws -> ([Double], WorkloadOutput) {
        let session = try await subject.openSession(target)
        var seconds: [Double] = []
        var last = WorkloadOutput(checksum: Checksum())
        var usage = ProcessUsage()
        do {
            for iteration in 0..<(options.warmups + options.iterations) {
                try fixture?.prepare(spec)
                BenchData.prepareInput(for: spec)
                let clock = ContinuousClock()
                let before = ProcessUsage.now()
                let start = clock.now
                let output = try await session.run(spec.workload, spec: spec)
                let elapsed = clock.now - start
                let after = ProcessUsage.now()
                last = output
                if iteration >= options.warmups {
                    seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                    usage.add(after, minus: before)
                }
            }
        } catch {
            try? await session.close()
            throw error
        }
        try await session.close()
        if spec.workload == .concurrent, !seconds.isEmpty {
            // Where the time goes, per operation and for this process only (the server's CPU is
            // not in it): CPU time and context switches, summed over every thread.
            let operations = Double(spec.rows * seconds.count)
            let sorted = seconds.sorted()
            log("  \(subject.name): " + String(format: "median %.4fs (min %.4fs, max %.4fs, %d runs); client CPU %.1f µs/op, context switches %.2f/op (voluntary %.2f)",
                       median(seconds) ?? 0, sorted.first ?? 0, sorted.last ?? 0, seconds.count,
                       usage.cpuSeconds / operations * 1e6, Double(usage.voluntarySwitches + usage.involuntarySwitches) / operations,
                       Double(usage.voluntarySwitches) / operations))
        }
        return (seconds, last)
    }

    /// The median of `values` (mean of the middle two for an even count).
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// Progress goes to standard error so standard output holds only the table.
func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// The process's CPU time and context switches (all threads, `getrusage(RUSAGE_SELF)`).
struct ProcessUsage {
    var cpuSeconds = 0.0
    var voluntarySwitches = 0
    var involuntarySwitches = 0

    static func now() -> ProcessUsage {
        var usage = rusage()
        #if canImport(Glibc)
        let who = RUSAGE_SELF.rawValue
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return ProcessUsage() }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return ProcessUsage(cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
                            voluntarySwitches: Int(usage.ru_nvcsw), involuntarySwitches: Int(usage.ru_nivcsw))
    }

    mutating func add(_ after: ProcessUsage, minus before: ProcessUsage) {
        cpuSeconds += after.cpuSeconds - before.cpuSeconds
        voluntarySwitches += after.voluntarySwitches - before.voluntarySwitches
        involuntarySwitches += after.involuntarySwitches - before.involuntarySwitches
    }
}
