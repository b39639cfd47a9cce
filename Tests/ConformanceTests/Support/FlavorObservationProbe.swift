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

/// What a flavor's write throws to roll its transaction back in
/// ``expectObservationFollowsCommits(of:through:_:first:commits:rollBack:quietWrites:checksRelease:sourceLocation:)``.
struct ObservationRollback: Error {}

/// A commit an observation must deliver, and the result it must deliver after it.
struct ObservedCommit<Element> {
    /// Makes the commit; given the other `Database` (the one that stands for another process).
    let write: (_ other: Database) async throws -> Void
    /// The next result after it.
    let expected: Element
    /// Checks what else the commit changed, once its result arrived.
    let afterwards: () -> Void

    init(_ write: @escaping (_ other: Database) async throws -> Void, then expected: Element,
         afterwards: @escaping () -> Void = {}) {
        self.write = write
        self.expected = expected
        self.afterwards = afterwards
    }

    /// Raw SQL committed by the other `Database`, in one transaction.
    static func sql(_ statements: String..., then expected: Element) -> ObservedCommit {
        ObservedCommit({ other in
            try await other.write { conn in
                for sql in statements { try conn.execute(sql: sql) }
            }
        }, then: expected)
    }
}

/// The contract every flavor's observation keeps, checked the same way for each: `iterate`
/// (the flavor's own observation, iterated on a task of the probe's) delivers `first` (unless
/// it is nil: a sequence of changes only), then each commit's expected result after it, once;
/// a transaction that `rollBack` makes and rolls back (by throwing ``ObservationRollback``)
/// delivers nothing, nor do `quietWrites`, nor a commit to the table `obs_unrelated` (see
/// ``installObservedTables(_:_:existing:)``) by `other`; cancelling the
/// consumer ends the sequence (`next()` returns nil) and, with `checksRelease`, frees what the
/// observation held on `observed`: no observation left running, no watcher, every connection
/// of its pools back and idle. Every wait has a timeout.
func expectObservationFollowsCommits<Element: Equatable & Sendable>(
    of observed: Database,
    through other: Database,
    _ iterate: @escaping @Sendable (_ deliver: @escaping @Sendable (Element) -> Void) async throws -> Void,
    first: Element?,
    commits: [ObservedCommit<Element>],
    rollBack: () throws -> Void,
    quietWrites: [(what: String, write: () async throws -> Void)] = [],
    checksRelease: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let probe = FlavorObservationProbe<Element>(iterate)
    if let first {
        #expect(try await probe.next() == first, "the first result", sourceLocation: sourceLocation)
    }
    for (index, commit) in commits.enumerated() {
        try await commit.write(other)
        #expect(try await probe.next() == commit.expected, "the result after commit \(index + 1)", sourceLocation: sourceLocation)
        commit.afterwards()
    }
    #expect(try await probe.staysQuiet(), "a commit was delivered twice: \(probe.all)", sourceLocation: sourceLocation)

    #expect(throws: ObservationRollback.self, "the rollback step did not roll back", sourceLocation: sourceLocation) {
        try rollBack()
    }
    #expect(try await probe.staysQuiet(), "a rolled-back transaction was delivered", sourceLocation: sourceLocation)
    for (what, write) in quietWrites {
        try await write()
        #expect(try await probe.staysQuiet(), "\(what) was delivered", sourceLocation: sourceLocation)
    }
    try await other.write { conn in try conn.execute(sql: "INSERT INTO obs_unrelated (id, v) VALUES (1, 'x')") }
    #expect(try await probe.staysQuiet(), "a write to a table the query does not read was delivered",
            sourceLocation: sourceLocation)

    let ending = try await probe.cancel()
    #expect(ending?.isFinished == true, "cancelling the consumer did not end the sequence: \(String(describing: ending))",
            sourceLocation: sourceLocation)
    guard checksRelease else { return }
    #expect(observed.activeObservationCount == 0, "an observation still runs after its consumer was cancelled",
            sourceLocation: sourceLocation)
    #expect(!observed.isWatchingChanges, "the database still watches for changes", sourceLocation: sourceLocation)
    // A refetch that was under way when the consumer was cancelled may still be giving its
    // connection back: wait for it, within a bound.
    let deadline = ContinuousClock.now + .seconds(30)
    while observed.openConnectionCount != observed.idleConnectionCount && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(5))
    }
    #expect(observed.openConnectionCount == observed.idleConnectionCount,
            "a connection stayed lent after the observation ended (\(observed.openConnectionCount) open, \(observed.idleConnectionCount) idle)",
            sourceLocation: sourceLocation)
}
