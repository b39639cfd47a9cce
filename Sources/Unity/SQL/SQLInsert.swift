/// An INSERT statement as a value, with optional upsert (ON CONFLICT) and RETURNING.
///
/// ```swift
/// let upsert = SQLInsert(into: "players", columns: ["id", "name", "score"],
///                        values: [[.value(1), .value("Ann"), .value(10)]])
///     .onConflict(["id"], doUpdate: [.init("score", .excluded("score"))])
///     .returning(.all)
/// ```
public struct SQLInsert: Sendable, Hashable {
    /// The target table.
    public var table: String
    /// The target columns; empty with ``SQLInsertSource/defaultValues``.
    public var columns: [String]
    /// Where the rows come from.
    public var source: SQLInsertSource
    /// What to do when a row conflicts with a unique constraint.
    public var onConflict: SQLOnConflict?
    /// RETURNING list; empty for none.
    public var returning: [SQLSelectColumn]

    /// Creates an INSERT.
    public init(into table: String, columns: [String], source: SQLInsertSource,
                onConflict: SQLOnConflict? = nil, returning: [SQLSelectColumn] = []) {
        self.table = table
        self.columns = columns
        self.source = source
        self.onConflict = onConflict
        self.returning = returning
    }

    /// `INSERT INTO table (columns) VALUES (row), (row), …`.
    public init(into table: String, columns: [String], values rows: [[SQLExpression]]) {
        self.init(into: table, columns: columns, source: .values(rows))
    }

    /// `INSERT INTO table (columns) VALUES (?, …), …`: `rows` rows of placeholders only.
    ///
    /// For a statement text rendered once and run many times: bind each run's values in
    /// row-major order (row by row, in `columns` order), as ``Connection/executeBatch(_:bindingSets:)``
    /// and ``RenderedSQL`` take them. Rendering a many-row INSERT per batch costs more than the
    /// engine spends storing the rows.
    public init(into table: String, columns: [String], placeholderRows rows: Int) {
        let row = [SQLExpression](repeating: .bind(.null), count: columns.count)
        self.init(into: table, columns: columns, source: .values([[SQLExpression]](repeating: row, count: rows)))
    }

    /// `INSERT INTO table (c1, c2) VALUES (?, ?)` from column-value pairs, in order.
    public init(into table: String, values: KeyValuePairs<String, DatabaseValue>) {
        self.init(into: table, columns: values.map(\.key), source: .values([values.map { .bind($0.value) }]))
    }

    /// Sets ON CONFLICT (target) DO NOTHING.
    public consuming func onConflictDoNothing(_ target: [String] = []) -> SQLInsert {
        var s = self
        s.onConflict = SQLOnConflict(target: target, action: .doNothing)
        return s
    }
    /// Sets ON CONFLICT (target) DO UPDATE SET … [WHERE …].
    public consuming func onConflict(_ target: [String], doUpdate assignments: [SQLAssignment], where condition: SQLExpression? = nil) -> SQLInsert {
        var s = self
        s.onConflict = SQLOnConflict(target: target, action: .doUpdate(assignments, where: condition))
        return s
    }
    /// Sets the RETURNING list.
    public consuming func returning(_ columns: SQLSelectColumn...) -> SQLInsert { var s = self; s.returning = columns; return s }
}

/// Where an INSERT's rows come from.
public enum SQLInsertSource: Sendable, Hashable {
    /// VALUES (…), (…): one array of expressions per row.
    case values([[SQLExpression]])
    /// DEFAULT VALUES.
    case defaultValues
    /// INSERT … SELECT.
    case select(SQLSelect)
}

/// An upsert clause: `ON CONFLICT (target) DO …`.
public struct SQLOnConflict: Sendable, Hashable {
    /// The conflict target columns. Required by PostgreSQL for DO UPDATE, and by SQLite when
    /// a DO UPDATE clause is followed by nothing else; empty renders no target.
    public var target: [String]
    /// The action.
    public var action: SQLConflictAction
    /// Creates an upsert clause.
    public init(target: [String], action: SQLConflictAction) {
        self.target = target
        self.action = action
    }
}

/// What an upsert does on conflict.
public enum SQLConflictAction: Sendable, Hashable {
    /// DO NOTHING.
    case doNothing
    /// DO UPDATE SET … [WHERE …]; use ``SQLExpression/excluded(_:)`` for the proposed row.
    case doUpdate([SQLAssignment], where: SQLExpression?)
}

/// One `column = value` of a SET list.
public struct SQLAssignment: Sendable, Hashable {
    /// The column set.
    public var column: String
    /// Its new value.
    public var value: SQLExpression
    /// Creates an assignment.
    public init(_ column: String, _ value: SQLExpression) {
        self.column = column
        self.value = value
    }
    /// An assignment of a bound Swift value.
    public init(_ column: String, value: some DatabaseValueConvertible) {
        self.init(column, .value(value))
    }
}

/// An UPDATE statement as a value.
public struct SQLUpdate: Sendable, Hashable {
    /// The target table.
    public var table: String
    /// The SET list (must not be empty).
    public var assignments: [SQLAssignment]
    /// The WHERE condition; nil updates every row.
    public var whereCondition: SQLExpression?
    /// RETURNING list; empty for none.
    public var returning: [SQLSelectColumn]

    /// Creates an UPDATE.
    public init(_ table: String, set assignments: [SQLAssignment], where condition: SQLExpression? = nil,
                returning: [SQLSelectColumn] = []) {
        self.table = table
        self.assignments = assignments
        self.whereCondition = condition
        self.returning = returning
    }
    /// ANDs a condition into WHERE.
    public consuming func `where`(_ condition: SQLExpression) -> SQLUpdate {
        var s = self
        s.whereCondition = s.whereCondition.map { $0 && condition } ?? condition
        return s
    }
    /// Sets the RETURNING list.
    public consuming func returning(_ columns: SQLSelectColumn...) -> SQLUpdate { var s = self; s.returning = columns; return s }
}

/// A DELETE statement as a value.
public struct SQLDelete: Sendable, Hashable {
    /// The target table.
    public var table: String
    /// The WHERE condition; nil deletes every row.
    public var whereCondition: SQLExpression?
    /// RETURNING list; empty for none.
    public var returning: [SQLSelectColumn]

    /// Creates a DELETE.
    public init(from table: String, where condition: SQLExpression? = nil, returning: [SQLSelectColumn] = []) {
        self.table = table
        self.whereCondition = condition
        self.returning = returning
    }
    /// ANDs a condition into WHERE.
    public consuming func `where`(_ condition: SQLExpression) -> SQLDelete {
        var s = self
        s.whereCondition = s.whereCondition.map { $0 && condition } ?? condition
        return s
    }
    /// Sets the RETURNING list.
    public consuming func returning(_ columns: SQLSelectColumn...) -> SQLDelete { var s = self; s.returning = columns; return s }
}
