import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Measures the peak memory of one `stream` case.
///
/// Why a child process: the peak resident set size (`ru_maxrss`) of a process only ever grows,
/// so inside the main process it would report whichever earlier workload peaked highest (the
/// 1,000,000-record fetch keeps every record in an array). Sampling RSS during the run would
/// miss short peaks and add a sampling thread to the measurement. Instead the harness re-runs
/// this same executable with `--child-stream BACKEND/SUBJECT ROWS`; the child opens its own
/// session, runs the warm-up and timed iterations of that single case, prints its timings and
/// checksum as one JSON line, and the parent reads the child's `ru_maxrss` from `wait4`. The
/// number is the whole child's peak: runtime and library baseline (for postgres-nio also its
/// event-loop threads) plus what streaming held at most.
///
/// On Linux the child reads its own peak (`VmHWM` in `/proc/self/status`) and reports it:
/// `wait4`'s `ru_maxrss` is useless there, because `posix_spawn` runs `execve` from a vfork
/// that shares the parent's memory, and the kernel carries that memory's high-water mark over
/// into the child's `ru_maxrss` (it would report the parent's biggest fetch).
enum PeakMemory {
    /// What the child reports.
    struct ChildReport: Codable {
        /// Seconds of each timed iteration.
        var seconds: [Double]
        /// The checksum's row count.
        var count: Int
        /// The checksum's value, in hexadecimal.
        var checksum: String
        /// The child's own peak resident set size in bytes, where the system reports it.
        var peakBytes: Int?
    }

    /// This process's peak resident set size in bytes (`VmHWM`), or nil where there is no
    /// `/proc/self/status`.
    static func ownPeakBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { return nil }
            return kilobytes * 1_024
        }
        return nil
    }

    /// Runs one `stream` case in a child process; returns its report and peak RSS in bytes.
    static func runInChild(
        backend: Backend, subject: String, rows: Int, options: BenchOptions, sqlitePath: String
    ) throws -> (ChildReport, Int) {
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        var arguments = [
            executable, "--child-stream", "\(backend.rawValue)/\(subject)", String(rows),
            "--iterations", String(options.iterations), "--warmup", String(options.warmups),
            "--sqlite-path", sqlitePath,
        ]
        if let url = options.postgresURL { arguments += ["--postgres", url] }

        var pipeDescriptors: [Int32] = [0, 0]
        guard pipe(&pipeDescriptors) == 0 else { throw BenchError("pipe failed: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeDescriptors[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeDescriptors[0])
        posix_spawn_file_actions_addclose(&actions, pipeDescriptors[1])

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(pipeDescriptors[1])
        guard spawned == 0 else {
            close(pipeDescriptors[0])
            throw BenchError("cannot start \(executable) for the stream case: errno \(spawned)")
        }

        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(pipeDescriptors[0], $0.baseAddress, $0.count) }
            if count > 0 { output.append(contentsOf: chunk[0..<count]) } else if count == 0 || errno != EINTR { break }
        }
        close(pipeDescriptors[0])

        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4 failed: errno \(errno)") }
        }
        let exited = (status & 0x7f) == 0
        let exitCode = (status >> 8) & 0xff
        guard exited, exitCode == 0 else {
            throw BenchError("the stream case \(backend.rawValue)/\(subject) failed in its child process (status \(status))")
        }
        guard let line = String(data: output, encoding: .utf8)?.split(separator: "\n").last,
              let report = try? JSONDecoder().decode(ChildReport.self, from: Data(line.utf8))
        else { throw BenchError("the stream child process printed no report") }
        if let peakBytes = report.peakBytes { return (report, peakBytes) }
        #if canImport(Darwin)
        let peakBytes = Int(usage.ru_maxrss) // bytes on Darwin
        #else
        let peakBytes = Int(usage.ru_maxrss) * 1_024 // kilobytes on Linux
        #endif
        return (report, peakBytes)
    }
}
