import Foundation
import Logging
#if canImport(Observation)
import Observation
#endif
import Unity

/// Where query results log that they cannot follow commits made elsewhere.
private let stateLogger = Logger(label: "unity.state")

/// What a query selects and how it orders it: StateModel's `QueryDescriptor`, the value a
/// SwiftUI `@Query` is built from. Both closures run in Swift on each instance; for a filter
/// the database runs, give `where:` a key-path filter (``StateFilter``).
public struct QueryDescriptor<Model: ModelProtocol> {
    /// Which instances are included (all when nil).
    public let filter: ((Model) -> Bool)?
    /// A filter on stored properties that a SQL store runs in SQL, applied before `filter`.
    public let storedFilter: StateFilter<Model>?
    /// Orders two instances (the database's order, by id, when nil).
    public let areInIncreasingOrder: ((Model, Model) -> Bool)?
    /// A new value for every descriptor made, so a holder can tell that it was replaced.
    public let id = UUID()

    /// Instances for which `filter` is true, ordered by the value `sortBy` gives.
    public init<Key: Comparable>(where storedFilter: StateFilter<Model>? = nil, filter: ((Model) -> Bool)? = nil,
                                 sortBy: @escaping (Model) -> Key, ascending: Bool = true) {
        self.filter = filter
        self.storedFilter = storedFilter
        self.areInIncreasingOrder = ascending ? { sortBy($0) < sortBy($1) } : { sortBy($0) > sortBy($1) }
    }

    /// Instances for which `filter` is true, in id order.
    public init(where storedFilter: StateFilter<Model>? = nil, filter: ((Model) -> Bool)? = nil) {
        self.filter = filter
        self.storedFilter = storedFilter
        self.areInIncreasingOrder = nil
    }
}

extension Database {
    /// The instances `descriptor` selects, in its order.
    public func all<Model: ModelProtocol>(_ descriptor: QueryDescriptor<Model>) throws -> [Model] {
        var items: [Model]
        if let stored = descriptor.storedFilter {
            items = try all(Model.self, matching: stored)
        } else {
            items = all(of: Model.self)
        }
        if let filter = descriptor.filter { items = items.filter(filter) }
        if let order = descriptor.areInIncreasingOrder { items.sort(by: order) }
        return items
    }
}

/// The result of a query that follows the data (StateModel's dynamic `@Query`, without
/// SwiftUI): replace ``descriptor`` and ``items`` are computed again; on an
/// ``ObservableDatabase`` they are also computed again after every change to the model's
/// instances made through it — a write, a sync applied to it, an editing context committed
/// into it (once per transaction).
///
/// On a SQL store (``SQLDatabase``, bare or wrapped in an ``ObservableDatabase``) they also
/// follow commits made elsewhere — by another process on the same SQLite file, by any client
/// of the same PostgreSQL database, by another `Database` value or store — through the core's
/// `observeChanges(to:)`: after such a commit to the store's tables they are computed again in
/// the background, and reported only when the ids of the result changed (the objects read their
/// values from the store, so they show the new values anyway). On PostgreSQL this needs the
/// store's change triggers (``SQLDatabase/init(_:encoder:decoder:clock:changeTriggers:)``);
/// without them ``observationError`` says so. The in-memory stores have nothing to follow:
/// every write to them goes through the object itself. On any other database call ``refresh()``.
///
/// `items` is observable with Swift's Observation (`withObservationTracking`), and
/// ``updates()`` reports each new result as an `AsyncSequence` of instance ids. A recomputation
/// runs on the thread that made the change; reading `items` is safe from any thread.
public final class QueryResults<Model: ModelProtocol>: @unchecked Sendable {
    // @unchecked: `state` and `currentDescriptor` are guarded by `lock`; the
    // descriptor's closures are only called while it is held.

    /// The database queried.
    public let database: any Database

    private let lock = NSLock()
    private var currentDescriptor: QueryDescriptor<Model>
    private var state: (items: [Model], error: StateError?) = ([], nil)
    private let subscribers = StreamSubscribers<[InstanceKey]>()
    private var listener: ObservableDatabase.ListenerToken?
    private let observation = ModelObservation()
    /// The core's observer of the SQL store's commits, while following one.
    private var follower: DatabaseChangeObserver?
    private var followFailure: (any Error)?
    /// True while a recomputation for a commit seen through the core is queued and not yet begun.
    private var followPending = false
    private let followLock = NSLock()
    private let followQueue = DispatchQueue(label: "unity.state.query-results")

    /// What is selected; setting it recomputes ``items``.
    public var descriptor: QueryDescriptor<Model> {
        get {
            lock.lock()
            defer { lock.unlock() }
            return currentDescriptor
        }
        set {
            lock.lock()
            currentDescriptor = newValue
            lock.unlock()
            refresh()
        }
    }

