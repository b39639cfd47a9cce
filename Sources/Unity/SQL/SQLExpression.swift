import Foundation

/// A SQL expression as a value: a typed tree that the renderer switches on, never SQL text.
///
/// Build expressions with the static helpers and methods below rather than the raw cases:
///
/// ```swift
/// let adult = SQLExpression.column("age").greaterThanOrEquals(18)
/// let named = SQLExpression.column("users", "name").beginsWith("Ann")
/// let both = adult && named
/// ```
///
/// Every Swift value becomes a bind parameter (``bind(_:)``); only NULL, booleans and DDL
/// defaults written as ``SQLLiteral`` are spelled inline.
public indirect enum SQLExpression: Sendable, Hashable {
    /// A column, optionally qualified by a table name or alias.
    case column(table: String?, name: String)
    /// `table.*` or `*`, for use in `COUNT(*)`-like positions and select lists.
    case allColumns(table: String?)
    /// A value bound as a parameter.
    case bind(DatabaseValue)
    /// A literal spelled inline (NULL, TRUE, FALSE, DEFAULT, a DDL default number or string).
    case literal(SQLLiteral)
    /// A prefix operator: NOT or unary minus.
    case unary(SQLUnaryOperator, SQLExpression)
    /// An infix operator: comparison, arithmetic or string concatenation.
    case binary(SQLExpression, SQLBinaryOperator, SQLExpression)
    /// The conjunction of the operands; an empty list is true.
    case and([SQLExpression])
    /// The disjunction of the operands; an empty list is false.
    case or([SQLExpression])
    /// `x IS NULL`, or `x IS NOT NULL` when `negated`.
    case isNull(SQLExpression, negated: Bool)
    /// `x IS DISTINCT FROM y` (PostgreSQL) / `x IS NOT y` (SQLite); `negated` is the
    /// null-safe equality.
    case isDistinctFrom(SQLExpression, SQLExpression, negated: Bool)
    /// `x BETWEEN low AND high`, or NOT BETWEEN.
    case between(SQLExpression, low: SQLExpression, high: SQLExpression, negated: Bool)
    /// `x LIKE pattern [ESCAPE e]`. `caseInsensitive` renders ILIKE on PostgreSQL and
    /// `lower(x) LIKE lower(pattern)` on SQLite; plain LIKE is case-sensitive on both
    /// (the SQLite driver turns on `PRAGMA case_sensitive_like`).
    case like(SQLExpression, pattern: SQLExpression, escape: SQLExpression?, caseInsensitive: Bool, negated: Bool)
    /// `x IN (a, b, …)`. An empty list renders as a false (or, negated, true) condition.
    case inList(SQLExpression, [SQLExpression], negated: Bool)
    /// `x IN (SELECT …)`.
    case inSubquery(SQLExpression, SQLSelect, negated: Bool)
    /// `EXISTS (SELECT …)`.
    case exists(SQLSelect, negated: Bool)
    /// A scalar subquery `(SELECT …)`.
    case subquery(SQLSelect)
    /// A function call `name(args)`; `distinct` renders `name(DISTINCT args)` for aggregates.
    /// The name must be a plain identifier (letters, digits, `_`, `.`); anything else is a
    /// rendering error, since function names cannot be bound.
    case function(name: String, arguments: [SQLExpression], distinct: Bool)
    /// `COUNT(*)`.
    case countAll
    /// `CASE WHEN … THEN … [ELSE …] END`.
    case caseWhen([SQLCaseBranch], else: SQLExpression?)
    /// `CAST(x AS type)` with the dialect's type name.
    case cast(SQLExpression, ColumnType)
    /// `excluded.column`: the row proposed for insertion, inside an upsert's DO UPDATE.
    case excluded(String)
    /// A raw fragment written by a user; its `?` placeholders become the dialect's.
    case fragment(SQLFragment)
    /// An operand that holds a Swift `Decimal`: comparisons, `ORDER BY`, `MIN` and `MAX` on it
    /// are numeric on every backend, whatever the column's declared type.
    ///
    /// SQLite renders `x COLLATE "unity_decimal"` (the driver's collation, which compares
    /// numerals as numbers), so a money column that a schema Unity did not create declares
    /// `TEXT` still orders 9.91 before 10.00; PostgreSQL renders the operand unchanged (its
    /// `numeric` already compares as a number). Wrap the column side of a comparison; a bound
    /// `Decimal` on the other side then compares under the same collation.
    case decimal(SQLExpression)
    /// An operand that holds a Swift `String`, compared and ordered as Swift compares strings:
    /// by Unicode code point, whatever the column's collation or the server's locale.
    ///
    /// PostgreSQL renders `x COLLATE "C"`, SQLite `x COLLATE "BINARY"` (UTF-8 bytes order as
    /// code points do). Translated `#Predicate` comparisons and `SortDescriptor`s on strings
    /// use it, so a schema whose text columns carry a locale's collation still answers as
    /// Swift does.
    case codePointOrdered(SQLExpression)
    /// A value inside a JSON document, containment or a member's presence: SQLite's JSON
    /// functions, PostgreSQL's `jsonb` operators. Build it with ``jsonValue(at:as:)``,
    /// ``jsonContains(_:at:)`` and ``jsonHasKey(_:at:)``.
    case json(SQLJSONOperation)
    /// A full-text search of a row: whether it matches, how well, or an excerpt (FTS5 on
    /// SQLite, `tsvector` / `tsquery` on PostgreSQL). Build it with a ``FullTextIndex``.
    case fullText(SQLFullTextSearch)
}

