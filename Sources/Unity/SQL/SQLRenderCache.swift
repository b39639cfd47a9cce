import Foundation

/// The identity of a statement's shape: two 64-bit hashes of everything the renderer writes
/// except bind values, plus the number of bind values. Two independently salted hashes make
/// a false hit (two shapes colliding in 128 bits with equal binding counts) negligible.
struct SQLShapeKey: Hashable, Sendable {
    var primary: Int
    var secondary: Int
    var bindingCount: Int
}

/// A bounded, thread-safe map from statement shape to rendered SQL text, one per dialect.
///
/// An `NSLock` guards it (not `Synchronization.Mutex`, which needs macOS 15 while the
/// package supports macOS 13). When full, an arbitrary entry is evicted: shapes come from
/// code, so a working set beyond the capacity means an application builds statements
/// dynamically, and any eviction order serves it as well as another.
final class SQLRenderCache: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [SQLShapeKey: String] = [:]
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    func lookup(_ key: SQLShapeKey) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return entries[key]
    }

    func store(_ key: SQLShapeKey, sql: String) {
        lock.lock()
        defer { lock.unlock() }
        if entries[key] == nil, entries.count >= capacity {
            entries.remove(at: entries.startIndex)
        }
        entries[key] = sql
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }
}
