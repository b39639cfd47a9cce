import Foundation

/// A bounded set of driver connections of one role, handed to one thread at a time.
///
/// Checkout waits up to the configured timeout and then throws. A connection returned in the
/// middle of a transaction is rolled back; a broken one is closed and its slot freed, so the
/// next checkout opens a replacement.
final class ConnectionSubpool: @unchecked Sendable {
    // @unchecked: every mutable field is guarded by `condition`.
    private let condition = NSCondition()
    /// Idle connections, the one returned last at the end (it is lent first), each with the
    /// time it came back (``monotonicNanoseconds``).
    private var idle: [(connection: any DriverConnection, since: UInt64)] = []
    private var open = 0
    /// Callers waiting in ``checkout(timeout:nested:cancellation:)``.
    private var waiting = 0
    private var closed = false
    let capacity: Int
    /// How many connections beyond ``capacity`` nested checkouts may open (see
    /// ``checkout(timeout:nested:cancellation:)``); 0 for SQLite's single writer.
    let overflow: Int
    let role: ConnectionRole
    /// The pool's name in ``DatabasePoolEvent/pool``.
    let name: String
    /// ``DatabaseConfiguration/instrumentation``: told of every checkout and checkin.
    private let instrumentation: (any DatabaseInstrumentation)?
    /// The executor whose queued async calls will check out of this pool (set once by the
    /// ``Database`` before any use): they count as waiting callers in ``checkin(_:)``.
    weak var queuedCallers: BlockingExecutor?
    private let driver: any DatabaseDriver
    private let dialect: SQLDialect
    /// ``DatabaseConfiguration/livenessCheckAfterIdle``, in nanoseconds.
    private let livenessCheckAfterNanoseconds: UInt64
    /// What every new connection is opened with.
    private let configuration: DatabaseConfiguration

    init(driver: any DatabaseDriver, role: ConnectionRole, name: String? = nil, capacity: Int, overflow: Int = 0,
         livenessCheckAfterIdle: Double = 0, configuration: DatabaseConfiguration = DatabaseConfiguration()) {
        self.driver = driver
        self.name = name ?? (role == .writer ? "writer" : "reader")
        self.instrumentation = configuration.instrumentation
        self.configuration = configuration
        self.role = role
        self.capacity = max(1, capacity)
        self.overflow = max(0, overflow)
        self.dialect = driver.dialect
        let nanoseconds = livenessCheckAfterIdle * 1e9
        livenessCheckAfterNanoseconds = nanoseconds.isFinite && nanoseconds > 0 ? UInt64(min(nanoseconds, 1e18)) : 0
    }

    /// A monotonic clock for idle times: the coarse clock (a memory read, no system call; its
    /// few milliseconds of resolution are plenty against a threshold of a fraction of a second).
    @inline(__always)
    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        #else
        clock_gettime(CLOCK_MONOTONIC, &now)
        #endif
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// Takes an idle connection, opens a new one if there is room, or waits.
    ///
    /// A `nested` checkout comes from a caller that already holds a connection of this
    /// database (a write inside a read, a read beside an open cursor). If it waited like the
    /// others, as many such callers as the pool has connections would each wait for a
    /// connection another of them holds, until the timeout; so when the pool is full it may
    /// open one of ``overflow`` extra connections, closed again when it comes back.
    ///
    /// A `cancellation` that fires while the caller waits wakes it with
    /// ``DatabaseError/cancelled(_:)``.
    func checkout(timeout: Double, nested: Bool = false, cancellation: CancellationControl? = nil) throws -> any DriverConnection {
        guard let instrumentation else {
            return try checkoutConnection(timeout: timeout, nested: nested, cancellation: cancellation)
        }
        let start = instrumentationNow()
        let connection: any DriverConnection
        do {
            connection = try checkoutConnection(timeout: timeout, nested: nested, cancellation: cancellation)
        } catch {
            if case .poolTimeout? = error as? DatabaseError {
                instrumentation.poolChanged(event(.timedOut(waited: instrumentationElapsed(since: start))))
            }
            throw error
        }
        instrumentation.poolChanged(event(.checkedOut(waited: instrumentationElapsed(since: start))))
        return connection
    }

