import Foundation
import Testing
import Unity

/// Full-text search through one AST node and one query syntax finds the same documents on
/// both backends (FTS5 with triggers on SQLite, tsvector with a GIN index on PostgreSQL).
@Suite("Core: full-text search on both backends")
struct CoreFullTextSearchTests {
    /// id → (title, body).
    static let corpus: [(Int, String?, String)] = [
        (1, "Swift concurrency", "Data races are caught by the compiler. Actors isolate state."),
        (2, "Database basics", "A database stores data in tables; an index makes lookups fast."),
        (3, "E-mail etiquette", "Don't send e-mail in anger. Reply within a day."),
        (4, "Exact words matter", "Say the exact words, not nearly exact ones."),
        (5, "Café culture", "NEAR the café, data scientists drink coffee"),
        (6, nil, "Quotes \"inside\" text and a lone * star"),
        (7, "Coffee", "coffee coffee coffee"),
    ]

    static let index = FullTextIndex(table: "article", columns: ["title", "body"])

    static func makeTable(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("article", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("title", .text),
                SQLColumnDefinition("body", .text),
                SQLColumnDefinition("views", .int64),
            ])))
            for (id, title, body) in corpus {
                try conn.execute(.insert(SQLInsert(into: "article", values: [
                    "id": .integer(Int64(id)), "title": title.map { .text($0) } ?? .null, "body": .text(body), "views": .integer(0),
                ])))
            }
        }
        // Created after the rows: the migration indexes what is already there.
        _ = try Migrator(migrations: [index.migration("0001_article_search")]).migrate(db)
    }

    func ids(_ db: Database, _ query: String) throws -> [Int] {
        let select = SQLSelect(from: "article").columns(.column("id")).where(Self.index.matches(query))
            .orderBy(SQLExpression.column("id").asc)
        return try db.read { try $0.fetchAll(.select(select)).map { try $0.decode(Int.self, at: 0) } }
    }

    @Test(arguments: Backend.allCases)
    func theSameDocumentsMatch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            let expected: [(String, [Int])] = [
                ("data", [1, 2, 5]),
                ("DATA", [1, 2, 5]),
                ("datab*", [2]),
                ("data*", [1, 2, 5]),
                ("swift actors", [1]),
                ("swift database", []),
                ("\"exact words\"", [4]),
                ("\"words exact\"", []),
                ("\"exact wor\"*", [4]),
                ("e-mail", [3]),
                ("don't", [3]),
                ("NEAR", [5]),
                ("NEAR café", [5]),
                ("\"inside\"", [6]),
                ("*data", [1, 2, 5]),
                ("data**", [1, 2, 5]),
                ("col:data", []),
                ("(data OR swift)", []),
                ("data AND", []),
                ("NOT data", []),
                ("\"unbalanced", []),
                ("a\"b", []),
                ("*", []),
                ("-", []),
                ("\"\"", []),
                ("", []),
                ("   ", []),
                ("data^2", []),
                ("coffee", [5, 7]),
            ]
            for (query, want) in expected {
                #expect(try ids(db, query) == want, "query \(query.debugDescription)")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func relevanceAndSnippet(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            let select = SQLSelect(from: "article")
                .columns(.column("id"), .expression(Self.index.snippet("anger"), alias: "excerpt"))
                .where(Self.index.matches("coffee") || Self.index.matches("anger"))
                .orderBy(Self.index.relevance("coffee").desc, SQLExpression.column("id").asc)
            let rows = try db.read { try $0.fetchAll(.select(select)) }
            // Three times in a short text ranks above once in a longer one, on both engines.
            #expect(try rows.map { try $0.decode(Int.self, at: 0) }.prefix(2) == [7, 5])
            let excerpt = try rows.first { try $0.decode(Int.self, at: 0) == 3 }?.decode(String?.self, at: 1)
            #expect(excerpt?.contains("[anger]") == true, "excerpt: \(excerpt ?? "nil")")
            let relevance = SQLSelect(from: "article").columns(.expression(Self.index.relevance("coffee")))
                .where(SQLExpression.column("id").equals(7))
            let value = try db.read { try $0.fetchOne(.select(relevance))?.decode(Double.self, at: 0) }
            #expect((value ?? 0) > 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func writesAreSearchableAtOnce(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            try db.write { conn in
                _ = try conn.execute(.insert(SQLInsert(into: "article", values: [
                    "id": .integer(10), "title": .text("Fresh"), "body": .text("Brand new kiwi text"), "views": .integer(0),
                ])))
            }
            #expect(try ids(db, "kiwi") == [10])
            try db.write { conn in
                _ = try conn.execute(.update(SQLUpdate("article", set: [SQLAssignment("body", value: "mango instead")],
                                                       where: SQLExpression.column("id").equals(10))))
            }
            #expect(try ids(db, "kiwi") == [])
            #expect(try ids(db, "mango") == [10])
            // An update of another column leaves the index as it was.
            try db.write { conn in
                _ = try conn.execute(.update(SQLUpdate("article", set: [SQLAssignment("views", value: 3)], where: SQLExpression.column("id").equals(10))))
            }
            #expect(try ids(db, "mango fresh") == [10])
            try db.write { conn in
                _ = try conn.execute(.delete(SQLDelete(from: "article", where: SQLExpression.column("id").equals(10))))
            }
            #expect(try ids(db, "mango") == [])
            // A failed write leaves the index as the table is.
            #expect(throws: DatabaseError.self) {
                try db.write { conn in
                    _ = try conn.execute(.insert(SQLInsert(into: "article", values: [
                        "id": .integer(11), "title": .text("papaya"), "body": .text("papaya"), "views": .integer(0),
                    ])))
                    _ = try conn.execute(.insert(SQLInsert(into: "article", values: [
                        "id": .integer(11), "title": .text("dup"), "body": .text("dup"), "views": .integer(0),
                    ])))
                }
            }
            #expect(try ids(db, "papaya") == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func englishStemsOnBoth(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let index = FullTextIndex(table: "post", columns: ["body"], language: .english)
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("post", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("body", .text),
                ])))
                for (id, body) in [(1, "She runs daily"), (2, "The runner rested"), (3, "Connections were connected")] {
                    _ = try conn.execute(.insert(SQLInsert(into: "post", values: ["id": .integer(Int64(id)), "body": .text(body)])))
                }
            }
            _ = try Migrator(migrations: [index.migration("0001_post_search")]).migrate(db)
            func found(_ q: String) throws -> [Int] {
                let s = SQLSelect(from: "post").columns(.column("id")).where(index.matches(q)).orderBy(SQLExpression.column("id").asc)
                return try db.read { try $0.fetchAll(.select(s)).map { try $0.decode(Int.self, at: 0) } }
            }
            #expect(try found("running") == [1])
            #expect(try found("connect") == [3])
            #expect(try found("rest*") == [2])

            // Dropping the index removes what the migration made; writes go on without it.
            try db.write { conn in
                for statement in index.dropStatements(for: conn.dialect) { _ = try conn.execute(statement) }
                _ = try conn.execute(.insert(SQLInsert(into: "post", values: ["id": .integer(4), "body": .text("after")])))
            }
            let left = try db.read { conn in
                backend == .sqlite
                    ? try conn.fetchValue(Int.self, sql: "SELECT count(*) FROM sqlite_master WHERE name LIKE 'post_fts%'")
                    : try conn.fetchValue(Int.self, sql: "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'post_fts'")
            }
            #expect(left == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func badNamesAndMarkersAreRefused(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            // The same shape rendered once with good markers does not vouch for bad ones later.
            _ = try db.read { try $0.fetchAll(.select(SQLSelect(from: "article").columns(.expression(Self.index.snippet("data", start: "<"))))) }
            let bad = FullTextIndex(table: "article", columns: ["body; DROP TABLE article"])
            for expression in [bad.matches("data"), Self.index.snippet("data", start: "\"")] {
                do {
                    _ = try db.read { try $0.fetchAll(.select(SQLSelect(from: "article").columns(.expression(expression)))) }
                    Issue.record("accepted \(expression)")
                } catch let error as DatabaseError {
                    guard case .misuse = error else { Issue.record("unexpected \(error)"); continue }
                }
            }
            #expect(try ids(db, "data") == [1, 2, 5])
        }
    }

    @Test func queryParsing() {
        let q = FullTextQuery("swift \"data race\"* e-mail NEAR * -")
        #expect(q.terms.map(\.text) == ["swift", "data race", "e-mail", "NEAR"])
        #expect(q.terms.map(\.isPrefix) == [false, true, false, false])
        #expect(q.fts5Query == "\"swift\" \"data race\"* \"e-mail\" \"NEAR\"")
        #expect(FullTextQuery("say \"a\"\"b\"").fts5Query == "\"say\" \"a\" \"b\"")
        #expect(FullTextQuery.tsqueryPrefix(FullTextQuery("e-ma*").terms[0]) == "'e' <-> 'ma':*")
    }
}
