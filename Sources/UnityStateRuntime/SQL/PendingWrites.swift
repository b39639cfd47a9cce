import Foundation
import Unity

/// Rows waiting to be written by a SQL state store: the instance statuses, the current
/// values, and the history, as multi-row statements. A path written twice keeps the later
/// write (the newer date; the last one on a tie), as single writes one after another would.
///
/// The rows are kept flat (one array of values per table, a row every `width` values) so that
/// buffering a write allocates nothing per row; each chunk's values are bound as they are to a
/// statement text rendered once per shape (``PendingWriteTemplates``).
final class PendingWrites {
    /// A row's key: model, instance, property (0 for an instance status).
    struct Key: Hashable, Comparable {
        let model: Int
        let instance: Int
        let property: Int

        static func < (a: Key, b: Key) -> Bool {
            (a.model, a.instance, a.property) < (b.model, b.instance, b.property)
        }
    }

    /// model, instance, status, written_at.
    static let instanceWidth = 4
    /// model, instance, property, kind, int_value, real_value, text_value, blob_value, written_at.
    static let valueWidth = 9

    /// The date of the transaction these writes belong to (`timeIntervalSinceReferenceDate`),
    /// given to the writes made in it without a date of their own; nil outside a transaction.
    let date: Double?

    init(date: Double?) {
        self.date = date
    }

    private var instanceRows: [SQLValue] = []
    private var instanceIndex: [Key: Int] = [:]
    private var valueRows: [SQLValue] = []
    private var valueIndex: [Key: Int] = [:]
    private var historyRows: [SQLValue] = []
    private var historyKeys: [Key] = []

    var isEmpty: Bool { instanceRows.isEmpty && valueRows.isEmpty && historyRows.isEmpty }

    /// Buffers an instance's status written at `when`.
    func addInstance(model: Int, instance: Int, status: Int64, when: Double) {
        let row: [SQLValue] = [.integer(Int64(model)), .integer(Int64(instance)), .integer(status), .double(when)]
        Self.add(row, at: Key(model: model, instance: instance, property: 0), width: Self.instanceWidth,
                 to: &instanceRows, index: &instanceIndex)
    }

    /// Buffers a value (its columns from ``StoredValueCodec``) written at `when`. `isStatus`:
    /// an instance status (at a status path), which goes to the instances table (see
    /// ``addInstance(model:instance:status:when:)``) and here only to the history. Another
    /// value at a status path is a value like any other; its history row's kind is stored as
    /// `-1 - kind`, so that the history of the statuses stays apart from it. `history`: the
    /// store keeps one.
    func addValue(_ path: Path, columns: StoredValueCodec.Columns, when: Double, history: Bool, isStatus: Bool = false) {
        var row = Self.valueRow(path, columns: columns, when: when)
        if !isStatus {
            Self.add(row, at: Key(model: path.model, instance: path.instance, property: path.property),
                     width: Self.valueWidth, to: &valueRows, index: &valueIndex)
            if path.isInstanceStatus { row[3] = .integer(-1 - columns.kind.rawValue) }
        }
        if history { appendHistory(row, path) }
    }

    private func appendHistory(_ row: [SQLValue], _ path: Path) {
        historyRows.append(contentsOf: row)
        historyKeys.append(Key(model: path.model, instance: path.instance, property: path.property))
    }

    private static func valueRow(_ path: Path, columns: StoredValueCodec.Columns, when: Double) -> [SQLValue] {
        [.integer(Int64(path.model)), .integer(Int64(path.instance)), .integer(Int64(path.property)),
         .integer(columns.kind.rawValue), columns.integer, columns.real, columns.text, columns.blob, .double(when)]
    }

    /// Appends `row`, or replaces the row of the same key unless that one is newer (the write
    /// date is every row's last value).
    private static func add(_ row: [SQLValue], at key: Key, width: Int, to rows: inout [SQLValue], index: inout [Key: Int]) {
        if let position = index[key] {
            let start = position * width
            if case .double(let new) = row[width - 1], case .double(let old) = rows[start + width - 1], new < old { return }
            rows.replaceSubrange(start..<start + width, with: row)
        } else {
            index[key] = rows.count / width
            rows.append(contentsOf: row)
        }
    }

    func removeAll() {
        instanceRows.removeAll()
        instanceIndex.removeAll()
        valueRows.removeAll()
        valueIndex.removeAll()
        historyRows.removeAll()
        historyKeys.removeAll()
    }

    /// The rows of `flat` in key order, so that the database inserts into its index from one
    /// end to the other instead of at random places (a context's edits come in hash order;
    /// once the index outgrows the page cache, random inserts read a page from disk each).
    /// Rows of the same key keep their order.
    static func sortedByKey(_ flat: [SQLValue], width: Int, keys: [(key: Key, row: Int)]) -> [SQLValue] {
        let order = keys.sorted { $0.key < $1.key || ($0.key == $1.key && $0.row < $1.row) }
        if order.enumerated().allSatisfy({ $0.offset == $0.element.row }) { return flat }
        var sorted: [SQLValue] = []
        sorted.reserveCapacity(flat.count)
        for entry in order { sorted.append(contentsOf: flat[entry.row * width..<(entry.row + 1) * width]) }
        return sorted
    }

