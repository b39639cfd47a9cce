import Foundation

/// Where a ``CachedDatabase`` keeps the values it has read or written.
public protocol DatabaseCache: AnyObject {
    /// The cached value at `path`: nil when not cached; `.some(nil)` when the database is
    /// known to hold nothing there.
    func value<Value: DatabaseValue>(at path: Path) -> Value??
    /// Caches `value` (nil: known to be empty) at `path`.
    func store<Value: DatabaseValue>(_ value: Value?, at path: Path)
    /// Forgets every cached value.
    func removeAll()
    /// Forgets the value cached at `path` (the default forgets every value).
    func removeValue(at path: Path)
}

extension DatabaseCache {
    /// Forgets every value: a cache that cannot forget one path forgets them all.
    public func removeValue(at path: Path) {
        removeAll()
    }
}

extension DatabaseCache {
    /// Runs a transaction of the store this cache stands before; when it fails the cache is
    /// emptied, since it may hold values that were never applied.
    func emptiedOnFailure<R>(_ transaction: () throws -> R) throws -> R {
        do {
            return try transaction()
        } catch {
            removeAll()
            throw error
        }
    }
}

/// A cache of at most `maxCount` values; when full, it evicts a fraction of them (the least
/// recently used first) to make room.
public final class MaximumCountCache: DatabaseCache, @unchecked Sendable {
    // @unchecked: `entries` and `tick` are read and written only under `lock`.
    private let lock = NSLock()
    private var entries: [Path: (value: AnyObject, lastUse: UInt64)] = [:]
    private var tick: UInt64 = 0

    /// The most values kept.
    public let maxCount: Int

    /// The share of `maxCount` evicted when the cache is full (0.1 = a tenth).
    public let evictionFraction: Double

    /// A cache of at most `maxCount` values (at least 1) that evicts `evictionFraction` of them
    /// (at least one value) when full.
    public init(maxCount: Int, evictionFraction: Double = 0.1) {
        self.maxCount = max(1, maxCount)
        self.evictionFraction = min(1, max(0, evictionFraction))
    }

    /// The number of values cached now.
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }

    /// The value cached at `path` (`.some(nil)`: known to be empty), or nil when it is not cached;
    /// marks it used.
    public func value<Value: DatabaseValue>(at path: Path) -> Value?? {
        lock.lock()
        defer { lock.unlock() }
        guard let entry = entries[path], let stored = entry.value as? StoredValue<Value?> else { return nil }
        tick += 1
        entries[path] = (entry.value, tick)
        return .some(stored.value)
    }

    /// Caches `value` (nil: known to be empty) at `path`, first evicting the least recently used
    /// values when the cache is full.
    public func store<Value: DatabaseValue>(_ value: Value?, at path: Path) {
        lock.lock()
        defer { lock.unlock() }
        if entries[path] == nil, entries.count >= maxCount { evictLocked() }
        tick += 1
        entries[path] = (StoredValue(value), tick)
    }

    /// Forgets every cached value.
    public func removeAll() {
        lock.lock()
        entries.removeAll()
        lock.unlock()
    }

    /// Forgets the value cached at `path`.
    public func removeValue(at path: Path) {
        lock.lock()
        entries[path] = nil
        lock.unlock()
    }

    private func evictLocked() {
        let evicted = max(1, Int(Double(maxCount) * evictionFraction))
        let oldest = entries.sorted { $0.value.lastUse < $1.value.lastUse }.prefix(evicted)
        for (path, _) in oldest { entries[path] = nil }
    }
}

/// A database in front of another that answers repeated reads from a cache: reads fill it,
/// writes go to the database and then to the cache.
public final class CachedDatabase: Database {

    /// The database behind the cache.
    public let database: any Database

    /// The cache.
    public let cache: any DatabaseCache

    /// `database` with `cache` in front of it.
    public init(wrapping database: any Database, cache: any DatabaseCache) {
        self.database = database
        self.cache = cache
    }

    /// The value stored at `path`: from the cache, else from the wrapped database (and then cached,
    /// nil too).
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        if let cached: Value? = cache.value(at: path) { return cached }
        let value: Value? = database.get(path)
        cache.store(value, at: path)
        return value
    }

    /// Writes `value` to the wrapped database, then to the cache.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        database.set(value, for: path)
        cache.store(value, at: path)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status in the wrapped
    /// database (statuses are not cached), and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        database.all(model: model, where: predicate)
    }

    /// The wrapped database's transaction; when it fails the cache is emptied, since it may
    /// hold values that were never applied.
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        try cache.emptiedOnFailure { try database.transaction(body) }
    }

    /// The ids of the created instances of `model` whose value satisfies `condition`, as the
    /// wrapped database answers it.
    public func instances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey] {
        database.instances(of: model, where: condition)
    }

    /// A page of the instance ids of `model` from `start`, as the wrapped database answers it.
    public func instanceKeys(of model: ModelKey, from start: InstanceKey, limit: Int) -> [InstanceKey] {
        database.instanceKeys(of: model, from: start, limit: limit)
    }
}
