import Foundation

/// The contract between the Unity core and a database driver. Users do not call drivers
/// directly: they hand one to ``Database`` and work through it.
///
/// A driver is a small, `Sendable` description of how to reach a database (a file path, a
/// PostgreSQL URL) and how the pool should be shaped for it.
public protocol DatabaseDriver: Sendable {
    /// The SQL dialect of this backend.
    var dialect: SQLDialect { get }
    /// How many connections of each role the pool should hold.
    var poolShape: PoolShape { get }
    /// True when ``DriverConnection/executeIndependently(_:onRow:)`` sends its statements in
    /// one round trip, so that ``DatabaseConfiguration/pipelinesConcurrentQueries`` pays.
    /// The default is false.
    var pipelinesIndependentQueries: Bool { get }
    /// Opens a new connection for `role`. Throws ``DatabaseError/connectionFailed(_:)`` when
    /// the database cannot be reached or opened.
    func connect(role: ConnectionRole) throws -> any DriverConnection
    /// Opens a new connection for `role` that follows `configuration` (its
    /// ``DatabaseConfiguration/poolerMode``). The default ignores the configuration and calls
    /// ``connect(role:)``.
    func connect(role: ConnectionRole, configuration: DatabaseConfiguration) throws -> any DriverConnection
    /// A new, unstarted watcher of the commits made to this database by other connections
    /// and processes (``DatabaseChangeSource``), reporting to `sink`; nil when the driver
    /// cannot observe. The default is nil. Called when an observation starts and no watcher
    /// runs; it must not connect yet (``DatabaseChangeSource/start()`` does).
    func makeChangeSource(configuration: DatabaseConfiguration, sink: DatabaseChangeSink) throws -> (any DatabaseChangeSource)?
    /// True when the database's own writer connections report their commits through
    /// ``DriverConnection/reportCommits(to:)`` (SQLite's commit hooks): the pool then hands
    /// the sink to each writer it lends while an observation runs. The default is false.
    var reportsCommitsThroughConnections: Bool { get }
    /// Read replicas of the server this driver reaches, one driver each: a ``Database``
    /// routes reads to them (see ``ReadSource``). The default is none.
    var replicas: [any DatabaseDriver] { get }
}

extension DatabaseDriver {
    /// Nil: the driver cannot observe changes.
    public func makeChangeSource(configuration: DatabaseConfiguration, sink: DatabaseChangeSink) throws -> (any DatabaseChangeSource)? {
        nil
    }

    /// False: commits are seen by the change source alone.
    public var reportsCommitsThroughConnections: Bool { false }

    /// None: every statement goes to the one server.
    public var replicas: [any DatabaseDriver] { [] }

    /// False: queries run one round trip each.
    public var pipelinesIndependentQueries: Bool { false }

    /// Calls ``connect(role:)``: a driver with nothing to configure per connection.
    public func connect(role: ConnectionRole, configuration: DatabaseConfiguration) throws -> any DriverConnection {
        try connect(role: role)
    }
}

/// How a pool divides its connections.
public enum PoolShape: Sendable, Hashable {
    /// One writer and up to `readers` read-only connections (SQLite in WAL mode): writes are
    /// serialized by the pool instead of failing with SQLITE_BUSY.
    case singleWriter(readers: Int)
    /// Up to `connections` equal connections used for reads and writes (PostgreSQL).
    case uniform(connections: Int)
}

/// What a pooled connection is for.
public enum ConnectionRole: Sendable, Hashable {
    /// May write; the only role in a `.uniform` pool.
    case writer
    /// Only reads (SQLite opens it read-only).
    case reader
}

/// The transaction state of a connection, as the engine reports it.
public enum DriverTransactionStatus: Sendable, Hashable {
    /// No transaction is open.
    case idle
    /// A transaction is open and healthy.
    case active
    /// A transaction is open but a statement failed in it (PostgreSQL's aborted state):
    /// only ROLLBACK (or ROLLBACK TO SAVEPOINT) is accepted.
    case failed
}

/// One open connection to a database, owned by the pool and used by one thread at a time.
///
/// Drivers keep a cache of prepared statements keyed by SQL text, map every engine error to
/// ``DatabaseError`` (attaching the SQL), and never crash on data from the database.
public protocol DriverConnection: AnyObject {
    /// Runs one statement with positional `bindings` (placeholders are already in the
    /// dialect's style). Each result row is passed to `onRow`; the driver may reuse the
    /// row's storage between calls, which is safe because `Row` is copy-on-write.
    /// Returns the number of rows the statement changed (0 for queries and DDL).
    @discardableResult
    func execute(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?) throws -> Int