/// One `WHEN condition THEN result` branch of a CASE expression.
public struct SQLCaseBranch: Sendable, Hashable {
    /// The condition.
    public var condition: SQLExpression
    /// The result when the condition holds.
    public var result: SQLExpression
    /// Creates a branch.
    public init(when condition: SQLExpression, then result: SQLExpression) {
        self.condition = condition
        self.result = result
    }
}

/// A literal spelled inline in SQL text. Reserved for keywords and DDL defaults: values in
/// queries are always bound (``SQLExpression/bind(_:)``).
public enum SQLLiteral: Sendable, Hashable {
    /// NULL.
    case null
    /// TRUE/FALSE on PostgreSQL, 1/0 on SQLite.
    case bool(Bool)
    /// DEFAULT (in an INSERT's VALUES or an UPDATE's SET).
    case `default`
    /// An integer, spelled in decimal.
    case integer(Int64)
    /// A floating point number; non-finite values are a rendering error.
    case double(Double)
    /// A string, single-quoted with `'` doubled.
    case string(String)
    /// CURRENT_TIMESTAMP.
    case currentTimestamp
}

/// A prefix operator.
public enum SQLUnaryOperator: String, Sendable, Hashable {
    /// Logical negation.
    case not = "NOT"
    /// Arithmetic negation.
    case negate = "-"
}

/// An infix operator. Both operands are always parenthesized when compound, so precedence
/// never depends on the operator table of a backend.
public enum SQLBinaryOperator: String, Sendable, Hashable {
    /// `=`
    case equal = "="
    /// `<>`
    case notEqual = "<>"
    /// `<`
    case less = "<"
    /// `<=`
    case lessOrEqual = "<="
    /// `>`
    case greater = ">"
    /// `>=`
    case greaterOrEqual = ">="
    /// `+`
    case add = "+"
    /// `-`
    case subtract = "-"
    /// `*`
    case multiply = "*"
    /// `/`
    case divide = "/"
    /// `%`
    case modulo = "%"
    /// `||`: string concatenation.
    case concat = "||"
}

// MARK: - Building expressions