    /// The instances selected, in order.
    public var items: [Model] {
        #if canImport(Observation)
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) { observation.access(self, keyPath: \.items) }
        #endif
        lock.lock()
        defer { lock.unlock() }
        return state.items
    }

    /// The last error a recomputation met (an invalid key-path filter); `items` is then empty.
    public var error: StateError? {
        lock.lock()
        defer { lock.unlock() }
        return state.error
    }

    /// Why these results do not follow commits made elsewhere, on a SQL store whose commits
    /// cannot be observed: `ObservationError.missingChangeTrigger` on PostgreSQL when the
    /// store was never opened with `changeTriggers: true`, or the core's `DatabaseError` when
    /// its watcher could not start. Nil while they follow them, and on a store with nothing to
    /// follow (the in-memory stores, a cache).
    public var observationError: (any Error)? {
        followLock.lock()
        defer { followLock.unlock() }
        return followFailure
    }

    /// The results of `descriptor` in `database`, computed now, and again after each change
    /// made through it when `database` is an ``ObservableDatabase``, and after each commit to
    /// the store's tables when a SQL store is under it (see ``observationError``).
    public init(database: any Database, descriptor: QueryDescriptor<Model>) {
        self.database = database
        self.currentDescriptor = descriptor
        // Following first, computing second: a commit made in between is not missed.
        if let observed = database as? ObservableDatabase {
            let modelId = Model.modelId
            listener = observed.addListener { [weak self] paths in
                guard let self, paths.contains(where: { $0.model == modelId }) else { return }
                self.refresh()
            }
        }
        followCommits()
        refresh()
    }

    deinit {
        follower?.cancel()
        listener?.cancel()
        subscribers.finishAll()
    }

    /// The SQL store under `database` (through observable wrappers, not through a cache, whose
    /// values would not follow).
    private static func sqlStore(under database: any Database) -> SQLDatabase? {
        var current = database
        while true {
            if let store = current as? SQLDatabase { return store }
            guard let observed = current as? ObservableDatabase else { return nil }
            current = observed.database
        }
    }

    /// Follows the commits of the SQL store under ``database``, if there is one.
    private func followCommits() {
        guard let store = Self.sqlStore(under: database) else { return }
        do {
            // Through a non-generic existential: the closure must not capture the model's metatype.
            let target: any CommitFollowing = self
            let observer = try store.observeCommits { [weak target] in target?.commitSeen() }
            followLock.lock()
            follower = observer
            followLock.unlock()
        } catch {
            followLock.lock()
            followFailure = error
            followLock.unlock()
            stateLogger.warning("query results of model \(Model.modelId) do not follow commits made elsewhere: \(error)")
        }
    }

    /// A commit to the store's tables: queue one recomputation (those seen before it begins
    /// are covered by it; one seen while it runs queues the next).
    func commitSeen() {
        followLock.lock()
        if followPending {
            followLock.unlock()
            return
        }
        followPending = true
        followLock.unlock()
        let target: any CommitFollowing = self
        followQueue.async { [weak target] in target?.recomputeForCommit() }
    }

    /// The queued recomputation of ``commitSeen()``.
    func recomputeForCommit() {
        followLock.lock()
        followPending = false
        followLock.unlock()
        // Not while a write through the observable database is between its commit and its
        // announcement: that write recomputes the results itself.
        if let observed = database as? ObservableDatabase {
            observed.withoutWritesRunning { recompute(reportingUnchangedIds: false) }
        } else {
            recompute(reportingUnchangedIds: false)
        }
    }

    /// Each result computed from now on, as the ids of its instances in order. The stream ends
    /// when the task iterating it is cancelled or the results are released.
    public func updates() -> AsyncStream<[InstanceKey]> {
        subscribers.makeStream()
    }

    /// Computes ``items`` again.
    public func refresh() {
        recompute(reportingUnchangedIds: true)
    }

    /// Computes ``items`` again; reports the result (to Observation and ``updates()``) unless
    /// `reportingUnchangedIds` is false and it holds the same instances in the same order, with
    /// the same error.
    private func recompute(reportingUnchangedIds: Bool) {
        lock.lock()
        let next: (items: [Model], error: StateError?)
        do {
            next = (try database.all(currentDescriptor), nil)
        } catch let failure as StateError {
            next = ([], failure)
        } catch {
            next = ([], .invalidFilter(String(describing: error)))
        }
        let unchanged = !reportingUnchangedIds && next.items.map(\.id) == state.items.map(\.id)
            && String(describing: next.error) == String(describing: state.error)
        lock.unlock()
        if unchanged { return }
        let ids = next.items.map(\.id)
        let change = {
            self.lock.lock()
            self.state = next
            self.lock.unlock()
        }
        #if canImport(Observation)
        if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
            observation.withMutation(of: self, keyPath: \.items, change)
        } else {
            change()
        }
        #else
        change()
        #endif
        subscribers.yield(ids)
    }
}

/// What ``QueryResults`` do when the store's tables changed, seen without the model type, so
/// that the closures the core and a dispatch queue keep capture no generic metatype.
protocol CommitFollowing: AnyObject, Sendable {
    /// A commit to the store's tables was seen: queue a recomputation.
    func commitSeen()
    /// Runs the queued recomputation.
    func recomputeForCommit()
}

extension QueryResults: CommitFollowing {}

/// The streams handed out by ``ObservableDatabase/changes()`` and ``QueryResults/updates()``
/// (a box of its own, so that their termination handlers capture nothing of a model type).
final class StreamSubscribers<Element: Sendable>: @unchecked Sendable {
    // @unchecked: `streams` is guarded by `lock`.
    private let lock = NSLock()
    private var streams: [UUID: AsyncStream<Element>.Continuation] = [:]

    /// A new stream of every element yielded from now on; it leaves when its task ends.
    func makeStream() -> AsyncStream<Element> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.lock.lock()
            self.streams[id] = nil
            self.lock.unlock()
        }
        lock.lock()
        streams[id] = continuation
        lock.unlock()
        return stream
    }

    /// Gives `element` to every stream.
    func yield(_ element: Element) {
        lock.lock()
        let current = Array(streams.values)
        lock.unlock()
        for stream in current { stream.yield(element) }
    }

    /// Ends every stream.
    func finishAll() {
        lock.lock()
        let current = Array(streams.values)
        streams = [:]
        lock.unlock()
        for stream in current { stream.finish() }
    }
}

#if canImport(Observation)
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension QueryResults: Observable {}
#endif