    /// The rows of `flat` (every `width` values) with the rows whose value columns are NULL in
    /// the same places next to each other (in their order otherwise). PostgreSQL prepares a
    /// multi-row statement once per pattern of parameter types, and a NULL has none: rows of
    /// mixed kinds in arbitrary order (a context's writes) would make nearly every chunk a new
    /// statement to parse and plan.
    static func groupedByShape(_ flat: [SQLValue], width: Int) -> [SQLValue] {
        // The value columns int, real, text, blob are at 4...7 of a value row.
        func shape(_ row: Int) -> Int {
            var mask = 0
            for (bit, column) in (4...7).enumerated() {
                if case .null = flat[row * width + column] {} else { mask |= 1 << bit }
            }
            return mask
        }
        let count = flat.count / width
        guard count > 1 else { return flat }
        var shapes = [Int](repeating: 0, count: count)
        var mixed = false
        for row in 0..<count {
            shapes[row] = shape(row)
            if shapes[row] != shapes[0] { mixed = true }
        }
        guard mixed else { return flat }
        var rowsByShape = [[Int]](repeating: [], count: 16)
        for row in 0..<count { rowsByShape[shapes[row]].append(row) }
        var grouped: [SQLValue] = []
        grouped.reserveCapacity(flat.count)
        for rows in rowsByShape {
            for row in rows { grouped.append(contentsOf: flat[row * width..<(row + 1) * width]) }
        }
        return grouped
    }

    /// The work to send, in order (statuses, values, then the history): per table, its rows
    /// sorted by key, as statements bound to texts from `templates` (rendered by the dialect
    /// from the AST), or as one load when the rows are many and the dialect has COPY.
    func plan(templates: PendingWriteTemplates, history keepsHistory: Bool) throws -> [PendingWriteStep] {
        var plan: [PendingWriteStep] = []
        func add(_ flat: [SQLValue], table: PendingWriteTemplates.Table, width: Int) throws {
            let rows = flat.count / width
            guard rows > 0 else { return }
            if rows >= Connection.copyThreshold, templates.dialect.supportsCopy {
                plan.append(.load(PendingLoad(table: table, rows: flat, width: width)))
                return
            }
            // Each table has texts of its own, so nothing merges with the previous table's.
            for (sql, sets) in try templates.statements(table, rows: flat, width: width) {
                plan.append(.statements(sql: sql, bindingSets: sets))
            }
        }
        func ordered(_ flat: [SQLValue], width: Int, keys: [(key: Key, row: Int)]) -> [SQLValue] {
            let sorted = Self.sortedByKey(flat, width: width, keys: keys)
            return templates.groupsByShape && width == Self.valueWidth ? Self.groupedByShape(sorted, width: width) : sorted
        }
        try add(ordered(instanceRows, width: Self.instanceWidth, keys: instanceIndex.map { ($0.key, $0.value) }),
                table: .instances, width: Self.instanceWidth)
        try add(ordered(valueRows, width: Self.valueWidth, keys: valueIndex.map { ($0.key, $0.value) }),
                table: .values, width: Self.valueWidth)
        if keepsHistory {
            try add(ordered(historyRows, width: Self.valueWidth, keys: historyKeys.enumerated().map { ($0.element, $0.offset) }),
                    table: .history, width: Self.valueWidth)
        }
        return plan
    }
}

/// One step of writing ``PendingWrites``.
enum PendingWriteStep {
    /// A statement text and its binding sets, one statement each.
    case statements(sql: String, bindingSets: [[SQLValue]])
    /// Many rows of one table, loaded by COPY (see ``PendingLoad``).
    case load(PendingLoad)

    /// Runs `plan` on `conn`, in its open transaction.
    static func run(_ plan: [PendingWriteStep], templates: PendingWriteTemplates, on conn: Connection) throws {
        for step in plan {
            switch step {
            case .statements(let sql, let bindingSets):
                try conn.executeBatch(sql, bindingSets: bindingSets)
            case .load(let load):
                try load.run(templates: templates, on: conn)
            }
        }
    }
}

/// Many rows of one table, written by COPY on a connection that has it: the history (plain
/// inserts) straight into its table, the statuses and values (upserts that keep a newer
/// stored row) through a staging table (`Connection.upsertByCopyIfWorthwhile`). Elsewhere the
/// same rows go as the statements a small flush sends.
struct PendingLoad {
    let table: PendingWriteTemplates.Table
    /// The rows, flat: a row every `width` values.
    let rows: [SQLValue]
    let width: Int

