import Foundation
import Testing
import Unity

/// A thread that already holds a connection of a database gets the same one for nested calls:
/// nested writes are savepoints, nested reads see the enclosing transaction's changes, and no
/// nested call waits for a second connection (SQLite has only one writer).
@Suite("Core: nested calls share the connection")
struct CoreNestingTests {
    func makeTable(_ db: Database) throws {
        try db.write { try $0.execute(.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("v", .int64)]))) }
    }

    func insert(_ db: Database, _ v: Int) throws {
        try db.write { try $0.execute(.insert(SQLInsert(into: "t", values: ["v": .integer(Int64(v))]))) }
    }

    func values(_ db: Database) throws -> [Int] {
        try db.fetchAll(sql: "SELECT v FROM t ORDER BY v").map { try $0.decode(Int.self, at: 0) }
    }

    struct Boom: Error {}

    /// One writer, a short checkout timeout: a nested write that asked the pool for a second
    /// writer would fail with `.poolTimeout` instead of passing.
    static let strict = DatabaseConfiguration(checkoutTimeout: 1)

    @Test(arguments: Backend.allCases)
    func aWriteInsideAWriteIsASavepointOfIt(_ backend: Backend) throws {
        // Two connections on PostgreSQL for the other thread's look; the outer rollback below
        // shows that the nested writes did not take the second one.
        try withTestDatabase(backend, readers: 1, connections: 2, configuration: Self.strict) { (db: Database) throws in
            try makeTable(db)
            try db.write { _ in
                try insert(db, 1)
                #expect(throws: Boom.self) {
                    try db.write { _ in
                        try insert(db, 2)
                        throw Boom()
                    }
                }
                try insert(db, 3)
                // A nested read sees the enclosing transaction's own, uncommitted changes.
                #expect(try values(db) == [1, 3])
                #expect(try onAnotherThread { try values(db) } == [])
            }
            #expect(try values(db) == [1, 3])
            #expect(db.openConnectionCount == db.idleConnectionCount)

            // The outer rollback undoes what the nested writes committed to it.
            #expect(throws: Boom.self) {
                try db.transaction { _ in
                    try insert(db, 4)
                    throw Boom()
                }
            }
            #expect(try values(db) == [1, 3])
        }
    }

    @Test(arguments: Backend.allCases)
    func aWriteInsideAReadGetsAWriterOfItsOwn(_ backend: Backend) throws {
        try withTestDatabase(backend, readers: 2, connections: 2, configuration: Self.strict) { (db: Database) throws in
            try makeTable(db)
            try db.read { conn in
                #expect(try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM t") == 0)
                try insert(db, 1)
                // A write inside a read is not refused as read-only: it commits by itself.
                #expect(try onAnotherThread { try values(db) } == [1])
            }
            #expect(try values(db) == [1])
        }
    }

    @Test(arguments: Backend.allCases)
    func aConnectionStreamingACursorIsNotShared(_ backend: Backend) throws {
        try withTestDatabase(backend, readers: 2, connections: 2, configuration: Self.strict) { (db: Database) throws in
            try makeTable(db)
            for v in 1...3 { try insert(db, v) }
            var seen: [Int] = []
            try db.read { conn in
                let cursor = try conn.cursor(sql: "SELECT v FROM t ORDER BY v")
                while let row = try cursor.next() {
                    // PostgreSQL: would interleave with the open cursor, so it runs on another
                    // connection; SQLite runs it beside the cursor on the same one.
                    seen.append(try row.decode(Int.self, at: 0) * 10 + (try values(db)).count)
                }
            }
            #expect(seen == [13, 23, 33])
        }
    }

    @Test(arguments: Backend.allCases)
    func syncCallsInsideAnAsyncWriteShareItsConnection(_ backend: Backend) async throws {
        try await withTestDatabase(backend, readers: 1, connections: 1, configuration: Self.strict) { (db: Database) async throws in
            try makeTable(db)
            await #expect(throws: Boom.self) {
                try await db.write { _ in
                    try insert(db, 1)
                    #expect(try values(db) == [1])
                    throw Boom()
                }
            }
            #expect(try values(db) == [])
            let n = try await db.write { _ in
                try insert(db, 2)
                return try values(db).count
            }
            #expect(n == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func twoDatabasesOnOneThreadKeepTheirOwnConnections(_ backend: Backend) throws {
        try withTestDatabase(backend) { (first: Database) throws in
            try withTestDatabase(backend) { (second: Database) throws in
                try makeTable(first)
                try makeTable(second)
                try first.write { _ in
                    try insert(second, 7)
                    try insert(first, 1)
                }
                #expect(try values(first) == [1])
                #expect(try values(second) == [7])
            }
        }
    }
}
