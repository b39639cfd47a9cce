import Foundation

/// A search condition, built from key paths and operators and compiled to the core's SQL AST
/// (never to SQL text): `\T.count == 10 || \T.date > Date() && !(\T.id === [1, 2, 3])`.
///
/// A string literal is a raw SQL fragment (`\T.id == 4 && !"price > 10"`): SQL replaces Core
/// Data's predicate syntax there (`@count` becomes a subquery you write). Bind values with
/// `QueryPredicate.raw("price > ?", 10)`.
public struct QueryPredicate: Sendable, ExpressibleByStringLiteral {
    indirect enum Node: Sendable {
        case comparison(String, SQLBinaryOperator, DatabaseValue)
        case isNull(String, negated: Bool)
        case inList(String, [DatabaseValue])
        case text(String, TextOperator, String, caseInsensitive: Bool)
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)
        case raw(String, [DatabaseValue])
        case relation(RelationStorage, ownerKey: String, destination: String, destinationKey: String, Node)
        case invalid(PredicatesError)
        case foundation(FoundationCondition)
        case expression(QualifiedCondition)
    }

    enum TextOperator: Sendable {
        case beginsWith, endsWith, contains, equal
    }

    let node: Node

    init(_ node: Node) { self.node = node }

    /// A raw SQL condition, pasted as written; the table's columns are named as in its
    /// CREATE TABLE.
    public init(stringLiteral value: String) { node = .raw(value, []) }

    /// A raw SQL condition with `?` placeholders bound to `arguments`.
    public static func raw(_ sql: String, _ arguments: any SupportedAttributeType...) -> QueryPredicate {
        QueryPredicate(.raw(sql, arguments.map { $0.encodeDatabaseValue() }))
    }

    /// `column op value` (for inlinable code, which cannot name ``Node``).
    @usableFromInline
    static func comparison(_ column: String, _ op: SQLBinaryOperator, _ value: DatabaseValue) -> QueryPredicate {
        QueryPredicate(.comparison(column, op, value))
    }

    /// A predicate that throws ``PredicatesError/unknownAttribute(entity:keyPath:)`` when run.
    @usableFromInline
    static func unknownAttribute(_ entity: String, _ keyPath: AnyKeyPath) -> QueryPredicate {
        QueryPredicate(.invalid(.unknownAttribute(entity: entity, keyPath: "\(keyPath)")))
    }

    /// `column IS [NOT] NULL` (for inlinable code).
    @usableFromInline
    static func isNull(_ column: String, negated: Bool) -> QueryPredicate {
        QueryPredicate(.isNull(column, negated: negated))
    }

    /// Compiles the condition for the table (or alias) `qualifier` on `dialect`.
    func expression(qualifier: String, dialect: SQLDialect) throws -> SQLExpression {
        var depth = 0
        return try QueryPredicate.compile(node, qualifier, dialect, &depth)
    }

    /// `column`, marked as a Decimal operand when `value` is a Decimal.
    private static func operand(_ column: SQLExpression, _ value: DatabaseValue) -> SQLExpression {
        if case .decimal = value { return .decimal(column) }
        return column
    }

    private static func compile(_ node: Node, _ q: String, _ dialect: SQLDialect, _ depth: inout Int) throws -> SQLExpression {
        switch node {
        case .comparison(let column, let op, let value):
            // A Decimal operand is marked as one: on SQLite its comparison then uses the
            // unity_decimal collation, whatever the column's declared type (a TEXT money
            // column of a schema the flavor did not create compares as a number too).
            return .binary(operand(.column(q, column), value), op, .bind(value))
        case .isNull(let column, let negated):
            return .isNull(.column(q, column), negated: negated)
        case .inList(let column, let values):
            // An empty list matches nothing (the core renders it as a false condition).
            return .inList(operand(.column(q, column), values.first ?? .null), values.map { .bind($0) }, negated: false)
        case .text(let column, let op, let text, let ci):
            let subject: SQLExpression = ci ? TextFolding.expression(.column(q, column), for: dialect) : .column(q, column)
            let needle = ci ? TextFolding.fold(text) : text
            switch op {
            case .beginsWith: return subject.beginsWith(needle)
            case .endsWith: return subject.endsWith(needle)
            case .contains: return subject.contains(needle)
            case .equal: return subject.equals(.bind(.text(needle)))
            }
        case .and(let l, let r):
            return try compile(l, q, dialect, &depth) && compile(r, q, dialect, &depth)
        case .or(let l, let r):
            return try compile(l, q, dialect, &depth) || compile(r, q, dialect, &depth)
        case .not(let inner):
            return !(try compile(inner, q, dialect, &depth))
        case .raw(let sql, let bindings):
            return .raw(sql, bindings)
        case .expression(let condition):
            return try condition.make(q)
        case .relation(let storage, let ownerKey, let destination, let destinationKey, let inner):
            depth += 1
            let linkAlias = "l\(depth)"
            let targetAlias = "r\(depth)"
            let condition = try compile(inner, targetAlias, dialect, &depth)
            let sub: SQLSelect
            switch storage {
            case .link(let link):
                sub = SQLSelect(from: link.table, as: linkAlias)
                    .columns(.expression(.literal(.integer(1))))
                    .join(.inner, destination, as: targetAlias,
                          on: .column(targetAlias, destinationKey).equals(.column(linkAlias, link.targetColumn)))
                    .where(.column(linkAlias, link.ownerColumn).equals(.column(q, ownerKey)) && condition)
            case .foreignKey(let fk) where fk.ownerHoldsColumn:
                // The owner's column holds the related key.
                sub = SQLSelect(from: destination, as: targetAlias)
                    .columns(.expression(.literal(.integer(1))))
                    .where(.column(targetAlias, destinationKey).equals(.column(q, fk.column)) && condition)
            case .foreignKey(let fk):
                // The related rows' column holds the owner's key.
                sub = SQLSelect(from: destination, as: targetAlias)
                    .columns(.expression(.literal(.integer(1))))
                    .where(.column(targetAlias, fk.column).equals(.column(q, ownerKey)) && condition)
            }
            return .exists(sub)
        case .invalid(let error):
            throw error
        case .foundation(let condition):
            return try condition.compile(q)
        }
    }
}

