import Foundation
import Testing
import Unity

/// Iterates one observation in a task of its own and keeps what it delivers, so that a test
/// can wait for the next result with a deadline, check that nothing arrives within a bounded
/// time, and cancel the iteration and wait for the sequence to end. Every wait has a timeout.
///
/// The body iterates the sequence and hands each result to `deliver`, mapped to plain values
/// (so that sequences of non-`Sendable` objects, such as the ORM's, can be probed too).
final class FlavorObservationProbe<Element: Sendable>: @unchecked Sendable {
    // @unchecked: `delivered`, `taken` and `ending` are guarded by `lock`.
    private let lock = NSLock()
    private var delivered: [Element] = []
    private var taken = 0
    private var ending: Ending?
    private var task: Task<Void, Never>?

    /// How the iteration ended.
    enum Ending: Sendable {
        /// `next()` returned nil.
        case finished
        /// The sequence threw.
        case failed(String)
    }

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }

    init(_ body: @escaping @Sendable (_ deliver: @escaping @Sendable (Element) -> Void) async throws -> Void) {
        task = Task { [weak self] in
            do {
                try await body { value in self?.append(value) }
                self?.end(.finished)
            } catch {
                self?.end(.failed(String(describing: error)))
            }
        }
    }

    private func append(_ value: Element) {
        lock.lock()
        delivered.append(value)
        lock.unlock()
    }

    private func end(_ how: Ending) {
        lock.lock()
        ending = how
        lock.unlock()
    }

    /// Everything delivered so far.
    var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return delivered
    }

    /// The next result not taken yet, waiting for it at most `timeout`.
    func next(timeout: Duration = .seconds(15)) async throws -> Element {
        let deadline = ContinuousClock.now + timeout
        while true {
            lock.lock()
            if taken < delivered.count {
                let value = delivered[taken]
                taken += 1
                lock.unlock()
                return value
            }
            let ended = ending
            lock.unlock()
            if let ended { throw Timeout(what: "a result (the sequence ended: \(ended))") }
            if ContinuousClock.now >= deadline { throw Timeout(what: "a result") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The results delivered until `predicate` holds for one, that one included, waiting at
    /// most `timeout` in all (results are coalesced: intermediate ones may be skipped).
    func next(until predicate: (Element) -> Bool, timeout: Duration = .seconds(15)) async throws -> [Element] {
        let deadline = ContinuousClock.now + timeout
        var seen: [Element] = []
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw Timeout(what: "a result that matches") }
            let value = try await next(timeout: left)
            seen.append(value)
            if predicate(value) { return seen }
        }
    }

    /// True when no result beyond those taken arrives within `window` (a short, bounded wait).
    func staysQuiet(for window: Duration = .milliseconds(400)) async throws -> Bool {
        try await Task.sleep(for: window)
        lock.lock()
        defer { lock.unlock() }
        return taken == delivered.count
    }

    /// How the iteration ended, waiting at most `timeout`; nil when it has not.
    func ended(timeout: Duration = .seconds(10)) async throws -> Ending? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            lock.lock()
            let ended = ending
            lock.unlock()
            if let ended { return ended }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Cancels the iterating task; returns how the sequence ended (nil when it did not end
    /// within `timeout`).
    func cancel(timeout: Duration = .seconds(10)) async throws -> Ending? {
        task?.cancel()
        return try await ended(timeout: timeout)
    }

    deinit { task?.cancel() }
}

extension FlavorObservationProbe.Ending {
    /// True for a sequence that returned nil.
    var isFinished: Bool {
        if case .finished = self { return true }
        return false
    }
}

/// Creates `tables` and an unrelated table `obs_unrelated` (id, v), and gives each of them and
/// of `existing` the core's change trigger (PostgreSQL needs it to observe a table; on SQLite
/// it is the per-table change counter).
func installObservedTables(_ db: Database, _ tables: [SQLCreateTable], existing: [String] = []) throws {
    let unrelated = SQLCreateTable("obs_unrelated", columns: [
        SQLColumnDefinition("id", .int64, primaryKey: .plain),
        SQLColumnDefinition("v", .text),
    ])
    let created = tables + [unrelated]
    var migrator = Migrator(migrations: [
        Migration("observed tables", statements: created.map { .createTable($0) }),
        Migration.observeChanges(of: existing + created.map(\.name)),
    ])
    migrator.ignoresOtherAppliedMigrations = true
    try migrator.migrate(db)
}

/// Runs `body`, cancelling it and throwing when it has not returned within `timeout`.
func withDeadline<T: Sendable>(_ timeout: Duration = .seconds(15), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            throw FlavorObservationProbe<Int>.Timeout(what: "the example to finish")
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw FlavorObservationProbe<Int>.Timeout(what: "a result") }
        return first
    }
}
