import DriverSQLite
import Foundation
import Testing

@Suite("SQLite connections")
struct SQLiteConnectionTests {
    @Test func driverDescribesItsPool() {
        let file = SQLiteDriver(path: "/tmp/x.sqlite", readers: 3)
        #expect(file.poolShape == .singleWriter(readers: 3))
        #expect(file.dialect == .sqlite)
        #expect(SQLiteDriver.inMemory().poolShape == .singleWriter(readers: 0))
        #expect(throws: DatabaseError.self) { _ = try SQLiteDriver.inMemory().connect(role: .reader) }
    }

    @Test func fileWriterRunsInWALWithSettings() throws {
        let temp = try TemporaryDatabase()
        let writer = try temp.writer()
        #expect(try writer.scalar("PRAGMA journal_mode") == .text("wal"))
        #expect(try writer.scalar("PRAGMA synchronous") == .integer(1))
        #expect(try writer.scalar("PRAGMA foreign_keys") == .integer(1))
        #expect(try writer.scalar("PRAGMA busy_timeout") == .integer(5000))
        // The writer's statement journals stay in memory (2 = MEMORY); readers keep the default.
        #expect(try writer.scalar("PRAGMA temp_store") == .integer(2))
        let reader = try temp.reader()
        #expect(try reader.scalar("PRAGMA journal_mode") == .text("wal"))
        #expect(try reader.scalar("PRAGMA foreign_keys") == .integer(1))
        #expect(try reader.scalar("PRAGMA temp_store") == .integer(0))
    }

