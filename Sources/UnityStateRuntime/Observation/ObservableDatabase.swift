import Foundation

/// A database wrapper that tells the model objects it handed out when one of their values
/// changes through it (a sync applied to it, an editing context committed into it, another
/// object of the same instance), and reports every change as an `AsyncSequence`: StateModel's
/// `ObservableDatabase` without Combine or SwiftUI.
public final class ObservableDatabase: Database, @unchecked Sendable {
    // @unchecked: `objects`, `listeners` and `transactions` are guarded by `lock`.

    /// The database wrapped.
    public let database: any Database

    private let lock = NSLock()
    private var objects: [InstancePath: [WeakModel]] = [:]
    private let subscribers = StreamSubscribers<Path>()
    private var listeners: [UUID: ([Path]) -> Void] = [:]
    /// Per thread, the ``transaction(_:)`` calls running on it and the changes they made so
    /// far (a transaction's body runs on the thread that called it): another thread's write
    /// outside any transaction is announced at once, never held back with them or dropped
    /// when they roll back.
    private var transactions: [SQLDatabase.ThreadKey: (depth: Int, pending: [Path])] = [:]

    /// The writes made through this database that have not yet been announced, and whether a
    /// recomputation for a commit seen elsewhere runs (see ``withoutWritesRunning(_:)``).
    private let writeGate = NSCondition()
    private var writesInFlight = 0
    /// The thread running a ``withoutWritesRunning(_:)`` body, if any.
    private var exclusiveThread: SQLDatabase.ThreadKey?

    private struct InstancePath: Hashable {
        let model: ModelKey
        let instance: InstanceKey
    }

    private struct WeakModel {
        weak var object: (any ModelProtocol)?
    }

    /// `database`, observed.
    public init(wrapping database: any Database) {
        self.database = database
    }

    /// Called by every model object made on a database (the code `@Model` generates): an
    /// ``ObservableDatabase`` keeps a weak reference to it to notify it later.
    public static func track(_ model: any ModelProtocol) {
        (model.database as? ObservableDatabase)?.register(model)
    }

    private func register(_ model: any ModelProtocol) {
        let key = InstancePath(model: type(of: model).modelId, instance: model.id)
        lock.lock()
        var list = objects[key, default: []].filter { $0.object != nil }
        list.append(WeakModel(object: model))
        objects[key] = list
        lock.unlock()
    }

    /// Every change made through this database from now on, as the path written. The stream
    /// ends when the task iterating it is cancelled.
    public func changes() -> AsyncStream<Path> {
        subscribers.makeStream()
    }

    /// Calls `body` after every change made through this database, on the thread that made
    /// it, with the paths written: once per write, or once per transaction with all of its
    /// writes when it succeeded. ``QueryResults`` recomputes itself this way. The listener is
    /// removed when the returned token is cancelled or released.
    public func addListener(_ body: @escaping ([Path]) -> Void) -> ListenerToken {
        let id = UUID()
        lock.lock()
        listeners[id] = body
        lock.unlock()
        return ListenerToken { [weak self] in
            guard let self else { return }
            self.lock.lock()
            self.listeners[id] = nil
            self.lock.unlock()
        }
    }

    /// Keeps a listener of ``ObservableDatabase/addListener(_:)`` registered while it lives.
    public final class ListenerToken: @unchecked Sendable {
        // @unchecked: `remove` is cleared under `lock`.
        private let lock = NSLock()
        private var remove: (() -> Void)?

        init(_ remove: @escaping () -> Void) {
            self.remove = remove
        }

        /// Removes the listener (also done when the token is released).
        public func cancel() {
            lock.lock()
            let action = remove
            remove = nil
            lock.unlock()
            action?()
        }

        deinit { cancel() }
    }

    /// The changes to instances of `model` (a query over it may need recomputing).
    public func changes<Model: ModelProtocol>(of model: Model.Type) -> AsyncFilterSequence<AsyncStream<Path>> {
        let modelId = Model.modelId
        return changes().filter { $0.model == modelId }
    }

    /// Marks the start of a write through this database (it ends once announced): a
    /// recomputation of ``withoutWritesRunning(_:)`` waits for it, and it waits for one.
    private func beginWrite() {
        writeGate.lock()
        // A write nested in one of this thread's writes never waits (no recomputation starts
        // while a write is in flight), nor does one made by the recomputation's own thread (an
        // observer of the results that writes).
        let thread = SQLDatabase.ThreadKey.current
        while let owner = exclusiveThread, owner != thread { writeGate.wait() }
        writesInFlight += 1
        writeGate.unlock()
    }

    private func endWrite() {
        writeGate.lock()
        writesInFlight -= 1
        if writesInFlight == 0 { writeGate.broadcast() }
        writeGate.unlock()
    }

    /// Runs `body` while no write through this database is between its commit and its
    /// announcement: ``QueryResults`` recompute there for a commit they saw through the core
    /// (made elsewhere, or by this database), so that a result this database is about to
    /// announce is never reported twice. Writes that start meanwhile wait for `body`.
    func withoutWritesRunning(_ body: () -> Void) {
        writeGate.lock()
        while writesInFlight > 0 || exclusiveThread != nil { writeGate.wait() }
        exclusiveThread = SQLDatabase.ThreadKey.current
        writeGate.unlock()
        body()
        writeGate.lock()
        exclusiveThread = nil
        writeGate.broadcast()
        writeGate.unlock()
    }