    /// ``checkout(timeout:nested:cancellation:)`` without the instrumentation's event.
    private func checkoutConnection(timeout: Double, nested: Bool, cancellation: CancellationControl?) throws -> any DriverConnection {
        // Read the clock only when the caller has to wait: a checkout that finds an idle
        // connection (most of them, under load) never needs the deadline.
        var deadline: Date?
        // The cancel's waker is installed only when the caller has to wait: a checkout that
        // finds an idle connection (every checkout of the async API under load) pays nothing.
        var wakerInstalled = false
        defer { if wakerInstalled { cancellation?.setWaker(nil) } }
        var reportedWaiting = false
        condition.lock()
        while true {
            if closed {
                condition.unlock()
                throw DatabaseError.misuse("the database is closed; open a new Database to keep working")
            }
            if let cancellation, cancellation.isCancelled {
                condition.unlock()
                throw DatabaseError.cancelled(DatabaseErrorContext(message: "the task was cancelled while it waited for a connection"))
            }
            if let (connection, since) = idle.popLast() {
                condition.unlock()
                // A connection back for less than the threshold is lent as it is (see
                // ``DatabaseConfiguration/livenessCheckAfterIdle``). Otherwise the check runs
                // outside the lock: a poll of the socket (no round trip) unless the server
                // sent something to the idle connection.
                let recent = livenessCheckAfterNanoseconds > 0
                    && Self.monotonicNanoseconds() &- since < livenessCheckAfterNanoseconds
                if recent ? connection.isUsable : connection.isAliveAfterIdling() {
                    return connection
                }
                connection.close()
                condition.lock()
                open -= 1
                continue
            }
            if open < capacity || (nested && open < capacity + overflow) {
                open += 1
                condition.unlock()
                do {
                    return try driver.connect(role: role, configuration: configuration)
                } catch {
                    condition.lock()
                    open -= 1
                    condition.signal()
                    condition.unlock()
                    throw error
                }
            }
            if let cancellation, !wakerInstalled {
                // Installed outside the lock (a waker installed after the cancel runs at
                // once and takes this lock), then everything is checked again.
                condition.unlock()
                cancellation.setWaker { [condition] in
                    condition.lock()
                    condition.broadcast()
                    condition.unlock()
                }
                wakerInstalled = true
                condition.lock()
                continue
            }
            waiting += 1
            if let instrumentation, deadline == nil, !reportedWaiting {
                // Told outside the lock; everything is checked again afterwards, since a
                // connection may come back meanwhile (its signal would find no waiter).
                reportedWaiting = true
                let event = DatabasePoolEvent(kind: .waiting, pool: name, dialect: dialect, capacity: capacity, open: open,
                                              idle: idle.count, waiting: waiting)
                waiting -= 1
                condition.unlock()
                instrumentation.poolChanged(event)
                condition.lock()
                continue
            }
            let until = deadline ?? Date(timeIntervalSinceNow: timeout)
            deadline = until
            let signalled = condition.wait(until: until)
            waiting -= 1
            if !signalled {
                // Re-check once: a connection may have come back right at the deadline.
                if idle.isEmpty && open >= capacity && !closed && !(nested && open < capacity + overflow)
                    && !(cancellation?.isCancelled ?? false) {
                    condition.unlock()
                    throw DatabaseError.poolTimeout(waitedSeconds: timeout, poolSize: capacity)
                }
            }
        }
    }

    /// Returns a connection. Anything left open is rolled back; broken connections are dropped.
    /// `held` is how long the caller had it, for the instrumentation (nil: not measured).
    func checkin(_ connection: any DriverConnection, held: Duration? = nil) {
        checkinConnection(connection)
        instrumentation?.poolChanged(event(.checkedIn(held: held)))
    }

    /// Tells the instrumentation that an async call queued for a thread of this pool's executor.
    func reportQueued() {
        instrumentation?.poolChanged(event(.queued))
    }