/// `a AND b`.
public func && (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate { QueryPredicate(.and(lhs.node, rhs.node)) }
/// `a OR b`.
public func || (lhs: QueryPredicate, rhs: QueryPredicate) -> QueryPredicate { QueryPredicate(.or(lhs.node, rhs.node)) }
/// `NOT a`.
public prefix func ! (operand: QueryPredicate) -> QueryPredicate { QueryPredicate(.not(operand.node)) }

/// The comparisons behind the operators, and the text matches that have no operator.
public enum Query {}

extension Query {
    static func column<T: ManagedObjectConvertible>(_ keyPath: AnyKeyPath, _ type: T.Type, _ make: (String) -> QueryPredicate.Node) -> QueryPredicate {
        guard let name = T.columnName(keyPath) else {
            return QueryPredicate(.invalid(.unknownAttribute(entity: T.entityName, keyPath: "\(keyPath)")))
        }
        return QueryPredicate(make(name))
    }

    @inlinable
    static func compare<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ op: SQLBinaryOperator, _ value: A) -> QueryPredicate {
        guard let name = T.columnName(keyPath) else { return .unknownAttribute(T.entityName, keyPath) }
        return .comparison(name, op, value.encodeDatabaseValue())
    }

    /// `NOT a`.
    public static func not(_ original: QueryPredicate) -> QueryPredicate { !original }
    /// `a AND b`.
    public static func and(_ left: QueryPredicate, _ right: QueryPredicate) -> QueryPredicate { left && right }
    /// `a OR b`.
    public static func or(_ left: QueryPredicate, _ right: QueryPredicate) -> QueryPredicate { left || right }

    /// `==`: equal; `nil` means IS NULL.
    @inlinable
    public static func equalTo<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: A) -> QueryPredicate
    where A.PrimitiveAttributeType: Equatable {
        guard let name = T.columnName(keyPath) else { return .unknownAttribute(T.entityName, keyPath) }
        let v = value.encodeDatabaseValue()
        if case .null = v { return .isNull(name, negated: false) }
        return .comparison(name, .equal, v)
    }

    /// `!=`: not equal; `nil` means IS NOT NULL. As in SQL (and Core Data), a row whose
    /// value is NULL is not "not equal" to a value: it is left out.
    @inlinable
    public static func notEqualTo<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: A) -> QueryPredicate
    where A.PrimitiveAttributeType: Equatable {
        guard let name = T.columnName(keyPath) else { return .unknownAttribute(T.entityName, keyPath) }
        let v = value.encodeDatabaseValue()
        if case .null = v { return .isNull(name, negated: true) }
        return .comparison(name, .notEqual, v)
    }

    /// `>`.
    @inlinable
    public static func greaterThan<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: A) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .greater, value) }
    /// `<`.
    @inlinable
    public static func lessThan<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: A) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .less, value) }
    /// `>=`.
    @inlinable
    public static func greaterThanOrEqualTo<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: A) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .greaterOrEqual, value) }
    /// `<=`.
    @inlinable
    public static func lessThanOrEqualTo<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: A) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .lessOrEqual, value) }

    /// `>` on an optional attribute (a NULL is never greater).
    @inlinable
    public static func greaterThan<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: A?) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .greater, value) }
    /// `<` on an optional attribute (a NULL is never less).
    @inlinable
    public static func lessThan<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: A?) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .less, value) }
    /// `>=` on an optional attribute.
    @inlinable
    public static func greaterThanOrEqualTo<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: A?) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .greaterOrEqual, value) }
    /// `<=` on an optional attribute.
    @inlinable
    public static func lessThanOrEqualTo<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: A?) -> QueryPredicate
    where A.PrimitiveAttributeType: Comparable { compare(keyPath, .lessOrEqual, value) }

    /// `===`: IN. An empty list matches nothing; `nil` in the list matches NULL.
    public static func `in`<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ values: [A]) -> QueryPredicate
    where A.PrimitiveAttributeType: Equatable {
        let encoded = values.map { $0.encodeDatabaseValue() }
        let nonNull = encoded.filter { if case .null = $0 { return false } else { return true } }
        let hasNull = nonNull.count != encoded.count
        return column(keyPath, T.self) { name in
            let list = QueryPredicate.Node.inList(name, nonNull)
            return hasNull ? .or(list, .isNull(name, negated: false)) : list
        }
    }

    /// True when the text begins with `value`, taken literally (`%`, `_`, `\` are plain
    /// characters). Case- and accent-insensitive by default, equally on every backend
    /// (see `TextFolding`); `caseInsensitive: false` compares exactly.
    public static func beginsWith<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .beginsWith, value, caseInsensitive: caseInsensitive) }
    }
    /// ``beginsWith(_:_:caseInsensitive:)`` on an optional text attribute (a NULL never matches).
    public static func beginsWith<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .beginsWith, value, caseInsensitive: caseInsensitive) }
    }
    /// True when the text ends with `value`; see `beginsWith(_:_:caseInsensitive:)`.
    public static func endsWith<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .endsWith, value, caseInsensitive: caseInsensitive) }
    }
    /// ``endsWith(_:_:caseInsensitive:)`` on an optional text attribute (a NULL never matches).
    public static func endsWith<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .endsWith, value, caseInsensitive: caseInsensitive) }
    }
    /// True when the text contains `value`; see `beginsWith(_:_:caseInsensitive:)`.
    public static func contains<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .contains, value, caseInsensitive: caseInsensitive) }
    }
    /// ``contains(_:_:caseInsensitive:)`` on an optional text attribute (a NULL never matches).
    public static func contains<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .contains, value, caseInsensitive: caseInsensitive) }
    }
    /// True when the text equals `value` once both are folded (case- and accent-insensitive
    /// `==`); `==` itself compares exactly.
    public static func matches<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .equal, value, caseInsensitive: caseInsensitive) }
    }
    /// ``matches(_:_:caseInsensitive:)`` on an optional text attribute (a NULL never matches).
    public static func matches<T: ManagedObjectConvertible, A: SupportedAttributeType>(_ keyPath: KeyPath<T, A?>, _ value: String, caseInsensitive: Bool = true) -> QueryPredicate
    where A.PrimitiveAttributeType == String {
        column(keyPath, T.self) { .text($0, .equal, value, caseInsensitive: caseInsensitive) }
    }

    /// True when the object's to-one relation holds an object matching `predicate`
    /// (a predicate over the destination's key paths): the books whose author's name begins
    /// with "A" are `Query.any(Book.self, \.author, Query.beginsWith(\Author.name, "A"))`.
    /// Compiled to an EXISTS subquery. (Unity's addition: Sworm allowed attributes only.)
    public static func any<T: ManagedObjectConvertible, D: ManagedObjectConvertible>(_ owner: T.Type, _ relation: KeyPath<T.Relations, ToOneRelation<D>>, _ predicate: QueryPredicate) -> QueryPredicate
    where T.Relations: RelationSet {
        let declaration = T.relations[keyPath: relation].declaration
        return QueryPredicate(.relation(RelationStorage.of(T.self, declaration, D.self), ownerKey: T.keyColumn,
                                        destination: D.entityName, destinationKey: D.keyColumn, predicate.node))
    }
    /// True when at least one object of the to-many relation matches `predicate`.
    public static func any<T: ManagedObjectConvertible, D: ManagedObjectConvertible>(_ owner: T.Type, _ relation: KeyPath<T.Relations, ToManyRelation<D>>, _ predicate: QueryPredicate) -> QueryPredicate
    where T.Relations: RelationSet {
        let declaration = T.relations[keyPath: relation].declaration
        return QueryPredicate(.relation(RelationStorage.of(T.self, declaration, D.self), ownerKey: T.keyColumn,
                                        destination: D.entityName, destinationKey: D.keyColumn, predicate.node))
    }
    /// True when at least one object of the ordered to-many relation matches `predicate`.
    public static func any<T: ManagedObjectConvertible, D: ManagedObjectConvertible>(_ owner: T.Type, _ relation: KeyPath<T.Relations, ToManyOrderedRelation<D>>, _ predicate: QueryPredicate) -> QueryPredicate
    where T.Relations: RelationSet {
        let declaration = T.relations[keyPath: relation].declaration
        return QueryPredicate(.relation(RelationStorage.of(T.self, declaration, D.self), ownerKey: T.keyColumn,
                                        destination: D.entityName, destinationKey: D.keyColumn, predicate.node))
    }
}

