import Foundation

/// Bulk loads and exports: rows streamed into a table, and out of a query.
///
/// On PostgreSQL a load is one binary `COPY … FROM STDIN` and an export one
/// `COPY (SELECT …) TO STDOUT`; on SQLite the same calls run one prepared INSERT per row in one
/// transaction, and step the query. The rows stored are the same on both, value for value, as
/// the INSERT path stores them.
extension Connection {
    /// The smallest batch of new rows that the flavors' pure-insert batches send through COPY,
    /// on a backend that has it (PostgreSQL). Below it the pipelined INSERTs are as fast:
    /// COPY pays a catalog lookup and a round trip of its own before its first row. Measured
    /// (the benchmark's six-column rows, each run paired with raw pipelined INSERTs), COPY
    /// took less time than the core's INSERTs from 250 rows on, and more at 100.
    public static let copyThreshold = 250

    /// Writes `rows` into `table`, one array of values per row in `columns` order, as one
    /// all-or-nothing step: inside a transaction it is a savepoint's worth of work, outside
    /// one it runs in its own. Returns the number of rows written.
    ///
    /// PostgreSQL streams the rows with binary `COPY table (columns) FROM STDIN`, each value
    /// encoded as the INSERT path binds it (a value with no binary form for its column, such
    /// as a `Date` into a `text` column, sends that row and the rest as INSERTs instead, so
    /// the stored values never differ). SQLite runs one prepared INSERT per row. Values given
    /// to an identity column move its sequence past them, as an INSERT does.
    ///
    /// - Throws: ``DatabaseError/misuse(_:)`` when a row's width is not the number of
    ///   columns; the database's error (a constraint violation, …) as an INSERT would throw
    ///   it. Nothing is written then.
    @discardableResult
    public func copy<Rows: Sequence>(into table: String, columns: [String], rows: Rows) throws -> Int
    where Rows.Element == [DatabaseValue] {
        var iterator = rows.makeIterator()
        return try copy(into: table, columns: columns) { row in
            guard let next = iterator.next() else { return false }
            row = next
            return true
        }
    }

    /// Writes rows into `table` as ``copy(into:columns:rows:)`` does, taking them from
    /// `nextRow`: each call fills its argument with the next row's values (in `columns`
    /// order) and returns true, or returns false at the end. Rows are not collected first, so
    /// a load of any size holds one row at a time (PostgreSQL: a buffer of 256 kB).
    @discardableResult
    public func copy(into table: String, columns: [String], nextRow: (inout [DatabaseValue]) throws -> Bool) throws -> Int {
        guard dialect.supportsCopy, driverConnection.supportsCopy else {
            return try insertRows(into: table, columns: columns, nextRow: nextRow)
        }
        return try transaction(.immediate) { conn in
            try conn.copyRows(into: table, columns: columns, generatedIdColumn: nil, rowCount: nil, nextRow: nextRow).rowCount
        }
    }

    /// For the flavors' pure-insert batches: inserts `count` new rows by COPY when this
    /// backend has it and `count` reaches ``copyThreshold``, in the open transaction, and
    /// returns the ids allocated for `generatedIdColumn` in row order (empty without one);
    /// returns nil, having run nothing, otherwise (the caller then runs its INSERTs).
    ///
    /// `row` fills its second argument with the values of row `index` in `columns` order
    /// (without `generatedIdColumn`, whose values come from its sequence, allocated by one
    /// `nextval` per row before the load: the ids are the ones an INSERT would have taken).
    public func insertByCopyIfWorthwhile(
        into table: String, columns: [String], count: Int, generatedIdColumn: String? = nil,
        row: (_ index: Int, _ values: inout [DatabaseValue]) throws -> Void
    ) throws -> [Int64]? {
        guard count >= Self.copyThreshold, !columns.isEmpty || generatedIdColumn != nil,
              dialect.supportsCopy, driverConnection.supportsCopy else { return nil }
        return try inOpenTransactionOrOwn { conn in
            var index = 0
            return try conn.copyRows(into: table, columns: columns, generatedIdColumn: generatedIdColumn, rowCount: count) { values in
                guard index < count else { return false }
                try row(index, &values)
                index += 1
                return true
            }.generatedIds
        }
    }

