import Foundation
import Unity

/// Saving and destroying many records at once: one transaction, multi-row INSERTs and batched
/// UPDATEs / DELETEs (one reused prepared statement on SQLite, one pipeline on PostgreSQL).
extension Persistable {
    /// Saves every record in one transaction, as ``save(_:)`` would one by one: records without
    /// an id are inserted (multi-row INSERTs, ids through RETURNING), the others updated.
    /// Returns the saved copies in the order given. All or nothing: on any error (a record whose
    /// row is gone included, ``PersistableError/recordNotFound(tableName:id:)``) nothing is kept.
    @inlinable
    public static func saveAll(_ records: [Self], _ database: Database? = nil) throws -> [Self] {
        let db = try DefaultDatabase.resolve(database)
        return try db.write { conn in
            var inserter = BatchInsert<Self>(conn, count: records.count, includeId: false)
            var updates: [(index: Int, write: PlannedWrite)] = []
            var previous: [String]?
            for index in records.indices {
                let write = PlannedWrite(records[index], columnsOfPrevious: previous)
                previous = write.columns
                if write.id == nil {
                    try inserter.add(write, at: index)
                } else {
                    updates.append((index, write))
                }
            }
            try update(updates.map(\.write), conn)
            for (index, write) in updates { try inserter.copies.add(write, at: index) }
            return try inserter.finish()
        }
    }

