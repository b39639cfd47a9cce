import Foundation

/// One unit of work for ``DBManager/executeStatements(_:in:)``: a model's save or delete
/// (``ModelDef/createSaveStatement()``, ``ModelDef/createDeleteStatement()``), or any
/// statement of your own.
///
/// It is a value (`Sendable`): build statements on any thread and hand them to one batch.
public struct ModelStatement: Sendable, Hashable {
    /// One step of the work: an insert that a batch may merge with its neighbours, or a
    /// statement that runs as it is.
    enum Step: Sendable, Hashable {
        case insert(BatchableInsert)
        case statement(SQLStatement)
    }

    let steps: [Step]

    init(steps: [Step]) {
        self.steps = steps
    }

    /// A statement of your own, built with the SQL AST.
    public init(_ statement: SQLStatement) {
        self.steps = [.statement(statement)]
    }

    /// A raw statement of your own with `?` placeholders, one per argument:
    /// `ModelStatement(sql: "UPDATE Thing SET name = ? WHERE tid = ?", "new", "tid1")`.
    public init(sql: String, _ arguments: any DatabaseValueConvertible...) {
        self.steps = [.statement(.raw(SQLFragment(sql, arguments.map(\.databaseValue))))]
    }

    /// The SQL statements this runs, in order, as they would run one at a time (a batch may
    /// merge neighbouring inserts into one multi-row INSERT).
    public var sqlStatements: [SQLStatement] {
        steps.map { step in
            switch step {
            case .insert(let insert): return .insert(insert.insert(rows: [insert.values]))
            case .statement(let statement): return statement
            }
        }
    }
}

/// A one-row INSERT (or upsert on the primary key) that a batch may merge with neighbouring
/// inserts of the same table and columns into a multi-row INSERT.
struct BatchableInsert: Sendable, Hashable {
    var table: String
    var columns: [String]
    var values: [DatabaseValue]
    /// nil for a plain INSERT; the conflict target of `ON CONFLICT (…) DO UPDATE` otherwise.
    var upsertKeys: [String]?

    /// Whether two inserts can share one multi-row statement. Names are compared by their
    /// exact bytes: `"é"` in NFC and in NFD are two tables to the database, though equal as
    /// Swift strings.
    func hasSameShape(as other: BatchableInsert) -> Bool {
        SQLTextKey.sameBytes(table, other.table)
            && Self.sameBytes(columns, other.columns)
            && Self.sameBytes(upsertKeys ?? [], other.upsertKeys ?? [])
            && (upsertKeys == nil) == (other.upsertKeys == nil)
    }

    private static func sameBytes(_ a: [String], _ b: [String]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { SQLTextKey.sameBytes($0, $1) }
    }

    /// The values of the conflict target, used to keep two rows with the same key out of one
    /// multi-row upsert (PostgreSQL refuses to update a row twice in one statement).
    var upsertKeyValues: [DatabaseValue]? {
        guard let keys = upsertKeys else { return nil }
        return keys.map { key in columns.firstIndex(of: key).map { values[$0] } ?? .null }
    }

    /// The INSERT for `rows` (each in `columns` order).
    func insert(rows: [[DatabaseValue]]) -> SQLInsert {
        let base = SQLInsert(into: table, columns: columns, values: rows.map { $0.map(SQLExpression.bind) })
        guard let keys = upsertKeys else { return base }
        var updated = columns.filter { !keys.contains($0) }
        // Every column is in the key: "update" one key column to itself, so that the
        // statement still succeeds and RETURNING still yields the row.
        if updated.isEmpty { updated = Array(keys.prefix(1)) }
        return base.onConflict(keys, doUpdate: updated.map { SQLAssignment($0, .excluded($0)) })
    }
}

/// Runs a list of model statements on one connection as fast as the backend allows, keeping
/// their order: runs of inserts of the same shape become multi-row INSERTs, and runs of other
/// statements go through ``Connection/executeBatch(_:)``, which reuses one prepared statement
/// (or one pipeline) for neighbours with the same SQL.
struct ModelBatchRunner {
    /// The most bind parameters one statement may carry: SQLite's default
    /// SQLITE_MAX_VARIABLE_NUMBER is 32,766, PostgreSQL's wire protocol allows 65,535.
    let maxBindings: Int
    /// The most rows in one multi-row INSERT. Measured on SQLite (100,000 two-column rows):
    /// 50–250 rows per statement run about twice as fast as one row per statement, and
    /// larger statements (500, 2,000, 16,383 rows) are no faster, only longer to render.
    let maxRowsPerInsert: Int

    init(dialect: SQLDialect, maxRowsPerInsert: Int = 100) {
        self.maxBindings = dialect.name == "postgres" ? 65_535 : 32_766
        self.maxRowsPerInsert = maxRowsPerInsert
    }

    /// Runs `statements`; returns the number of rows changed.
    @discardableResult
    func run(_ statements: [ModelStatement], on conn: Connection) throws -> Int {
        var changed = 0
        var pending: [SQLStatement] = []
        var group: BatchableInsert?
        var rows: [[DatabaseValue]] = []
        var keysInGroup = Set<[DatabaseValue]>()

        func flushPending() throws {
            if pending.isEmpty { return }
            changed += try conn.executeBatch(pending)
            pending.removeAll(keepingCapacity: true)
        }
        func flushGroup() throws {
            guard let first = group, !rows.isEmpty else { return }
            pending.append(.insert(first.insert(rows: rows)))
            group = nil
            rows.removeAll(keepingCapacity: true)
            keysInGroup.removeAll(keepingCapacity: true)
        }

        for statement in statements {
            for step in statement.steps {
                switch step {
                case .statement(let sql):
                    try flushGroup()
                    pending.append(sql)
                case .insert(let insert):
                    let rowLimit = max(1, min(maxRowsPerInsert, maxBindings / max(1, insert.columns.count)))
                    let key = insert.upsertKeyValues
                    if let current = group {
                        let fits = current.hasSameShape(as: insert) && rows.count < rowLimit
                            && !(key.map { keysInGroup.contains($0) } ?? false)
                        if !fits { try flushGroup() }
                    }
                    if group == nil { group = insert }
                    rows.append(insert.values)
                    if let key { keysInGroup.insert(key) }
                }
            }
            // Multi-row INSERTs of one shape render to the same SQL; handing them over in runs
            // lets executeBatch reuse one prepared statement, while keeping memory bounded.
            if pending.count >= 64 { try flushPending() }
        }
        try flushGroup()
        try flushPending()
        return changed
    }
}

extension DBManager {
    /// Runs `statements` on `conn` in its current transaction; returns the rows changed.
    static func executeStatementsReturningChanges(_ statements: [ModelStatement], on conn: Connection) throws -> Int {
        try ModelBatchRunner(dialect: conn.dialect).run(statements, on: conn)
    }
}
