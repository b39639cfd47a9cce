import Foundation

/// A value of an exact type, so that a value written as one type is read only as that type
/// (`Int??` stays `.some(nil)`; no optional is flattened by a dynamic cast).
final class StoredValue<Value>: @unchecked Sendable {
    // @unchecked: immutable after init; the stores hand it out only under their lock.
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A database that keeps the current value of every path in memory: for tests, previews and
/// small data sets. Safe to use from several threads (one lock).
public final class InMemoryDatabase: Database, @unchecked Sendable {
    // @unchecked: `values` and `statuses` are read and written only under `lock`.
    private let lock = NSLock()
    private var values: [Path: AnyObject] = [:]
    /// The status of each instance, by model: what `all(model:)` lists without a scan of
    /// every path.
    private var statuses: [ModelKey: [InstanceKey: InstanceStatus]] = [:]

    /// An empty database.
    public init() {}

    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        lock.lock()
        defer { lock.unlock() }
        if path.isInstanceStatus, Value.self == InstanceStatus.self {
            return statuses[path.model]?[path.instance] as? Value
        }
        // Any other value at a status path is kept apart from the status (as SQLiteStateDB).
        return (values[path] as? StoredValue<Value>)?.value
    }

    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        lock.lock()
        defer { lock.unlock() }
        if path.isInstanceStatus, Value.self == InstanceStatus.self, let status = value as? InstanceStatus {
            statuses[path.model, default: [:]][path.instance] = status
            return
        }
        // Any other value at a status path is stored beside the status, which it leaves as it
        // is (as SQLiteStateDB does), and read back as its own type.
        values[path] = StoredValue(value)
    }

    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        lock.lock()
        let instances = statuses[model] ?? [:]
        lock.unlock()
        // The predicate may read the database (a filter over the model): call it unlocked.
        return instances.sorted { $0.key < $1.key }.compactMap { predicate($0.key, $0.value) }
    }

    /// Applies `body`'s writes, or, when it throws, puts every value back as it was before
    /// (writes made meanwhile by other threads are undone too: keep transactions short).
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        lock.lock()
        let saved = (values, statuses)
        lock.unlock()
        do {
            return try body()
        } catch {
            lock.lock()
            (values, statuses) = saved
            lock.unlock()
            throw error
        }
    }
}
