import Foundation

/// The one default-database mechanism every flavor shares: the database that calls such as
/// `Thing.allInstances()` or `Query<Hat>().all()` use when they are not given one.
///
/// It is a process-wide stack (as sModel's `DBManager.push` / `pop`): the top database is the
/// default. Inside `withDatabase(_:operation:)` a task-local override wins over the
/// stack for that scope and every task it starts, so tests and servers can use several
/// databases at once without touching the process-wide default.
///
/// ```swift
/// DefaultDatabase.push(try Database(driver: SQLiteDriver(path: "app.sqlite")))
/// let hats = try Query<Hat>().all()              // the pushed database
/// try DefaultDatabase.withDatabase(testDB) {
///     try Query<Hat>().all()                     // testDB, in this scope only
/// }
/// ```
///
/// The stack does not own its databases: popping or replacing one does not close it (the
/// flavors' own calls, such as `DBManager.pop(deleteDB:)`, say when they do).
public enum DefaultDatabase {
    /// The process-wide stack, behind a lock. (`Synchronization.Mutex` would say the same but
    /// needs macOS 15; the package supports macOS 13.)
    private final class Stack: @unchecked Sendable {
        // @unchecked: `databases` is read and written only under `lock`.
        private let lock = NSLock()
        private var databases: [Database] = []

        func withLock<T>(_ body: (inout [Database]) throws -> T) rethrows -> T {
            lock.lock()
            defer { lock.unlock() }
            return try body(&databases)
        }
    }

    private static let stack = Stack()

    /// The database of the innermost `withDatabase(_:operation:)` scope, if any.
    @TaskLocal public static var scoped: Database?

    /// The database used when none is given: the scoped override if there is one, otherwise the
    /// top of the process-wide stack; nil when neither is set.
    public static var current: Database? {
        if let scoped { return scoped }
        return stack.withLock { $0.last }
    }

    /// How many databases the process-wide stack holds.
    public static var depth: Int { stack.withLock { $0.count } }

    /// Makes `database` the process-wide default, above the ones pushed before it.
    public static func push(_ database: Database) {
        stack.withLock { $0.append(database) }
    }

    /// Removes the top of the process-wide stack and returns it (nil when the stack is empty);
    /// the one below becomes the default again. The database is not closed.
    @discardableResult
    public static func pop() -> Database? {
        stack.withLock { $0.popLast() }
    }

    /// Replaces the top of the process-wide stack with `database` (pushes it when the stack is
    /// empty; removes the top when `database` is nil) and returns the database it replaced.
    /// `DBManager.open` uses it, so opening again swaps the default instead of growing the stack.
    @discardableResult
    public static func replaceTop(with database: Database?) -> Database? {
        stack.withLock { databases in
            let previous = databases.popLast()
            if let database { databases.append(database) }
            return previous
        }
    }

    /// Whether `database` is anywhere on the process-wide stack (so closing it would break a
    /// default that is still in use).
    public static func contains(_ database: Database) -> Bool {
        stack.withLock { $0.contains { $0 === database } }
    }

    /// Runs `operation` with `database` as the default for this scope (this thread's call tree
    /// and the tasks it starts), whatever the process-wide stack says.
    public static func withDatabase<T>(_ database: Database, operation: () throws -> T) rethrows -> T {
        try $scoped.withValue(database, operation: operation)
    }

    /// Runs `operation` with `database` as the default for this task and its child tasks,
    /// whatever the process-wide stack says.
    public static func withDatabase<T>(_ database: Database,
                                       operation: () async throws -> T) async rethrows -> T {
        try await $scoped.withValue(database, operation: operation)
    }

    /// `database` when given, otherwise ``current``. Throws ``DatabaseError/misuse(_:)`` with
    /// what to do when there is neither, so a flavor call never runs against nothing.
    public static func resolve(_ database: Database?) throws -> Database {
        if let database { return database }
        if let current { return current }
        throw DatabaseError.misuse(
            "no database: open one and make it the default (DBManager.open(…), DefaultDatabase.push(…)) "
                + "or pass one explicitly")
    }
}