    /// An event of `kind` with the pool's counts now. The executor's queue is read before
    /// this pool's lock is taken (never one lock inside the other).
    private func event(_ kind: DatabasePoolEvent.Kind) -> DatabasePoolEvent {
        let queued = queuedCallers?.queuedCount ?? 0
        condition.lock()
        let (open, idle, waiting) = (self.open, self.idle.count, self.waiting)
        condition.unlock()
        return DatabasePoolEvent(kind: kind, pool: name, dialect: dialect, capacity: capacity, open: open, idle: idle,
                                 waiting: waiting + queued)
    }

    /// ``checkin(_:held:)`` without the instrumentation's event.
    private func checkinConnection(_ connection: any DriverConnection) {
        let lost = !connection.isUsable
        var keep = !lost
        if keep && connection.transactionStatus != .idle {
            do {
                try connection.execute(try dialect.render(.rollback).sql, bindings: [], onRow: nil)
            } catch {
                keep = false
            }
            if connection.transactionStatus != .idle { keep = false }
        }
        // Only a connection that holds work back asks how many async calls are queued (the
        // executor's lock, which every async call takes too). Read before taking this lock
        // (never one lock inside the other): a hint, and a stale one costs at most a COMMIT
        // sent early or flushed by the idle thread.
        let holdsWork = keep && connection.holdsWork
        let queued = holdsWork ? queuedCallers?.queuedCount ?? 0 : 0
        condition.lock()
        // A lost connection says the server may have dropped the others too (a restart, a
        // failover, a network cut that no socket has noticed yet): the idle connections,
        // all opened before the loss, are closed rather than lent to fail one caller each.
        var dropped: [any DriverConnection] = []
        if lost {
            dropped = idle.map(\.connection)
            idle.removeAll()
            open -= dropped.count
        }
        // An overflow connection (opened by a nested checkout beyond capacity) is closed.
        if keep && !closed && open <= capacity {
            // A connection that a waiter will take at once keeps what it held back for its
            // next statement (a read's COMMIT travels with the next read's first statement);
            // one that will sit idle sends it now, so it never idles inside a transaction.
            // Async calls queued for a Unity thread count as waiting: the thread that checks
            // this connection in takes the next one at once (the pool lends the connection
            // returned last first), and a thread that finds none flushes what is still held.
            if holdsWork && waiting + queued <= idle.count {
                condition.unlock()
                connection.flushHeldWork()
                condition.lock()
            }
            if closed {
                open -= 1
                dropped.append(connection)
            } else {
                idle.append((connection, livenessCheckAfterNanoseconds > 0 ? Self.monotonicNanoseconds() : 0))
            }
        } else {
            open -= 1
            dropped.append(connection)
        }
        if dropped.count > 1 { condition.broadcast() } else { condition.signal() }
        condition.unlock()
        for c in dropped { c.close() }
    }

    /// Sends what idle connections hold back (a read's COMMIT kept for the next caller):
    /// called when no caller came after all, so that none idles inside a transaction.
    func flushIdleHeldWork() {
        condition.lock()
        guard !closed, idle.contains(where: { $0.connection.holdsWork }) else {
            condition.unlock()
            return
        }
        // Those that hold work are taken out of the pool while they flush (a flush that cannot
        // pipeline waits for the server's answer, which must not happen under the lock); a
        // checkout meanwhile takes another or waits.
        let flushing = idle.filter { $0.connection.holdsWork }
        idle.removeAll { $0.connection.holdsWork }
        condition.unlock()
        for entry in flushing { entry.connection.flushHeldWork() }
        condition.lock()
        if closed {
            open -= flushing.count
            condition.unlock()
            for entry in flushing { entry.connection.close() }
            return
        }
        idle.append(contentsOf: flushing)
        condition.broadcast()
        condition.unlock()
    }

    /// Closes idle connections now and the others as they come back.
    func close() {
        condition.lock()
        closed = true
        let toClose = idle.map(\.connection)
        idle.removeAll()
        open -= toClose.count
        condition.broadcast()
        condition.unlock()
        for c in toClose { c.close() }
    }

    /// Connections currently open (idle or checked out).
    var openCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return open
    }

    /// Connections currently idle in the pool.
    var idleCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return idle.count
    }
}