extension SQLExpression {
    /// An unqualified column.
    public static func column(_ name: String) -> SQLExpression { .column(table: nil, name: name) }
    /// A table-qualified column: `"table"."name"`.
    public static func column(_ table: String, _ name: String) -> SQLExpression { .column(table: table, name: name) }
    /// A Swift value as a bind parameter.
    public static func value(_ value: some DatabaseValueConvertible) -> SQLExpression { .bind(value.databaseValue) }
    /// NULL.
    public static var null: SQLExpression { .literal(.null) }
    /// The boolean literal true in the dialect's spelling.
    public static var `true`: SQLExpression { .literal(.bool(true)) }
    /// The boolean literal false in the dialect's spelling.
    public static var `false`: SQLExpression { .literal(.bool(false)) }
    /// A raw fragment with `?` placeholders: `.raw("brim_size > ?", [10])`.
    public static func raw(_ sql: String, _ bindings: [DatabaseValue] = []) -> SQLExpression {
        .fragment(SQLFragment(sql, bindings))
    }
    /// A call of a named function: `.function("lower", .column("name"))`.
    public static func function(_ name: String, _ arguments: SQLExpression...) -> SQLExpression {
        .function(name: name, arguments: arguments, distinct: false)
    }
    /// `COUNT(x)`, or `COUNT(DISTINCT x)`.
    public static func count(_ x: SQLExpression, distinct: Bool = false) -> SQLExpression {
        .function(name: "COUNT", arguments: [x], distinct: distinct)
    }
    /// `SUM(x)`.
    public static func sum(_ x: SQLExpression) -> SQLExpression { .function(name: "SUM", arguments: [x], distinct: false) }
    /// `AVG(x)`.
    public static func avg(_ x: SQLExpression) -> SQLExpression { .function(name: "AVG", arguments: [x], distinct: false) }
    /// `MIN(x)`.
    public static func min(_ x: SQLExpression) -> SQLExpression { .function(name: "MIN", arguments: [x], distinct: false) }
    /// `MAX(x)`.
    public static func max(_ x: SQLExpression) -> SQLExpression { .function(name: "MAX", arguments: [x], distinct: false) }
    /// `lower(x)`.
    public static func lower(_ x: SQLExpression) -> SQLExpression { .function(name: "lower", arguments: [x], distinct: false) }
    /// `upper(x)`.
    public static func upper(_ x: SQLExpression) -> SQLExpression { .function(name: "upper", arguments: [x], distinct: false) }
    /// `length(x)`.
    public static func length(_ x: SQLExpression) -> SQLExpression { .function(name: "length", arguments: [x], distinct: false) }
    /// `coalesce(a, b, …)`.
    public static func coalesce(_ xs: SQLExpression...) -> SQLExpression { .function(name: "coalesce", arguments: xs, distinct: false) }
    /// `EXISTS (subquery)`.
    public static func exists(_ query: SQLSelect) -> SQLExpression { .exists(query, negated: false) }
    /// `NOT EXISTS (subquery)`.
    public static func notExists(_ query: SQLSelect) -> SQLExpression { .exists(query, negated: true) }
    /// A CASE expression.
    public static func `case`(_ branches: [SQLCaseBranch], else otherwise: SQLExpression? = nil) -> SQLExpression {
        .caseWhen(branches, else: otherwise)
    }
    /// The conjunction of the conditions, flattened; empty is true.
    public static func all(_ conditions: [SQLExpression]) -> SQLExpression {
        if conditions.count == 1 { return conditions[0] }
        return .and(conditions.flatMap { c -> [SQLExpression] in
            if case .and(let inner) = c { return inner }
            return [c]
        })
    }
    /// The disjunction of the conditions, flattened; empty is false.
    public static func any(_ conditions: [SQLExpression]) -> SQLExpression {
        if conditions.count == 1 { return conditions[0] }
        return .or(conditions.flatMap { c -> [SQLExpression] in
            if case .or(let inner) = c { return inner }
            return [c]
        })
    }

    /// `self = other`.
    public func equals(_ other: SQLExpression) -> SQLExpression { .binary(self, .equal, other) }
    /// `self = ?`.
    public func equals(_ value: some DatabaseValueConvertible) -> SQLExpression { .binary(self, .equal, .value(value)) }
    /// `self <> other`.
    public func notEquals(_ other: SQLExpression) -> SQLExpression { .binary(self, .notEqual, other) }
    /// `self <> ?`.
    public func notEquals(_ value: some DatabaseValueConvertible) -> SQLExpression { .binary(self, .notEqual, .value(value)) }
    /// `self < other`.
    public func lessThan(_ other: SQLExpression) -> SQLExpression { .binary(self, .less, other) }
    /// `self < ?`.
    public func lessThan(_ value: some DatabaseValueConvertible) -> SQLExpression { .binary(self, .less, .value(value)) }
    /// `self <= other`.
    public func lessThanOrEquals(_ other: SQLExpression) -> SQLExpression { .binary(self, .lessOrEqual, other) }
    /// `self <= ?`.
    public func lessThanOrEquals(_ value: some DatabaseValueConvertible) -> SQLExpression { .binary(self, .lessOrEqual, .value(value)) }
    /// `self > other`.
    public func greaterThan(_ other: SQLExpression) -> SQLExpression { .binary(self, .greater, other) }
    /// `self > ?`.
    public func greaterThan(_ value: some DatabaseValueConvertible) -> SQLExpression { .binary(self, .greater, .value(value)) }
    /// `self >= other`.
    public func greaterThanOrEquals(_ other: SQLExpression) -> SQLExpression { .binary(self, .greaterOrEqual, other) }
    /// `self >= ?`.
    public func greaterThanOrEquals(_ value: some DatabaseValueConvertible) -> SQLExpression { .binary(self, .greaterOrEqual, .value(value)) }
    /// `self IS NULL`.
    public var isNull: SQLExpression { .isNull(self, negated: false) }
    /// `self IS NOT NULL`.
    public var isNotNull: SQLExpression { .isNull(self, negated: true) }
    /// Null-safe inequality: `IS DISTINCT FROM` (PostgreSQL), `IS NOT` (SQLite).
    public func isDistinct(from other: SQLExpression) -> SQLExpression { .isDistinctFrom(self, other, negated: false) }
    /// Null-safe equality: `IS NOT DISTINCT FROM` (PostgreSQL), `IS` (SQLite).
    public func isNotDistinct(from other: SQLExpression) -> SQLExpression { .isDistinctFrom(self, other, negated: true) }
    /// `self BETWEEN low AND high`.
    public func between(_ low: SQLExpression, and high: SQLExpression) -> SQLExpression {
        .between(self, low: low, high: high, negated: false)
    }
    /// `self IN (values…)`, each value bound; an empty list is false.
    public func isIn(_ values: [some DatabaseValueConvertible]) -> SQLExpression {
        .inList(self, values.map { .value($0) }, negated: false)
    }
    /// `self NOT IN (values…)`, each value bound; an empty list is true.
    public func isNotIn(_ values: [some DatabaseValueConvertible]) -> SQLExpression {
        .inList(self, values.map { .value($0) }, negated: true)
    }
    /// `self IN (expressions…)`; an empty list is false.
    public func isIn(_ expressions: [SQLExpression]) -> SQLExpression { .inList(self, expressions, negated: false) }
    /// `self IN (SELECT …)`.
    public func isIn(_ query: SQLSelect) -> SQLExpression { .inSubquery(self, query, negated: false) }
    /// `self NOT IN (SELECT …)`.
    public func isNotIn(_ query: SQLSelect) -> SQLExpression { .inSubquery(self, query, negated: true) }
    /// `self LIKE pattern` with a pattern written by the caller (`%`, `_` are wildcards),
    /// case-sensitive on both backends.
    public func like(_ pattern: String, caseInsensitive: Bool = false) -> SQLExpression {
        .like(self, pattern: .bind(.text(pattern)), escape: nil, caseInsensitive: caseInsensitive, negated: false)
    }
    /// True when the text begins with `prefix`, taken literally (wildcards in it are escaped).
    public func beginsWith(_ prefix: String, caseInsensitive: Bool = false) -> SQLExpression {
        SQLExpression.likeLiterally(self, "", prefix, "%", caseInsensitive)
    }
    /// True when the text ends with `suffix`, taken literally.
    public func endsWith(_ suffix: String, caseInsensitive: Bool = false) -> SQLExpression {
        SQLExpression.likeLiterally(self, "%", suffix, "", caseInsensitive)
    }
    /// True when the text contains `infix`, taken literally.
    public func contains(_ infix: String, caseInsensitive: Bool = false) -> SQLExpression {
        SQLExpression.likeLiterally(self, "%", infix, "%", caseInsensitive)
    }

