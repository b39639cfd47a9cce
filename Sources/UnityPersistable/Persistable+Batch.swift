import Foundation
import Unity

/// Saving and destroying many records at once: one transaction, multi-row INSERTs and batched
/// UPDATEs / DELETEs (one reused prepared statement on SQLite, one pipeline on PostgreSQL).
extension Persistable {
    /// Saves every record in one transaction, as ``save(_:)`` would one by one: records without
    /// an id are inserted (multi-row INSERTs, ids through RETURNING), the others updated.
    /// Returns the saved copies in the order given. All or nothing: on any error (a record whose
    /// row is gone included, ``PersistableError/recordNotFound(tableName:id:)``) nothing is kept.
    public static func saveAll(_ records: [Self], _ database: Database? = nil) throws -> [Self] {
        let db = try DefaultDatabase.resolve(database)
        return try db.write { conn in
            var planned = records.map { PlannedWrite($0) }
            let new = planned.indices.filter { planned[$0].id == nil }
            try insert(&planned, new, includeId: false, conn)
            let existing = planned.indices.filter { records[$0].id != nil }
            try update(planned, existing, conn)
            return try savedCopies(planned)
        }
    }

    /// Inserts every record as a new row in one transaction, writing the `id` of the records
    /// that have one (application-assigned keys) and taking the database's for the others.
    /// Returns the saved copies in the order given; all or nothing (a taken id is the core's
    /// unique-constraint error).
    public static func insertAll(_ records: [Self], _ database: Database? = nil) throws -> [Self] {
        let db = try DefaultDatabase.resolve(database)
        return try db.write { conn in
            var planned = records.map { PlannedWrite($0) }
            try insert(&planned, Array(planned.indices), includeId: true, conn)
            return try savedCopies(planned)
        }
    }

    /// Deletes the rows of every record in one transaction; returns how many were deleted.
    /// Throws ``PersistableError/notSaved(tableName:)`` (deleting nothing) when a record has no id.
    @discardableResult
    public static func destroyAll(_ records: [Self], _ database: Database? = nil) throws -> Int {
        let db = try DefaultDatabase.resolve(database)
        var statements: [SQLStatement] = []
        statements.reserveCapacity(records.count)
        for record in records {
            guard let id = record.id else { throw PersistableError.notSaved(tableName: tableName) }
            statements.append(.delete(SQLDelete(from: tableName, where: .column("id").equals(.bind(.integer(Int64(id)))))))
        }
        return try db.write { try $0.executeBatch(statements) }
    }

    /// The copies `save()` would return, sharing one row layout among records of one column set.
    private static func savedCopies(_ planned: [PlannedWrite]) throws -> [Self] {
        var layout: RowLayout?
        var copies: [Self] = []
        copies.reserveCapacity(planned.count)
        for write in planned {
            guard let id = write.id else { throw PersistableError.missingInsertedId(tableName: tableName) }
            let shared: RowLayout
            if let layout, layout.count == write.columns.count + 1,
               layout.columnNames.dropFirst().elementsEqual(write.columns) {
                shared = layout
            } else {
                shared = RowLayout(columnNames: ["id"] + write.columns)
                layout = shared
            }
            var values = [DatabaseValue]()
            values.reserveCapacity(write.values.count + 1)
            values.append(.integer(Int64(id)))
            values.append(contentsOf: write.values)
            copies.append(try Self(databaseRow: DatabaseRow(row: Row(layout: shared, values: values))))
        }
        return copies
    }

