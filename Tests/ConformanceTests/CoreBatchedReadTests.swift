import Foundation
import Testing
import Unity

/// `Connection.forEachRowInBatches`: every row once, in order, with the connection free for
/// other statements between rows; on PostgreSQL through a server-side cursor that is closed
/// on every way out.
@Suite("Core: reading a large result in batches")
struct CoreBatchedReadTests {
    func makeNumbers(_ db: Database, count: Int) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("number", columns: [
                SQLColumnDefinition("n", .int64, primaryKey: .plain),
                SQLColumnDefinition("label", .text, notNull: true),
            ])))
            try conn.execute(.createTable(SQLCreateTable("seen", columns: [SQLColumnDefinition("n", .int64, notNull: true)])))
            try conn.executeBatch((1...count).map { n in
                SQLStatement.insert(SQLInsert(into: "number", values: ["n": .integer(Int64(n)), "label": .text("#\(n)")]))
            })
        }
    }

    static let ordered = SQLSelect(from: "number").columns(.column("n"), .column("label")).orderBy(SQLExpression.column("n").asc)

    func openCursors(_ conn: Connection, _ backend: Backend) throws -> Int64 {
        guard backend == .postgres else { return 0 }
        return try conn.fetchOne(sql: "SELECT count(*) FROM pg_cursors WHERE name LIKE 'unity_cursor_%'")?.decode(Int64.self, at: 0) ?? -1
    }

    @Test(arguments: Backend.allCases)
    func everyRowOnceInOrderWhileTheBodyUsesTheConnection(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeNumbers(db, count: 2_500)
            let (numbers, labels, cursorsAfter) = try db.write { conn -> ([Int64], [String], Int64) in
                var numbers: [Int64] = []
                var labels: [String] = []
                try conn.forEachRowInBatches(Self.ordered, batchSize: 1_000) { row in
                    let n = try row.decode(Int64.self, at: 0)
                    numbers.append(n)
                    labels.append(try row.decode(String.self, at: 1))
                    // Another statement on the same connection, between two rows.
                    _ = try conn.execute(.insert(SQLInsert(into: "seen", values: ["n": .integer(n)])))
                }
                return (numbers, labels, try openCursors(conn, backend))
            }
            #expect(numbers == Array(1...2_500))
            #expect(labels.first == "#1")
            #expect(labels.last == "#2500")
            #expect(cursorsAfter == 0)
            let seen = try db.read { try $0.fetchOne(sql: "SELECT count(*), sum(n) FROM seen") }
            #expect(try seen?.decode(Int64.self, at: 0) == 2_500)
            #expect(try seen?.decode(Int64.self, at: 1) == 2_500 * 2_501 / 2)
        }
    }

    /// Each lend of a connection numbers its cursors from 1, so the same cursor name comes back
    /// on the same server connection with other columns (the same count of other types, then
    /// fewer): its rows must be read as what they are.
    @Test(arguments: Backend.allCases)
    func aCursorNameReusedWithOtherColumnsReadsItsOwnRows(_ backend: Backend) throws {
        try withTestDatabase(backend, connections: 1) { (db: Database) throws in
            try makeNumbers(db, count: 3)
            var firsts: [Int64] = []
            try db.write { conn in
                try conn.forEachRowInBatches(Self.ordered, batchSize: 2) { firsts.append(try $0.decode(Int64.self, at: 0)) }
            }
            var pairs: [String] = []
            try db.write { conn in
                let select = SQLSelect(from: "number").columns(.column("label"), .column("n")).orderBy(SQLExpression.column("n").asc)
                try conn.forEachRowInBatches(select, batchSize: 2) { row in
                    pairs.append("\(try row.decode(String.self, at: 0))=\(try row.decode(Int64.self, at: 1))")
                }
            }
            var labels: [String] = []
            try db.write { conn in
                let select = SQLSelect(from: "number").columns(.column("label")).orderBy(SQLExpression.column("n").desc)
                try conn.forEachRowInBatches(select, batchSize: 2) { labels.append(try $0.decode(String.self, at: 0)) }
            }
            #expect(firsts == [1, 2, 3])
            #expect(labels == ["#3", "#2", "#1"])
            #expect(pairs == ["#1=1", "#2=2", "#3=3"])
        }
    }

    @Test(arguments: Backend.allCases)
    func exactBatchesOutsideATransactionAndAnEmptyResult(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeNumbers(db, count: 1_000)
            // No transaction open: PostgreSQL's cursor gets one of its own, ended after.
            let (count, status) = try db.withConnection(role: .writer) { conn -> (Int, Bool) in
                var count = 0
                try conn.forEachRowInBatches(Self.ordered, batchSize: 500) { _ in count += 1 }
                return (count, try conn.fetchOne(sql: "SELECT 1") != nil)
            }
            #expect(count == 1_000)
            #expect(status)
            let none = try db.write { conn -> Int in
                var count = 0
                try conn.forEachRowInBatches(Self.ordered.where(SQLExpression.column("n").greaterThan(5_000)), batchSize: 7) { _ in count += 1 }
                return count
            }
            #expect(none == 0)
            do {
                try db.write { conn in try conn.forEachRowInBatches(Self.ordered, batchSize: 0) { _ in } }
                Issue.record("a batch size of 0 should be refused")
            } catch let DatabaseError.misuse(message) {
                #expect(message.contains("batch size"))
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func aThrowingBodyStopsTheReadAndClosesTheCursor(_ backend: Backend) throws {
        struct Stop: Error {}
        try withTestDatabase(backend) { (db: Database) throws in
            try makeNumbers(db, count: 300)
            let (seen, cursors, afterwards) = try db.write { conn -> (Int, Int64, Int64?) in
                var seen = 0
                do {
                    try conn.forEachRowInBatches(Self.ordered, batchSize: 100) { row in
                        seen += 1
                        if try row.decode(Int64.self, at: 0) == 150 { throw Stop() }
                    }
                    Issue.record("the body's error should come back")
                } catch is Stop {}
                // The transaction goes on: the cursor is gone and statements still run.
                let afterwards = try conn.fetchOne(sql: "SELECT count(*) FROM number")?.decode(Int64.self, at: 0)
                return (seen, try openCursors(conn, backend), afterwards)
            }
            #expect(seen == 150)
            #expect(cursors == 0)
            #expect(afterwards == 300)
        }
    }

    /// On PostgreSQL the next FETCH is on its way while the body works through a full batch.
    /// A body that stops there leaves that answer unread; the next lend of the same server
    /// connection numbers its cursors from 1 again, so the same query gets the same cursor
    /// name, and must read its own rows from the first, not the answer left behind.
    @Test(arguments: Backend.allCases)
    func aBatchSentAheadAndNotTakenIsNotReadByTheNextLend(_ backend: Backend) throws {
        struct Stop: Error {}
        try withTestDatabase(backend, connections: 1) { (db: Database) throws in
            try makeNumbers(db, count: 5)
            var before: [Int64] = []
            do {
                try db.write { conn in
                    try conn.forEachRowInBatches(Self.ordered, batchSize: 2) { row in
                        before.append(try row.decode(Int64.self, at: 0))
                        throw Stop()
                    }
                }
                Issue.record("the body's error should come back")
            } catch is Stop {}
            var after: [Int64] = []
            try db.write { conn in
                try conn.forEachRowInBatches(Self.ordered, batchSize: 2) { after.append(try $0.decode(Int64.self, at: 0)) }
            }
            #expect(before == [1])
            #expect(after == [1, 2, 3, 4, 5])
        }
    }

    /// A cursor read inside the body of another, on the same connection: each statement of
    /// the inner one reads the outer one's FETCH sent ahead first, and keeps it for it.
    @Test(arguments: Backend.allCases)
    func aCursorInsideAnotherReadsEveryRowOfBoth(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeNumbers(db, count: 10)
            let (outer, inner) = try db.write { conn -> ([Int64], [Int64]) in
                var outer: [Int64] = []
                var inner: [Int64] = []
                try conn.forEachRowInBatches(Self.ordered, batchSize: 3) { row in
                    let n = try row.decode(Int64.self, at: 0)
                    outer.append(n)
                    var sum: Int64 = 0
                    try conn.forEachRowInBatches(Self.ordered.where(SQLExpression.column("n").lessThanOrEquals(n)), batchSize: 2) {
                        sum += try $0.decode(Int64.self, at: 0)
                    }
                    inner.append(sum)
                }
                return (outer, inner)
            }
            #expect(outer == Array(1...10))
            // 1, 1+2, 1+2+3, …: the triangular numbers.
            #expect(inner == [1, 3, 6, 10, 15, 21, 28, 36, 45, 55])
        }
    }

    /// A statement that fails in the body while the next FETCH is on its way: its error
    /// comes back, and the transaction leaves nothing behind.
    @Test(arguments: Backend.allCases)
    func aFailingStatementInTheBodyRollsTheReadBack(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeNumbers(db, count: 50)
            var seen = 0
            do {
                try db.write { conn in
                    try conn.forEachRowInBatches(Self.ordered, batchSize: 10) { row in
                        let n = try row.decode(Int64.self, at: 0)
                        seen += 1
                        _ = try conn.execute(.insert(SQLInsert(into: "seen", values: ["n": .integer(n)])))
                        if n == 15 {
                            // A duplicate key: `number` has n = 1 already.
                            _ = try conn.execute(.insert(SQLInsert(into: "number", values: ["n": .integer(1), "label": .text("again")])))
                        }
                    }
                }
                Issue.record("the duplicate key should fail")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .unique)
            }
            #expect(seen == 15)
            let state = try db.read { conn in
                (try conn.fetchOne(sql: "SELECT count(*) FROM seen")?.decode(Int64.self, at: 0),
                 try conn.fetchOne(sql: "SELECT count(*) FROM number WHERE label = 'again'")?.decode(Int64.self, at: 0))
            }
            #expect(state.0 == 0)
            #expect(state.1 == 0)
        }
    }

    /// Cancelled while the closure works through a batch (on PostgreSQL the next FETCH is on
    /// its way): the read stops with `.cancelled`, its transaction leaves nothing behind, and
    /// the connection's next user reads its own rows from the first.
    @Test(arguments: Backend.allCases)
    func cancellingTheTaskStopsTheReadAndLeavesTheConnectionClean(_ backend: Backend) async throws {
        try await withTestDatabase(backend, connections: 1) { (db: Database) async throws in
            try makeNumbers(db, count: 300)
            let started = Flag()
            let cancelSent = Flag()
            let task = Task {
                try await db.write { conn in
                    try conn.forEachRowInBatches(Self.ordered, batchSize: 100) { row in
                        let n = try row.decode(Int64.self, at: 0)
                        _ = try conn.execute(.insert(SQLInsert(into: "seen", values: ["n": .integer(n)])))
                        if n == 150 {
                            started.set()
                            // Busy in Swift code when the cancel arrives: the closure waits for
                            // it (bounded), so a loaded machine cannot finish the rows first.
                            let deadline = Date().addingTimeInterval(30)
                            while !cancelSent.isSet && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
                        }
                    }
                }
            }
            // Generous: on a 2-core machine the task may wait for a cooperative thread while the
            // parallel suite's synchronous tests hold both.
            let deadline = Date().addingTimeInterval(180)
            while !started.isSet && Date() < deadline { try await Task.sleep(nanoseconds: 5_000_000) }
            #expect(started.isSet)
            task.cancel()
            cancelSent.set()
            let result = await task.result
            if case .failure(let error) = result, case .cancelled = error as? DatabaseError {} else {
                Issue.record("expected .cancelled, got \(result)")
            }
            let (seen, numbers) = try await db.write { conn -> (Int64?, [Int64]) in
                var numbers: [Int64] = []
                try conn.forEachRowInBatches(Self.ordered, batchSize: 100) { numbers.append(try $0.decode(Int64.self, at: 0)) }
                return (try conn.fetchOne(sql: "SELECT count(*) FROM seen")?.decode(Int64.self, at: 0), numbers)
            }
            #expect(seen == 0)
            #expect(numbers == Array(1...300))
        }
    }

    @Test func cursorStatementsRenderOnPostgreSQLOnly() throws {
        let select = SQLSelect(from: "t").columns(.column("a")).where(SQLExpression.column("a").greaterThan(3))
        let declare = try SQLDialect.postgres.render(.declareCursor("c1", select))
        #expect(declare.sql == #"DECLARE "c1" NO SCROLL CURSOR FOR SELECT "a" FROM "t" WHERE "a" > $1"#)
        #expect(declare.bindings == [.integer(3)])
        #expect(try SQLDialect.postgres.render(.fetchCursor("c1", count: 250)).sql == #"FETCH FORWARD 250 FROM "c1""#)
        #expect(try SQLDialect.postgres.render(.closeCursor("c1")).sql == #"CLOSE "c1""#)
        for statement in [SQLStatement.declareCursor("c1", select), .fetchCursor("c1", count: 1), .closeCursor("c1")] {
            #expect(throws: DatabaseError.self) { _ = try SQLDialect.sqlite.render(statement) }
        }
        #expect(throws: DatabaseError.self) { _ = try SQLDialect.postgres.render(.fetchCursor("c1", count: 0)) }
    }
}