    /// Runs `body` in the open transaction, or in one of its own when none is open: a
    /// flavor's load is part of its batch's transaction, and all or nothing by itself.
    private func inOpenTransactionOrOwn<R>(_ body: (Connection) throws -> R) throws -> R {
        driverConnection.transactionStatus == .idle ? try transaction(.immediate, body) : try body(self)
    }

    /// For the flavors' pure-insert batches whose rows are made while they are sent: inserts
    /// the rows `nextRow` gives by COPY, in the open transaction, when this backend has COPY
    /// and `expectedRows` (at most how many rows there will be) reaches ``copyThreshold``, and
    /// returns the number of rows written; returns nil, having run nothing, otherwise (the
    /// caller then runs its INSERTs).
    ///
    /// Each call of `nextRow` fills its argument with the next row's values in `columns` order
    /// and returns true, or returns false at the end. Because the rows are made while the
    /// server stores the ones before, the caller's work per row (planning a record, building
    /// the copy it returns) overlaps the load instead of coming before it. No ids are
    /// allocated: every row names its key, or its table's defaults supply it.
    public func insertByCopyIfWorthwhile(
        into table: String, columns: [String], expectedRows: Int,
        nextRow: (_ values: inout [DatabaseValue]) throws -> Bool
    ) throws -> Int? {
        guard expectedRows >= Self.copyThreshold, !columns.isEmpty,
              dialect.supportsCopy, driverConnection.supportsCopy else { return nil }
        return try inOpenTransactionOrOwn { conn in
            try conn.copyRows(into: table, columns: columns, generatedIdColumn: nil, rowCount: nil, nextRow: nextRow).rowCount
        }
    }

    /// Takes `count` values from the sequence behind `column` of `table` (an identity or
    /// serial key), in the order taken: the keys `count` generated-key INSERTs would have
    /// taken. Returns nil, having taken none, on a backend whose bulk loads take their keys
    /// from the INSERTs themselves (SQLite), when `count` is below ``copyThreshold``, or when
    /// the column has no sequence.
    ///
    /// A batch that allocates its keys first can name them in its rows, and so stream the rows
    /// with ``insertByCopyIfWorthwhile(into:columns:expectedRows:nextRow:)`` while it makes
    /// them, in any number of loads, without skipping a value of the sequence.
    public func allocateSequenceValues(table: String, column: String, count: Int) throws -> [Int64]? {
        guard count >= Self.copyThreshold, dialect.supportsCopy, driverConnection.supportsCopy else { return nil }
        // What the log and the instrumentation show: the driver's statement binds these.
        let sql = "SELECT nextval(pg_get_serial_sequence($1, $2)) FROM generate_series(1, $3) -- \(count) keys for \(dialect.quoteIdentifier(table)).\(dialect.quoteIdentifier(column))"
        return try perform(sql) {
            log(sql, [])
            return try driverConnection.allocateSequenceValues(table: table, column: column, count: count)
        }
    }

