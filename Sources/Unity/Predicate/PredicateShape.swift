import Foundation

/// What a predicate's SQL depends on besides the values it binds: the model's schema, the
/// table's alias, the expression's type (which spells the whole tree of node types), and, in
/// the order of a walk over the tree, its key paths and the words that stand for operators,
/// variables, nils and Booleans. The walk's part is kept as a 128-bit digest, so a lookup
/// allocates nothing; key paths go into it by identity (a key path written in code is one
/// object per place it is written), and the cache entry holds on to them, so no other key
/// path can take the address of one while its entry lives.
struct PredicateShapeKey: Hashable {
    var schema: Int
    var alias: String?
    var root: ObjectIdentifier
    var walk: SQLShapeKey
}

/// The walk that makes a ``PredicateShapeKey`` and gathers the values to bind, in the order
/// in which the translator meets them.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
struct PredicateShapeCollector {
    private let schema: Int
    private let alias: String?
    private let root: ObjectIdentifier
    private var digest = SQLShapeHash(salt: 0x9E1D_1CA7)
    /// The values that the template's slots take, in slot order.
    var values: [DatabaseValue] = []
    /// The key paths met, in walk order: kept only when `keepsKeyPaths` (to pin them in a new
    /// cache entry); a lookup needs only their identities.
    private(set) var keyPaths: [AnyKeyPath] = []
    private let keepsKeyPaths: Bool
    /// Variables by order of declaration (their ids change with every predicate made); the
    /// first apart, since most predicates declare one.
    private var firstVariable: PredicateExpressions.VariableID?
    private var laterVariables: [PredicateExpressions.VariableID] = []

    init(schema: Int, alias: String?, root: ObjectIdentifier, keepsKeyPaths: Bool = false) {
        self.schema = schema
        self.alias = alias
        self.root = root
        self.keepsKeyPaths = keepsKeyPaths
    }

    /// The key of what has been walked.
    var key: PredicateShapeKey {
        PredicateShapeKey(schema: schema, alias: alias, root: root, walk: digest.finalize(bindingCount: values.count))
    }

    /// Adds `expression` (the root) and its subtree; false when the tree cannot share a
    /// template (a node without a shape, a captured collection or range): then it is
    /// translated every time.
    mutating func add<E: PredicateExpression>(_ expression: E) -> Bool {
        // One cast of the whole tree: its conformance holds only if every node's does.
        guard let node = expression as? any SQLShapedPredicateExpression else { return false }
        return node.addShape(to: &self)
    }

    mutating func word(_ value: Int) {
        digest.combine(value)
    }

    /// A key path, by identity.
    mutating func keyPath(_ keyPath: AnyKeyPath) {
        digest.combine(-8)
        digest.combine(Int(bitPattern: UInt(bitPattern: ObjectIdentifier(keyPath))))
        if keepsKeyPaths { keyPaths.append(keyPath) }
    }

    mutating func declare(_ variable: PredicateExpressions.VariableID) {
        if firstVariable == nil {
            firstVariable = variable
        } else {
            laterVariables.append(variable)
        }
        digest.combine(-1_000 - (laterVariables.count + 1))
    }

    /// A use of a variable: the ordinal of its declaration, so that two predicates made apart
    /// (with other ids) share a key.
    mutating func use(_ variable: PredicateExpressions.VariableID) -> Bool {
        let ordinal: Int
        if let later = laterVariables.lastIndex(of: variable) {
            ordinal = later + 1
        } else if firstVariable == variable {
            ordinal = 0
        } else {
            return false
        }
        digest.combine(-2_000 - ordinal)
        return true
    }

