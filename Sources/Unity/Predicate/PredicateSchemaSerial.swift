import Foundation

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
