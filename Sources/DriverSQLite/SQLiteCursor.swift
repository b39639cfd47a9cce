import CSQLite
import Unity

/// Streams the rows of one statement. The first step runs when the cursor opens, so that
/// errors surface at `openCursor` and ``layout`` reflects any re-preparation SQLite did.
final class SQLiteCursor: DriverCursor {
    let layout: RowLayout

    // The variables are unchecked for exclusive access: a cursor is used by one thread at a
    // time, and the checks (a thread-local lookup each) were a sixth of the cost of a row.
    @exclusivity(unchecked) private var connection: SQLiteConnection?
    private let statement: SQLiteStatement
    private let db: OpaquePointer
    /// True when the first step produced a row that `next()` has not returned yet.
    @exclusivity(unchecked) private var hasPendingRow: Bool
    /// Storage reused between rows (copy-on-write keeps rows the caller kept intact).
    @exclusivity(unchecked) private var values: [DatabaseValue] = []

    init(connection: SQLiteConnection, statement: SQLiteStatement, db: OpaquePointer) throws {
        guard let handle = statement.handle else {
            throw DatabaseError.misuse("the statement was finalized because its connection closed")
        }
        let rc = sqlite3_step(handle)
        guard rc == SQLITE_ROW || rc == SQLITE_DONE else {
            throw mapSQLiteError(code: rc, message: sqliteMessage(db, code: rc), sql: statement.sql)
        }
        self.statement = statement
        self.db = db
        self.layout = statement.layout()
        self.hasPendingRow = rc == SQLITE_ROW
        self.values = [DatabaseValue](repeating: .null, count: Int(sqlite3_column_count(handle)))
        self.connection = connection
        if rc == SQLITE_DONE { close() }
    }

    deinit {
        close()
    }

    func next() throws -> Row? {
        guard connection != nil else { return nil }
        guard let handle = statement.handle else {
            close()
            throw DatabaseError.misuse("the cursor's connection was closed while the cursor was open")
        }
        if hasPendingRow {
            hasPendingRow = false
        } else {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE {
                close()
                return nil
            }
            guard rc == SQLITE_ROW else {
                let error = mapSQLiteError(code: rc, message: sqliteMessage(db, code: rc), sql: statement.sql)
                close()
                throw error
            }
        }
        values.withUnsafeMutableBufferPointer { SQLiteStatement.readRow(handle, into: $0) }
        return Row(layout: layout, values: values)
    }

    func close() {
        guard let connection else { return }
        self.connection = nil
        hasPendingRow = false
        connection.release(statement)
    }
}