    func run(templates: PendingWriteTemplates, on conn: Connection) throws {
        let count = rows.count / width
        let columns = PendingWriteTemplates.columns(table)
        let name = PendingWriteTemplates.tableName(table)
        func row(_ index: Int, _ values: inout [SQLValue]) {
            values.removeAll(keepingCapacity: true)
            values.append(contentsOf: rows[index * width..<(index + 1) * width])
        }
        let loaded: Bool
        switch table {
        case .history:
            loaded = try conn.insertByCopyIfWorthwhile(into: name, columns: columns, count: count, row: row) != nil
        case .instances, .values:
            loaded = try conn.upsertByCopyIfWorthwhile(
                into: name, columns: columns, conflictColumns: PendingWriteTemplates.conflictColumns(table),
                updating: PendingWriteTemplates.updatedColumns(table), where: PendingWriteTemplates.newer(name),
                count: count, row: row)
        }
        if loaded { return }
        for (sql, bindingSets) in try templates.statements(table, rows: rows, width: width) {
            try conn.executeBatch(sql, bindingSets: bindingSets)
        }
    }
}

/// The statement texts of ``PendingWrites``, rendered once per table and row count by the
/// store's dialect from the same AST a single write uses, and then bound to new values: an
/// upsert that keeps a newer stored value for the instance and value tables, a plain insert for
/// the history.
final class PendingWriteTemplates: @unchecked Sendable {
    // @unchecked: `texts` is guarded by `lock`.
    enum Table: Hashable {
        case instances, values, history
    }

    private struct Key: Hashable {
        let table: Table
        let rows: Int
    }

    let dialect: SQLDialect
    /// PostgreSQL types each parameter (a NULL has none): rows are grouped by where their
    /// NULLs are (see ``PendingWrites/groupedByShape(_:width:)``). SQLite needs no grouping.
    let groupsByShape: Bool
    private let lock = NSLock()
    private var texts: [Key: String] = [:]

    init(dialect: SQLDialect) {
        self.dialect = dialect
        self.groupsByShape = dialect == .postgres
    }

    /// Rows in one statement: at most 500, and within the dialect's bind limit.
    func rowsPerStatement(width: Int) -> Int {
        max(1, min(500, dialect.maxBindParameters / max(1, width)))
    }

    /// `flat`'s rows (a row every `width` values) as statement texts for `table` and their
    /// binding sets, in chunks of ``rowsPerStatement(width:)`` rows.
    func statements(_ table: Table, rows flat: [SQLValue], width: Int) throws -> [(sql: String, bindingSets: [[SQLValue]])] {
        var out: [(sql: String, bindingSets: [[SQLValue]])] = []
        let rows = flat.count / width
        let perChunk = rowsPerStatement(width: width)
        var start = 0
        while start < rows {
            let count = min(perChunk, rows - start)
            let sql = try self.sql(table, rows: count)
            let set = Array(flat[start * width..<(start + count) * width])
            if let last = out.last, last.sql == sql {
                out[out.count - 1].bindingSets.append(set)
            } else {
                out.append((sql, [set]))
            }
            start += count
        }
        return out
    }

    /// The text for `rows` rows into `table`.
    func sql(_ table: Table, rows: Int) throws -> String {
        let key = Key(table: table, rows: rows)
        lock.lock()
        if let text = texts[key] {
            lock.unlock()
            return text
        }
        lock.unlock()
        let rendered = try dialect.render(Self.statement(table, rows: rows))
        let width = table == .instances ? PendingWrites.instanceWidth : PendingWrites.valueWidth
        // The values are bound row after row, as the flat buffers hold them: the statement must
        // have exactly those placeholders and no others.
        guard rendered.bindings.count == rows * width else {
            throw StateError.store(.misuse("the \(table) statement has \(rendered.bindings.count) placeholders for \(rows) rows"))
        }
        lock.lock()
        texts[key] = rendered.sql
        lock.unlock()
        return rendered.sql
    }

    /// The columns a row of `table` supplies, in order.
    static func columns(_ table: Table) -> [String] {
        switch table {
        case .instances: ["model", "instance", "status", "written_at"]
        case .values, .history: ["model", "instance", "property"] + SQLDatabase.valueColumnNames
        }
    }

    static func tableName(_ table: Table) -> String {
        switch table {
        case .instances: SQLDatabase.instancesTable
        case .values: SQLDatabase.valuesTable
        case .history: SQLDatabase.historyTable
        }
    }

    /// The key of an upserted table's rows (empty for the history, which is only inserted).
    static func conflictColumns(_ table: Table) -> [String] {
        switch table {
        case .instances: ["model", "instance"]
        case .values: ["model", "instance", "property"]
        case .history: []
        }
    }

    /// The columns a stored row takes from a newer write of its key.
    static func updatedColumns(_ table: Table) -> [String] {
        switch table {
        case .instances: ["status", "written_at"]
        case .values: SQLDatabase.valueColumnNames
        case .history: []
        }
    }

    /// The upserts' condition: the stored row is not newer than the one written.
    static func newer(_ name: String) -> SQLExpression {
        .binary(.column(table: name, name: "written_at"), .lessOrEqual, .excluded("written_at"))
    }

    private static func statement(_ table: Table, rows: Int) -> SQLStatement {
        let insert = SQLInsert(into: tableName(table), columns: columns(table), placeholderRows: rows)
        guard table != .history else { return .insert(insert) }
        return .insert(insert.onConflict(conflictColumns(table), doUpdate: updatedColumns(table).map { SQLAssignment($0, .excluded($0)) },
                                         where: newer(tableName(table))))
    }
}
