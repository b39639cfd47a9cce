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
        for chunk in chunks(valueRows, width: valueColumns.count) {
            result.append(.insert(SQLInsert(into: SQLDatabase.valuesTable, columns: valueColumns,
                                            values: chunk.map { $0.map(SQLExpression.bind) })
                .onConflict(["model", "instance", "property"],
                            doUpdate: SQLDatabase.valueColumnNames.map { SQLAssignment($0, .excluded($0)) },
                            where: newer(SQLDatabase.valuesTable))))
        }
        if keepsHistory {
            for chunk in chunks(history, width: valueColumns.count) {
                result.append(.insert(SQLInsert(into: SQLDatabase.historyTable, columns: valueColumns,
                                                values: chunk.map { $0.map(SQLExpression.bind) })))
            }
        }
        return result
    }
}
