import Unity

/// Rows waiting to be written by a SQL state store: the instance statuses, the current
/// values, and the history, as multi-row statements. A path written twice keeps the later
/// write (the newer date; the last one on a tie), as single writes one after another would.
final class PendingWrites {
    /// A row's key: model, instance, property (0 for an instance status).
    struct Key: Hashable {
        let model: Int
        let instance: Int
        let property: Int
    }

    private var instanceRows: [[SQLValue]] = []
    private var instanceIndex: [Key: Int] = [:]
    private var valueRows: [[SQLValue]] = []
    private var valueIndex: [Key: Int] = [:]
    var history: [[SQLValue]] = []

    var isEmpty: Bool { instanceRows.isEmpty && valueRows.isEmpty && history.isEmpty }

    /// The write date is every row's last value.
    private static func isNotOlder(_ row: [SQLValue], than other: [SQLValue]) -> Bool {
        guard case .double(let new) = row.last, case .double(let old) = other.last else { return true }
        return new >= old
    }

    func add(instance row: [SQLValue], at key: Key) {
        Self.add(row, at: key, to: &instanceRows, index: &instanceIndex)
    }

    func add(value row: [SQLValue], at key: Key) {
        Self.add(row, at: key, to: &valueRows, index: &valueIndex)
    }

    /// Appends `row`, or replaces the row of the same key unless that one is newer.
    private static func add(_ row: [SQLValue], at key: Key, to rows: inout [[SQLValue]], index: inout [Key: Int]) {
        if let position = index[key] {
            if isNotOlder(row, than: rows[position]) { rows[position] = row }
        } else {
            index[key] = rows.count
            rows.append(row)
        }
    }

    func removeAll() {
        instanceRows.removeAll()
        instanceIndex.removeAll()
        valueRows.removeAll()
        valueIndex.removeAll()
        history.removeAll()
    }

    /// `rows` with the rows whose value columns are NULL in the same places next to each other
    /// (in their order otherwise). PostgreSQL prepares a multi-row statement once per pattern
    /// of parameter types, and a NULL has none: rows of mixed kinds in arbitrary order (a
    /// context's writes) would make nearly every chunk a new statement to parse and plan.
    static func groupedByShape(_ rows: [[SQLValue]]) -> [[SQLValue]] {
        // The value columns: kind, int, real, text, blob, written_at after model, instance, property.
        func shape(_ row: [SQLValue]) -> Int {
            var mask = 0
            for (bit, index) in (4...7).enumerated() where index < row.count {
                if case .null = row[index] {} else { mask |= 1 << bit }
            }
            return mask
        }
        var buckets = [[[SQLValue]]](repeating: [], count: 16)
        var first: Int?
        var mixed = false
        for row in rows {
            let s = shape(row)
            if let f = first, f != s { mixed = true }
            if first == nil { first = s }
            buckets[s].append(row)
        }
        return mixed ? buckets.flatMap { $0 } : rows
    }

    /// The statements that write everything: upserts that keep a newer stored value, then
    /// the history, each split to the dialect's bind limit.
    func statements(dialect: SQLDialect, history keepsHistory: Bool) -> [SQLStatement] {
        var result: [SQLStatement] = []
        let instanceColumns = ["model", "instance", "status", "written_at"]
        let valueColumns = ["model", "instance", "property"] + SQLDatabase.valueColumnNames
        func chunks(_ rows: [[SQLValue]], width: Int) -> [ArraySlice<[SQLValue]>] {
            let size = max(1, min(500, dialect.maxBindParameters / max(1, width)))
            return stride(from: 0, to: rows.count, by: size).map { rows[$0..<min(rows.count, $0 + size)] }
        }
        func newer(_ table: String) -> SQLExpression {
            .binary(.column(table: table, name: "written_at"), .lessOrEqual, .excluded("written_at"))
        }
        for chunk in chunks(instanceRows, width: instanceColumns.count) {
            result.append(.insert(SQLInsert(into: SQLDatabase.instancesTable, columns: instanceColumns,
                                            values: chunk.map { $0.map(SQLExpression.bind) })
                .onConflict(["model", "instance"], doUpdate: [SQLAssignment("status", .excluded("status")),
                                                              SQLAssignment("written_at", .excluded("written_at"))],
                            where: newer(SQLDatabase.instancesTable))))
        }
        for chunk in chunks(Self.groupedByShape(valueRows), width: valueColumns.count) {
            result.append(.insert(SQLInsert(into: SQLDatabase.valuesTable, columns: valueColumns,
                                            values: chunk.map { $0.map(SQLExpression.bind) })
                .onConflict(["model", "instance", "property"],
                            doUpdate: SQLDatabase.valueColumnNames.map { SQLAssignment($0, .excluded($0)) },
                            where: newer(SQLDatabase.valuesTable))))
        }
        if keepsHistory {
            for chunk in chunks(Self.groupedByShape(history), width: valueColumns.count) {
                result.append(.insert(SQLInsert(into: SQLDatabase.historyTable, columns: valueColumns,
                                                values: chunk.map { $0.map(SQLExpression.bind) })))
            }
        }
        return result
    }
}
