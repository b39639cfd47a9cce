import Foundation

/// A small bounded, thread-safe memo: what translating the same thing again would give.
/// Guarded by an `NSLock` (the package supports macOS 13, before `Synchronization.Mutex`).
final class PredicateMemo<Key: Hashable, Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [Key: Value] = [:]
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func value(for key: Key, make: () throws -> Value) rethrows -> Value {
        lock.lock()
        if let found = entries[key] {
            lock.unlock()
            return found
        }
        lock.unlock()
        let made = try make()
        lock.lock()
        if entries[key] == nil, entries.count >= capacity { entries.remove(at: entries.startIndex) }
        entries[key] = made
        lock.unlock()
        return made
    }
}

/// Hands out the numbers that tell schemas apart in the memos (a schema changed by a builder
/// call gets a new one).
enum PredicateSchemaSerial {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var last = 0

    static func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        last += 1
        return last
    }
}
