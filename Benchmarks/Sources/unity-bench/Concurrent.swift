import Foundation

// The `concurrent` workload: a server's load. `tasks` (W) concurrent tasks share `rows` primary-key
// lookups of the `lookup` table (task t does the lookups whose index ≡ t mod W) through a pool of
// ``ConcurrentLookups/poolSize`` connections, each row decoded into a `BenchRecord`. The raw
// baselines run ``ConcurrentLookups/poolSize`` threads with one connection each (W does not apply).
// The checksum is a sum, so the order the lookups finish in does not change it.

/// Shared pieces of the `concurrent` workload.
enum ConcurrentLookups {
    /// Connections in every subject's pool, and threads of the raw baselines.
    static let poolSize = 8

    /// The task counts measured (each one a case of its own, `concurrent-8`, `concurrent-64`).
    static let taskCounts = [8, 64]

    /// Runs `tasks` child tasks; task `t` gets the lookup indices `t, t + tasks, …` below `rows`
    /// and returns the checksum of its records. Returns their sum.
    static func runTasks(
        _ tasks: Int, rows: Int, _ body: @escaping @Sendable (_ indices: StrideTo<Int>) async throws -> Checksum
    ) async throws -> Checksum {
        try await withThrowingTaskGroup(of: Checksum.self) { group in
            for task in 0..<tasks {
                group.addTask { try await body(stride(from: task, to: rows, by: tasks)) }
            }
            var total = Checksum()
            for try await part in group { total = total.merged(with: part) }
            return total
        }
    }

    /// Runs `body(t)` on `count` threads of its own (t = 0..<count) and returns the sum of their
    /// checksums, or the first error. The caller's task is suspended, not blocked, meanwhile.
    static func runThreads(
        _ count: Int, _ body: @escaping @Sendable (_ thread: Int) throws -> Checksum
    ) async throws -> Checksum {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Checksum, Error>) in
            let join = ThreadJoin(count: count, continuation)
            for index in 0..<count {
                let thread = Thread { join.finish(Result { try body(index) }) }
                thread.name = "bench-raw-\(index)"
                thread.start()
            }
        }
    }
}

extension Checksum {
    /// The checksum of both sets of values.
    func merged(with other: Checksum) -> Checksum {
        Checksum(count: count + other.count, value: value &+ other.value)
    }
}

/// Waits for `count` threads and resumes the continuation once with their sum or an error.
private final class ThreadJoin: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var remaining: Int
    private var total = Checksum()
    private var failure: Error?
    private let continuation: CheckedContinuation<Checksum, Error>

    init(count: Int, _ continuation: CheckedContinuation<Checksum, Error>) {
        remaining = count
        self.continuation = continuation
    }

    func finish(_ outcome: Result<Checksum, Error>) {
        lock.lock()
        switch outcome {
        case .success(let part): total = total.merged(with: part)
        case .failure(let error): failure = failure ?? error
        }
        remaining -= 1
        let done = remaining == 0
        let result: Result<Checksum, Error> = failure.map { .failure($0) } ?? .success(total)
        lock.unlock()
        if done { continuation.resume(with: result) }
    }
}

/// Lets a value that one thread uses at a time cross into that thread.
final class ThreadOwned<Value>: @unchecked Sendable {
    // @unchecked: each instance is used by one thread at a time (the raw baselines give every
    // thread its own connection).
    let value: Value
    init(_ value: Value) { self.value = value }
}
