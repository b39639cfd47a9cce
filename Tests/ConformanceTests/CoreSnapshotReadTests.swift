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
}
