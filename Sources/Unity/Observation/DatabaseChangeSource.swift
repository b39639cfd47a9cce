import Foundation

/// A driver's watcher of committed changes: what a ``Database`` starts when the first
/// observation begins and stops when the last one ends.
///
/// Users never call it: a driver returns one from
/// ``DatabaseDriver/makeChangeSource(configuration:sink:)`` and reports each commit it sees
/// to the ``DatabaseChangeSink`` it was given, by table key.
public protocol DatabaseChangeSource: AnyObject, Sendable {
    /// The key by which this source reports each of `tables` (a table named as a statement
    /// names it): SQLite's lower-cased name, PostgreSQL's `schema.table`. Throws an
    /// ``ObservationError`` for a table whose commits could never be seen (on PostgreSQL:
    /// unknown, or without its change trigger). Runs on `connection`, a connection of the
    /// database lent for reading from the primary.
    func keys(for tables: Set<String>, on connection: Connection) throws -> [String: String]
    /// Starts watching. Called once, before the first observation's first fetch: a commit
    /// made after this returns must reach the sink.
    func start() throws
    /// The keys that observers follow now (called whenever that set changes).
    func follow(_ keys: Set<String>)
    /// Stops watching and closes what the source opened. Called once, when the last
    /// observation ends or the database closes.
    func stop()
}

/// Where a driver reports committed changes, by table key (see
/// ``DatabaseChangeSource/keys(for:on:)``): the database's hub of observations.
///
/// Thread-safe; the calls are cheap and never block on a database, so a driver may call them
/// from a connection's commit hook.
public final class DatabaseChangeSink: @unchecked Sendable {
    // @unchecked: every stored property is guarded by `lock`.
    private let lock = NSLock()
    private var observers: [UInt64: Entry] = [:]
    private var nextID: UInt64 = 1
    private var source: (any DatabaseChangeSource)?
    private var closed = false
    /// How many commits this process's connections reported (for a source that tells them
    /// apart from other processes' commits).
    private var localCommits: UInt64 = 0
    /// What ``driverState(_:)`` made.
    private var driverStateObject: (any AnyObject & Sendable)?

    private struct Entry {
        /// Table key → the names the observer gave for it.
        let names: [String: Set<String>]
        let onChange: @Sendable (Set<String>) -> Void
    }

    init() {}

    /// True while at least one observation runs: connections then report their commits.
    var isActive: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !observers.isEmpty
    }

    /// How many commits this process's connections have reported so far.
    public var localCommitCount: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return localCommits
    }

    /// State the driver shares, for this database, between its connections' commit reports
    /// and its change source: what `make` returns on the first call, the same object on every
    /// later call. It lives as long as the database.
    public func driverState<State: AnyObject & Sendable>(_ make: () -> State) -> State {
        lock.lock()
        defer { lock.unlock() }
        if let state = driverStateObject as? State { return state }
        let state = make()
        driverStateObject = state
        return state
    }

    /// A transaction that changed the tables with these keys committed, on a connection of this
    /// process (`local`) or elsewhere.
    public func tablesChanged(_ keys: Set<String>, local: Bool = false) {
        guard !keys.isEmpty else { return }
        lock.lock()
        if local { localCommits &+= 1 }
        var calls: [(@Sendable (Set<String>) -> Void, Set<String>)] = []
        for entry in observers.values {
            var names: Set<String> = []
            for key in keys {
                if let given = entry.names[key] { names.formUnion(given) }
            }
            if !names.isEmpty { calls.append((entry.onChange, names)) }
        }
        lock.unlock()
        for (call, names) in calls { call(names) }
    }

    /// Something may have changed in any table: a commit seen without its tables, or a watcher
    /// that was disconnected (a notification may have been lost). Every observer refetches.
    public func anythingMayHaveChanged() {
        lock.lock()
        var calls: [(@Sendable (Set<String>) -> Void, Set<String>)] = []
        for entry in observers.values {
            calls.append((entry.onChange, entry.names.values.reduce(into: Set<String>()) { $0.formUnion($1) }))
        }
        lock.unlock()
        for (call, names) in calls { call(names) }
    }

    /// Registers an observer of `keys` (key → the names given for it), starting the source
    /// when it is the first. Returns the observer's id.
    func register(names: [String: Set<String>], onChange: @escaping @Sendable (Set<String>) -> Void,
                  source candidate: any DatabaseChangeSource) throws -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        if closed { throw DatabaseError.misuse("the database is closed") }
        if source == nil {
            try candidate.start()
            source = candidate
        }
        let id = nextID
        nextID += 1
        observers[id] = Entry(names: names, onChange: onChange)
        source?.follow(followedKeysLocked())
        return id
    }

    /// How many observations run now.
    var observerCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return observers.count
    }

    /// True while the driver's watcher runs (a listening connection, a `data_version` check).
    var isWatching: Bool {
        lock.lock()
        defer { lock.unlock() }
        return source != nil
    }

    /// The running source, if any.
    func currentSource() -> (any DatabaseChangeSource)? {
        lock.lock()
        defer { lock.unlock() }
        return source
    }

    /// Removes an observer; stops the source after the last one.
    func unregister(_ id: UInt64) {
        lock.lock()
        guard observers.removeValue(forKey: id) != nil else {
            lock.unlock()
            return
        }
        var stopping: (any DatabaseChangeSource)?
        if observers.isEmpty {
            stopping = source
            source = nil
        } else {
            source?.follow(followedKeysLocked())
        }
        lock.unlock()
        stopping?.stop()
    }

    /// Ends every observation's watching for good (the database closes).
    func close() {
        lock.lock()
        closed = true
        let stopping = source
        source = nil
        lock.unlock()
        stopping?.stop()
    }

    private func followedKeysLocked() -> Set<String> {
        observers.values.reduce(into: Set<String>()) { $0.formUnion($1.names.keys) }
    }
}

/// A running observation of committed changes (``Database/observeChanges(to:_:)``): it lasts
/// until ``cancel()`` or until it is deinitialised.
public final class DatabaseChangeObserver: @unchecked Sendable {
    // @unchecked: `sink` and `id` are guarded by `lock`.
    private let lock = NSLock()
    private var sink: DatabaseChangeSink?
    private let id: UInt64

    init(sink: DatabaseChangeSink, id: UInt64) {
        self.sink = sink
        self.id = id
    }

    /// Stops the calls. The database stops watching when no observation is left. Safe to call
    /// more than once.
    public func cancel() {
        lock.lock()
        let sink = self.sink
        self.sink = nil
        lock.unlock()
        sink?.unregister(id)
    }

    deinit {
        cancel()
    }
}
