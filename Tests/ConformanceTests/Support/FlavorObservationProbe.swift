import Foundation
import Testing
import Unity

/// The waits are long (a minute) because they are bounds, not expectations: while the whole
/// suite runs, blocking tests can hold Swift's few cooperative threads for many seconds, and
/// an observation's task then waits for one. A result normally arrives within milliseconds.
///
/// Iterates one observation in a task of its own and keeps what it delivers, so that a test
/// can wait for the next result with a deadline, check that nothing arrives within a bounded
/// time, and cancel the iteration and wait for the sequence to end. Every wait has a timeout.
///
/// The body iterates the sequence and hands each result to `deliver`, mapped to plain values
/// (so that sequences of non-`Sendable` objects, such as the ORM's, can be probed too).
final class FlavorObservationProbe<Element: Sendable>: Sendable {
    /// What the iterating task delivered, and how it ended.
    private final class Storage: @unchecked Sendable {
        // @unchecked: every property is guarded by `lock`.
        let lock = NSLock()
        var delivered: [Element] = []
        var taken = 0
        var ending: Ending?

        func append(_ value: Element) { lock.withLock { delivered.append(value) } }
        func end(_ how: Ending) { lock.withLock { ending = how } }
    }

    private let storage = Storage()
    private let task: Task<Void, Never>

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
        let storage = self.storage
        task = Task {
            do {
                try await body { value in storage.append(value) }
                storage.end(.finished)
            } catch {
                storage.end(.failed(String(describing: error)))
            }
        }
    }

    /// Everything delivered so far.
    var all: [Element] { storage.lock.withLock { storage.delivered } }

    /// The next result not taken yet, waiting for it at most `timeout`.
    func next(timeout: Duration = .seconds(60)) async throws -> Element {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (value, ended): (Element?, Ending?) = storage.lock.withLock {
                if storage.taken < storage.delivered.count {
                    storage.taken += 1
                    return (storage.delivered[storage.taken - 1], nil)
                }
                return (nil, storage.ending)
            }
            if let value { return value }
            if let ended { throw Timeout(what: "a result (the sequence ended: \(ended))") }
            if ContinuousClock.now >= deadline { throw Timeout(what: "a result") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// True when no result beyond those taken arrives within `window` (a short, bounded wait).
    func staysQuiet(for window: Duration = .milliseconds(400)) async throws -> Bool {
        try await Task.sleep(for: window)
        return storage.lock.withLock { storage.taken == storage.delivered.count }
    }

    /// How the iteration ended, waiting at most `timeout`; nil when it has not.
    func ended(timeout: Duration = .seconds(30)) async throws -> Ending? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let ended = storage.lock.withLock({ storage.ending }) { return ended }
            try await Task.sleep(for: .milliseconds(5))
        }
        return nil
    }

    /// Cancels the iterating task; returns how the sequence ended (nil when it did not end
    /// within `timeout`).
    func cancel(timeout: Duration = .seconds(30)) async throws -> Ending? {
        task.cancel()
        return try await ended(timeout: timeout)
    }

    deinit { task.cancel() }
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
func withDeadline<T: Sendable>(_ timeout: Duration = .seconds(60), _ body: @escaping @Sendable () async throws -> T) async throws -> T {
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
