import DriverPostgres
import Foundation
import Testing
import Unity

/// `db.read { }` reads one snapshot on both backends, taken at its first statement.
@Suite("Core: snapshot reads")
struct CoreSnapshotReadTests {
    func makeTable(_ db: Database) throws {
        try db.write { try $0.execute(.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("v", .int64)]))) }
    }

    func insert(_ db: Database, _ v: Int) throws {
        try db.write { try $0.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(Int64(v))]))) }
    }

    func count(_ conn: Connection) throws -> Int {
        try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") ?? -1
    }

    @Test(arguments: Backend.allCases)
    func aCommitBetweenTwoQueriesOfOneReadIsNotSeen(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            try insert(db, 1)
            let (before, after, sum) = try db.read { conn -> (Int, Int, Int) in
                let before = try count(conn)
                // A write inside a read gets a writer of its own and commits at once.
                try insert(db, 2)
                let after = try count(conn)
                let sum = try conn.fetchValue(Int.self, sql: "SELECT SUM(v) FROM t") ?? -1
                return (before, after, sum)
            }
            #expect(before == 1)
            #expect(after == 1)
            #expect(sum == 1)
            // The commit was made, and the next read sees it.
            #expect(try db.read { try count($0) } == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func theSnapshotStartsAtTheFirstStatement(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db)
            let seen = try db.read { conn -> Int in
                // Committed after the closure began but before its first statement: seen.
                try insert(db, 1)
                return try count(conn)
            }
            #expect(seen == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func anAsyncReadIsOneSnapshot(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try makeTable(db)
            try insert(db, 1)
            let counts = try await db.read { conn -> [Int] in
                let first = try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") ?? -1
                try db.write { try $0.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(5)]))) }
                let second = try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") ?? -1
                return [first, second]
            }
            #expect(counts == [1, 1])
        }
    }

    /// PostgreSQL sends a read's BEGIN in one pipeline with its first statement and does not
    /// wait for its COMMIT's answer: the transaction must still be REPEATABLE READ READ ONLY,
    /// and the connection, lent again at once, must work.
    @Test func aPostgresReadIsRepeatableReadReadOnlyFromItsFirstStatement() throws {
        try withTestDatabase(.postgres, connections: 1) { (db: Database) throws in
            try makeTable(db)
            for _ in 0..<3 {
                let (isolation, readOnly) = try db.read { conn -> (String?, String?) in
                    (try conn.fetchValue(String.self, sql: "SHOW transaction_isolation"),
                     try conn.fetchValue(String.self, sql: "SHOW transaction_read_only"))
                }
                #expect(isolation == "repeatable read")
                #expect(readOnly == "on")
                // A write on the same (only) connection right after the read's COMMIT.
                try insert(db, 1)
                #expect(try db.withConnection { $0.isInTransaction } == false)
            }
            #expect(try db.read { try count($0) } == 3)
        }
    }

    /// A read's BEGIN and COMMIT are prepared statements of the connection (the server parses
    /// neither per read). When the server has lost them (`DEALLOCATE ALL`), the
    /// next read prepares them again and succeeds: nothing of it had run.
    @Test func aPostgresReadSurvivesLostPreparedStatements() throws {
        try withTestDatabase(.postgres, connections: 1) { (db: Database) throws in
            try makeTable(db)
            try insert(db, 1)
            #expect(try db.read { try count($0) } == 1)
            #expect(try db.read { try count($0) } == 1)
            let prepared: [String] = try db.withConnection { conn -> [String] in
                var statements: [String] = []
                for row in try conn.fetchAll(sql: "SELECT statement FROM pg_prepared_statements") {
                    statements.append(try row.decode(String.self, at: 0))
                }
                return statements
            }
            #expect(prepared.contains("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"), "\(prepared)")
            #expect(prepared.contains("COMMIT"), "\(prepared)")
            for inRead in [false, true] {
                if inRead {
                    // Lost in the middle of a read: its next statement prepares again too.
                    #expect(try db.read { conn -> Int in
                        try conn.execute(sql: "DEALLOCATE ALL")
                        return try count(conn)
                    } == 1)
                } else {
                    try db.withConnection { try $0.execute(sql: "DEALLOCATE ALL") }
                }
                let isolation: String? = try db.read { conn -> String? in
                    try conn.fetchValue(String.self, sql: "SHOW transaction_isolation")
                }
                let rows: Int = try db.read { conn -> Int in try count(conn) }
                #expect(isolation == "repeatable read")
                #expect(rows == 1)
                #expect(try db.read { try count($0) } == 1)
                try insert(db, 2)
                #expect(try db.read { try count($0) } == 2)
                try db.write { try $0.execute(sql: "DELETE FROM t WHERE v = 2") }
            }
            #expect(try db.withConnection { $0.isInTransaction } == false)
        }
    }

    @Test(arguments: Backend.allCases)
    func readsThatRunNothingFailFirstOrThrowLeaveTheConnectionClean(_ backend: Backend) throws {
        struct Boom: Error {}
        try withTestDatabase(backend, readers: 1, connections: 1) { (db: Database) throws in
            try makeTable(db)
            try insert(db, 1)
            // No statement at all.
            #expect(try db.read { _ in 42 } == 42)
            // The closure throws before any statement.
            #expect(throws: Boom.self) { try db.read { _ in throw Boom() } }
            // The first statement fails: the read is aborted, nothing more runs in it.
            var second: Error?
            #expect(throws: DatabaseError.self) {
                try db.read { conn in
                    _ = try? conn.fetchAll(sql: "SELECT * FROM no_such_table")
                    do { _ = try count(conn) } catch { second = error }
                }
            }
            if case DatabaseError.transactionAborted? = second {} else {
                Issue.record("expected transactionAborted, got \(String(describing: second))")
            }
            // A raw ROLLBACK as the first statement ends the read.
            #expect(throws: DatabaseError.self) {
                try db.read { conn in
                    try conn.execute(sql: "ROLLBACK")
                    _ = try count(conn)
                }
            }
            // A read of one statement, many times, on the one connection.
            for _ in 0..<5 { #expect(try db.read { try count($0) } == 1) }
            #expect(try db.withConnection(role: .reader) { $0.isInTransaction } == false)
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }

    /// Under load, a read's COMMIT waits for the next caller of its connection. When that
    /// caller is a read too, one `COMMIT AND CHAIN` ends the one and begins the other (the
    /// server runs one statement fewer per read). The chained read has the read's own
    /// characteristics and a snapshot of its own; a write after a read is never chained; a
    /// read that changed its own characteristics (`SET TRANSACTION`) passes nothing on.
    @Test func aPostgresReadUnderLoadChainsOntoTheReadBeforeIt() async throws {
        try await withTestDatabase(.postgres, connections: 1) { (db: Database) async throws in
            try makeTable(db)
            enum Outcome: Sendable, Equatable {
                case read(isolation: String?, readOnly: String?)
                case write(isolation: String?, readOnly: String?)
            }
            let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group -> [Outcome] in
                for task in 0..<48 {
                    group.addTask {
                        switch task % 8 {
                        case 3:
                            return try await db.write { conn -> Outcome in
                                try conn.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(Int64(task))])))
                                return .write(isolation: try conn.fetchValue(String.self, sql: "SHOW transaction_isolation"),
                                              readOnly: try conn.fetchValue(String.self, sql: "SHOW transaction_read_only"))
                            }
                        case 6:
                            // Its first statement changes its own isolation level.
                            return try await db.read { conn -> Outcome in
                                try conn.execute(sql: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                                _ = try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t")
                                return .read(isolation: "repeatable read", readOnly: "on")
                            }
                        default:
                            return try await db.read { conn -> Outcome in
                                .read(isolation: try conn.fetchValue(String.self, sql: "SHOW transaction_isolation"),
                                      readOnly: try conn.fetchValue(String.self, sql: "SHOW transaction_read_only"))
                            }
                        }
                    }
                }
                var outcomes: [Outcome] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            #expect(outcomes.count == 48)
            for outcome in outcomes {
                switch outcome {
                case .read(let isolation, let readOnly):
                    #expect(isolation == "repeatable read")
                    #expect(readOnly == "on")
                case .write(let isolation, let readOnly):
                    #expect(isolation == "read committed")
                    #expect(readOnly == "off")
                }
            }
            // Every write was committed, and a read sees them all.
            #expect(try await db.read { try count($0) } == 6)
            let chained: Int? = try await db.withConnection { conn -> Int? in
                try conn.fetchValue(Int.self, sql: "SELECT generic_plans FROM pg_prepared_statements WHERE statement = 'COMMIT AND CHAIN'")
            }
            #expect((chained ?? 0) > 0, "no read was chained onto the one before it")
            #expect(try await db.withConnection { $0.isInTransaction } == false)
        }
    }

    /// A read's COMMIT may travel with the next statement, but a connection that goes back to
    /// an idle pool sends it at once: it never sits idle inside a transaction.
    @Test func aPostgresConnectionIdlingAfterAReadIsNotInATransaction() throws {
        try withTestDatabase(.postgres, connections: 1) { (db: Database) throws in
            let pid = try #require(try db.read { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
            let url = try #require(postgresURL)
            let observer = try Database(driver: PostgresDriver(url, connections: 1))
            defer { observer.close() }
            var state: String?
            let deadline = Date(timeIntervalSinceNow: 10)
            repeat {
                state = try observer.withConnection {
                    try $0.fetchValue(String.self, sql: "SELECT state FROM pg_stat_activity WHERE pid = CAST(? AS INTEGER)",
                                      [.integer(Int64(pid))])
                }
                if state == "idle" { break }
                Thread.sleep(forTimeInterval: 0.05)
            } while Date() < deadline
            #expect(state == "idle")
        }
    }
}
