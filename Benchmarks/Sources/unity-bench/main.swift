import Foundation

// unity-bench: runs each workload on each backend for each subject (see SubjectRegistry) and
// prints the median time, rows per second and the ratio to the raw C baseline of the same run.

/// Runs the child side of a `stream` case (see `PeakMemory`): one case, JSON on stdout.
func runStreamChild(_ child: BenchOptions.ChildCase, options: BenchOptions, target: BenchTarget) async throws {
    guard let subject = SubjectRegistry.all.first(where: { $0.backend == child.backend && $0.name == child.subject }) else {
        throw BenchError("no subject \(child.backend.rawValue)/\(child.subject)")
    }
    let spec = WorkloadSpec(workload: .stream, rows: child.rows, tableRows: child.rows)
    // No fixture: the parent seeded the table, and streaming does not change it.
    let (seconds, output) = try await BenchRunner.iterate(
        subject: subject, spec: spec, target: target, options: options, fixture: nil)
    let checksum = output.checksum
    let report = PeakMemory.ChildReport(seconds: seconds, count: checksum.count, checksum: String(checksum.value, radix: 16),
                                        peakBytes: PeakMemory.ownPeakBytes())
    FileHandle.standardOutput.write(try JSONEncoder().encode(report) + Data("\n".utf8))
}

func runBenchmarks() async -> Int32 {
    let options: BenchOptions
    do {
        options = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
    } catch {
        log("\(error)")
        return 2
    }
    let temporarySQLite = options.sqlitePath == nil
    let sqlitePath = options.sqlitePath
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("unity-bench-\(getpid()).sqlite").path
    let target = BenchTarget(sqlitePath: sqlitePath, postgresURL: options.postgresURL)
    defer {
        if temporarySQLite {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlitePath + suffix) }
        }
    }
    do {
        if let writer = options.observeWriter {
            try ObserveBench.runWriter(options: options, sqlitePath: sqlitePath, arguments: writer)
            return 0
        }
        if let child = options.child {
            try await runStreamChild(child, options: options, target: target)
            return 0
        }
        if options.state {
            try StateBench.run(options: options, path: sqlitePath)
            return 0
        }
        #if !Fluent
        if options.only.contains(where: { $0.contains("fluent") }) {
            log("unity-bench: this build has no fluent subject; build it with the Fluent trait: "
                + "swift build -c release --package-path Benchmarks --product unity-bench --traits Fluent")
        }
        #endif
        var observeOK = true
        if ObserveBench.selected(options) {
            // A file of its own, so the other workloads start from theirs as before.
            let observePath = sqlitePath + "-observe"
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: observePath + suffix) } }
            observeOK = try await ObserveBench.run(options: options, sqlitePath: observePath)
            if ObserveBench.selectedAlone(options) {
                if !observeOK { log("unity-bench: the observe workload FAILED its checks (see the table)") }
                return observeOK ? 0 : 1
            }
        }
        let runner = BenchRunner(options: options, target: target)
        log("unity-bench: base \(options.rows) rows, \(options.warmups) warm-up + \(options.iterations) timed iteration(s)\(options.quick ? ", quick" : "")")
        try await runner.runAll()
        print(Report.table(runner.results, baseline: options.baseline))
        if let path = options.jsonPath {
            try Report.json(runner.results).write(to: URL(fileURLWithPath: path))
            log("wrote \(path)")
        }
        if runner.hasFailures || !observeOK {
            log("unity-bench: some cases FAILED their checks (see the table)")
            return 1
        }
        return 0
    } catch {
        log("unity-bench: \(error)")
        return 1
    }
}

exit(await runBenchmarks())
