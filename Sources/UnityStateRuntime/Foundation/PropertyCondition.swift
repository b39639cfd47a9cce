/// How a stored property value is compared in a ``PropertyCondition``.
public enum PropertyComparison: Sendable, Hashable {
    /// The stored value equals the compared one (`==`).
    case equal
    /// The stored value differs from the compared one (`!=`).
    case notEqual
    /// The stored value is less than the compared one (`<`).
    case less
    /// The stored value is less than or equal to the compared one (`<=`).
    case lessOrEqual
    /// The stored value is greater than the compared one (`>`).
    case greater
    /// The stored value is greater than or equal to the compared one (`>=`).
    case greaterOrEqual
}

/// A condition on one stored property of a model, which a store can run natively.
///
/// It carries the compared value with its Swift type, whether the property's default value
/// satisfies it (an instance with nothing stored at the path has its default), and an
/// evaluator that stores without a native query use (``Database/instances(of:where:)``'s
/// default). The key-path filters of queries (`\.status == .active`) build these.
public struct PropertyCondition {

    /// The property compared.
    public let property: PropertyKey

    /// The comparison.
    public let comparison: PropertyComparison

    /// The value compared with, of the property's type.
    public let value: any DatabaseValue

    /// The property's type.
    public let valueType: any DatabaseValue.Type

    /// Whether an instance with no value stored at the property (so holding its default)
    /// satisfies the condition.
    public let defaultMatches: Bool

    private let evaluate: (any Database, Path) -> Bool

    /// A comparison of an ordered property with `value`.
    public init<Value: DatabaseValue & Comparable>(
        property: PropertyKey, _ comparison: PropertyComparison, _ value: Value, default defaultValue: Value
    ) {
        let test: (Value) -> Bool
        switch comparison {
        case .equal: test = { $0 == value }
        case .notEqual: test = { $0 != value }
        case .less: test = { $0 < value }
        case .lessOrEqual: test = { $0 <= value }
        case .greater: test = { $0 > value }
        case .greaterOrEqual: test = { $0 >= value }
        }
        self.init(property: property, comparison: comparison, value: value, defaultValue: defaultValue, test: test)
    }

    /// An equality (`.equal`) or inequality (any other comparison is treated as `.notEqual`)
    /// test of a property whose type is only `Equatable`.
    public init<Value: DatabaseValue & Equatable>(
        property: PropertyKey, equal: Bool, _ value: Value, default defaultValue: Value
    ) {
        self.init(
            property: property, comparison: equal ? .equal : .notEqual, value: value,
            defaultValue: defaultValue, test: equal ? { $0 == value } : { $0 != value })
    }

    private init<Value: DatabaseValue>(
        property: PropertyKey, comparison: PropertyComparison, value: Value, defaultValue: Value,
        test: @escaping (Value) -> Bool
    ) {
        self.property = property
        self.comparison = comparison
        self.value = value
        self.valueType = Value.self
        self.defaultMatches = test(defaultValue)
        self.evaluate = { database, path in
            let stored: Value? = database.get(path)
            return test(stored ?? defaultValue)
        }
    }

    /// Whether the value stored at `path` in `database` (or the default, when none is) satisfies
    /// the condition.
    public func matches(storedIn database: any Database, at path: Path) -> Bool {
        evaluate(database, path)
    }
}