    /// Runs the same statement once per element of `bindingSets`, as fast as the engine
    /// allows (one reused prepared statement on SQLite, pipeline mode on PostgreSQL).
    /// Returns the total number of rows changed. Result rows are discarded.
    @discardableResult
    func executeBatch(_ sql: String, bindingSets: [[DatabaseValue]]) throws -> Int

    /// Runs independent queries that only read, on a connection with no transaction open,
    /// passing each row to `onRow` with the index of its statement, and returns each
    /// statement's outcome (nil when it ran, its error otherwise), in order.
    ///
    /// Each query sees what is committed when it runs, as if run one after another; one
    /// query's failure is its own. A driver may send them in one round trip (PostgreSQL:
    /// one pipeline). The default runs them one after another (``executeOneByOne(_:onRow:)``).
    func executeIndependently(_ statements: [RenderedSQL], onRow: (_ statement: Int, _ row: Row) throws -> Void) -> [Error?]
    /// Opens a cursor that streams the rows of one statement without holding them all in
    /// memory. While a cursor is open, the connection runs nothing else.
    func openCursor(_ sql: String, bindings: [DatabaseValue]) throws -> any DriverCursor

    /// Runs a script of one or more statements separated by semicolons, with no bindings
    /// (migrations written as SQL files).
    func executeScript(_ sql: String) throws

    /// The engine's view of the current transaction.
    var transactionStatus: DriverTransactionStatus { get }

    /// False when the connection is broken (for example the server closed it) and must be
    /// replaced. Cheap: it reads local state and does not talk to the server.
    var isUsable: Bool { get }

    /// Checked by the pool before it lends an idle connection again: false when the
    /// connection is known to be dead (for example the server closed it while it sat idle,
    /// after a restart or `pg_terminate_backend`). Must cost no round trip on a healthy
    /// connection; the default is ``isUsable``.
    func isAliveAfterIdling() -> Bool

    /// Offers the driver to send `sql` (a BEGIN) together with the next statement instead of
    /// on its own, saving a round trip. Returns false when the driver does not (the caller
    /// then runs it). Until that statement runs, ``transactionStatus`` reports `.active`, and
    /// a COMMIT or ROLLBACK with nothing run in between costs nothing. The default is false.
    func beginWithNextStatement(_ sql: String) -> Bool

    /// Sends `sql` (the COMMIT of a read-only transaction) without waiting for its answer,
    /// which the connection reads before it runs anything else. Returns false when the
    /// driver does not (the caller then runs it). The default is false.
    func commitWithoutWaiting(_ sql: String) -> Bool

    /// Called by the pool when it puts the connection back with no one waiting for it: sends
    /// what the connection held back to send with its next statement (a read-only COMMIT),
    /// so that an idle connection never sits in a transaction. The default does nothing.
    func flushHeldWork()

    /// True while the connection holds back work for its next statement (a read-only
    /// COMMIT): what ``flushHeldWork()`` would send. The default is false.
    var holdsWork: Bool { get }

    /// True when the connection can run other statements while a cursor streams on it
    /// (SQLite: each statement is its own cursor); false when a cursor holds it (PostgreSQL).
    /// The default is false.
    var runsStatementsBesideCursors: Bool { get }

    /// Runs `sql`, a `FETCH` of up to `count` rows from a server-side cursor, passing each
    /// row to `onRow`; returns the number of rows.
    ///
    /// When the answer holds `count` rows (so more may follow), a driver may send the same
    /// `FETCH` again at once, before it passes the rows on: the server then reads the next
    /// batch while the caller works through this one, instead of each side waiting for the
    /// other. The next call with the same `sql` takes that answer. A statement run on the
    /// connection meanwhile first reads the answer and keeps it, so nothing is lost or
    /// reordered. The default runs `sql` like ``execute(_:bindings:onRow:)``.
    func fetchCursorBatch(_ sql: String, count: Int, onRow: (Row) throws -> Void) throws -> Int

    /// Drops the answer of a `FETCH` sent ahead by ``fetchCursorBatch(_:count:onRow:)`` and
    /// not taken (the caller stopped reading the cursor). The default does nothing.
    func discardCursorBatch(_ sql: String)

    /// True when a statement that fails on a constraint inside a transaction is undone alone
    /// and the transaction stays usable (SQLite's statement journal); false when the failure
    /// aborts the transaction (PostgreSQL). The default is false.
    var undoesFailedStatementAlone: Bool { get }

