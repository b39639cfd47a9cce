import Foundation

extension Database {

    /// The value at `path` as a `type`, or nil when none is stored (or it is another type).
    ///
    /// Useful where the value's type would otherwise be inferred wrongly from the context:
    /// `db.get(path, of: Int?.self)`.
    public func get<Value: DatabaseValue>(_ path: Path, of type: Value.Type) -> Value? {
        get(path)
    }

    /// The value of one property of one instance, by its three ids.
    public func get<Value: DatabaseValue>(model: ModelKey, instance: InstanceKey, property: PropertyKey,
                                          of type: Value.Type = Value.self) -> Value? {
        get(Path(model: model, instance: instance, property: property))
    }

    /// Stores `value` at `path` as a `type` (to pin a type the context would infer otherwise).
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path, of type: Value.Type) {
        set(value, for: path)
    }

    /// Stores `value` as one property of one instance, by its three ids.
    public func set<Value: DatabaseValue>(_ value: Value, model: ModelKey, instance: InstanceKey, property: PropertyKey,
                                          of type: Value.Type = Value.self) {
        set(value, for: Path(model: model, instance: instance, property: property))
    }
}

extension HistoryDatabase {

    /// The value one property of one instance held at `date` (the current value when nil),
    /// with its write time.
    public func get<Value: DatabaseValue>(model: ModelKey, instance: InstanceKey, property: PropertyKey,
                                          at date: Date?) -> Timestamped<Value>? {
        get(Path(model: model, instance: instance, property: property), at: date)
    }

    /// Stores `value` as one property of one instance, as written at `date` (now when nil).
    public func set<Value: DatabaseValue>(_ value: Value, model: ModelKey, instance: InstanceKey, property: PropertyKey,
                                          at date: Date?) {
        set(value, for: Path(model: model, instance: instance, property: property), at: date)
    }

    /// The value `path` held at `date` (the current value when nil) as a `type`, with its
    /// write time.
    public func get<Value: DatabaseValue>(_ path: Path, at date: Date?, of type: Value.Type) -> Timestamped<Value>? {
        get(path, at: date)
    }
}
