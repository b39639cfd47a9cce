import Foundation

/// A connection held across calls: a thread of its own borrows a writer connection from the
/// database's pool for as long as the session's transaction is open and runs, one at a time,
/// the work the session's caller hands it (the caller waits). The core lends connections to
/// closures only; this keeps that rule while a session's transaction spans many calls.
final class SessionConnection: @unchecked Sendable {
    private let condition = NSCondition()
    private var job: ((Connection) -> Void)?
    private var stopping = false
    private var started = false
    private var finished = false
    private var startError: (any Error)?
    /// The thread that holds the connection, and the connection while a job runs on it: a
    /// call made from inside a job (a query in a `forEach` closure) runs there directly,
    /// since handing it to the thread that is busy running its caller would wait forever.
    /// Weak: the thread's closure holds this object, and Foundation keeps a running thread.
    private weak var thread: Thread?
    private var runningOn: Connection?

    init(database: Database) throws {
        let thread = Thread { [self] in
            do {
                try database.withConnection(role: .writer) { conn in
                    condition.lock()
                    started = true
                    condition.broadcast()
                    while true {
                        while job == nil && !stopping { condition.wait() }
                        if let work = job {
                            runningOn = conn
                            condition.unlock()
                            work(conn)
                            condition.lock()
                            runningOn = nil
                            job = nil
                            condition.broadcast()
                            continue
                        }
                        break
                    }
                    condition.unlock()
                }
            } catch {
                condition.lock()
                startError = error
                condition.unlock()
            }
            condition.lock()
            started = true
            finished = true
            condition.broadcast()
            condition.unlock()
        }
        condition.lock()
        self.thread = thread
        condition.unlock()
        thread.start()
        condition.lock()
        while !started { condition.wait() }
        let error = startError
        condition.unlock()
        if let error { throw error }
    }

    /// Runs `body` on the held connection and returns its result (the caller waits).
    func run<T>(_ body: (Connection) throws -> T) throws -> T {
        if let conn = nestedConnection { return try body(conn) }
        return try withoutActuallyEscaping(body) { body in
            var result: Result<T, any Error>?
            condition.lock()
            guard !finished && !stopping else {
                condition.unlock()
                throw ORMError.misuse("the session's connection is closed")
            }
            job = { conn in result = Result { try body(conn) } }
            condition.broadcast()
            while job != nil { condition.wait() }
            condition.unlock()
            guard let result else { throw ORMError.misuse("the session's connection stopped before the work ran") }
            return try result.get()
        }
    }

    /// The connection when the caller is a job of this session running on its thread (a query
    /// made inside another query's closure), nil otherwise.
    var nestedConnection: Connection? {
        condition.lock()
        defer { condition.unlock() }
        guard let thread, let runningOn, Thread.current === thread else { return nil }
        return runningOn
    }

    /// Gives the connection back to the pool (the caller waits until it is back).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }
}
