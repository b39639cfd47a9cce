import Foundation

/// A database that keeps every value ever written, with its date, in memory, so that it can
/// be read as it was at any earlier time (``HistoryDatabase/view(at:)``).
public final class InMemoryHistoryDatabase: HistoryDatabase, @unchecked Sendable {
    // @unchecked: `history` and `instances` are read and written only under `lock`.
    private let lock = NSLock()
    /// Each path's writes, oldest first.
    private var history: [Path: [(date: Date, value: AnyObject)]] = [:]
    /// The writes of values other than statuses at status paths (kept apart from the statuses,
    /// as SQLiteStateDB does), oldest first.
    private var otherAtStatusPaths: [Path: [(date: Date, value: AnyObject)]] = [:]
    /// The instances of each model that have a status (to list them without a scan).
    private var instances: [ModelKey: Set<InstanceKey>] = [:]
    /// Where "now" comes from (a test may fix it).
    private let clock: @Sendable () -> Date

    /// An empty database; `clock` dates the writes made without a date (default: now).
    public init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    /// The latest write to `path` made at or before `date` (the latest of all when nil).
    private func entry(_ path: Path, at date: Date?, status: Bool = true) -> (date: Date, value: AnyObject)? {
        lock.lock()
        defer { lock.unlock() }
        guard let writes = path.isInstanceStatus && !status ? otherAtStatusPaths[path] : history[path] else { return nil }
        guard let date else { return writes.last }
        // Binary search: the first write after `date`; the one before it is the answer.
        var low = 0, high = writes.count
        while low < high {
            let mid = (low + high) / 2
            if writes[mid].date <= date { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? nil : writes[low - 1]
    }

    /// The value `path` held at `date` (the current value when nil), with its write time; nil when
    /// it had none then.
    public func get<Value: DatabaseValue>(_ path: Path, at date: Date?) -> Timestamped<Value>? {
        guard let found = entry(path, at: date, status: Value.self == InstanceStatus.self), let stored = found.value as? StoredValue<Value> else { return nil }
        return Timestamped(value: stored.value, date: found.date)
    }

    /// The value stored at `path` with the date it was written, from memory; nil when none is
    /// stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>? {
        get(path, at: nil)
    }

    /// The value stored at `path`, from memory; nil when none is stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        let found: Timestamped<Value>? = get(path, at: nil)
        return found?.value
    }

    /// Stores `value` at `path` as written at `date` (now, by the store's clock, when nil). A write
    /// older than the current value is kept in the history but does not become current.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?) {
        let when = date ?? clock()
        let other = path.isInstanceStatus && Value.self != InstanceStatus.self
        lock.lock()
        defer { lock.unlock() }
        var writes = (other ? otherAtStatusPaths[path] : history[path]) ?? []
        // Keep date order; a write with the date of an existing one comes after it.
        var index = writes.count
        while index > 0, writes[index - 1].date > when { index -= 1 }
        writes.insert((when, StoredValue(value)), at: index)
        if other {
            otherAtStatusPaths[path] = writes
            return
        }
        history[path] = writes
        if path.isInstanceStatus { instances[path.model, default: []].insert(path.instance) }
    }

    /// Stores `value` at `path`, dated now by the store's clock; the earlier values stay in the
    /// history.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        set(value, for: path, at: nil)
    }

    /// Calls `predicate` with every instance of `model` that had a status at `date` (now when nil),
    /// with that status and its write date, and collects the non-nil results.
    public func all<T>(model: ModelKey, at date: Date?,
                       where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        lock.lock()
        let ids = (instances[model] ?? []).sorted()
        lock.unlock()
        return ids.compactMap { id in
            guard let status: Timestamped<InstanceStatus> = get(Path(model: model, instance: id), at: date) else { return nil }
            return predicate(id, status.value, status.date)
        }
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, with the status
    /// and the date it was written, and collects the non-nil results (in instance order).
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        all(model: model, at: nil, where: predicate)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, from memory, and
    /// collects the non-nil results (in instance order).
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        all(model: model, at: nil) { id, status, _ in predicate(id, status) }
    }

    /// Applies `body`'s writes, or, when it throws, removes every write it made.
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        lock.lock()
        let saved = (history, otherAtStatusPaths, instances)
        lock.unlock()
        do {
            return try body()
        } catch {
            lock.lock()
            (history, otherAtStatusPaths, instances) = saved
            lock.unlock()
            throw error
        }
    }

    /// The time of the latest write to `path`, whatever its type.
    func latestWriteDate(_ path: Path) -> Date? {
        entry(path, at: nil)?.date
    }
}