/// `Query.equalTo`.
@inlinable
public func == <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: A) -> QueryPredicate
where A.PrimitiveAttributeType: Equatable { Query.equalTo(lhs, rhs) }
/// `Query.notEqualTo`.
@inlinable
public func != <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: A) -> QueryPredicate
where A.PrimitiveAttributeType: Equatable { Query.notEqualTo(lhs, rhs) }
/// `Query.greaterThan`.
@inlinable
public func > <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: A) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.greaterThan(lhs, rhs) }
/// `Query.greaterThan` on an optional attribute.
@inlinable
public func > <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A?>, rhs: A?) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.greaterThan(lhs, rhs) }
/// `Query.lessThan`.
@inlinable
public func < <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: A) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.lessThan(lhs, rhs) }
/// `Query.lessThan` on an optional attribute.
@inlinable
public func < <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A?>, rhs: A?) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.lessThan(lhs, rhs) }
/// `Query.greaterThanOrEqualTo`.
@inlinable
public func >= <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: A) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.greaterThanOrEqualTo(lhs, rhs) }
/// `Query.greaterThanOrEqualTo` on an optional attribute.
@inlinable
public func >= <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A?>, rhs: A?) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.greaterThanOrEqualTo(lhs, rhs) }
/// `Query.lessThanOrEqualTo`.
@inlinable
public func <= <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: A) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.lessThanOrEqualTo(lhs, rhs) }
/// `Query.lessThanOrEqualTo` on an optional attribute.
@inlinable
public func <= <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A?>, rhs: A?) -> QueryPredicate
where A.PrimitiveAttributeType: Comparable { Query.lessThanOrEqualTo(lhs, rhs) }
/// `Query.in`: IN.
public func === <T: ManagedObjectConvertible, A: SupportedAttributeType>(lhs: KeyPath<T, A>, rhs: [A]) -> QueryPredicate
where A.PrimitiveAttributeType: Equatable { Query.in(lhs, rhs) }