    /// Runs the inserts of `indices`, grouped by column set into multi-row INSERTs, and fills
    /// in the ids the database assigned.
    private static func insert(_ planned: inout [PlannedWrite], _ indices: [Int], includeId: Bool, _ conn: Connection) throws {
        let maxBindings = conn.dialect.maxBindParameters
        var withIds: [SQLStatement] = []
        // Records with the same columns go together (a nil value leaves its column out, so one
        // record in five with a NULL must not break every run of rows in two); within a group
        // they keep their order.
        var groups: [[String]: [Int]] = [:]
        var groupOrder: [[String]] = []
        for index in indices {
            let columns = planned[index].insertColumns(includeId: includeId)
            if groups[columns] == nil { groupOrder.append(columns) }
            groups[columns, default: []].append(index)
        }
        for columns in groupOrder {
            let members = groups[columns] ?? []
            let rowLimit = max(1, min(500, maxBindings / max(1, columns.count)))
            var start = 0
            while start < members.count {
                let end = min(start + rowLimit, members.count)
                let chunk = members[start..<end]
                start = end
                let assignsIds = !(includeId && columns.first == "id" && planned[chunk[chunk.startIndex]].id != nil)
                if columns.isEmpty {
                    // DEFAULT VALUES inserts one row: one statement per record.
                    for index in chunk {
                        let row = try conn.fetchOne(.insert(SQLInsert(into: tableName, columns: [], source: .defaultValues,
                                                                      returning: [.column("id")])))
                        guard let row, let id = try? row.decode(Int.self, at: 0) else {
                            throw PersistableError.missingInsertedId(tableName: tableName)
                        }
                        planned[index].id = id
                    }
                    continue
                }
                var insert = SQLInsert(into: tableName, columns: columns,
                                       source: .values(chunk.map { planned[$0].insertValues(includeId: includeId) }))
                if assignsIds {
                    insert.returning = [.column("id")]
                    // Ids are assigned in VALUES order on both engines (SQLite's next rowid,
                    // PostgreSQL's identity evaluated row by row), so the i-th smallest id
                    // returned belongs to the i-th row, whatever order RETURNING lists them in.
                    var ids: [Int] = []
                    ids.reserveCapacity(chunk.count)
                    try conn.forEachRow(.insert(insert)) { ids.append(try $0.decode(Int.self, at: 0)) }
                    guard ids.count == chunk.count else { throw PersistableError.missingInsertedId(tableName: tableName) }
                    ids.sort()
                    for (index, id) in zip(chunk, ids) { planned[index].id = id }
                } else {
                    withIds.append(.insert(insert))
                    if withIds.count >= 64 {
                        try conn.executeBatch(withIds)
                        withIds.removeAll(keepingCapacity: true)
                    }
                }
            }
        }
        if !withIds.isEmpty { try conn.executeBatch(withIds) }
    }

    /// Runs the updates of `indices` as one batch; throws when a row is gone.
    private static func update(_ planned: [PlannedWrite], _ indices: [Int], _ conn: Connection) throws {
        var statements: [SQLStatement] = []
        statements.reserveCapacity(indices.count)
        for index in indices {
            let write = planned[index]
            guard let id = write.id, !write.columns.isEmpty else { continue }
            let assignments = zip(write.columns, write.values).map { SQLAssignment($0.0, .bind($0.1)) }
            statements.append(.update(SQLUpdate(tableName, set: assignments, where: .column("id").equals(.bind(.integer(Int64(id)))))))
        }
        let ids = indices.compactMap { planned[$0].id }
        let changed = statements.isEmpty ? 0 : try conn.executeBatch(statements)
        if changed == ids.count && statements.count == ids.count { return }
        // Some row is gone (or a record had no columns to write): find the first missing id.
        var present = Set<Int>()
        let select = SQLSelect(from: tableName).columns(.expression(.column("id")))
            .where(SQLExpression.column("id").isIn(ids.map { Int64($0) }))
        try conn.forEachRow(.select(select)) { present.insert(try $0.decode(Int.self, at: 0)) }
        if let missing = ids.first(where: { !present.contains($0) }) {
            throw PersistableError.recordNotFound(tableName: tableName, id: missing)
        }
    }
}

/// One record's write: its id and the columns and values a save sends.
struct PlannedWrite {
    var id: Int?
    let columns: [String]
    let values: [DatabaseValue]

    init(_ record: some Persistable) {
        id = record.id
        (columns, values) = record.persistedColumns()
    }

    /// The columns an insert names: the non-NULL ones (defaults apply to the rest), and `id`
    /// first when asked and set.
    func insertColumns(includeId: Bool) -> [String] {
        var out: [String] = includeId && id != nil ? ["id"] : []
        for (column, value) in zip(columns, values) where !value.isNull { out.append(column) }
        return out
    }

    func insertValues(includeId: Bool) -> [SQLExpression] {
        var out: [SQLExpression] = []
        if includeId, let id { out.append(.bind(.integer(Int64(id)))) }
        for value in values where !value.isNull { out.append(.bind(value)) }
        return out
    }
}
