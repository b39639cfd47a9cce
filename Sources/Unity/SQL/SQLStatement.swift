/// A whole SQL statement as a value, rendered by ``SQLDialect/render(_:)``.
///
/// A SELECT is stored in the enum itself, the large statements of other kinds in a box of
/// their own (`indirect`): a lookup builds, renders and drops a SELECT every time, and a box
/// cost it an allocation, and the renderer a copy of the whole query out of the box.
public enum SQLStatement: Sendable, Hashable {
    /// BEGIN.
    case begin(TransactionKind)
    /// COMMIT.
    case commit
    /// ROLLBACK.
    case rollback
    /// SAVEPOINT name.
    case savepoint(String)
    /// RELEASE SAVEPOINT name.
    case releaseSavepoint(String)
    /// ROLLBACK TO SAVEPOINT name.
    case rollbackToSavepoint(String)
    /// A raw statement with `?` placeholders.
    case raw(SQLFragment)
    /// SELECT (or a compound of SELECTs).
    case select(SQLSelect)
    /// INSERT, with optional upsert and RETURNING.
    indirect case insert(SQLInsert)
    /// UPDATE.
    indirect case update(SQLUpdate)
    /// DELETE.
    indirect case delete(SQLDelete)
    /// CREATE TABLE.
    indirect case createTable(SQLCreateTable)
    /// DROP TABLE.
    case dropTable(SQLDropTable)
    /// CREATE INDEX.
    indirect case createIndex(SQLCreateIndex)
    /// DROP INDEX.
    case dropIndex(SQLDropIndex)
    /// ALTER TABLE.
    indirect case alterTable(SQLAlterTable)
    /// `DECLARE name NO SCROLL CURSOR FOR select`: a server-side cursor over the SELECT's
    /// rows, read with ``fetchCursor(_:count:)`` inside the same transaction (PostgreSQL;
    /// SQLite has none: ``Connection/forEachRowInBatches(_:batchSize:_:)`` steps the
    /// statement there).
    indirect case declareCursor(String, SQLSelect)
    /// `FETCH FORWARD count FROM name`: the cursor's next `count` rows.
    case fetchCursor(String, count: Int)
    /// `CLOSE name`.
    case closeCursor(String)
    /// One of the statements that create or drop a ``FullTextIndex`` (see
    /// ``FullTextIndex/createStatements(for:)``).
    indirect case fullTextIndex(SQLFullTextIndexStatement)
    /// `COPY table (columns) FROM STDIN (FORMAT binary)`: the start of a bulk load whose rows
    /// the driver streams (PostgreSQL; see ``Connection/copy(into:columns:rows:)``).
    indirect case copyFrom(SQLCopyFrom)
    /// `COPY (select) TO STDOUT (FORMAT binary)`: an export of the SELECT's rows, streamed
    /// (PostgreSQL). COPY takes no bind parameters, so the SELECT may have none.
    indirect case copyTo(SQLSelect)
    /// `CREATE TEMPORARY TABLE name ON COMMIT DROP AS SELECT columns FROM source WITH NO DATA`:
    /// an empty table with the source's column types and none of its constraints, gone at
    /// the end of the transaction (PostgreSQL), into which a keyed batch is loaded by COPY
    /// before one INSERT … SELECT moves it (see
    /// ``Connection/upsertByCopyIfWorthwhile(into:columns:conflictColumns:updating:where:count:row:)``).
    indirect case createStagingTable(SQLStagingTable)
}

/// A staging table: an empty temporary copy of some of a table's columns
/// (``SQLStatement/createStagingTable(_:)``).
public struct SQLStagingTable: Sendable, Hashable {
    /// The temporary table's name.
    public var name: String
    /// The table whose column types it takes.
    public var source: String
    /// The columns it has, in order.
    public var columns: [String]

    /// Creates the statement's description: a table `name` with `source`'s `columns`.
    public init(_ name: String, like source: String, columns: [String]) {
        self.name = name
        self.source = source
        self.columns = columns
    }
}

/// The target of a bulk load: `COPY table (columns) FROM STDIN (FORMAT binary)`.
public struct SQLCopyFrom: Sendable, Hashable {
    /// The table the rows go into.
    public var table: String
    /// The columns each row supplies, in order; the others take their defaults.
    public var columns: [String]

    /// Creates the target of a bulk load into `table`'s `columns`.
    public init(into table: String, columns: [String]) {
        self.table = table
        self.columns = columns
    }
}