    /// Inserts every record as a new row in one transaction, writing the `id` of the records
    /// that have one (application-assigned keys) and taking the database's for the others.
    /// Returns the saved copies in the order given; all or nothing (a taken id is the core's
    /// unique-constraint error).
    @inlinable
    public static func insertAll(_ records: [Self], _ database: Database? = nil) throws -> [Self] {
        let db = try DefaultDatabase.resolve(database)
        return try db.write { conn in
            var inserter = BatchInsert<Self>(conn, count: records.count, includeId: true)
            try inserter.insertEvery(records, allocatedIds: try allocateIds(records, conn))
            return try inserter.finish()
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

    /// The ids of the records without one, taken from the table's sequence before a batch
    /// large enough for COPY (PostgreSQL), in the records' order; nil otherwise (the INSERTs
    /// then take them). With their ids known, the records can be streamed as records that carry
    /// their own are (see `BatchInsert.insertEvery`).
    @inlinable
    static func allocateIds(_ records: [Self], _ conn: Connection) throws -> [Int64]? {
        guard records.count >= Connection.copyThreshold, conn.dialect.supportsCopy else { return nil }
        var newRecords = 0
        for record in records where record.id == nil { newRecords += 1 }
        return try conn.allocateSequenceValues(table: tableName, column: "id", count: newRecords)
    }

    /// Runs the updates as one batch; throws when a row is gone.
    @usableFromInline
    static func update(_ planned: [PlannedWrite], _ conn: Connection) throws {
        var statements: [SQLStatement] = []
        statements.reserveCapacity(planned.count)
        for write in planned {
            guard let id = write.id, !write.columns.isEmpty else { continue }
            let assignments = zip(write.columns, write.values).map { SQLAssignment($0.0, .bind($0.1)) }
            statements.append(.update(SQLUpdate(tableName, set: assignments, where: .column("id").equals(.bind(.integer(Int64(id)))))))
        }
        let ids = planned.compactMap(\.id)
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
///
/// (This and the types below are inlinable so that a client's batch is specialized for its
/// record type: run as generic code, looking up type metadata per record cost a fifth of an
/// insert.)
@usableFromInline
struct PlannedWrite {
    @usableFromInline var id: Int?
    @usableFromInline let columns: [String]
    @usableFromInline let values: [DatabaseValue]

    @inlinable
    init(_ record: some Persistable, columnsOfPrevious: [String]? = nil) {
        id = record.id
        (columns, values) = record.persistedColumns(columnsOfPrevious: columnsOfPrevious)
    }

    /// The columns an insert names: the non-NULL ones (defaults apply to the rest), and `id`
    /// first when asked and set.
    @inlinable
    func insertColumns(includeId: Bool) -> [String] {
        var out: [String] = includeId && id != nil ? ["id"] : []
        for (column, value) in zip(columns, values) where !value.isNull { out.append(column) }
        return out
    }

    /// Appends the values ``insertColumns(includeId:)`` names, in its order.
    @inlinable
    func appendInsertValues(to out: inout [DatabaseValue], includeId: Bool) {
        if includeId, let id { out.append(.integer(Int64(id))) }
        for value in values where !value.isNull { out.append(value) }
    }
}

/// The copies `save()` would return, built as their rows are written, in the order given.
@usableFromInline
struct SavedCopies<Record: Persistable> {
    @usableFromInline var copies: [Record?]
    /// The layout of the last copy: records of one column set share it.
    @usableFromInline var layout: (columns: [String], layout: RowLayout)?

    @inlinable
    init(count: Int) { copies = [Record?](repeating: nil, count: count) }

    /// Builds the copy of the record at `index` from what was written (`write.id` set).
    @inlinable
    mutating func add(_ write: PlannedWrite, at index: Int) throws {
        guard let id = write.id else { throw PersistableError.missingInsertedId(tableName: Record.tableName) }
        let shared: RowLayout
        if let layout, layout.columns == write.columns {
            shared = layout.layout
        } else {
            shared = RowLayout(columnNames: ["id"] + write.columns)
            layout = (write.columns, shared)
        }
        var values = [DatabaseValue]()
        values.reserveCapacity(write.values.count + 1)
        values.append(.integer(Int64(id)))
        values.append(contentsOf: write.values)
        copies[index] = try Record(databaseRow: DatabaseRow(row: Row(layout: shared, values: values)))
    }

    /// Every copy; throws if a record was never written.
    @inlinable
    func all() throws -> [Record] {
        var out: [Record] = []
        out.reserveCapacity(copies.count)
        for copy in copies {
            guard let copy else { throw PersistableError.missingInsertedId(tableName: Record.tableName) }
            out.append(copy)
        }
        return out
    }
}

/// Inserts records as multi-row INSERTs while they are planned, so a batch of any size holds
/// at most one chunk of rows per column set besides its copies.
///
/// Records are grouped by the columns their INSERT names: a nil value leaves its column out
/// (so that the table's default applies), and one record in five with a NULL must not break
/// every run of rows in two. A group's statement text is rendered once from the AST for each
/// row count it needs (full chunks share one) and its rows' values are bound to it directly:
/// rendering a 500-row INSERT per chunk cost more than SQLite spends storing the rows.
@usableFromInline
struct BatchInsert<Record: Persistable> {
    @usableFromInline
    struct Group {
        /// The columns the INSERT names (``PlannedWrite/insertColumns(includeId:)``).
        @usableFromInline let columns: [String]
        /// Records that name their own ids (application-assigned keys) have nothing to read
        /// back; the others' ids come back through RETURNING.
        @usableFromInline let namesIds: Bool
        @usableFromInline let rowLimit: Int
        @usableFromInline var pending: [(index: Int, write: PlannedWrite)] = []
        @usableFromInline var texts: [Int: String] = [:]

        @inlinable
        init(columns: [String], namesIds: Bool, rowLimit: Int) {
            self.columns = columns
            self.namesIds = namesIds
            self.rowLimit = rowLimit
        }
    }

    @usableFromInline
    struct Key: Hashable {
        @usableFromInline let columns: [String]
        @usableFromInline let namesIds: Bool

        @inlinable
        init(columns: [String], namesIds: Bool) {
            self.columns = columns
            self.namesIds = namesIds
        }
    }

    @usableFromInline let conn: Connection
    @usableFromInline let includeId: Bool
    @usableFromInline var groups: [Group] = []
    @usableFromInline var byKey: [Key: Int] = [:]
    /// Shapes seen so far (a record of each and its group), compared before a column list is
    /// built and hashed: records alternate between a few shapes, and comparing NULL flags costs
    /// less than hashing column names.
    @usableFromInline var seen: [(write: PlannedWrite, group: Int)] = []
    @usableFromInline var last: (write: PlannedWrite, group: Int)?
    /// The copies returned, in the order given.
    @usableFromInline var copies: SavedCopies<Record>
    /// True when the batch is large enough for COPY (PostgreSQL): each group's rows are kept
    /// until the end and loaded at once, instead of written a chunk at a time.
    @usableFromInline let accumulates: Bool

    @inlinable
    init(_ conn: Connection, count: Int, includeId: Bool) {
        self.conn = conn
        self.includeId = includeId
        copies = SavedCopies(count: count)
        accumulates = count >= Connection.copyThreshold && conn.dialect.supportsCopy
    }

    /// Plans the insert of the record at `index`; a full chunk is written at once.
    @inlinable
    mutating func add(_ write: PlannedWrite, at index: Int) throws {
        let group = self.group(of: write)
        groups[group].pending.append((index, write))
        if !accumulates, groups[group].pending.count >= groups[group].rowLimit { try flush(group) }
    }

    /// Plans the insert of every record (``insertAll(_:_:)``), giving the records without an
    /// id the `allocatedIds` in order (when the ids were taken before the batch).
    ///
    /// On a backend with COPY, when the batch is large enough and its first record has its id
    /// (its own or an allocated one), the records of that record's shape go through one COPY
    /// that plans them while it sends them: the planning and the copies overlap the server's
    /// work instead of coming before it. Records of other shapes wait in their groups for
    /// ``finish()``, and take the allocated ids of their places, so no value of the sequence
    /// is skipped.
    @inlinable
    mutating func insertEvery(_ records: [Record], allocatedIds: [Int64]? = nil) throws {
        var position = records.startIndex
        var previous: [String]?
        var nextId = 0
        func plan(_ index: Int) -> PlannedWrite {
            var write = PlannedWrite(records[index], columnsOfPrevious: previous)
            previous = write.columns
            if write.id == nil, let allocatedIds, nextId < allocatedIds.count {
                write.id = Int(allocatedIds[nextId])
                nextId += 1
            }
            return write
        }
        if accumulates, position < records.endIndex {
            let first = plan(position)
            let firstIndex = position
            position += 1
            let group = self.group(of: first)
            var written: Int?
            if groups[group].namesIds, !groups[group].columns.isEmpty {
                let conn = self.conn
                var firstPending = true
                written = try conn.insertByCopyIfWorthwhile(
                    into: Record.tableName, columns: groups[group].columns, expectedRows: records.count
                ) { values in
                    values.removeAll(keepingCapacity: true)
                    if firstPending {
                        firstPending = false
                        first.appendInsertValues(to: &values, includeId: true)
                        try copies.add(first, at: firstIndex)
                        return true
                    }
                    while position < records.endIndex {
                        let index = position
                        position += 1
                        let write = plan(index)
                        if sameShape(first, write) {
                            write.appendInsertValues(to: &values, includeId: true)
                            try copies.add(write, at: index)
                            return true
                        }
                        try add(write, at: index)
                    }
                    return false
                }
            }
            if written == nil { try add(first, at: firstIndex) }
        }
        while position < records.endIndex {
            try add(plan(position), at: position)
            position += 1
        }
    }

    /// Writes what is pending and returns every copy.
    @inlinable
    mutating func finish() throws -> [Record] {
        for group in groups.indices { try flush(group) }
        return try copies.all()
    }

    @inlinable
    mutating func group(of write: PlannedWrite) -> Int {
        if let known = last, sameShape(known.write, write) { return known.group }
        if let known = seen.first(where: { sameShape($0.write, write) }) {
            last = known
            return known.group
        }
        let namesIds = includeId && write.id != nil
        let key = Key(columns: write.insertColumns(includeId: includeId), namesIds: namesIds)
        let group: Int
        if let existing = byKey[key] {
            group = existing
        } else {
            group = groups.count
            byKey[key] = group
            let rowLimit = key.columns.isEmpty ? 1 : max(1, min(500, conn.dialect.maxBindParameters / key.columns.count))
            groups.append(Group(columns: key.columns, namesIds: namesIds, rowLimit: rowLimit))
        }
        last = (write, group)
        if seen.count < 16 { seen.append((write, group)) }
        return group
    }

    /// The two writes insert the same columns: the same column array, NULLs in the same places,
    /// an id of their own in both or neither.
    @inlinable
    func sameShape(_ a: PlannedWrite, _ b: PlannedWrite) -> Bool {
        guard !includeId || (a.id == nil) == (b.id == nil), a.columns == b.columns else { return false }
        for i in a.values.indices where a.values[i].isNull != b.values[i].isNull { return false }
        return true
    }

    /// Writes the group's pending rows (by COPY when there are enough of them, else as
    /// multi-row INSERTs of at most the group's row limit) and builds their copies.
    @inlinable
    mutating func flush(_ group: Int) throws {
        let pending = groups[group].pending
        guard !pending.isEmpty else { return }
        groups[group].pending.removeAll(keepingCapacity: true)
        let columns = groups[group].columns
        if !columns.isEmpty {
            let assignsIds = !groups[group].namesIds
            let includeId = self.includeId
            let ids = try conn.insertByCopyIfWorthwhile(
                into: Record.tableName, columns: columns, count: pending.count, generatedIdColumn: assignsIds ? "id" : nil
            ) { index, values in
                values.removeAll(keepingCapacity: true)
                pending[index].write.appendInsertValues(to: &values, includeId: includeId)
            }
            if let ids {
                for (position, (index, var write)) in pending.enumerated() {
                    if assignsIds { write.id = Int(ids[position]) }
                    try copies.add(write, at: index)
                }
                return
            }
        }
        let limit = groups[group].rowLimit
        var start = 0
        while start < pending.count {
            let end = min(start + limit, pending.count)
            try insert(group, pending[start..<end])
            start = end
        }
    }

    /// Writes rows of a group as one INSERT and builds their copies.
    @inlinable
    mutating func insert(_ group: Int, _ chunk: ArraySlice<(index: Int, write: PlannedWrite)>) throws {
        let columns = groups[group].columns
        let table = Record.tableName
        if columns.isEmpty {
            // DEFAULT VALUES inserts one row: one statement per record.
            for (index, var write) in chunk {
                let row = try conn.fetchOne(.insert(SQLInsert(into: table, columns: [], source: .defaultValues,
                                                              returning: [.column("id")])))
                guard let row, let id = try? row.decode(Int.self, at: 0) else {
                    throw PersistableError.missingInsertedId(tableName: table)
                }
                write.id = id
                try copies.add(write, at: index)
            }
            return
        }
        let assignsIds = !groups[group].namesIds
        var flat: [DatabaseValue] = []
        flat.reserveCapacity(chunk.count * columns.count)
        for (_, write) in chunk { write.appendInsertValues(to: &flat, includeId: includeId) }
        let sql = try text(group, rows: chunk.count, returning: assignsIds)
        if assignsIds {
            // Ids are assigned in VALUES order on both engines (SQLite's next rowid,
            // PostgreSQL's identity evaluated row by row), so the i-th smallest id
            // returned belongs to the i-th row, whatever order RETURNING lists them in.
            var ids: [Int] = []
            ids.reserveCapacity(chunk.count)
            try conn.forEachRow(RenderedSQL(sql: sql, bindings: flat)) { ids.append(try $0.decode(Int.self, at: 0)) }
            guard ids.count == chunk.count else { throw PersistableError.missingInsertedId(tableName: table) }
            ids.sort()
            for ((index, var write), id) in zip(chunk, ids) {
                write.id = id
                try copies.add(write, at: index)
            }
        } else {
            try conn.executeBatch(sql, bindingSets: [flat])
            for (index, write) in chunk { try copies.add(write, at: index) }
        }
    }

    /// The group's INSERT text for `rows` rows, rendered from the AST with placeholders only:
    /// the values are bound in the same row-major order.
    @inlinable
    mutating func text(_ group: Int, rows: Int, returning: Bool) throws -> String {
        if let sql = groups[group].texts[rows] { return sql }
        let columns = groups[group].columns
        var insert = SQLInsert(into: Record.tableName, columns: columns, placeholderRows: rows)
        if returning { insert.returning = [.column("id")] }
        let sql = try conn.render(.insert(insert)).sql
        groups[group].texts[rows] = sql
        return sql
    }
}
