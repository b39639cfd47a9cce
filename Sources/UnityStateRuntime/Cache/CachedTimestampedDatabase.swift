import Foundation

/// A value with its write time as a cache holds it (``Timestamped`` itself is not `Codable`).
struct CachedEntry<Value: DatabaseValue>: Codable {
    let value: Value
    let date: Date
}

/// A timestamped database in front of another that answers repeated reads from a cache, as
/// StateModel's `CachedTimestampedDatabase`: reads fill the cache with the value and its write
/// time; a write goes to the database and then to the cache.
///
/// The cache holds what the database holds: a write dated before the cached value (a late
/// sync message) leaves the cached, newer value, as the database keeps it; a write without a
/// date (dated by the database's clock) or to a path not cached makes the next read ask the
/// database.
public final class CachedTimestampedDatabase: TimestampedDatabase {

    /// The database behind the cache.
    public let database: any TimestampedDatabase

    /// The cache.
    public let cache: any DatabaseCache

    /// `database` with `cache` in front of it (the cache manages its size).
    public init(wrapping database: any TimestampedDatabase, cache: any DatabaseCache) {
        self.database = database
        self.cache = cache
    }

    /// The value stored at `path` with the date it was written, from the cache, else the wrapped
    /// database; nil when none is stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>? {
        cachedRead(path, cache: cache) { database.get(path) }
    }

    /// The value stored at `path`, from the cache, else the wrapped database; nil when none is
    /// stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        let found: Timestamped<Value>? = get(path)
        return found?.value
    }

    /// Writes `value` to the wrapped database (dated by its clock); the next read of `path` asks
    /// the database.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        set(value, for: path, at: nil)
    }

    /// Writes `value` at `path` as written at `date` (the wrapped database's clock when nil), then
    /// updates the cache: it keeps the value only when it is known to be the database's current
    /// one.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?) {
        database.set(value, for: path, at: date)
        cachedWrite(value, path: path, date: date, cache: cache)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status in the wrapped
    /// database (statuses are not cached), and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        database.all(model: model, where: predicate)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, with the status
    /// and the date it was written, and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
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

/// A history database in front of another that answers reads of current values, and reads
/// of the past that the cached value answers, from a cache, as StateModel's
/// `CachedHistoryDatabase`. Writes go to the database and then to the cache, as in
/// ``CachedTimestampedDatabase``; a read at a date before the cached value's write asks the
/// database.
public final class CachedHistoryDatabase: HistoryDatabase {

    /// The database behind the cache.
    public let database: any HistoryDatabase

    /// The cache.
    public let cache: any DatabaseCache

    /// `database` with `cache` in front of it (the cache manages its size).
    public init(wrapping database: any HistoryDatabase, cache: any DatabaseCache) {
        self.database = database
        self.cache = cache
    }

    /// The value `path` held at `date` (the current value when nil), with its write time: from the
    /// cache when the cached value was written at or before `date`, else from the wrapped database.
    public func get<Value: DatabaseValue>(_ path: Path, at date: Date?) -> Timestamped<Value>? {
        // The cached value is the current one: it is also the value at any date from its
        // write time on. Before that (or when the path is not cached) the database answers.
        guard let date else { return get(path) }
        if let cached: CachedEntry<Value>? = cache.value(at: path) {
            guard let cached else { return nil }   // nothing was ever written there
            if cached.date <= date { return Timestamped(value: cached.value, date: cached.date) }
        }
        return database.get(path, at: date)
    }

    /// The value stored at `path` with the date it was written, from the cache, else the wrapped
    /// database; nil when none is stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>? {
        cachedRead(path, cache: cache) { database.get(path, at: nil) }
    }

    /// The value stored at `path`, from the cache, else the wrapped database; nil when none is
    /// stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        let found: Timestamped<Value>? = get(path)
        return found?.value
    }

    /// Writes `value` to the wrapped database (dated by its clock); the next read of `path` asks
    /// the database.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        set(value, for: path, at: nil)
    }

    /// Writes `value` at `path` as written at `date` (the wrapped database's clock when nil), then
    /// updates the cache: it keeps the value only when it is known to be the database's current
    /// one.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?) {
        database.set(value, for: path, at: date)
        cachedWrite(value, path: path, date: date, cache: cache)
    }

    /// Calls `predicate` with every instance of `model` that had a status at `date` (now when nil),
    /// with that status and its write date, and collects the non-nil results.
    public func all<T>(model: ModelKey, at date: Date?, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        database.all(model: model, at: date, where: predicate)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, with the status
    /// and the date it was written, and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        database.all(model: model, at: nil, where: predicate)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status in the wrapped
    /// database (statuses are not cached), and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        database.all(model: model, at: nil) { id, status, _ in predicate(id, status) }
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

/// The cached value at `path` with its date, else `read`'s answer, which is cached (nil too:
/// known to be empty).
private func cachedRead<Value: DatabaseValue>(_ path: Path, cache: any DatabaseCache,
                                              _ read: () -> Timestamped<Value>?) -> Timestamped<Value>? {
    if let cached: CachedEntry<Value>? = cache.value(at: path) {
        return cached.map { Timestamped(value: $0.value, date: $0.date) }
    }
    let found = read()
    cache.store(found.map { CachedEntry(value: $0.value, date: $0.date) }, at: path)
    return found
}

/// After a write to the database: the cache takes the value when it is known to be the
/// database's current one (a dated write at or after the cached value's date, or over a
/// path known to be empty); a write older than the cached value leaves it; otherwise (no
/// date, or a path not cached) the path is forgotten and the next read asks the database.
private func cachedWrite<Value: DatabaseValue>(_ value: Value, path: Path, date: Date?, cache: any DatabaseCache) {
    guard let date, let cached: CachedEntry<Value>? = cache.value(at: path) else {
        cache.removeValue(at: path)
        return
    }
    if let cached, cached.date > date { return }
    cache.store(CachedEntry(value: value, date: date), at: path)
}
