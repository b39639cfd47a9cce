/// A SELECT statement (or, with ``compounds``, a UNION of several) as a value.
///
/// ```swift
/// let query = SQLSelect(from: "customers")
///     .columns([.all(table: "customers")])
///     .join(.inner, "orders", on: .column("orders", "customer_id").equals(.column("customers", "id")))
///     .where(.column("orders", "hat_id").equals(5))
///     .orderBy(.column("customers", "name").asc)
///     .limit(10)
/// ```
public struct SQLSelect: Sendable, Hashable {
    /// DISTINCT.
    public var distinct: Bool
    /// The select list; empty means `*`.
    public var columns: [SQLSelectColumn] {
        didSet { columnsDigest = SQLSelectColumn.digest(of: columns) }
    }
    /// The select list's shape, hashed when the list is set, or nil unless every item is a
    /// plain column or `*` (see ``SQLSelectColumn/digest(of:)``). A list kept in a `static`
    /// base query and narrowed per call (`base.where(...)`) is then hashed once, not on every
    /// rendering: walking it again on each call, on a Unity thread, was a large share of a
    /// `db.read` lookup under load (the items are boxes shared by every thread).
    private(set) var columnsDigest: SQLShapeKey?
    /// The FROM source, or nil for a SELECT without a table.
    public var from: SQLTableSource?
    /// Joins, in order.
    public var joins: [SQLJoin]
    /// The WHERE condition.
    public var whereCondition: SQLExpression?
    /// GROUP BY expressions.
    public var groupBy: [SQLExpression]
    /// The HAVING condition.
    public var having: SQLExpression?
    /// Further SELECTs combined with this one by UNION, UNION ALL, INTERSECT or EXCEPT.
    /// ORDER BY, LIMIT and OFFSET of this value apply to the whole compound; the combined
    /// members must not carry their own (a rendering error otherwise).
    public var compounds: [SQLCompoundMember]
    /// ORDER BY terms.
    public var orderBy: [SQLOrdering]
    /// LIMIT, bound as a parameter.
    public var limit: Int?
    /// OFFSET, bound as a parameter.
    public var offset: Int?

    /// Creates a SELECT; every part is optional.
    public init(
        distinct: Bool = false, columns: [SQLSelectColumn] = [], from: SQLTableSource? = nil,
        joins: [SQLJoin] = [], where whereCondition: SQLExpression? = nil, groupBy: [SQLExpression] = [],
        having: SQLExpression? = nil, compounds: [SQLCompoundMember] = [], orderBy: [SQLOrdering] = [],
        limit: Int? = nil, offset: Int? = nil
    ) {
        self.distinct = distinct
        self.columns = columns
        self.columnsDigest = SQLSelectColumn.digest(of: columns)
        self.from = from
        self.joins = joins
        self.whereCondition = whereCondition
        self.groupBy = groupBy
        self.having = having
        self.compounds = compounds
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }

    /// `SELECT * FROM "table" [AS "alias"]`.
    public init(from table: String, as alias: String? = nil) {
        self.init(from: .table(table, alias: alias))
    }

    // The builders consume the query they extend: in a chain (`base.where(…).orderBy(…)`) each
    // step then changes the previous step's query in place, where a borrowed one would be
    // copied, and its arrays with it on the first append.

