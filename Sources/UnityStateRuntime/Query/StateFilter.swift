import Foundation

/// A database that records the paths read and holds nothing: reading a key path on a model
/// made on it tells which property the key path is, and its default.
final class PathRecorder: Database {
    var readPaths: [Path] = []
    func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        readPaths.append(path)
        return nil
    }
    func set<Value: DatabaseValue>(_ value: Value, for path: Path) {}
    func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] { [] }
}

/// A condition on one stored property of a model, written with its key path:
/// `\Person.age > 30`, `\.name == "Ann"`. The SQL stores run it as one indexed query; the
/// other stores evaluate it in Swift. Combine several with `&&`.
public struct StateFilter<Model: ModelProtocol> {
    /// The conditions, all of which must hold; nil when a key path is not a stored property.
    let conditions: [PropertyCondition]?

    init(conditions: [PropertyCondition]?) {
        self.conditions = conditions
    }

    /// The property a key path reads and its default, found by reading it on a model whose
    /// database holds nothing. Nil for a key path that is not exactly one stored property
    /// (a computed property that reads several, a reference's target).
    static func property<Value>(_ keyPath: KeyPath<Model, Value>) -> (id: PropertyKey, default: Value)? {
        let recorder = PathRecorder()
        let probe = Model(database: recorder, id: 0)
        let value = probe[keyPath: keyPath]
        guard recorder.readPaths.count == 1, let path = recorder.readPaths.first,
              !path.isInstanceStatus, path.model == Model.modelId else { return nil }
        // A computed property that reads one stored property reads like it: the generated
        // table of stored key paths tells them apart.
        if let stored = Model.propertyKeyPaths, stored[keyPath] != path.property { return nil }
        return (path.property, value)
    }

    static func compare<Value: DatabaseValue & Comparable>(_ keyPath: KeyPath<Model, Value>, _ comparison: PropertyComparison,
                                                          _ value: Value) -> StateFilter {
        guard let property = property(keyPath) else { return StateFilter(conditions: nil) }
        return StateFilter(conditions: [PropertyCondition(property: property.id, comparison, value, default: property.default)])
    }

    static func equal<Value: DatabaseValue & Equatable>(_ keyPath: KeyPath<Model, Value>, _ equal: Bool,
                                                       _ value: Value) -> StateFilter {
        guard let property = property(keyPath) else { return StateFilter(conditions: nil) }
        return StateFilter(conditions: [PropertyCondition(property: property.id, equal: equal, value, default: property.default)])
    }

    /// Both conditions.
    public static func && (lhs: StateFilter, rhs: StateFilter) -> StateFilter {
        guard let left = lhs.conditions, let right = rhs.conditions else { return StateFilter(conditions: nil) }
        return StateFilter(conditions: left + right)
    }
}

/// `\.property == value`.
public func == <Model: ModelProtocol, Value: DatabaseValue & Equatable>(lhs: KeyPath<Model, Value>, rhs: Value) -> StateFilter<Model> {
    .equal(lhs, true, rhs)
}

/// `\.property != value`.
public func != <Model: ModelProtocol, Value: DatabaseValue & Equatable>(lhs: KeyPath<Model, Value>, rhs: Value) -> StateFilter<Model> {
    .equal(lhs, false, rhs)
}

/// `\.property < value`.
public func < <Model: ModelProtocol, Value: DatabaseValue & Comparable>(lhs: KeyPath<Model, Value>, rhs: Value) -> StateFilter<Model> {
    .compare(lhs, .less, rhs)
}

/// `\.property <= value`.
public func <= <Model: ModelProtocol, Value: DatabaseValue & Comparable>(lhs: KeyPath<Model, Value>, rhs: Value) -> StateFilter<Model> {
    .compare(lhs, .lessOrEqual, rhs)
}

/// `\.property > value`.
public func > <Model: ModelProtocol, Value: DatabaseValue & Comparable>(lhs: KeyPath<Model, Value>, rhs: Value) -> StateFilter<Model> {
    .compare(lhs, .greater, rhs)
}

/// `\.property >= value`.
public func >= <Model: ModelProtocol, Value: DatabaseValue & Comparable>(lhs: KeyPath<Model, Value>, rhs: Value) -> StateFilter<Model> {
    .compare(lhs, .greaterOrEqual, rhs)
}

extension Database {
    /// The instances of `type` that are not deleted and satisfy `filter`: one indexed query per
    /// condition on the SQL stores (``Database/instances(of:where:)``), in Swift elsewhere.
    /// Throws ``StateError/invalidFilter(_:)`` when a key path is not a stored property.
    public func all<Instance: ModelProtocol>(_ type: Instance.Type, matching filter: StateFilter<Instance>) throws -> [Instance] {
        guard let conditions = filter.conditions, let first = conditions.first else {
            throw StateError.invalidFilter("a key path of \(Instance.self) in the filter is not one stored property")
        }
        var ids = instances(of: Instance.modelId, where: first)
        for condition in conditions.dropFirst() {
            let matching = Set(instances(of: Instance.modelId, where: condition))
            ids = ids.filter { matching.contains($0) }
        }
        return ids.map { Instance(database: self, id: $0) }
    }
}