    /// A multi-row INSERT that fails on a taken key, inside a transaction on a file whose
    /// pages are reused (rows deleted before): its statement journal is far beyond SQLite's
    /// 64 KiB spill size, held in memory, and undoing the statement still restores every page:
    /// the statement's earlier rows are gone, the statements before it stay, the transaction
    /// stays open and commits them.
    @Test func aFailedMultiRowInsertIsUndoneAloneFromAJournalInMemory() throws {
        let temp = try TemporaryDatabase()
        let writer = try temp.writer()
        try writer.run("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        let body = DatabaseValue.blob(Data(repeating: 7, count: 300))
        func insert(_ ids: [Int]) throws {
            let rows = Array(repeating: "(?, ?)", count: ids.count).joined(separator: ", ")
            try writer.run("INSERT INTO t (id, body) VALUES \(rows)", ids.flatMap { [DatabaseValue.integer(Int64($0)), body] })
        }
        try insert(Array(1...2_000))
        try writer.run("DELETE FROM t")
        let free = try writer.scalar("PRAGMA freelist_count").flatMap { Int64.fromDatabaseValue($0) } ?? 0
        #expect(free > 100)
        try writer.run("BEGIN")
        try insert(Array(1...1_000))
        // Rows 1,001…1,999 go in, then 500 is taken: the whole statement is undone.
        let failing = databaseError { try insert(Array(1_001...1_999) + [500]) }
        #expect(failing?.context?.message.contains("UNIQUE") == true)
        #expect(writer.transactionStatus == .active)
        #expect(try writer.rows("SELECT count(*), max(id) FROM t").first?.values == [.integer(1_000), .integer(1_000)])
        try insert(Array(1_001...2_000))
        try writer.run("COMMIT")
        #expect(try writer.rows("SELECT count(*), min(id), max(id) FROM t").first?.values == [.integer(2_000), .integer(1), .integer(2_000)])
        #expect(try writer.scalar("PRAGMA integrity_check") == .text("ok"))
    }

    @Test func likeIsCaseSensitive() throws {
        let db = try memoryConnection()
        #expect(try db.scalar("SELECT 'ABC' LIKE 'abc'") == .integer(0))
        #expect(try db.scalar("SELECT 'abc' LIKE 'a%'") == .integer(1))
    }

    @Test func readerCannotWriteButSeesCommittedData() throws {
        let temp = try TemporaryDatabase()
        let writer = try temp.writer()
        try writer.run("CREATE TABLE t (v INTEGER)")
        try writer.run("INSERT INTO t VALUES (7)")
        let reader = try temp.reader()
        #expect(try reader.scalar("SELECT v FROM t") == .integer(7))
        let error = databaseError { try reader.run("INSERT INTO t VALUES (8)") }
        #expect(error?.context?.message.contains("readonly") == true)
        #expect(try writer.scalar("SELECT count(*) FROM t") == .integer(1))
    }

    @Test func executeReportsChangedRows() throws {
        let db = try memoryConnection()
        #expect(try db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)") == 0)
        #expect(try db.run("INSERT INTO t (v) VALUES (1), (2), (3)") == 3)
        #expect(try db.run("CREATE INDEX t_v ON t (v)") == 0)
        #expect(try db.run("SELECT * FROM t") == 0)
        #expect(try db.run("UPDATE t SET v = v + 10 WHERE v >= 2") == 2)
        #expect(try db.run("DELETE FROM t WHERE v > 100") == 0)
        var returned: [DatabaseValue] = []
        let changed = try db.execute("UPDATE t SET v = v * 2 WHERE id = ? RETURNING v", bindings: [1]) { returned.append($0[0]) }
        #expect(changed == 1)
        #expect(returned == [.integer(2)])
        // UPSERT works on SQLite 3.40.
        try db.run("INSERT INTO t (id, v) VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET v = excluded.v + 100")
        #expect(try db.scalar("SELECT v FROM t WHERE id = 1") == .integer(100))
    }

    @Test func rowsKeptByTheCallerAreNotOverwritten() throws {
        let db = try memoryConnection()
        let rows = try db.rows("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) SELECT x, 'n' || x AS name FROM c")
        #expect(rows.map(\.values) == (1...5).map { [.integer(Int64($0)), .text("n\($0)")] })
        #expect(rows[3]["name"] == .text("n4"))
    }

    @Test func transactionStatusFollowsTheEngine() throws {
        let db = try memoryConnection()
        #expect(db.transactionStatus == .idle)
        try db.run("BEGIN IMMEDIATE TRANSACTION")
        #expect(db.transactionStatus == .active)
        try db.run("COMMIT")
        #expect(db.transactionStatus == .idle)
    }

    @Test func executeBatchInsertsAThousandRows() throws {
        let temp = try TemporaryDatabase()
        let db = try temp.writer()
        try db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)")
        let sets: [[DatabaseValue]] = (1...1000).map { [.integer(Int64($0)), .text("name \($0)"), .double(Double($0) / 4)] }
        try db.run("BEGIN")
        #expect(try db.executeBatch("INSERT INTO t (id, name, score) VALUES (?, ?, ?)", bindingSets: sets) == 1000)
        try db.run("COMMIT")
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(1000))
        #expect(try db.rows("SELECT name, score FROM t WHERE id = 999")[0].values == [.text("name 999"), .double(249.75)])
        // A failing set stops the batch with the mapped error.
        let error = databaseError { try db.executeBatch("INSERT INTO t (id) VALUES (?)", bindingSets: [[2000], [1]]) }
        guard case .constraintViolation(.unique, _)? = error else {
            Issue.record("expected a unique violation, got \(String(describing: error))")
            return
        }
    }

    @Test func cursorStreamsTenThousandRows() throws {
        let temp = try TemporaryDatabase()
        let db = try temp.writer()
        try db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT)")
        try db.run("BEGIN")
        try db.executeBatch("INSERT INTO t (id, label) VALUES (?, ?)", bindingSets: (1...10_000).map { [.integer(Int64($0)), .text("row \($0)")] })
        try db.run("COMMIT")
        let cursor = try db.openCursor("SELECT id, label FROM t WHERE id >= ? ORDER BY id", bindings: [1])
        #expect(cursor.layout.columnNames == ["id", "label"])
        var count: Int64 = 0
        var idSum: Int64 = 0
        var firstRow: Row?
        while let row = try cursor.next() {
            if firstRow == nil { firstRow = row }
            count += 1
            idSum += try row.decode(Int64.self, at: 0)
            if count == 5000 { #expect(row["label"] == .text("row 5000")) }
        }
        #expect(count == 10_000)
        // Rows are reused between calls, but one the caller kept is never overwritten.
        #expect(firstRow?.values == [.integer(1), .text("row 1")])
        #expect(idSum == 10_000 * 10_001 / 2)
        #expect(try cursor.next() == nil)
        cursor.close()
    }

    @Test func cursorEarlyCloseReleasesTheStatement() throws {
        let temp = try TemporaryDatabase()
        let db = try temp.writer()
        try db.run("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        try db.executeBatch("INSERT INTO t (id) VALUES (?)", bindingSets: (1...100).map { [.integer(Int64($0))] })
        let cursor = try db.openCursor("SELECT id FROM t ORDER BY id", bindings: [])
        #expect(try cursor.next()?[0] == .integer(1))
        #expect(try cursor.next()?[0] == .integer(2))
        cursor.close()
        cursor.close()
        #expect(try cursor.next() == nil)
        // A statement still stepping on t would make DROP TABLE fail with "table is locked".
        try db.run("DROP TABLE t")
        #expect(try db.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 't'") == .integer(0))
    }

    @Test func cursorOnEmptyResultAndErrors() throws {
        let db = try memoryConnection()
        let empty = try db.openCursor("SELECT 1 AS one WHERE 0", bindings: [])
        #expect(empty.layout.columnNames == ["one"])
        #expect(try empty.next() == nil)
        guard case .undefinedTable? = databaseError({ _ = try db.openCursor("SELECT * FROM nowhere", bindings: []) }) else {
            Issue.record("expected .undefinedTable from openCursor")
            return
        }
    }

    @Test func cachedStatementBusyInCursorIsNotReused() throws {
        let db = try memoryConnection()
        try db.run("CREATE TABLE t (v INTEGER)")
        try db.executeBatch("INSERT INTO t VALUES (?)", bindingSets: (1...5).map { [.integer(Int64($0))] })
        let sql = "SELECT v FROM t WHERE v >= ? ORDER BY v"
        #expect(try db.rows(sql, [1]).count == 5) // now cached
        let cursor = try db.openCursor(sql, bindings: [2])
        #expect(try cursor.next()?[0] == .integer(2))
        // The same SQL while the cursor holds the cached statement, with other bindings.
        #expect(try db.rows(sql, [4]).map { $0[0] } == [.integer(4), .integer(5)])
        // And a nested cursor on it too.
        let inner = try db.openCursor(sql, bindings: [5])
        #expect(try inner.next()?[0] == .integer(5))
        inner.close()
        // The first cursor kept its place and its bindings.
        #expect(try cursor.next()?[0] == .integer(3))
        #expect(try cursor.next()?[0] == .integer(4))
        #expect(try cursor.next()?[0] == .integer(5))
        #expect(try cursor.next() == nil)
        #expect(try db.rows(sql, [3]).count == 3)
    }

    /// Text, blobs, dates and UUIDs are bound from the statement's own buffer: values of
    /// every length (the buffer grows mid-batch), empty ones, and a cursor that keeps its text
    /// bindings while the same SQL runs beside it with longer ones.
    @Test func boundBytesStayExactAcrossGrowingBatchesAndOpenCursors() throws {
        let db = try memoryConnection()
        try db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, label TEXT, body BLOB, at TEXT, ref BLOB)")
        let lengths = [0, 1, 3, 200, 5, 4_000, 2, 70_000, 0, 9]
        func label(_ n: Int) -> String { String(repeating: "é", count: n / 2) + String(repeating: "z", count: n % 2) }
        func body(_ n: Int) -> Data { Data((0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) }) }
        let uuid = UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!
        let date = Date(timeIntervalSince1970: 1_234_567_890.5)
        try db.executeBatch("INSERT INTO t VALUES (?, ?, ?, ?, ?)", bindingSets: lengths.enumerated().map { index, n in
            [.integer(Int64(index)), .text(label(n)), .blob(body(n)), .date(date), .uuid(uuid)]
        })
        for (index, n) in lengths.enumerated() {
            let row = try #require(try db.rows("SELECT label, body, at, ref, typeof(label), typeof(body) FROM t WHERE id = ?",
                                                [.integer(Int64(index))]).first)
            #expect(row[0] == .text(label(n)))
            #expect(row[1] == .blob(body(n)))
            #expect(row[2] == .text("2009-02-13 23:31:30.500000"))
            #expect(row[3] == .blob(Data([0x0F, 0x1E, 0x2D, 0x3C, 0x4B, 0x5A, 0x69, 0x78,
                                          0x87, 0x96, 0xA5, 0xB4, 0xC3, 0xD2, 0xE1, 0xF0])))
            // An empty text or blob stays empty, not NULL.
            #expect(row[4] == .text("text"))
            #expect(row[5] == .text("blob"))
        }
        let sql = "SELECT id FROM t WHERE label >= ? AND length(label) < ? ORDER BY id"
        let cursor = try db.openCursor(sql, bindings: [.text("z"), .integer(3)])
        #expect(try cursor.next()?[0] == .integer(1))
        // The same SQL beside the open cursor, with a text far longer than the cursor's.
        #expect(try db.rows(sql, [.text(String(repeating: "é", count: 9_000)), .integer(100_000)]).map { $0[0] }
            == [.integer(7)])
        #expect(try db.rows(sql, [.text(""), .integer(1)]).map { $0[0] } == [.integer(0), .integer(8)])
        // The cursor still compares each row with its own "z" (bytes: "é" sorts after it).
        #expect(try cursor.next()?[0] == .integer(2))
        #expect(try cursor.next()?[0] == .integer(6))
        #expect(try cursor.next() == nil)
        cursor.close()
        // One statement whose values overflow the statement's bounded buffer (80 × 4,000
        // bytes): the last ones are copied by SQLite, and every one reads back exact.
        try db.run("CREATE TABLE wide (id INTEGER PRIMARY KEY, label TEXT)")
        let placeholders = (0..<80).map { _ in "(?, ?)" }.joined(separator: ", ")
        let wide: [DatabaseValue] = (0..<80).flatMap { id -> [DatabaseValue] in
            [.integer(Int64(id)), .text(String(repeating: Character(UnicodeScalar(UInt8(65 + id % 26))), count: 4_000))]
        }
        #expect(try db.run("INSERT INTO wide VALUES \(placeholders)", wide) == 80)
        let stored = try db.rows("SELECT label FROM wide ORDER BY id")
        #expect(stored.count == 80)
        for (id, row) in stored.enumerated() {
            #expect(row[0] == .text(String(repeating: Character(UnicodeScalar(UInt8(65 + id % 26))), count: 4_000)))
        }
    }

    @Test func statementCacheEvictsWithoutBreakingOpenCursors() throws {
        let db = try memoryConnection()
        try db.run("CREATE TABLE t (v INTEGER)")
        try db.executeBatch("INSERT INTO t VALUES (?)", bindingSets: (1...3).map { [.integer(Int64($0))] })
        let cursor = try db.openCursor("SELECT v FROM t ORDER BY v", bindings: [])
        #expect(try cursor.next()?[0] == .integer(1))
        for i in 0..<600 {
            #expect(try db.scalar("SELECT \(i) + 0") == .integer(Int64(i)))
        }
        #expect(try cursor.next()?[0] == .integer(2))
        #expect(try cursor.next()?[0] == .integer(3))
        #expect(try cursor.next() == nil)
        #expect(try db.rows("SELECT v FROM t ORDER BY v").count == 3)
    }

    @Test func layoutFollowsSchemaChanges() throws {
        let db = try memoryConnection()
        try db.run("CREATE TABLE t (a INTEGER)")
        try db.run("INSERT INTO t VALUES (1)")
        #expect(try db.rows("SELECT * FROM t")[0].columnNames == ["a"])
        try db.run("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'")
        let row = try #require(try db.rows("SELECT * FROM t").first)
        #expect(row.columnNames == ["a", "b"])
        #expect(row["b"] == .text("x"))
        try db.run("ALTER TABLE t RENAME COLUMN a TO renamed")
        #expect(try db.rows("SELECT * FROM t")[0].columnNames == ["renamed", "b"])
    }

    @Test func interruptCancelsALongQuery() throws {
        let db = try memoryConnection()
        let interrupt = db.makeInterrupter()
        let interrupter = RepeatingInterrupter(after: 0.2, interrupt)
        let started = Date()
        let error = databaseError {
            try db.run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000000) SELECT count(*) FROM c")
        }
        interrupter.stop()
        guard case .cancelled(let context)? = error else {
            Issue.record("expected .cancelled, got \(String(describing: error))")
            return
        }
        #expect(context.code == "9")
        #expect(Date().timeIntervalSince(started) < 30)
        // The connection stays usable, and interrupting a closed connection is harmless.
        #expect(try db.scalar("SELECT 1") == .integer(1))
        db.close()
        interrupt()
    }

    @Test func interruptFromAnotherThreadWhileCursorRuns() async throws {
        let db = try memoryConnection()
        let interrupt = db.makeInterrupter()
        let box = UncheckedSendableBox(value: db)
        let interrupter = RepeatingInterrupter(after: 0.2, interrupt)
        defer { interrupter.stop() }
        let result: DatabaseError? = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let error = databaseError {
                    let cursor = try box.value.openCursor(
                        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000000) SELECT x FROM c",
                        bindings: [])
                    while try cursor.next() != nil {}
                }
                continuation.resume(returning: error)
            }
        }
        guard case .cancelled? = result else {
            Issue.record("expected .cancelled, got \(String(describing: result))")
            return
        }
    }
}
