import Foundation

/// An `AsyncSequence` of query results that follows the database: the current result first,
/// then a new one after each committed transaction that changed a table the query reads.
///
/// Make one with ``Database/observe(_:tables:removeDuplicates:)`` and iterate it:
///
/// - Nothing happens until iteration starts: the first `next()` checks that the tables can
///   be observed (throwing an ``ObservationError`` otherwise), starts the database's watcher
///   of commits and fetches the current result.
/// - Results are coalesced: changes that arrive while a result is being fetched, or while
///   the consumer has not asked for the next one, make the observation stale, and the next
///   result is fetched then, reflecting the latest state. Nothing queues up.
/// - A rolled-back transaction is never seen; a commit that changed no table the query
///   reads causes no fetch.
/// - With `removeDuplicates` (the default), a result equal to the last one delivered is not
///   delivered again.
/// - Cancelling the consuming task ends the sequence (`next()` returns nil) and releases what
///   the observation held; so does dropping the iterator. A fetch that fails ends the sequence
///   with its error.
///
/// Each iterator is an observation of its own.
public struct DatabaseObservation<Element: Sendable>: AsyncSequence, Sendable {
    /// The iterator's failures: ``ObservationError`` when the observation cannot start,
    /// ``DatabaseError`` when a fetch fails.
    public typealias Failure = any Error

    let database: Database
    let statement: SQLStatement
    let tables: Set<String>?
    let removeDuplicates: Bool
    let transform: @Sendable ([Row]) throws -> Element

    /// Starts nothing: the observation starts at the iterator's first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(run: ObservationRun(database: database, statement: statement, tables: tables,
                                     removeDuplicates: removeDuplicates, transform: transform))
    }

    /// Iterates the results of one observation.
    public struct Iterator: AsyncIteratorProtocol {
        let run: ObservationRun<Element>

        /// The next result: the current one first, then one after each relevant commit. Nil once
        /// the consuming task is cancelled. Throws ``ObservationError`` when the observation
        /// cannot start and the fetch's error when one fails (the sequence then ends).
        public mutating func next() async throws -> Element? {
            try await run.next()
        }
    }
}

/// The state of one iteration of a ``DatabaseObservation``.
final class ObservationRun<Element: Sendable>: @unchecked Sendable {
    // @unchecked: `stale`, `waiter`, `cancelled` and `observer` are guarded by `lock`; the
    // other variables are used by `next()` only, which the iterator calls one at a time.
    private let lock = NSLock()
    private var stale = false
    private var cancelled = false
    private var waiter: CheckedContinuation<Void, Never>?
    private var observer: DatabaseChangeObserver?

    private let database: Database
    private let statement: SQLStatement
    private let tables: Set<String>?
    private let removeDuplicates: Bool
    private let transform: @Sendable ([Row]) throws -> Element
    private var started = false
    private var finished = false
    private var last: [Row]?

    init(database: Database, statement: SQLStatement, tables: Set<String>?, removeDuplicates: Bool,
         transform: @escaping @Sendable ([Row]) throws -> Element) {
        self.database = database
        self.statement = statement
        self.tables = tables
        self.removeDuplicates = removeDuplicates
        self.transform = transform
    }

    deinit {
        observer?.cancel()
    }

    func next() async throws -> Element? {
        guard !finished else { return nil }
        do {
            if !started {
                started = true
                let tables = try self.tables ?? ObservedTables.tables(in: statement)
                let database = self.database
                let observer = try await database.read(.primary) { [weak self] conn in
                    try database.startObserving(tables, on: conn) { [weak self] _ in self?.markStale() }
                }
                lock.withLock { self.observer = observer }
                guard let rows = try await fetch(retrying: false) else { return end() }
                last = rows
                return try transform(rows)
            }
            while true {
                guard await waitUntilStale() else { return end() }
                guard let rows = try await fetch() else { return end() }
                if removeDuplicates, let last, last == rows { continue }
                last = rows
                return try transform(rows)
            }
        } catch {
            _ = end()
            if Task.isCancelled { return nil }
            throw error
        }
    }

    /// The statement's rows, read on the primary; nil when the task was cancelled.
    ///
    /// A refetch (`retrying`) that loses its connection, or cannot open one, tries again (after
    /// 50 ms, doubling up to 1 s) for up to the configuration's `checkoutTimeout`: a read is
    /// safe to repeat, and a server restart must not end the observation. Other errors, and
    /// the first fetch's, are thrown.
    private func fetch(retrying: Bool = true) async throws -> [Row]? {
        let statement = self.statement
        let database = self.database
        let deadline = Date().addingTimeInterval(max(1, database.configuration.checkoutTimeout))
        var delay = 0.05
        while true {
            if Task.isCancelled { return nil }
            do {
                return try await database.read(.primary) { conn in try conn.fetchAll(statement) }
            } catch let error as DatabaseError {
                switch error {
                case .connectionLost, .connectionFailed:
                    guard retrying, Date() < deadline else { throw error }
                default:
                    throw error
                }
            }
            do {
                try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            } catch {
                return nil
            }
            delay = min(1, delay * 2)
        }
    }

    /// Ends the observation: the observer is cancelled at once.
    private func end() -> Element? {
        finished = true
        lock.lock()
        let observer = self.observer
        self.observer = nil
        lock.unlock()
        observer?.cancel()
        return nil
    }

    /// A change arrived: the next result must be fetched.
    private func markStale() {
        lock.lock()
        stale = true
        let waiter = self.waiter
        self.waiter = nil
        lock.unlock()
        waiter?.resume()
    }