    /// A value written in or captured by the predicate. A single bindable value becomes a
    /// slot; nil and Booleans change the SQL itself, so they go into the key.
    mutating func value<T>(_ value: T) -> Bool {
        // The common scalar types by an exact type test, before the slower protocol casts.
        if let scalar = Self.commonScalar(value) {
            digest.combine(-6)
            values.append(scalar)
            return true
        }
        var value: Any = value
        while let optional = value as? any OptionalValueMarker {
            guard let wrapped = optional.wrappedAny else {
                digest.combine(-3)
                return true
            }
            value = wrapped
        }
        if let bool = value as? Bool {
            digest.combine(bool ? -4 : -5)
            return true
        }
        guard let databaseValue = PredicateTranslator.scalarValue(value) else { return false }
        digest.combine(-6)
        values.append(databaseValue)
        return true
    }

    /// `value`'s database value when its type is one of the common non-optional scalars.
    @inline(__always)
    private static func commonScalar<T>(_ value: T) -> DatabaseValue? {
        if T.self == Int.self { return unsafeBitCast(value, to: Int.self).databaseValue }
        if T.self == Double.self { return unsafeBitCast(value, to: Double.self).databaseValue }
        if T.self == String.self { return unsafeBitCast(value, to: String.self).databaseValue }
        if T.self == Int64.self { return unsafeBitCast(value, to: Int64.self).databaseValue }
        if T.self == Date.self { return unsafeBitCast(value, to: Date.self).databaseValue }
        return nil
    }
}

/// A cached shape: its entry, and the key paths whose identities its key holds (kept alive
/// with it, so their addresses stay theirs).
struct PredicateShapeStored {
    var entry: PredicateShapeEntry
    var keyPaths: [AnyKeyPath]
}

/// A translation with its values taken out: `binds` says which bind stands for which slot.
struct PredicateTemplate: Sendable {
    enum Use: Sendable {
        /// The slot's value, as it is.
        case value(Int)
        /// A LIKE pattern: the slot's text, escaped, between `before` and `after`.
        case likePattern(Int, before: String, after: String)
    }

    var expression: SQLExpression
    var binds: [String: Use]

    /// The template's expression with `values` in its slots, or nil where a slot's value
    /// does not fit its use.
    func filled(with values: [DatabaseValue]) -> SQLExpression? {
        expression.fillingSlots(binds, values)
    }
}

/// A translated predicate's shape: a template, or a mark that the shape is translated every
/// time (its template did not give back the direct translation).
enum PredicateShapeEntry: Sendable {
    case template(PredicateTemplate)
    case unshared
}

/// The text a template binds in place of slot `index`. It holds no LIKE metacharacter (a
/// pattern made from it keeps it whole) and no user value is ever compared with it: only a
/// template's own binds are.
func predicateSlotSentinel(_ index: Int) -> String {
    "\u{0}\u{1}unity-slot-\(index)\u{1}\u{0}"
}

