import Testing
@testable import Unity

/// How the full-text nodes are written for each engine.
@Suite struct FullTextRenderingTests {
    /// On SQLite a relevance used to order the matches ranks them all in one search (a
    /// subquery kept whole, looked up by rowid), not in one search per matching row.
    @Test func sqliteRanksEveryMatchInOneSearch() throws {
        let index = FullTextIndex(table: "article", columns: ["title", "body"])
        let select = SQLSelect(from: "article").columns(.column("id"))
            .where(index.matches("coffee"))
            .orderBy(index.relevance("coffee").desc)
        let sql = try rendered(.select(select), .sqlite)
        #expect(sql.sql == """
            SELECT "id" FROM "article" WHERE "article"."id" IN (SELECT rowid FROM "article_fts" WHERE "article_fts" MATCH ?) \
            ORDER BY (SELECT "unity_fts_rank"."r" FROM (SELECT rowid AS "rid", -bm25("article_fts") AS "r" FROM "article_fts" \
            WHERE "article_fts" MATCH ? LIMIT -1) AS "unity_fts_rank" WHERE "unity_fts_rank"."rid" = "article"."id") DESC
            """)
        #expect(sql.bindings == [.text("\"coffee\""), .text("\"coffee\"")])
    }
}
