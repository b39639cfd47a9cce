import Foundation

// Shared with the ReadmeExamples and DriverPostgresTests targets (symlinks there): waiting
// with a bound, and a value shared between tasks.

/// A value several threads or tasks update, under a lock.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only reached through `withLock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}

/// A timeout that ended a wait.
struct WaitTimedOut: Error, CustomStringConvertible {
    let what: String
    let seconds: Double
    var description: String { "timed out after \(seconds) s waiting for \(what)" }
}

/// Runs `body`, racing it against a deadline: throws ``WaitTimedOut`` (and cancels `body`)
/// when `seconds` pass first.
func within<T: Sendable>(_ seconds: Double, _ what: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw WaitTimedOut(what: what, seconds: seconds)
        }
        return value
    }
}

/// Waits until `condition` holds, checking every 5 ms; throws ``WaitTimedOut`` when it still
/// does not hold after `seconds`.
func waitUntil(_ seconds: Double, _ what: String, _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .nanoseconds(Int64(seconds * 1_000_000_000))
    while try !condition() {
        if ContinuousClock.now >= deadline { throw WaitTimedOut(what: what, seconds: seconds) }
        try await Task.sleep(nanoseconds: 5_000_000)
    }
}