extension SQLExpression {
    /// This expression with each bind that `binds` names replaced by its slot's value.
    func fillingSlots(_ binds: [String: PredicateTemplate.Use], _ values: [DatabaseValue]) -> SQLExpression? {
        func fill(_ e: SQLExpression) -> SQLExpression? { e.fillingSlots(binds, values) }
        func fillAll(_ list: [SQLExpression]) -> [SQLExpression]? {
            var out: [SQLExpression] = []
            out.reserveCapacity(list.count)
            for e in list {
                guard let f = fill(e) else { return nil }
                out.append(f)
            }
            return out
        }
        switch self {
        case .bind(.text(let text)):
            guard let use = binds[text] else { return self }
            switch use {
            case .value(let slot):
                guard slot < values.count else { return nil }
                return .bind(values[slot])
            case .likePattern(let slot, let before, let after):
                guard slot < values.count, case .text(let needle) = values[slot] else { return nil }
                return .bind(.text(before + SQLExpression.escapeLikePattern(needle) + after))
            }
        case .column, .allColumns, .bind, .literal, .countAll, .excluded, .fragment:
            return self
        case .unary(let op, let x):
            return fill(x).map { .unary(op, $0) }
        case .binary(let a, let op, let b):
            guard let a = fill(a), let b = fill(b) else { return nil }
            return .binary(a, op, b)
        case .and(let list):
            return fillAll(list).map { .and($0) }
        case .or(let list):
            return fillAll(list).map { .or($0) }
        case .isNull(let x, let negated):
            return fill(x).map { .isNull($0, negated: negated) }
        case .isDistinctFrom(let a, let b, let negated):
            guard let a = fill(a), let b = fill(b) else { return nil }
            return .isDistinctFrom(a, b, negated: negated)
        case .between(let x, let low, let high, let negated):
            guard let x = fill(x), let low = fill(low), let high = fill(high) else { return nil }
            return .between(x, low: low, high: high, negated: negated)
        case .like(let x, let pattern, let escape, let caseInsensitive, let negated):
            guard let x = fill(x), let pattern = fill(pattern) else { return nil }
            var filledEscape: SQLExpression?
            if let escape {
                guard let e = fill(escape) else { return nil }
                filledEscape = e
            }
            return .like(x, pattern: pattern, escape: filledEscape, caseInsensitive: caseInsensitive, negated: negated)
        case .inList(let x, let list, let negated):
            guard let x = fill(x), let list = fillAll(list) else { return nil }
            return .inList(x, list, negated: negated)
        case .inSubquery(let x, let select, let negated):
            guard let x = fill(x), let select = select.fillingSlots(binds, values) else { return nil }
            return .inSubquery(x, select, negated: negated)
        case .exists(let select, let negated):
            return select.fillingSlots(binds, values).map { .exists($0, negated: negated) }
        case .subquery(let select):
            return select.fillingSlots(binds, values).map { .subquery($0) }
        case .function(let name, let arguments, let distinct):
            return fillAll(arguments).map { .function(name: name, arguments: $0, distinct: distinct) }
        case .caseWhen(let branches, let otherwise):
            var filled: [SQLCaseBranch] = []
            for branch in branches {
                guard let when = fill(branch.condition), let then = fill(branch.result) else { return nil }
                filled.append(SQLCaseBranch(when: when, then: then))
            }
            var filledElse: SQLExpression?
            if let otherwise {
                guard let e = fill(otherwise) else { return nil }
                filledElse = e
            }
            return .caseWhen(filled, else: filledElse)
        case .cast(let x, let type):
            return fill(x).map { .cast($0, type) }
        case .decimal(let x):
            return fill(x).map { .decimal($0) }
        case .codePointOrdered(let x):
            return fill(x).map { .codePointOrdered($0) }
        case .json, .fullText:
            // Never made by a predicate's translation: left as it is (a slot inside would
            // stay unfilled, and the template's check would refuse the template).
            return self
        }
    }
}

extension SQLSelect {
    /// The parts a translated predicate's subqueries use (the result columns, the joins'
    /// conditions and WHERE), their slots filled. Slots elsewhere stay unfilled, and the
    /// check made when a template is built then refuses the template.
    func fillingSlots(_ binds: [String: PredicateTemplate.Use], _ values: [DatabaseValue]) -> SQLSelect? {
        var copy = self
        if let condition = whereCondition {
            guard let filled = condition.fillingSlots(binds, values) else { return nil }
            copy.whereCondition = filled
        }
        var joins: [SQLJoin] = []
        for join in self.joins {
            if case .join(let kind, let source, let on?) = join {
                guard let filled = on.fillingSlots(binds, values) else { return nil }
                joins.append(.join(kind, source, on: filled))
            } else {
                joins.append(join)
            }
        }
        copy.joins = joins
        var columns: [SQLSelectColumn] = []
        for column in self.columns {
            if case .expression(let e, let alias) = column {
                guard let filled = e.fillingSlots(binds, values) else { return nil }
                columns.append(.expression(filled, alias: alias))
            } else {
                columns.append(column)
            }
        }
        copy.columns = columns
        return copy
    }
}
