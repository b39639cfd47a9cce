import DriverSQLite
import Foundation
import Testing

/// A database file in its own temporary directory, removed when the value is released.
final class TemporaryDatabase {
    let directory: URL
    let path: String
    let driver: SQLiteDriver

    init(readers: Int = 2) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("unity-sqlite-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("test.sqlite").path
        driver = SQLiteDriver(path: path, readers: readers)
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    func writer() throws -> any DriverConnection { try driver.connect(role: .writer) }
    func reader() throws -> any DriverConnection { try driver.connect(role: .reader) }
}

/// An in-memory connection.
func memoryConnection() throws -> any DriverConnection {
    try SQLiteDriver.inMemory().connect(role: .writer)
}

extension DriverConnection {
    /// All rows of a query.
    func rows(_ sql: String, _ bindings: [DatabaseValue] = []) throws -> [Row] {
        var rows: [Row] = []
        try execute(sql, bindings: bindings) { rows.append($0) }
        return rows
    }

    /// The first column of the first row of a query.
    func scalar(_ sql: String, _ bindings: [DatabaseValue] = []) throws -> DatabaseValue? {
        try rows(sql, bindings).first?[0]
    }

    /// Runs a statement without rows.
    @discardableResult
    func run(_ sql: String, _ bindings: [DatabaseValue] = []) throws -> Int {
        try execute(sql, bindings: bindings, onRow: nil)
    }
}

/// Runs `body`, requires it to throw a ``DatabaseError``, and returns that error.
func databaseError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> DatabaseError? {
    do {
        try body()
        Issue.record("expected a DatabaseError, but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as DatabaseError {
        return error
    } catch {
        Issue.record("expected a DatabaseError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Moves a non-Sendable connection to another thread in a test that guarantees exclusive use.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
    let value: Value
}

/// Calls an interrupter every 50 ms from another thread until stopped, so that an interrupt
/// arriving before the statement started (on a loaded machine) is simply repeated.
final class RepeatingInterrupter: @unchecked Sendable {
    // @unchecked: `stopped` is only touched while `lock` is held.
    private let lock = NSLock()
    private var stopped = false

    init(after delay: Double, _ interrupt: @escaping @Sendable () -> Void) {
        Thread.detachNewThread { [self] in
            Thread.sleep(forTimeInterval: delay)
            while interruptUnlessStopped(interrupt) {
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// Interrupts under the lock, so that no interrupt lands after ``stop()`` returned.
    private func interruptUnlessStopped(_ interrupt: () -> Void) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if stopped { return false }
        interrupt()
        return true
    }

    /// Stops interrupting; no interrupt happens after this returns.
    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }
}
