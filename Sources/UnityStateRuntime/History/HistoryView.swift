import Foundation

/// A history database as it was at one moment: read it like any database (the same model
/// code works on it); writes to it are ignored, as in StateModel.
public final class HistoryView: Database {

    /// The database viewed.
    public let database: any HistoryDatabase

    /// The moment the view shows.
    public private(set) var date: Date

    /// A view of `database` at `date`.
    public init(database: any HistoryDatabase, date: Date) {
        self.database = database
        self.date = date
    }

    /// Moves the view to another moment; instances read from it afterwards show that moment.
    public func moveView(to date: Date) {
        self.date = date
    }

    /// The value `path` held at the view's ``date``; nil when it had none then.
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        let found: Timestamped<Value>? = database.get(path, at: date)
        return found?.value
    }

    /// Ignored: a view of the past is read-only.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {}

    /// Calls `predicate` with every instance of `model` that had a status at the view's ``date``,
    /// and collects the non-nil results.
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        database.all(model: model, at: date) { id, status, _ in predicate(id, status) }
    }
}

extension HistoryDatabase {
    /// The database as it was at `date`, read-only (writes to it are ignored).
    public func view(at date: Date) -> HistoryView {
        HistoryView(database: self, date: date)
    }
}
