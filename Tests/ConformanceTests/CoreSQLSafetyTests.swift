import Foundation
import Testing
import Unity

/// Values are always bound and identifiers always quoted: nothing a user supplies is executed.
@Suite("Core: SQL safety")
struct CoreSQLSafetyTests {
    @Test(arguments: Backend.allCases)
    func placeholdersInsideStringsAndCommentsAreLeftAlone(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let row = try #require(try db.read { conn in
                try conn.fetchOne(sql: """
                    SELECT '?' AS q, 'it''s ?' AS q2, ? AS v /* a ? in a comment */, ? AS w -- and ? here
                    """, ["first", 2])
            })
            #expect(try row.decode(String.self, column: "q") == "?")
            #expect(try row.decode(String.self, column: "q2") == "it's ?")
            #expect(try row.decode(String.self, column: "v") == "first")
            #expect(try row.decode(Int.self, column: "w") == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func aPlaceholderCountMismatchIsATypedError(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            do {
                _ = try db.read { try $0.fetchAll(sql: "SELECT ? AS a, ? AS b", [1]) }
                Issue.record("no error")
            } catch let e as DatabaseError {
                guard case .misuse = e else {
                    Issue.record("expected .misuse, got \(e)")
                    return
                }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func hostileIdentifiersAndValuesAreStoredVerbatim(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let table = #"we"ird; DROP TABLE victim; --"#
            let column = #"co"l ' -- /* ?"#
            let hostile = ["'); DROP TABLE victim; --", "\"; DELETE FROM victim; --", "? ?", "$1", "Robert'); --", "/* */ ; ;"]
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("victim", columns: [SQLColumnDefinition("v", .int64)])))
                try conn.execute(.insert(SQLInsert(into: "victim", values: ["v": 1])))
                try conn.execute(.createTable(SQLCreateTable(table, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition(column, .text),
                ])))
                for (i, v) in hostile.enumerated() {
                    try conn.execute(.insert(SQLInsert(into: table, values: ["id": .integer(Int64(i)), column: .text(v)])))
                }
            }
            let back = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: table).columns(.column(column)).orderBy(SQLExpression.column("id").asc)))
                    .map { try $0.decode(String.self, at: 0) }
            }
            #expect(back == hostile)
            let found = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: table).where(SQLExpression.column(column).equals(hostile[0])))).count
            }
            #expect(found == 1)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM victim") } == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func likeIsCaseSensitiveAndEscapesWildcards(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("names", columns: [SQLColumnDefinition("n", .text)])))
                for n in ["Apple", "apple", "100%", "1000", "a_b", "axb"] {
                    try conn.execute(.insert(SQLInsert(into: "names", values: ["n": .text(n)])))
                }
            }
            func matches(_ e: SQLExpression) throws -> [String] {
                try db.read { conn in
                    try conn.fetchAll(.select(SQLSelect(from: "names").where(e).orderBy(SQLExpression.column("n").asc)))
                        .map { try $0.decode(String.self, at: 0) }
                }
            }
            #expect(try matches(SQLExpression.column("n").beginsWith("App")) == ["Apple"])
            #expect(try matches(SQLExpression.column("n").beginsWith("app", caseInsensitive: true)) == ["Apple", "apple"])
            #expect(try matches(SQLExpression.column("n").beginsWith("100%")) == ["100%"])
            #expect(try matches(SQLExpression.column("n").contains("_")) == ["a_b"])
        }
    }
}