    /// The escape character used by ``beginsWith(_:caseInsensitive:)`` and friends.
    public static let likeEscapeCharacter: Character = "\\"

    /// Escapes `%`, `_` and the escape character itself so that `text` matches literally
    /// in a LIKE pattern using ``likeEscapeCharacter`` as ESCAPE.
    ///
    /// It walks Unicode scalars, as the databases do, not Swift's grapheme clusters: `"%"`
    /// followed by a combining mark is one `Character` that is not equal to `"%"`, yet the
    /// database still sees a `%` wildcard in it.
    public static func escapeLikePattern(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let escape: Unicode.Scalar = "\\"
        for scalar in text.unicodeScalars {
            if scalar == "%" || scalar == "_" || scalar == escape { out.append(escape) }
            out.append(scalar)
        }
        return String(out)
    }

    private static func likeLiterally(_ x: SQLExpression, _ before: String, _ text: String, _ after: String, _ ci: Bool) -> SQLExpression {
        .like(x, pattern: .bind(.text(before + escapeLikePattern(text) + after)),
              escape: .bind(.text(String(likeEscapeCharacter))), caseInsensitive: ci, negated: false)
    }

    /// `self AS alias`, for a select list.
    public func `as`(_ alias: String) -> SQLSelectColumn { .expression(self, alias: alias) }
    /// `self ASC`.
    public var asc: SQLOrdering { SQLOrdering(self, .ascending) }
    /// `self DESC`.
    public var desc: SQLOrdering { SQLOrdering(self, .descending) }
}

/// `a AND b`, flattened into one conjunction.
public func && (lhs: SQLExpression, rhs: SQLExpression) -> SQLExpression { .all([lhs, rhs]) }
/// `a OR b`, flattened into one disjunction.
public func || (lhs: SQLExpression, rhs: SQLExpression) -> SQLExpression { .any([lhs, rhs]) }
/// `NOT a`.
public prefix func ! (operand: SQLExpression) -> SQLExpression { .unary(.not, operand) }
/// `a + b`.
public func + (lhs: SQLExpression, rhs: SQLExpression) -> SQLExpression { .binary(lhs, .add, rhs) }
/// `a - b`.
public func - (lhs: SQLExpression, rhs: SQLExpression) -> SQLExpression { .binary(lhs, .subtract, rhs) }
/// `a * b`.
public func * (lhs: SQLExpression, rhs: SQLExpression) -> SQLExpression { .binary(lhs, .multiply, rhs) }
/// `a / b`.
public func / (lhs: SQLExpression, rhs: SQLExpression) -> SQLExpression { .binary(lhs, .divide, rhs) }
