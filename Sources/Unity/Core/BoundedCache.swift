import Foundation

/// A bounded, thread-safe map, for what computing the same thing again would give: rendered
/// SQL text by statement shape, translated sort terms, models' predicate schemas.
///
/// An `NSLock` guards it (not `Synchronization.Mutex`, which needs macOS 15 while the
/// package supports macOS 13). When full, an arbitrary entry is evicted: keys come from
/// code, so a working set beyond the capacity means an application builds them
/// dynamically, and any eviction order serves it as well as another.
final class BoundedCache<Key: Hashable, Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [Key: Value] = [:]
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    func lookup(_ key: Key) -> Value? {
        lock.lock()
        defer { lock.unlock() }
        return entries[key]
    }

    func store(_ key: Key, _ value: Value) {
        lock.lock()
        defer { lock.unlock() }
        if entries[key] == nil, entries.count >= capacity {
            entries.remove(at: entries.startIndex)
        }
        entries[key] = value
    }

    /// The value stored for `key`, or the one `make` gives, stored (outside the lock, so
    /// two threads may both make it; either result is right).
    func value(for key: Key, make: () throws -> Value) rethrows -> Value {
        if let found = lookup(key) { return found }
        let made = try make()
        store(key, made)
        return made
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }
}