/// Streaming large results.
@Suite("Core: cursors and batches")
struct CoreCursorTests {
    @Test(arguments: Backend.allCases)
    func cursorStreamsRowsAndClosesEarly(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("big", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("s", .text),
                ])))
                let inserts = (0..<10_000).map { i in
                    SQLStatement.insert(SQLInsert(into: "big", values: ["id": .integer(Int64(i)), "s": .text("row \(i)")]))
                }
                #expect(try conn.executeBatch(inserts) == 10_000)
            }
            try db.read { conn in
                let cursor = try conn.cursor(.select(SQLSelect(from: "big").orderBy(SQLExpression.column("id").asc)))
                var count = 0
                var sum = 0
                while let row = try cursor.next() {
                    count += 1
                    sum += try row.decode(Int.self, column: "id")
                }
                #expect(count == 10_000)
                #expect(sum == 49_995_000)
                // Early close, then the connection keeps working.
                let early = try conn.cursor(sql: "SELECT id FROM big ORDER BY id")
                #expect(try early.next()?.decode(Int.self, at: 0) == 0)
                early.close()
                #expect(try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM big") == 10_000)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailingBatchInAWriteRollsBackEverything(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("b", columns: [SQLColumnDefinition("id", .int64, primaryKey: .plain)])))
            }
            var statements = (0..<500).map { SQLStatement.insert(SQLInsert(into: "b", values: ["id": .integer(Int64($0))])) }
            statements.append(.insert(SQLInsert(into: "b", values: ["id": 3])))  // duplicate key
            #expect(throws: DatabaseError.self) {
                try db.write { try $0.executeBatch(statements) }
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM b") } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailingBatchOutsideATransactionKeepsNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(.createTable(SQLCreateTable("b", columns: [SQLColumnDefinition("id", .int64, primaryKey: .plain)]))) }
            var statements = (0..<200).map { SQLStatement.insert(SQLInsert(into: "b", values: ["id": .integer(Int64($0))])) }
            statements.append(.insert(SQLInsert(into: "b", values: ["id": 7])))
            #expect(throws: DatabaseError.self) {
                try db.withConnection { try $0.executeBatch(statements) }
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM b") } == 0)
            // And a good batch outside a transaction commits.
            try db.withConnection { try $0.executeBatch(Array(statements.dropLast())) }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM b") } == 200)
        }
    }

    @Test(arguments: Backend.allCases)
    func returningAndUpsert(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("u", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("k", .text, unique: true),
                    SQLColumnDefinition("n", .int64),
                ])))
            }
            let ids = try db.write { conn in
                try ["a", "b"].map { k in
                    try #require(try conn.fetchOne(.insert(SQLInsert(into: "u", values: ["k": .text(k), "n": 1]).returning(.column("id")))))
                        .decode(Int.self, at: 0)
                }
            }
            #expect(ids == [1, 2])
            let upserted = try db.write { conn in
                try conn.fetchOne(.insert(SQLInsert(into: "u", values: ["k": "a", "n": 5])
                    .onConflict(["k"], doUpdate: [SQLAssignment("n", .excluded("n"))])
                    .returning(.column("id"), .column("n"))))
            }
            #expect(try upserted?.decode(Int.self, column: "id") == 1)
            #expect(try upserted?.decode(Int.self, column: "n") == 5)
            let ignored = try db.write { conn in
                try conn.execute(.insert(SQLInsert(into: "u", values: ["k": "b", "n": 9]).onConflictDoNothing(["k"])))
            }
            #expect(ignored == 0)
            let deleted = try db.write { conn in
                try conn.fetchAll(.delete(SQLDelete(from: "u", where: SQLExpression.column("n").equals(1)).returning(.column("k"))))
                    .map { try $0.decode(String.self, at: 0) }
            }
            #expect(deleted == ["b"])
        }
    }

    @Test(arguments: Backend.allCases)
    func joinsGroupingAndSubqueries(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("author", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("name", .text)])))
                try conn.execute(.createTable(SQLCreateTable("book", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("author_id", .int64, references: SQLForeignKeyReference("author", columns: ["id"])),
                    SQLColumnDefinition("pages", .int64)])))
                try conn.executeBatch([
                    .insert(SQLInsert(into: "author", columns: ["id", "name"], values: [[.value(1), .value("Ann")], [.value(2), .value("Bob")], [.value(3), .value("Cy")]])),
                    .insert(SQLInsert(into: "book", columns: ["id", "author_id", "pages"], values: [
                        [.value(1), .value(1), .value(100)], [.value(2), .value(1), .value(300)], [.value(3), .value(2), .value(50)]])),
                ])
            }
            let perAuthor = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "author", as: "a")
                    .columns(.expression(.column("a", "name"), alias: "name"), .expression(.count(.column("b", "id")), alias: "books"),
                             .expression(.coalesce(.sum(.column("b", "pages")), .value(0)), alias: "pages"))
                    .join(.left, "book", as: "b", on: SQLExpression.column("b", "author_id").equals(.column("a", "id")))
                    .groupBy(.column("a", "name"))
                    .orderBy(SQLExpression.column("a", "name").asc)))
                    .map { "\(try $0.decode(String.self, column: "name")):\(try $0.decode(Int.self, column: "books")):\(try $0.decode(Int.self, column: "pages"))" }
            }
            #expect(perAuthor == ["Ann:2:400", "Bob:1:50", "Cy:0:0"])
            let withBooks = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "author").columns(.column("name"))
                    .where(SQLExpression.column("id").isIn(SQLSelect(from: "book").columns(.column("author_id"))))
                    .orderBy(SQLExpression.column("name").desc)))
                    .map { try $0.decode(String.self, at: 0) }
            }
            #expect(withBooks == ["Bob", "Ann"])
            let none = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "author").where(SQLExpression.column("id").isIn([Int]())))).count
            }
            #expect(none == 0)
        }
    }
}