    /// For the flavors' keyed batches (rows that name their keys and replace the stored row
    /// when the key exists): writes `count` rows into `table` through a staging table when
    /// this backend has COPY and `count` reaches ``copyThreshold``, and returns true; returns
    /// false, having run nothing, otherwise (the caller then runs its `INSERT … ON CONFLICT`
    /// statements).
    ///
    /// The rows are loaded by binary COPY into a temporary table with `table`'s column types
    /// (``SQLStatement/createStagingTable(_:)``), then moved by one `INSERT … SELECT`: first
    /// a plain one in a savepoint, which is all a batch of new keys needs (PostgreSQL's
    /// conflict check costs about as much again as the insert); when a key is taken it is
    /// rolled back and the same rows go again with `ON CONFLICT (conflictColumns) DO UPDATE`
    /// of `updating`, where `condition` holds of the stored row and `EXCLUDED` (`DO NOTHING`
    /// when `updating` is empty). The stored rows and the errors
    /// are those of the upsert statements; values given to an identity column move its
    /// sequence as an INSERT's do. All or nothing, in the open transaction (a savepoint) or
    /// in one of its own.
    ///
    /// The rows must not repeat a key of `conflictColumns`: PostgreSQL refuses to update one
    /// row twice in a statement (the callers split a batch where a key repeats).
    ///
    /// - Parameters:
    ///   - table: the table written.
    ///   - columns: the columns each row supplies, in order, the conflict columns among them.
    ///   - conflictColumns: the columns of the unique constraint that decides a conflict.
    ///   - updating: the columns a conflicting row takes from the new one.
    ///   - condition: when given, a conflicting row is updated only where it holds (the
    ///     `WHERE` of `DO UPDATE`, which may compare `table`'s columns with ``SQLExpression/excluded(_:)``).
    ///   - count: the number of rows.
    ///   - row: fills its second argument with the values of row `index` in `columns` order.
    public func upsertByCopyIfWorthwhile(
        into table: String, columns: [String], conflictColumns: [String], updating: [String],
        where condition: SQLExpression? = nil, count: Int,
        row: (_ index: Int, _ values: inout [DatabaseValue]) throws -> Void
    ) throws -> Bool {
        guard count >= Self.copyThreshold, !columns.isEmpty, !conflictColumns.isEmpty, table != Self.stagingTableName,
              dialect.supportsCopy, driverConnection.supportsCopy else { return false }
        let staging = Self.stagingTableName
        return try transaction(.immediate) { conn in
            _ = try conn.execute(.createStagingTable(SQLStagingTable(staging, like: table, columns: columns)))
            var index = 0
            _ = try conn.copyRows(into: staging, columns: columns, generatedIdColumn: nil, rowCount: count) { values in
                guard index < count else { return false }
                try row(index, &values)
                index += 1
                return true
            }
            let rows = SQLSelect(from: staging).columns(columns.map { SQLSelectColumn.expression(.column($0)) })
            let plain = SQLInsert(into: table, columns: columns, source: .select(rows))
            do {
                _ = try conn.transaction(.immediate) { try $0.execute(.insert(plain)) }
            } catch DatabaseError.constraintViolation(.unique, _) {
                // A key is taken: the same rows again, as the upsert the caller asked for.
                let upsert = updating.isEmpty ? plain.onConflictDoNothing(conflictColumns)
                    : plain.onConflict(conflictColumns, doUpdate: updating.map { SQLAssignment($0, .excluded($0)) }, where: condition)
                _ = try conn.execute(.insert(upsert))
            }
            // Dropped now rather than at COMMIT, so the next keyed batch of this transaction
            // can stage its rows under the same name.
            _ = try conn.execute(.dropTable(SQLDropTable(staging)))
            return true
        }
    }

    /// The name of the temporary table a keyed batch is staged in.
    static let stagingTableName = "unity_copy_staging"

    /// Runs a COPY in the open transaction (a backend that has COPY).
    private func copyRows(
        into table: String, columns: [String], generatedIdColumn: String?, rowCount: Int?,
        nextRow: (inout [DatabaseValue]) throws -> Bool
    ) throws -> CopyInResult {
        let allColumns = (generatedIdColumn.map { [$0] } ?? []) + columns
        try checkColumns(allColumns, into: table)
        var rowNumber = 0
        func checkedRow(_ values: inout [DatabaseValue]) throws -> Bool {
            guard try nextRow(&values) else { return false }
            rowNumber += 1
            try checkRow(values, number: rowNumber, into: table, width: columns.count)
            return true
        }
        let insertSQL = try render(.insert(SQLInsert(into: table, columns: allColumns, placeholderRows: 1))).sql
        let copySQL = try render(.copyFrom(SQLCopyFrom(into: table, columns: allColumns))).sql
        let request = CopyInRequest(table: table, columns: columns, copySQL: copySQL, insertSQL: insertSQL,
                                    generatedIdColumn: generatedIdColumn, rowCount: rowCount)
        return try perform(copySQL) {
            log(copySQL, [])
            return try driverConnection.copyIn(request, nextRow: checkedRow)
        }
    }