    /// Replaces the select list.
    public consuming func columns(_ columns: [SQLSelectColumn]) -> SQLSelect { var s = self; s.columns = columns; return s }
    /// Replaces the select list.
    public consuming func columns(_ columns: SQLSelectColumn...) -> SQLSelect { self.columns(columns) }
    /// Sets DISTINCT.
    public consuming func distinct(_ on: Bool = true) -> SQLSelect { var s = self; s.distinct = on; return s }
    /// Adds a join on a table.
    public consuming func join(_ kind: SQLJoinKind, _ table: String, as alias: String? = nil, on condition: SQLExpression? = nil) -> SQLSelect {
        join(SQLJoin(kind, .table(table, alias: alias), on: condition))
    }
    /// Adds a join.
    public consuming func join(_ join: SQLJoin) -> SQLSelect { var s = self; s.joins.append(join); return s }
    /// ANDs a condition into WHERE.
    public consuming func `where`(_ condition: SQLExpression) -> SQLSelect {
        var s = self
        s.whereCondition = s.whereCondition.map { $0 && condition } ?? condition
        return s
    }
    /// Adds GROUP BY expressions.
    public consuming func groupBy(_ expressions: SQLExpression...) -> SQLSelect { var s = self; s.groupBy += expressions; return s }
    /// ANDs a condition into HAVING.
    public consuming func having(_ condition: SQLExpression) -> SQLSelect {
        var s = self
        s.having = s.having.map { $0 && condition } ?? condition
        return s
    }
    /// Appends ORDER BY terms.
    public consuming func orderBy(_ terms: SQLOrdering...) -> SQLSelect { var s = self; s.orderBy += terms; return s }
    /// Sets LIMIT (and OFFSET).
    public consuming func limit(_ limit: Int?, offset: Int? = nil) -> SQLSelect {
        var s = self
        s.limit = limit
        if let offset { s.offset = offset }
        return s
    }
    /// Sets OFFSET.
    public consuming func offset(_ offset: Int?) -> SQLSelect { var s = self; s.offset = offset; return s }
    /// Combines another SELECT with UNION (ALL when `all`).
    public consuming func union(_ other: SQLSelect, all: Bool = false) -> SQLSelect {
        var s = self
        s.compounds.append(SQLCompoundMember(all ? .unionAll : .union, other))
        return s
    }
}

/// One item of a select list.
public enum SQLSelectColumn: Sendable, Hashable {
    /// `*` or `"table".*`.
    case all(table: String?)
    /// An expression, optionally `AS "alias"`.
    case expression(SQLExpression, alias: String?)
    /// A fixed list of columns, each qualified by the list's table: a model's select list,
    /// made once and sent with every query (see ``SQLColumnList``).
    case columns(SQLColumnList)

    /// `*`.
    public static var all: SQLSelectColumn { .all(table: nil) }
    /// A plain column.
    public static func column(_ name: String) -> SQLSelectColumn { .expression(.column(name), alias: nil) }
    /// A column qualified by a table name or alias (`a.name`); the result column is `name`.
    public static func column(_ table: String, _ name: String) -> SQLSelectColumn { .expression(.column(table, name), alias: nil) }
    /// An expression without alias.
    public static func expression(_ e: SQLExpression) -> SQLSelectColumn { .expression(e, alias: nil) }

    /// The two shape hashes (``SQLShapeHash``) of a select list whose items are all plain columns
    /// (`"t"."a" AS "x"`) or `*`, and its length; nil for an empty list or one with any other
    /// item. Such a list's SQL depends on its names alone (no bind values, nothing a dialect
    /// spells its own way but the quoting), so the renderer's shape hash may stand in these
    /// numbers for the walk over its items, as it does for an ``SQLColumnList``.
    static func digest(of columns: [SQLSelectColumn]) -> SQLShapeKey? {
        guard !columns.isEmpty else { return nil }
        var digest = SQLShapeHash(salt: 0x5E1E_C7ED)
        for column in columns {
            switch column {
            case .all(let table):
                digest.combine(1 as UInt32)
                digest.combine(name: table)
            case .expression(.column(let table, let name), let alias):
                digest.combine(2 as UInt32)
                digest.combine(name: table)
                digest.combine(utf8: name)
                digest.combine(name: alias)
            case .expression, .columns:
                return nil
            }
        }
        return digest.finalize(bindingCount: columns.count)
    }
}

/// Columns of one table, `"t"."a", "t"."b", …`, made once and used in many statements: the
/// select list a flavor sends with every query of a model.
///
/// Rendering a statement first hashes its shape (to find its SQL text in the dialect's
/// cache); a list hashes its names once, when it is made, so each rendering adds two numbers
/// to the shape instead of hashing every name again (which was most of the cost of rendering
/// a small query). The names are quoted and checked like any other identifier.
public struct SQLColumnList: Sendable, Hashable {
    /// The table (or alias) that qualifies every column, or nil for bare names.
    public let table: String?
    /// The column names, in order.
    public let names: [String]
    /// The two shape hashes (``SQLShapeHash``) of `table` and `names`, by their bytes, as
    /// the shape key hashes everything else.
    let digest: SQLShapeKey

