import Foundation
import Testing
import Unity

// The code of the "Full-text search" article, compiled and run on both backends.

@Suite("Documentation: full-text search")
struct FullTextSearchArticleExamples {
    @Test(arguments: Backend.allCases)
    func searchingArticles(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("note", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("title", .text),
                    SQLColumnDefinition("body", .text),
                ])))
                for (title, body) in [("Swift concurrency", "Actors keep data races out."),
                                      ("Databases", "A database keeps data in tables.")] {
                    _ = try conn.execute(.insert(SQLInsert(into: "note", values: ["title": .text(title), "body": .text(body)])))
                }
            }

            // One index declaration: an FTS5 table and its triggers on SQLite, a GIN index on PostgreSQL.
            let search = FullTextIndex(table: "note", columns: ["title", "body"])
            _ = try Migrator(migrations: [search.migration("0003_note_search")]).migrate(db)

            // Words (all of them), prefixes and phrases, in one syntax for both engines.
            let query = "data* \"data races\""
            let found = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "note")
                    .columns(.column("title"), .expression(search.snippet(query), alias: "excerpt"))
                    .where(search.matches(query))
                    .orderBy(search.relevance(query).desc)))
            }
            #expect(try found.map { try $0.decode(String.self, at: 0) } == ["Swift concurrency"])
            #expect(try found.first?.decode(String.self, at: 1).contains("[data") == true)
        }
    }
}