    /// A closure that interrupts whatever this connection is running, callable from any
    /// thread (`sqlite3_interrupt`, `PQcancel`). The running statement then fails with
    /// ``DatabaseError/cancelled(_:)``.
    func makeInterrupter() -> @Sendable () -> Void

    /// Runs `sql`, the COMMIT of a transaction that may have written, and returns the
    /// server's log position right after it (PostgreSQL: `pg_current_wal_lsn()`, in the same
    /// round trip), so that reads can wait for a replica that has replayed it. Called only on
    /// a database with replicas. The default runs `sql` and returns nil.
    func commitReportingPosition(_ sql: String) throws -> UInt64?

    /// How far this server has replayed its primary's log (a standby), or written its own
    /// (a primary): what ``commitReportingPosition(_:)`` reports on the primary, comparable
    /// with it. Nil when the engine has no such position. The default returns nil.
    func replicationPosition() throws -> UInt64?

    /// Reports the tables changed by each committed transaction of this connection to `sink`,
    /// or stops reporting (nil). Called by the pool each time it lends a writer of a driver
    /// whose ``DatabaseDriver/reportsCommitsThroughConnections`` is true: it must cost nothing
    /// when the sink is the one already set. The default does nothing.
    func reportCommits(to sink: DatabaseChangeSink?)
    /// True when the driver streams bulk loads and exports with COPY
    /// (``copyIn(_:nextRow:)``, ``copyOut(_:onRow:)``). The default is false.
    var supportsCopy: Bool { get }

    /// Streams rows into a table with `request.copySQL` (a `COPY … FROM STDIN (FORMAT
    /// binary)`), each value encoded as the INSERT path binds it. `nextRow` fills its argument
    /// with the next row's values (in `request.columns` order, without the generated id column)
    /// and returns false at the end. Runs inside a transaction. Returns the rows written and
    /// the ids allocated when `request.generatedIdColumn` is set. The default throws
    /// ``DatabaseError/misuse(_:)``.
    func copyIn(_ request: CopyInRequest, nextRow: (inout [DatabaseValue]) throws -> Bool) throws -> CopyInResult

    /// Takes `count` values from the sequence behind `column` of `table`, in the order taken,
    /// as `count` generated-key INSERTs would; nil, having taken none, when the column takes
    /// its values from no sequence. For a bulk load that names its rows' keys (see
    /// ``Connection/allocateSequenceValues(table:column:count:)``). The default returns nil.
    func allocateSequenceValues(table: String, column: String, count: Int) throws -> [Int64]?

    /// Streams the rows of `request.copySQL` (a `COPY (SELECT …) TO STDOUT (FORMAT binary)`)
    /// to `onRow`, decoded as `request.selectSQL`'s results would be, and returns how many
    /// there were; nil (having run nothing) when a result column has a type the driver cannot
    /// decode in binary. `onRow` may not run statements on this connection. The default
    /// returns nil.
    func copyOut(_ request: CopyOutRequest, onRow: (Row) throws -> Void) throws -> Int?

    /// Closes the connection. Further use throws.
    func close()
}

/// What a driver needs to run a bulk load (see ``DriverConnection/copyIn(_:nextRow:)``),
/// rendered by the dialect.
public struct CopyInRequest: Sendable {
    /// The target table, unquoted.
    public var table: String
    /// The columns each row supplies, in order (without ``generatedIdColumn``).
    public var columns: [String]
    /// The `COPY table (columns) FROM STDIN (FORMAT binary)` statement, with
    /// ``generatedIdColumn`` first when it is set.
    public var copySQL: String
    /// The one-row `INSERT` over the same columns as ``copySQL``, in the same order: what a
    /// row runs when one of its values has no binary COPY form for its column (the rest of
    /// the load then goes that way, so every value is stored as the INSERT path stores it).
    public var insertSQL: String
    /// A column whose values the driver allocates from its sequence, one per row, before the
    /// load (PostgreSQL: `nextval` over `generate_series`), or nil.
    public var generatedIdColumn: String?
    /// The number of rows `nextRow` will give; required with ``generatedIdColumn``.
    public var rowCount: Int?

    /// Creates a request.
    public init(table: String, columns: [String], copySQL: String, insertSQL: String,
                generatedIdColumn: String? = nil, rowCount: Int? = nil) {
        self.table = table
        self.columns = columns
        self.copySQL = copySQL
        self.insertSQL = insertSQL
        self.generatedIdColumn = generatedIdColumn
        self.rowCount = rowCount
    }
}

/// What a bulk load wrote.
public struct CopyInResult: Sendable, Hashable {
    /// The number of rows written.
    public var rowCount: Int
    /// The ids allocated for ``CopyInRequest/generatedIdColumn``, in row order (empty without one).
    public var generatedIds: [Int64]