    /// The columns `names`, qualified by `table` when given.
    public init(table: String?, _ names: [String]) {
        self.table = table
        self.names = names
        var digest = SQLShapeHash(salt: 0x5EED_CAFE)
        digest.combine(name: table)
        for name in names { digest.combine(utf8: name) }
        self.digest = digest.finalize(bindingCount: names.count)
    }
}

/// What a FROM clause or a join reads.
public indirect enum SQLTableSource: Sendable, Hashable {
    /// A table, optionally aliased.
    case table(String, alias: String?)
    /// A subquery, which must be aliased.
    case subquery(SQLSelect, alias: String)
    /// A raw fragment (a table-valued function, a view expression, …).
    case fragment(SQLFragment)

    /// A table without alias.
    public static func table(_ name: String) -> SQLTableSource { .table(name, alias: nil) }
}

/// The kind of a join.
public enum SQLJoinKind: String, Sendable, Hashable {
    /// INNER JOIN.
    case inner = "INNER JOIN"
    /// LEFT JOIN.
    case left = "LEFT JOIN"
    /// RIGHT JOIN (SQLite 3.39+).
    case right = "RIGHT JOIN"
    /// FULL JOIN (SQLite 3.39+).
    case full = "FULL JOIN"
    /// CROSS JOIN (no ON condition).
    case cross = "CROSS JOIN"
}

/// One join of a SELECT.
public enum SQLJoin: Sendable, Hashable {
    /// A structured join: kind, source, optional ON condition.
    case join(SQLJoinKind, SQLTableSource, on: SQLExpression?)
    /// A raw join clause written by a user, including its JOIN keyword
    /// (`"LEFT JOIN orders ON orders.hat_id = hats.id AND orders.qty > ?"`).
    case fragment(SQLFragment)

    /// A structured join.
    public init(_ kind: SQLJoinKind, _ source: SQLTableSource, on condition: SQLExpression? = nil) {
        self = .join(kind, source, on: condition)
    }
}

/// A member of a compound SELECT.
public struct SQLCompoundMember: Sendable, Hashable {
    /// How it combines.
    public var op: SQLCompoundOperator
    /// The combined SELECT.
    public var select: SQLSelect
    /// Creates a member.
    public init(_ op: SQLCompoundOperator, _ select: SQLSelect) {
        self.op = op
        self.select = select
    }
}

/// A compound operator.
public enum SQLCompoundOperator: String, Sendable, Hashable {
    /// UNION (duplicates removed).
    case union = "UNION"
    /// UNION ALL.
    case unionAll = "UNION ALL"
    /// INTERSECT.
    case intersect = "INTERSECT"
    /// EXCEPT.
    case except = "EXCEPT"
}

/// One ORDER BY term.
public struct SQLOrdering: Sendable, Hashable {
    /// Sort direction.
    public enum Direction: String, Sendable, Hashable {
        /// ASC.
        case ascending = "ASC"
        /// DESC.
        case descending = "DESC"
    }
    /// Where NULLs go.
    public enum Nulls: String, Sendable, Hashable {
        /// NULLS FIRST.
        case first = "NULLS FIRST"
        /// NULLS LAST.
        case last = "NULLS LAST"
    }
    /// The sorted expression.
    public var expression: SQLExpression
    /// The direction.
    public var direction: Direction
    /// Where NULLs go; nil leaves it to the backend (SQLite: first when ascending;
    /// PostgreSQL: last when ascending).
    public var nulls: Nulls?

    /// Creates a term.
    public init(_ expression: SQLExpression, _ direction: Direction = .ascending, nulls: Nulls? = nil) {
        self.expression = expression
        self.direction = direction
        self.nulls = nulls
    }

    /// The same term with NULLS FIRST.
    public var nullsFirst: SQLOrdering { var o = self; o.nulls = .first; return o }
    /// The same term with NULLS LAST.
    public var nullsLast: SQLOrdering { var o = self; o.nulls = .last; return o }
    /// The same term in the other direction (NULL placement flipped too, when set).
    public var reversed: SQLOrdering {
        var o = self
        o.direction = direction == .ascending ? .descending : .ascending
        o.nulls = nulls.map { $0 == .first ? .last : .first }
        return o
    }
}
