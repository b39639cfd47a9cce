import DriverPostgres
import Foundation
import Testing

@Suite("PostgreSQL cursors and batches")
struct PostgresStreamingTests {
    @Test("a cursor streams 10,000 rows in order")
    func cursorStreams() throws {
        try withSchema { _, db in
            let cursor = try db.openCursor("SELECT g, 'row ' || g FROM generate_series(1, $1) g", bindings: [.integer(10_000)])
            #expect(cursor.layout.columnNames == ["g", "?column?"])
            var count: Int64 = 0
            var sum: Int64 = 0
            while let row = try cursor.next() {
                count += 1
                sum += try row.decode(Int64.self, at: 0)
                if count == 9_999 { #expect(row[1] == .text("row 9999")) }
            }
            #expect(count == 10_000)
            #expect(sum == 50_005_000)
            #expect(try cursor.next() == nil)
            cursor.close()
            #expect(try scalar(db, "SELECT 1") == .integer(1))
        }
    }

    @Test("rows the caller keeps are not overwritten by the next row, from a result or a cursor")
    func keptRowsKeepTheirValues() throws {
        try withSchema { _, db in
            let sql = "SELECT g, 'n' || g, CASE WHEN g % 2 = 0 THEN NULL ELSE g * 10 END FROM generate_series(1, $1) g"
            var expected: [[DatabaseValue]] = []
            for g in 1...5 {
                let third: DatabaseValue = g % 2 == 0 ? .null : .integer(Int64(g * 10))
                expected.append([.integer(Int64(g)), .text("n\(g)"), third])
            }
            var kept: [Row] = []
            try db.execute(sql, bindings: [.integer(5)]) { kept.append($0) }
            #expect(kept.map(\.values) == expected)
            let cursor = try db.openCursor(sql, bindings: [.integer(5)])
            var streamed: [Row] = []
            while let row = try cursor.next() { streamed.append(row) }
            #expect(streamed.map(\.values) == expected)
            #expect(streamed[3][1] == .text("n4"))
        }
    }

    @Test("closing a cursor early cancels it; the connection is reusable and close is idempotent")
    func cursorEarlyClose() throws {
        try withSchema { _, db in
            let cursor = try db.openCursor("SELECT g FROM generate_series(1, 5000000) g", bindings: [])
            for expected in 1...10 {
                #expect(try cursor.next()?[0] == .integer(Int64(expected)))
            }
            let busy = databaseError { try db.execute("SELECT 1", bindings: [], onRow: nil) }
            guard case .misuse = busy else {
                Issue.record("a statement while a cursor is open should be .misuse, got \(String(describing: busy))")
                return
            }
            let start = Date()
            cursor.close()
            cursor.close()
            #expect(Date().timeIntervalSince(start) < 5)
            #expect(try cursor.next() == nil)
            #expect(db.transactionStatus == .idle)
            #expect(try scalar(db, "SELECT 42") == .integer(42))
        }
    }

    @Test("closing a cursor early inside a transaction keeps the transaction healthy")
    func cursorEarlyCloseInTransaction() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (v INT); BEGIN; INSERT INTO t VALUES (1)")
            let cursor = try db.openCursor("SELECT g FROM generate_series(1, 20000) g", bindings: [])
            #expect(try cursor.next()?[0] == .integer(1))
            cursor.close()
            #expect(db.transactionStatus == .active)
            try db.executeScript("COMMIT")
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(1))
        }
    }

    @Test("a cursor over a failing statement throws the mapped error and frees the connection")
    func cursorError() throws {
        try withSchema { _, db in
            let cursor = try db.openCursor("SELECT 1 / (g - 3) FROM generate_series(1, 5) g", bindings: [])
            var seen = 0
            let error = databaseError {
                while try cursor.next() != nil { seen += 1 }
            }
            #expect(error?.context?.code == "22012")
            #expect(seen == 2)
            #expect(try scalar(db, "SELECT 7") == .integer(7))
        }
    }

    @Test("executeBatch inserts 1,000 rows through the pipeline")
    func batchInserts() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT, score DOUBLE PRECISION)")
            let sets: [[DatabaseValue]] = (1...1000).map { i in
                [.integer(Int64(i)), i % 7 == 0 ? .null : .text("name \(i)"), .double(Double(i) / 4)]
            }
            #expect(try db.executeBatch("INSERT INTO t VALUES ($1, $2, $3)", bindingSets: sets) == 1000)
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(1000))
            #expect(try scalar(db, "SELECT count(*) FROM t WHERE name IS NULL") == .integer(142))
            #expect(try scalar(db, "SELECT sum(score) FROM t") == .double(125_125))
            #expect(try db.executeBatch("UPDATE t SET score = 0 WHERE id <= $1", bindingSets: [[10], [20]]) == 30)
            #expect(try db.executeBatch("SELECT 1", bindingSets: []) == 0)
        }
    }

    @Test("a failing batch throws its first error after draining, keeps nothing, and leaves the connection usable")
    func batchFailure() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id BIGINT PRIMARY KEY)")
            var sets: [[DatabaseValue]] = (1...1000).map { [.integer(Int64($0))] }
            sets[500] = [.integer(10)]
            let error = databaseError { try db.executeBatch("INSERT INTO t VALUES ($1)", bindingSets: sets) }
            guard case .constraintViolation(.unique, let c) = error else {
                Issue.record("expected a unique violation, got \(String(describing: error))")
                return
            }
            #expect(c.sql == "INSERT INTO t VALUES ($1)")
            #expect(db.isUsable)
            #expect(db.transactionStatus == .idle)
            // Outside a transaction the whole pipeline is one implicit transaction.
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(0))

            // Inside a transaction the failure leaves the transaction failed.
            try db.executeScript("BEGIN")
            _ = databaseError { try db.executeBatch("INSERT INTO t VALUES ($1)", bindingSets: [[1], [1]]) }
            #expect(db.transactionStatus == .failed)
            try db.executeScript("ROLLBACK")

            // A value that cannot be bound fails before anything is sent.
            let nan = databaseError { try db.executeBatch("INSERT INTO t VALUES ($1::float8::bigint)", bindingSets: [[.double(1)], [.double(.nan)]]) }
            guard case .misuse = nan else {
                Issue.record("expected .misuse for NaN, got \(String(describing: nan))")
                return
            }
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(0))
            #expect(try db.executeBatch("INSERT INTO t VALUES ($1)", bindingSets: [[1], [2]]) == 2)
        }
    }
}
