import Foundation
import Testing
import Unity

/// A transaction keeps its promise on both backends: a statement error caught inside it
/// aborts it (never a reported commit of what PostgreSQL threw away), and a transaction ended
/// inside its closure is noticed.
@Suite("Core: transaction promises")
struct CoreTransactionPromiseTests {
    func makeTable(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("v", .int64, unique: true)])))
        }
    }

    func insert(_ conn: Connection, _ v: Int) throws {
        try conn.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(Int64(v))])))
    }

    func values(_ db: Database) throws -> [Int] {
        try db.read { conn in
            try conn.fetchAll(.select(SQLSelect(from: "t").orderBy(SQLExpression.column("v").asc))).map { try $0.decode(Int.self, at: 0) }
        }
    }

    func isTransactionAborted(_ error: Error) -> Bool {
        if case DatabaseError.transactionAborted = error { return true }
        return false
    }

    /// Runs `body` and returns what it threw, or records an issue when it did not throw.
    func thrown(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> Error? {
        do {
            try body()
            Issue.record("expected an error, got none", sourceLocation: sourceLocation)
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: Backend.allCases)
    func aCaughtStatementErrorMakesTheCommitThrowAndKeepsNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            let error = thrown {
                try db.write { conn in
                    try insert(conn, 1)
                    _ = try? conn.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                }
            }
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            #expect(try values(db) == [])
            // The pool's connection is clean afterwards.
            try db.write { try insert($0, 7) }
            #expect(try values(db) == [7])
        }
    }

    @Test(arguments: Backend.allCases)
    func aCaughtConstraintViolationAbortsTheTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { try insert($0, 1) }
            let error = thrown {
                try db.transaction { conn in
                    try insert(conn, 2)
                    do {
                        try insert(conn, 1)
                        Issue.record("a duplicate was inserted")
                    } catch DatabaseError.constraintViolation(.unique, _) {
                        // caught, as `try?` would
                    }
                }
            }
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            #expect(try values(db) == [1])
        }
    }

    /// A statement that fails while its rows stream through a cursor (the error arises at
    /// the second row, after the cursor opened) aborts the transaction as any other failure:
    /// the next statement and the write throw `transactionAborted`, and no row is kept.
    @Test(arguments: Backend.allCases)
    func aCursorThatFailsMidStreamAbortsTheTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { try insert($0, 1) }
            var streamError: Error?
            var refusal: Error?
            let error = thrown {
                try db.write { conn in
                    try insert(conn, 2)
                    try insert(conn, 3)
                    // abs() of the smallest integer fails on both engines (overflow), at v = 2.
                    let cursor = try conn.cursor(sql: "SELECT abs(CASE WHEN v = 2 THEN -9223372036854775807 - 1 ELSE v END) FROM t ORDER BY v")
                    do {
                        while try cursor.next() != nil {}
                    } catch {
                        streamError = error
                    }
                    do {
                        try insert(conn, 4)
                    } catch {
                        refusal = error
                    }
                }
            }
            #expect(streamError != nil, "the overflow did not fail the cursor")
            #expect(refusal.map(isTransactionAborted) == true, "got \(String(describing: refusal))")
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            #expect(try values(db) == [1])
        }
    }

    /// A statement the engine saw and failed, even one the driver reports as a misuse
    /// (PostgreSQL's COPY from the client, which the driver abandons; a syntax error on
    /// SQLite), aborts the transaction: what the user sees is the refusal of the next
    /// statement, the failed write, and the row left absent.
    @Test(arguments: Backend.allCases)
    func aStatementTheEngineFailedAbortsTheTransactionWhateverItsErrorKind(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            var refusal: Error?
            let error = thrown {
                try db.write { conn in
                    try insert(conn, 1)
                    _ = try? conn.execute(sql: "COPY t FROM STDIN")
                    do {
                        try insert(conn, 2)
                    } catch {
                        refusal = error
                    }
                }
            }
            #expect(refusal.map(isTransactionAborted) == true, "got \(String(describing: refusal))")
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            #expect(try values(db) == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func theStatementAfterACaughtErrorIsRefused(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            var refusal: Error?
            _ = try? db.write { conn in
                try insert(conn, 1)
                _ = try? conn.execute(sql: "SELECT * FROM no_such_table")
                do {
                    try insert(conn, 2)
                } catch {
                    refusal = error
                }
            }
            #expect(refusal.map(isTransactionAborted) == true, "got \(String(describing: refusal))")
            #expect(try values(db) == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailedSavepointIsRolledBackAndTheOuterTransactionGoesOn(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try db.write { conn in
                try insert(conn, 1)
                // The error leaves the nested scope: only the savepoint is undone.
                _ = try? conn.transaction { inner in
                    try insert(inner, 2)
                    try inner.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                }
                // The nested scope catches its own error: it cannot release, so it is rolled
                // back and throws transactionAborted, and the outer scope goes on.
                let error = thrown {
                    try conn.transaction { inner in
                        try insert(inner, 3)
                        _ = try? inner.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                    }
                }
                #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
                // A nested write (a savepoint through the shared connection) behaves the same.
                _ = try? db.write { inner in
                    try insert(inner, 4)
                    try insert(inner, 1)
                }
                try insert(conn, 5)
            }
            #expect(try values(db) == [1, 5])
        }
    }

    @Test(arguments: Backend.allCases)
    func aCaughtErrorInAReadAbortsTheRead(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            let error = thrown {
                _ = try db.read { conn in
                    _ = try? conn.fetchAll(sql: "SELECT * FROM no_such_table")
                    return try conn.fetchAll(sql: "SELECT v FROM t")
                }
            }
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
        }
    }

    @Test(arguments: Backend.allCases)
    func aRawRollbackInsideTheClosureIsNoticed(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            var refusal: Error?
            let error = thrown {
                try db.write { conn in
                    try insert(conn, 1)
                    try conn.execute(sql: "ROLLBACK")
                    do {
                        try insert(conn, 2)
                    } catch {
                        refusal = error
                    }
                }
            }
            #expect(refusal.map(isTransactionAborted) == true, "got \(String(describing: refusal))")
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            // Neither the rolled-back row nor a row written after the rollback is there.
            #expect(try values(db) == [])
            try db.write { try insert($0, 3) }
            #expect(try values(db) == [3])
        }
    }

    @Test(arguments: Backend.allCases)
    func aRawCommitInsideTheClosureIsNoticed(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            let error = thrown {
                try db.write { conn in
                    try insert(conn, 1)
                    try conn.execute(sql: "COMMIT")
                }
            }
            // The raw COMMIT committed row 1; `write` says its own commit did not happen.
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            #expect(try values(db) == [1])
            // A raw COMMIT inside a nested scope ends the whole transaction just the same.
            let nested = thrown {
                try db.write { conn in
                    try insert(conn, 2)
                    try conn.transaction { inner in
                        try inner.execute(sql: "COMMIT")
                    }
                    try insert(conn, 3)
                }
            }
            #expect(nested.map(isTransactionAborted) == true, "got \(String(describing: nested))")
            #expect(try values(db) == [1, 2])
        }
    }

    /// SQLite only: `INSERT OR ROLLBACK` (and a column's ON CONFLICT ROLLBACK clause) is
    /// SQLite's own syntax. It rolls the whole transaction back; the later statements must not
    /// autocommit one by one.
    @Test func sqliteOnConflictRollbackEndsTheTransaction() throws {
        try withTestDatabase(.sqlite) { (db: Database) throws in
            try makeTable(db)
            try db.write { try insert($0, 1) }
            var refusal: Error?
            let error = thrown {
                try db.write { conn in
                    try insert(conn, 2)
                    _ = try? conn.execute(sql: "INSERT OR ROLLBACK INTO t (v) VALUES (1)")
                    do {
                        try insert(conn, 3)
                    } catch {
                        refusal = error
                    }
                }
            }
            #expect(refusal.map(isTransactionAborted) == true, "got \(String(describing: refusal))")
            #expect(error.map(isTransactionAborted) == true, "got \(String(describing: error))")
            #expect(try values(db) == [1])
        }
    }

    @Test(arguments: Backend.allCases)
    func asyncWriteWithACaughtErrorThrows(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try makeTable(db)
            do {
                try await db.write { conn in
                    try conn.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(1)])))
                    _ = try? conn.execute(sql: "INSERT INTO no_such_table VALUES (1)")
                }
                Issue.record("the write reported a commit")
            } catch DatabaseError.transactionAborted {
            }
            #expect(try values(db) == [])
        }
    }
}