    /// Creates a result.
    public init(rowCount: Int, generatedIds: [Int64] = []) {
        self.rowCount = rowCount
        self.generatedIds = generatedIds
    }
}

/// What a driver needs to run an export (see ``DriverConnection/copyOut(_:onRow:)``).
public struct CopyOutRequest: Sendable {
    /// The `COPY (SELECT …) TO STDOUT (FORMAT binary)` statement.
    public var copySQL: String
    /// The SELECT alone, whose result columns say how the rows decode.
    public var selectSQL: String

    /// Creates a request.
    public init(copySQL: String, selectSQL: String) {
        self.copySQL = copySQL
        self.selectSQL = selectSQL
    }
}

extension DriverConnection {
    /// Reports nothing: the driver's change source sees every commit.
    public func reportCommits(to sink: DatabaseChangeSink?) {}

    /// ``executeOneByOne(_:onRow:)``.
    public func executeIndependently(_ statements: [RenderedSQL], onRow: (_ statement: Int, _ row: Row) throws -> Void) -> [Error?] {
        executeOneByOne(statements, onRow: onRow)
    }

    /// Runs each statement with ``execute(_:bindings:onRow:)``, one after another, and
    /// returns each one's outcome: what ``executeIndependently(_:onRow:)`` does when the
    /// driver has nothing better.
    public func executeOneByOne(_ statements: [RenderedSQL], onRow: (_ statement: Int, _ row: Row) throws -> Void) -> [Error?] {
        // `execute` calls its `onRow` only while it runs.
        withoutActuallyEscaping(onRow) { onRow in
            statements.indices.map { index in
                do {
                    _ = try execute(statements[index].sql, bindings: statements[index].bindings) { try onRow(index, $0) }
                    return nil
                } catch {
                    return error
                }
            }
        }
    }

    /// ``isUsable``: an engine with no server cannot lose its connection while idle.
    public func isAliveAfterIdling() -> Bool { isUsable }

    /// False: a cursor holds the connection.
    public var runsStatementsBesideCursors: Bool { false }

    /// Runs the `FETCH` and waits for it; nothing is sent ahead.
    public func fetchCursorBatch(_ sql: String, count: Int, onRow: (Row) throws -> Void) throws -> Int {
        var rows = 0
        // `execute` calls `onRow` only while it runs.
        try withoutActuallyEscaping(onRow) { onRow in
            _ = try execute(sql, bindings: [], onRow: { row in
                rows += 1
                try onRow(row)
            })
        }
        return rows
    }

    /// Nothing is sent ahead, so nothing is dropped.
    public func discardCursorBatch(_ sql: String) {}

    /// False: a failed statement aborts the transaction.
    public var undoesFailedStatementAlone: Bool { false }

    /// False: the caller runs the BEGIN.
    public func beginWithNextStatement(_ sql: String) -> Bool { false }

    /// False: the caller runs the COMMIT.
    public func commitWithoutWaiting(_ sql: String) -> Bool { false }

    /// Nothing is ever held back.
    public func flushHeldWork() {}

    /// Runs `sql` and reports no position.
    public func commitReportingPosition(_ sql: String) throws -> UInt64? {
        try execute(sql, bindings: [], onRow: nil)
        return nil
    }

    /// No position: the engine does not replicate.
    public func replicationPosition() throws -> UInt64? { nil }

    /// False: nothing is ever held back.
    public var holdsWork: Bool { false }

    /// False: the engine has no COPY.
    public var supportsCopy: Bool { false }

    /// Throws ``DatabaseError/misuse(_:)``: the engine has no COPY.
    public func copyIn(_ request: CopyInRequest, nextRow: (inout [DatabaseValue]) throws -> Bool) throws -> CopyInResult {
        throw DatabaseError.misuse("this database engine has no COPY; Connection.copy(into:columns:rows:) runs prepared INSERTs on it")
    }

    /// Nil: the engine has no COPY.
    public func copyOut(_ request: CopyOutRequest, onRow: (Row) throws -> Void) throws -> Int? { nil }

    /// Nil: the engine's bulk loads take their keys from the INSERTs themselves.
    public func allocateSequenceValues(table: String, column: String, count: Int) throws -> [Int64]? { nil }
}

/// A forward-only stream of rows from one statement.
public protocol DriverCursor: AnyObject {
    /// The result columns.
    var layout: RowLayout { get }
    /// The next row, or nil at the end (after which the cursor has closed itself).
    func next() throws -> Row?
    /// Stops the statement early and frees its resources. Safe to call more than once.
    func close()
}
