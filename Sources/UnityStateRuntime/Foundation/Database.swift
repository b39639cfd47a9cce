import Foundation

/// Where the state flavor keeps its values: StateModel's three-function interface.
///
/// A database gets and sets values by ``Path`` and lists the instances of a model with their
/// status; everything else (creating, fetching, deleting instances, queries) is built on these.
/// The same model code runs on every conforming database: `InMemoryDatabase`, the history and
/// cached databases, editing contexts, and the SQL stores on SQLite and PostgreSQL.
///
/// A file that imports both `UnityState` and the core (`Unity` or a driver) names this
/// protocol ``StateDatabase`` (the core's database is also called `Database`).
///
/// `get` and `set` do not throw, as in StateModel, because model properties read and write
/// through them. Stores that can fail (the SQL stores) report a failed write through their own
/// error handler and never lose or half-apply it; a group of writes that must succeed or fail
/// together goes through ``transaction(_:)``, which throws.
public protocol Database: AnyObject {

    /// The value stored at `path`, or nil when none is stored (or it is not a `Value`).
    func get<Value: DatabaseValue>(_ path: Path) -> Value?

    /// Stores `value` at `path`.
    func set<Value: DatabaseValue>(_ value: Value, for path: Path)

    /// Calls `predicate` with every instance of `model` that has a stored status and collects
    /// the non-nil results.
    func all<T>(model: ModelKey, where predicate: (_ instance: InstanceKey, _ status: InstanceStatus) -> T?) -> [T]

    /// Runs `body` so that every `set` inside it is applied together or not at all.
    ///
    /// The SQL stores run `body` in one database transaction and throw the store's error if
    /// any write inside failed (the database is then as it was before). Stores without
    /// transactions apply the writes as they come. Creating an instance with values, an editing
    /// context's commit and a sync apply all write through this.
    func transaction<R>(_ body: () throws -> R) throws -> R

    /// The ids of the instances of `model` whose status is `created` and whose stored value
    /// satisfies `condition`.
    ///
    /// The SQL stores answer this with one indexed query; the default loads the value of every
    /// instance and evaluates the condition in Swift.
    func instances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey]

    /// The ids of the instances of `model` with a stored status (created or deleted) from
    /// `start` on, in increasing order, at most `limit` of them: a page of a synchronization.
    ///
    /// The SQL stores answer this with one indexed query; the default lists every instance.
    func instanceKeys(of model: ModelKey, from start: InstanceKey, limit: Int) -> [InstanceKey]
}

extension Database {

    /// Applies the writes as they come: a store without transactions.
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        try body()
    }

    /// Lists every instance of `model` and keeps the page asked for.
    public func instanceKeys(of model: ModelKey, from start: InstanceKey, limit: Int) -> [InstanceKey] {
        Array(all(model: model) { id, _ in id >= start ? id : nil }.sorted().prefix(max(0, limit)))
    }

    /// Evaluates `condition` for every created instance of `model`, in Swift.
    public func instances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey] {
        all(model: model) { instance, status in
            guard status == .created else { return nil }
            let path = Path(model: model, instance: instance, property: condition.property)
            return condition.matches(storedIn: self, at: path) ? instance : nil
        }
    }
}

/// A database that records when each value was written.
public protocol TimestampedDatabase: Database {

    /// The value stored at `path` with the time it was written.
    func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>?

    /// Stores `value` at `path` as written at `date` (now when nil).
    func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?)

    /// Like ``Database/all(model:where:)``, with the time each status was written.
    func all<T>(
        model: ModelKey,
        where predicate: (_ instance: InstanceKey, _ status: InstanceStatus, _ date: Date) -> T?
    ) -> [T]
}

/// A database that keeps every value ever written, so that it can be read as it was at any
/// earlier time (see `view(at:)`).
public protocol HistoryDatabase: TimestampedDatabase {

    /// The value that `path` held at `date` (the current value when nil), with its write time.
    func get<Value: DatabaseValue>(_ path: Path, at date: Date?) -> Timestamped<Value>?

    /// Like ``TimestampedDatabase/all(model:where:)``, as the statuses were at `date` (now when nil).
    func all<T>(
        model: ModelKey,
        at date: Date?,
        where predicate: (_ instance: InstanceKey, _ status: InstanceStatus, _ date: Date) -> T?
    ) -> [T]
}

/// The state flavor's ``Database`` protocol, by a name that the core does not use: write
/// `any StateDatabase` in a file that imports both `UnityState` and `Unity` (or a driver),
/// where `Database` alone is ambiguous.
public typealias StateDatabase = Database

/// The state flavor's ``DatabaseValue`` (any `Codable` value), by a name that the core does
/// not use: write `StateDatabaseValue` in a file that also imports `Unity`, where
/// `DatabaseValue` alone names two types.
public typealias StateDatabaseValue = DatabaseValue