    /// A load on a backend without COPY: one prepared INSERT, reused row after row, in chunks
    /// that bound the memory held, all in one transaction (a savepoint when one is open).
    private func insertRows(into table: String, columns: [String],
                            nextRow: (inout [DatabaseValue]) throws -> Bool) throws -> Int {
        try checkColumns(columns, into: table)
        let insertSQL = try render(.insert(SQLInsert(into: table, columns: columns, placeholderRows: 1))).sql
        var total = 0
        var rowNumber = 0
        var values: [DatabaseValue] = []
        func next() throws -> [DatabaseValue]? {
            guard try nextRow(&values) else { return nil }
            rowNumber += 1
            try checkRow(values, number: rowNumber, into: table, width: columns.count)
            return values
        }
        try inChunks(of: Self.copyBatchRows, next: next) { conn, chunk in
            total += try conn.perform(insertSQL) {
                conn.log(insertSQL, [])
                return try conn.driverConnection.executeBatch(insertSQL, bindingSets: chunk)
            }
        }
        return total
    }

    /// Refuses what an INSERT's binding refuses before anything reaches the engine: row
    /// `number` (from 1) of another width than `width`, a JSON value that cannot be encoded.
    private func checkRow(_ values: [DatabaseValue], number: Int, into table: String, width: Int) throws {
        guard values.count == width else {
            throw DatabaseError.misuse(
                "row \(number) of the COPY into \(dialect.quoteIdentifier(table)) has \(values.count) values for \(width) columns")
        }
        for value in values {
            if case .json = value, let failure = JSONCoding.encodingFailure(in: value) { throw DatabaseError.misuse(failure) }
        }
    }

    /// Refuses a load with no column.
    private func checkColumns(_ columns: [String], into table: String) throws {
        guard !columns.isEmpty else {
            throw DatabaseError.misuse("a COPY into \(dialect.quoteIdentifier(table)) needs at least one column")
        }
    }

    /// How many rows a backend without COPY inserts per chunk.
    static let copyBatchRows = 1_000

    /// Streams the rows of `select` to `body` and returns how many there were: an export
    /// that holds no more than a batch of rows at a time.
    ///
    /// PostgreSQL: one binary `COPY (SELECT …) TO STDOUT`, its rows decoded as the query's
    /// would be, when the query has no bound values (COPY takes none, and Unity never inlines
    /// one) and every result column has a binary decoder; otherwise a server-side cursor
    /// (``forEachRowInBatches(_:batchSize:_:)``). While COPY streams, `body` must not run
    /// statements on this connection (they throw ``DatabaseError/misuse(_:)``). SQLite: the
    /// statement is stepped row by row. Outside a transaction the export runs in one of its own.
    @discardableResult
    public func copyOut(_ select: SQLSelect, _ body: (Row) throws -> Void) throws -> Int {
        if driverConnection.transactionStatus == .idle {
            return try transaction(.deferred) { try $0.copyOut(select, body) }
        }
        var count = 0
        if dialect.supportsCopy, driverConnection.supportsCopy {
            let selectSQL = try render(.select(select))
            if selectSQL.bindings.isEmpty {
                let copySQL = try render(.copyTo(select)).sql
                let request = CopyOutRequest(copySQL: copySQL, selectSQL: selectSQL.sql)
                let copied = try perform(copySQL) {
                    log(copySQL, [])
                    return try driverConnection.copyOut(request, onRow: body)
                }
                if let copied { return copied }
            }
            try forEachRowInBatches(select) { row in
                count += 1
                try body(row)
            }
            return count
        }
        try forEachRow(.select(select)) { row in
            count += 1
            try body(row)
        }
        return count
    }
}

extension Database {
    /// Writes `rows` into `table` on a writer connection, all or nothing; see
    /// ``Connection/copy(into:columns:rows:)``. Returns the number of rows written.
    @discardableResult
    public func copy<Rows: Sequence>(into table: String, columns: [String], rows: Rows) throws -> Int
    where Rows.Element == [DatabaseValue] {
        try withConnection(role: .writer) { try $0.copy(into: table, columns: columns, rows: rows) }
    }

    /// Streams the rows of `select` to `body` in a read; see ``Connection/copyOut(_:_:)``.
    /// Returns the number of rows.
    @discardableResult
    public func copyOut(_ select: SQLSelect, _ body: (Row) throws -> Void) throws -> Int {
        try read { try $0.copyOut(select, body) }
    }
}
