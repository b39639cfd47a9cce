import Foundation

/// One pending edit of a context: its value, and how to write it to a database.
struct PendingEdit {
    let value: AnyObject
    let write: (CommitTarget) -> Void
}

/// Where a commit writes: the database, and the same database as a timestamped one when it is
/// one and the context commits at a date (found once per commit, not once per edit).
struct CommitTarget {
    let database: any Database
    let timestamped: (any TimestampedDatabase)?
    let date: Date?
}

/// Changes kept apart from a database until they are committed, as SwiftData's `ModelContext`:
/// create instances and set values through the context (it is a ``Database`` itself, so model
/// objects work on it as on any database), then ``commitChanges()`` or ``discardChanges()``.
///
/// A read sees the context's own edits over the database's current values, so it also sees
/// what others write to paths the context has not edited.
public class EditingContext: Database {

    /// The database the changes go to.
    public let database: any Database

    var edits: [Path: PendingEdit] = [:]
    var editedStatuses: [ModelKey: [InstanceKey: InstanceStatus]] = [:]
    /// Edits of values other than statuses at status paths (stored beside the status).
    var otherAtStatusPaths: [Path: PendingEdit] = [:]

    /// A context on `database` (see ``Database/createEditingContext()``).
    public init(database: any Database) {
        self.database = database
    }

    /// Whether the context holds edits not yet committed.
    public var hasChanges: Bool { !edits.isEmpty || !otherAtStatusPaths.isEmpty }

    /// The paths the context has edited, in path order.
    public var changedPaths: [Path] { Set(edits.keys).union(otherAtStatusPaths.keys).sorted() }

    /// Reads the value from the database (a ``HistoryEditingContext`` reads its snapshot).
    func baseValue<Value: DatabaseValue>(_ path: Path) -> Value? {
        database.get(path)
    }

    /// The statuses of `model` in the database (a snapshot for a ``HistoryEditingContext``).
    func baseStatuses(model: ModelKey) -> [(InstanceKey, InstanceStatus)] {
        database.all(model: model) { ($0, $1) }
    }

    /// The value at `path`: the context's edit when it has one, else the database's value (a
    /// ``HistoryEditingContext`` reads its snapshot).
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        let other = path.isInstanceStatus && Value.self != InstanceStatus.self
        if let edit = other ? otherAtStatusPaths[path] : edits[path] {
            return (edit.value as? StoredValue<Value>)?.value
        }
        return baseValue(path)
    }

    /// Keeps `value` as an edit of `path` until ``commitChanges()`` (the database is not written).
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        let edit = PendingEdit(value: StoredValue(value)) { target in
            if let timestamped = target.timestamped, let date = target.date {
                timestamped.set(value, for: path, at: date)
            } else {
                target.database.set(value, for: path)
            }
        }
        if path.isInstanceStatus {
            // Another value at a status path is kept beside the status, as the stores keep it.
            guard Value.self == InstanceStatus.self, let status = value as? InstanceStatus else {
                otherAtStatusPaths[path] = edit
                return
            }
            editedStatuses[path.model, default: [:]][path.instance] = status
        }
        edits[path] = edit
    }

    /// Calls `predicate` with every instance of `model`, with the status the context's edits give
    /// it over the database's, and collects the non-nil results (in instance order).
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        var statuses: [InstanceKey: InstanceStatus] = [:]
        for (id, status) in baseStatuses(model: model) { statuses[id] = status }
        for (id, status) in editedStatuses[model] ?? [:] { statuses[id] = status }
        return statuses.keys.sorted().compactMap { id in statuses[id].flatMap { predicate(id, $0) } }
    }

    /// The date the edits are written with (nil: now).
    var commitDate: Date? { nil }

    /// Writes every edit to the database in one transaction (one database transaction on the
    /// SQL stores), then forgets them. When it throws, the database is as it was and the
    /// context keeps its edits. Returns the edited paths whose value did not become current
    /// (always none for this context; see ``HistoryEditingContext``).
    @discardableResult
    public func commitChanges() throws -> [Path] {
        // Each path is written once, so the order does not matter (no sort of every path).
        let pending = Array(edits.values) + Array(otherAtStatusPaths.values)
        let date = commitDate
        let target = CommitTarget(database: database, timestamped: date == nil ? nil : datedView(of: database),
                                  date: date)
        try database.transaction {
            for edit in pending { edit.write(target) }
        }
        discardChanges()
        return []
    }

    /// Forgets every edit; reads see the database again.
    public func discardChanges() {
        edits.removeAll()
        editedStatuses.removeAll()
        otherAtStatusPaths.removeAll()
    }
}

/// An editing context on a history database that works on the database as it was when the
/// context was made: later writes to the database are not seen, and the edits are committed
/// at that date. A path the database changed after that date keeps its newer value (the edit
/// stays in the history, at the context's date); ``commitChanges()`` reports those paths.
public final class HistoryEditingContext: EditingContext {

    /// The moment the context shows and commits at.
    public let date: Date

    private let history: any HistoryDatabase

    /// A context on `database` as it is at `date`.
    public init(database: any HistoryDatabase, date: Date) {
        self.date = date
        self.history = database
        super.init(database: database)
    }

    override func baseValue<Value: DatabaseValue>(_ path: Path) -> Value? {
        let found: Timestamped<Value>? = history.get(path, at: date)
        return found?.value
    }

    override func baseStatuses(model: ModelKey) -> [(InstanceKey, InstanceStatus)] {
        history.all(model: model, at: date) { id, status, _ in (id, status) }
    }

    override var commitDate: Date? { date }

    /// Writes every edit at the context's date in one transaction; returns the paths whose
    /// current value the database changed after that date, so the edit did not become current.
    @discardableResult
    public override func commitChanges() throws -> [Path] {
        let lost = changedPaths.filter { path in
            guard let current = latestDate(of: path) else { return false }
            return current > date
        }
        _ = try super.commitChanges()
        return lost
    }

    /// When the current value of `path` was written (nil when there is none).
    private func latestDate(of path: Path) -> Date? {
        // The type is unknown here: ask for the status type at status paths, else probe the
        // stored write time through an opaque read of the history.
        if path.isInstanceStatus {
            let status: Timestamped<InstanceStatus>? = history.get(path, at: nil)
            return status?.date
        }
        return history.latestWriteDate(of: path)
    }
}

extension HistoryDatabase {
    /// The time of the latest write to `path`, whatever its type (nil when none).
    func latestWriteDate(of path: Path) -> Date? {
        if let sql = self as? SQLHistoryDatabase { return sql.latestWriteDate(path) }
        if let memory = self as? InMemoryHistoryDatabase { return memory.latestWriteDate(path) }
        return nil
    }
}

extension Database {
    /// A context whose edits reach this database only when committed.
    public func createEditingContext() -> EditingContext {
        EditingContext(database: self)
    }
}

extension HistoryDatabase {
    /// A context on this database as it is now, unaffected by later writes to it (see
    /// ``HistoryEditingContext``).
    public func createEditingContextWithCurrentState() -> HistoryEditingContext {
        HistoryEditingContext(database: self, date: Date())
    }
}