    /// Waits until a change arrived since the last fetch (and clears it), or the task is
    /// cancelled (false).
    private func waitUntilStale() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                lock.lock()
                if stale || cancelled {
                    lock.unlock()
                    continuation.resume()
                } else {
                    waiter = continuation
                    lock.unlock()
                }
            }
            return lock.withLock {
                if cancelled { return false }
                stale = false
                return true
            }
        } onCancel: {
            lock.lock()
            cancelled = true
            let waiter = self.waiter
            self.waiter = nil
            lock.unlock()
            waiter?.resume()
        }
    }
}

extension Database {
    /// The number of observations running now (for tests and monitoring): iterations of
    /// ``DatabaseObservation`` started and not ended, and ``DatabaseChangeObserver``s not
    /// cancelled.
    public var activeObservationCount: Int { changeSink.observerCount }

    /// True while this database watches for commits: a listening connection (PostgreSQL) or a
    /// `data_version` check (SQLite) runs. False whenever nothing is observed.
    public var isWatchingChanges: Bool { changeSink.isWatching }

    /// The rows of `statement`, following the database: the current result first, then a new
    /// one after each committed transaction that changed a table the statement reads.
    ///
    /// The tables are found by walking the statement's AST (FROM, JOINs, subqueries in FROM,
    /// IN and EXISTS, compound members). For raw SQL, or a raw fragment that holds a subquery,
    /// name them with `tables:`; the observation then throws
    /// ``ObservationError/tablesUnknown(_:)`` when it starts.
    ///
    /// - Parameters:
    ///   - statement: the query; usually an AST SELECT.
    ///   - tables: the tables to follow instead of those found in the statement (a view's
    ///     base tables, say). Required for raw SQL.
    ///   - removeDuplicates: when true, a result equal to the last one delivered is skipped.
    /// - Returns: a sequence that starts observing when its iteration starts.
    public func observe(_ statement: SQLStatement, tables: Set<String>? = nil, removeDuplicates: Bool = true)
        -> DatabaseObservation<[Row]> {
        DatabaseObservation(database: self, statement: statement, tables: tables, removeDuplicates: removeDuplicates,
                            transform: { $0 })
    }

    /// The results of `statement` as ``observe(_:tables:removeDuplicates:)`` delivers them,
    /// each mapped by `map` (after the duplicate check, which compares rows). An error thrown
    /// by `map` ends the sequence with it.
    public func observe<T: Sendable>(_ statement: SQLStatement, tables: Set<String>? = nil, removeDuplicates: Bool = true,
                                     map: @escaping @Sendable ([Row]) throws -> T) -> DatabaseObservation<T> {
        DatabaseObservation(database: self, statement: statement, tables: tables, removeDuplicates: removeDuplicates,
                            transform: map)
    }

    /// The results of `statement` decoded as `type` (through ``RowDecoder``), delivered as
    /// ``observe(_:tables:removeDuplicates:)`` delivers rows. A row that does not decode ends
    /// the sequence with the decoding error.
    public func observe<T: Decodable & Sendable>(_ statement: SQLStatement, as type: T.Type, tables: Set<String>? = nil,
                                                 removeDuplicates: Bool = true) -> DatabaseObservation<[T]> {
        observe(statement, tables: tables, removeDuplicates: removeDuplicates) { rows in
            let decoder = RowDecoder().rowsDecoder(for: T.self)
            return try rows.map { try decoder.decode($0) }
        }
    }

    /// Calls `onChange` with the names of the changed tables (as given in `tables`) after each
    /// committed transaction that changed any of them, until the returned observer is
    /// cancelled or deinitialised. The lowest level of observation: nothing is fetched.
    ///
    /// Calls are coalesced by the watcher where it can (PostgreSQL delivers one notification
    /// per table and transaction; SQLite one call per commit of this process and per check of
    /// other processes' commits) and come on a thread of Unity's, or on the committing thread
    /// for this process's SQLite commits: return quickly and never run a statement inside.
    ///
    /// - Throws: ``ObservationError`` when a table cannot be observed (PostgreSQL: unknown, or
    ///   without the change trigger of ``Migration/observeChanges(of:name:)``; behind a
    ///   transaction-mode pooler without ``DatabaseConfiguration/notificationURL``), and
    ///   ``DatabaseError`` when the watcher cannot start.
    public func observeChanges(to tables: Set<String>, _ onChange: @escaping @Sendable (Set<String>) -> Void) throws
        -> DatabaseChangeObserver {
        try read(.primary) { conn in try startObserving(tables, on: conn, onChange) }
    }

    /// ``observeChanges(to:_:)`` on `connection`, a connection lent for reading from the
    /// primary (where the source resolves the tables).
    func startObserving(_ tables: Set<String>, on connection: Connection,
                        _ onChange: @escaping @Sendable (Set<String>) -> Void) throws -> DatabaseChangeObserver {
        guard !tables.isEmpty else { throw ObservationError.noTables }
        let source = try changeSink.currentSource() ?? makeChangeSource()
        let keys = try source.keys(for: tables, on: connection)
        var names: [String: Set<String>] = [:]
        for (name, key) in keys { names[key, default: []].insert(name) }
        let id = try changeSink.register(names: names, onChange: onChange, source: source)
        return DatabaseChangeObserver(sink: changeSink, id: id)
    }

    /// A new, unstarted watcher from the driver.
    private func makeChangeSource() throws -> any DatabaseChangeSource {
        guard let source = try driver.makeChangeSource(configuration: configuration, sink: changeSink) else {
            throw ObservationError.unsupported("its driver has no change source")
        }
        return source
    }
}
