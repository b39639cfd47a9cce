import Foundation
import RawSQLite

/// SQLite's "copy this buffer now" destructor.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A thin owner of one sqlite3 connection, used by the raw baseline and by the fixture.
final class RawSQLiteDatabase {
    /// The sqlite3 handle.
    let handle: OpaquePointer

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws {
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw BenchError("cannot open SQLite database \(path): \(message)")
        }
        self.handle = handle
    }

    deinit { sqlite3_close_v2(handle) }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &error) == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? "unknown error"
            sqlite3_free(error)
            throw BenchError("SQLite: \(message) in \(sql)")
        }
    }

    /// Prepares one statement.
    func prepare(_ sql: String) throws -> RawSQLiteStatement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
              let statement
        else { throw BenchError("SQLite: \(String(cString: sqlite3_errmsg(handle))) in \(sql)") }
        return RawSQLiteStatement(statement: statement, database: self)
    }

    /// The single integer result of `sql`.
    func scalar(_ sql: String) throws -> Int64 {
        let statement = try prepare(sql)
        guard try statement.step() else { throw BenchError("SQLite: no row for \(sql)") }
        return sqlite3_column_int64(statement.statement, 0)
    }

    /// The error message for a failed call.
    func error(_ context: String) -> BenchError {
        BenchError("SQLite: \(String(cString: sqlite3_errmsg(handle))) (\(context))")
    }
}

/// A prepared statement, finalized on deinit.
final class RawSQLiteStatement {
    /// The sqlite3_stmt handle.
    let statement: OpaquePointer
    private let database: RawSQLiteDatabase

    init(statement: OpaquePointer, database: RawSQLiteDatabase) {
        self.statement = statement
        self.database = database
    }

    deinit { sqlite3_finalize(statement) }

    /// Steps once: true when a row is available, false when done.
    @inline(__always)
    func step() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error("step")
        }
    }

    /// Resets the statement and clears its bindings' effects for the next run.
    @inline(__always)
    func reset() { sqlite3_reset(statement) }

    /// Binds and steps a full record (columns in `BenchSchema.recordColumns` order, starting at
    /// parameter `first`), then runs the statement to completion and resets it.
    @inline(__always)
    func bindRecordAndRun(_ record: BenchRecord, first: Int32 = 1, dateBuffer: UnsafeMutablePointer<UInt8>) throws {
        sqlite3_bind_int64(statement, first, record.id)
        var name = record.name
        try name.withUTF8 { nameBytes in
            sqlite3_bind_text(statement, first + 1, nameBytes.baseAddress, Int32(nameBytes.count), nil)
            sqlite3_bind_double(statement, first + 2, record.score)
            DateText.write(milliseconds: BenchData.milliseconds(record.createdAt), into: dateBuffer)
            sqlite3_bind_text(statement, first + 3, dateBuffer, Int32(DateText.length), nil)
            if let rank = record.rank {
                sqlite3_bind_int64(statement, first + 4, rank)
            } else {
                sqlite3_bind_null(statement, first + 4)
            }
            try record.payload.withUnsafeBytes { payload in
                sqlite3_bind_blob(statement, first + 5, payload.baseAddress, Int32(payload.count), nil)
                let code = sqlite3_step(statement)
                sqlite3_reset(statement)
                guard code == SQLITE_DONE else { throw database.error("write record \(record.id)") }
            }
        }
    }

    /// Decodes the current row, whose first six columns are a record's, into a `BenchRecord`.
    @inline(__always)
    func record() throws -> BenchRecord {
        let id = sqlite3_column_int64(statement, 0)
        let name = text(1)
        let score = sqlite3_column_double(statement, 2)
        guard let datePointer = sqlite3_column_text(statement, 3),
              let milliseconds = DateText.parse(UnsafeBufferPointer(start: datePointer, count: Int(sqlite3_column_bytes(statement, 3))))
        else { throw BenchError("SQLite: record \(id) has no readable created_at") }
        let rank: Int64? = sqlite3_column_type(statement, 4) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, 4)
        let payloadCount = Int(sqlite3_column_bytes(statement, 5))
        let payload = sqlite3_column_blob(statement, 5).map { Data(bytes: $0, count: payloadCount) } ?? Data()
        return BenchRecord(
            id: id, name: name, score: score,
            createdAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000.0),
            rank: rank, payload: payload
        )
    }

    /// The text of column `index` of the current row.
    @inline(__always)
    func text(_ index: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, index) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, index))), as: UTF8.self)
    }
}

/// Table and column names shared by every subject.
enum BenchSchema {
    /// The record columns, in order.
    static let recordColumns = "id, name, score, created_at, rank, payload"

    /// SQLite DDL.
    static let sqlite = """
        DROP TABLE IF EXISTS bench_child;
        DROP TABLE IF EXISTS bench_parent;
        DROP TABLE IF EXISTS bench;
        CREATE TABLE bench (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL NOT NULL,
            created_at TEXT NOT NULL, rank INTEGER, payload BLOB NOT NULL);
        CREATE INDEX bench_score ON bench(score);
        CREATE TABLE bench_parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE bench_child (id INTEGER PRIMARY KEY,
            parent_id INTEGER NOT NULL REFERENCES bench_parent(id), name TEXT NOT NULL, score REAL NOT NULL);
        CREATE INDEX bench_child_parent ON bench_child(parent_id);
        """

    /// PostgreSQL DDL.
    static let postgres = """
        DROP TABLE IF EXISTS bench_child;
        DROP TABLE IF EXISTS bench_parent;
        DROP TABLE IF EXISTS bench;
        CREATE TABLE bench (id BIGINT PRIMARY KEY, name TEXT NOT NULL, score DOUBLE PRECISION NOT NULL,
            created_at TIMESTAMPTZ NOT NULL, rank BIGINT, payload BYTEA NOT NULL);
        CREATE INDEX bench_score ON bench(score);
        CREATE TABLE bench_parent (id BIGINT PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE bench_child (id BIGINT PRIMARY KEY,
            parent_id BIGINT NOT NULL REFERENCES bench_parent(id), name TEXT NOT NULL, score DOUBLE PRECISION NOT NULL);
        CREATE INDEX bench_child_parent ON bench_child(parent_id);
        """

    /// The `query` workload's SQL (one parameter: the lower bound).
    static let querySQLite = "SELECT \(recordColumns) FROM bench WHERE score >= ? ORDER BY score LIMIT \(BenchData.queryLimit)"
    /// The `one-to-many` workload's join (both backends).
    static let oneToManyJoin = """
        SELECT p.id, p.name, c.id, c.parent_id, c.name, c.score
        FROM bench_parent p LEFT JOIN bench_child c ON c.parent_id = p.id ORDER BY p.id
        """
}

/// Groups join rows `(parent, child?)` ordered by parent id into parents with children.
struct ParentGrouper {
    private(set) var result: [BenchParentWithChildren] = []

    mutating func add(parent: BenchParent, child: BenchChild?) {
        if result.last?.parent.id != parent.id {
            result.append(BenchParentWithChildren(parent: parent, children: []))
        }
        if let child { result[result.count - 1].children.append(child) }
    }
}