    /// Announces a write (at once, or with its thread's transaction).
    fileprivate func didChange(_ path: Path) {
        lock.lock()
        if !transactions.isEmpty, transactions[SQLDatabase.ThreadKey.current] != nil {
            transactions[SQLDatabase.ThreadKey.current]?.pending.append(path)
            lock.unlock()
            return
        }
        lock.unlock()
        announce([path])
    }

    /// Tells the objects, the streams and then the listeners of `paths`, in order.
    private func announce(_ paths: [Path]) {
        guard !paths.isEmpty else { return }
        for path in paths {
            lock.lock()
            let key = InstancePath(model: path.model, instance: path.instance)
            let live = (objects[key] ?? []).compactMap(\.object)
            objects[key] = live.isEmpty ? nil : live.map { WeakModel(object: $0) }
            lock.unlock()
            for object in live { object.notifyObservers(ofChangeTo: path.property) }
            subscribers.yield(path)
        }
        lock.lock()
        let hearing = Array(listeners.values)
        lock.unlock()
        for listener in hearing { listener(paths) }
    }

    /// The value stored at `path` in the wrapped database.
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        database.get(path)
    }

    /// Stores `value` in the wrapped database, then tells the model objects of the instance, the
    /// streams and the listeners (when this thread's transaction succeeds, inside one).
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        beginWrite()
        defer { endWrite() }
        database.set(value, for: path)
        didChange(path)
    }

    /// Stores `value` at `path` through `write` (a dated write), then announces it as ``set(_:for:)`` does.
    fileprivate func set(_ path: Path, through write: () -> Void) {
        beginWrite()
        defer { endWrite() }
        write()
        didChange(path)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, from the wrapped
    /// database, and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        database.all(model: model, where: predicate)
    }

    /// Runs `body` in a transaction of the wrapped database. The objects and the change
    /// streams hear of its writes once it succeeded, in the order they were made; when it
    /// throws (nothing was applied) they hear of none of them.
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        beginWrite()
        defer { endWrite() }
        let thread = SQLDatabase.ThreadKey.current
        lock.lock()
        transactions[thread, default: (0, [])].depth += 1
        lock.unlock()
        let result: R
        do {
            result = try database.transaction(body)
        } catch {
            _ = finishTransaction(on: thread)
            throw error
        }
        announce(finishTransaction(on: thread))
        return result
    }

    /// Ends one ``transaction(_:)`` on `thread`; returns the changes to announce when it was
    /// the outermost there.
    private func finishTransaction(on thread: SQLDatabase.ThreadKey) -> [Path] {
        lock.lock()
        defer { lock.unlock() }
        guard var state = transactions[thread] else { return [] }
        state.depth -= 1
        guard state.depth == 0 else {
            transactions[thread] = state
            return []
        }
        transactions[thread] = nil
        return state.pending
    }

    /// The ids of the created instances of `model` whose value satisfies `condition`, as the
    /// wrapped database answers it.
    public func instances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey] {
        database.instances(of: model, where: condition)
    }

    /// A page of the instance ids of `model` from `start`, as the wrapped database answers it.
    public func instanceKeys(of model: ModelKey, from start: InstanceKey, limit: Int) -> [InstanceKey] {
        database.instanceKeys(of: model, from: start, limit: limit)
    }
}

extension ObservableDatabase {
    /// This database as one that keeps write dates, when the wrapped one does: synchronization
    /// and history contexts write through it with the dates they carry, and each write is
    /// announced as any other.
    public var datedView: (any TimestampedDatabase)? {
        guard let dated = database as? any TimestampedDatabase else { return nil }
        return ObservedDatedView(observed: self, dated: dated)
    }
}

/// ``ObservableDatabase/datedView``: reads and dated writes go to the wrapped store, writes
/// are announced by the observable database.
final class ObservedDatedView: TimestampedDatabase, @unchecked Sendable {
    // @unchecked: both references are to thread-safe databases and never change.
    let observed: ObservableDatabase
    let dated: any TimestampedDatabase

    init(observed: ObservableDatabase, dated: any TimestampedDatabase) {
        self.observed = observed
        self.dated = dated
    }

    func get<Value: DatabaseValue>(_ path: Path) -> Value? { dated.get(path) }
    func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>? { dated.get(path) }
    func set<Value: DatabaseValue>(_ value: Value, for path: Path) { observed.set(value, for: path) }
    func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?) {
        observed.set(path) { dated.set(value, for: path, at: date) }
    }
    func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        dated.all(model: model, where: predicate)
    }
    func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        dated.all(model: model, where: predicate)
    }
    func transaction<R>(_ body: () throws -> R) throws -> R { try observed.transaction(body) }
    func instances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey] {
        dated.instances(of: model, where: condition)
    }
    func instanceKeys(of model: ModelKey, from start: InstanceKey, limit: Int) -> [InstanceKey] {
        dated.instanceKeys(of: model, from: start, limit: limit)
    }
}
