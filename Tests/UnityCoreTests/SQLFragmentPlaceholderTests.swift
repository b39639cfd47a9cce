import Testing
@testable import Unity

@Suite struct SQLFragmentPlaceholderTests {
    func raw(_ sql: String, _ bindings: [DatabaseValue], _ dialect: SQLDialect) throws -> RenderedSQL {
        try rendered(.raw(SQLFragment(sql, bindings)), dialect)
    }

    @Test func questionMarksBecomeNumberedOnPostgres() throws {
        let r = try raw("SELECT * FROM things WHERE tid in (?, ?)", ["tid1", "tid2"], .postgres)
        #expect(r.sql == "SELECT * FROM things WHERE tid in ($1, $2)")
        #expect(r.bindings == [.text("tid1"), .text("tid2")])
        #expect(try raw("SELECT * FROM things WHERE tid in (?, ?)", ["a", "b"], .sqlite).sql == "SELECT * FROM things WHERE tid in (?, ?)")
    }

    @Test func numberingContinuesAcrossTheWholeStatement() throws {
        let q = SQLSelect(from: "hats").where(.column("color").equals("red")).where(.raw("brim_size > ?", [10]))
            .where(.column("id").greaterThan(0))
        let r = try rendered(.select(q), .postgres)
        #expect(r.sql == #"SELECT * FROM "hats" WHERE "color" = $1 AND (brim_size > $2) AND "id" > $3"#)
        #expect(r.bindings == [.text("red"), .integer(10), .integer(0)])
    }

    @Test func questionMarksInStringsIdentifiersAndCommentsAreLeftAlone() throws {
        let sql = #"SELECT 'what?', 'it''s ?', "col?" FROM t -- why?"# + "\n" + #"WHERE a = ? /* really? */ AND b = ?"#
        let r = try raw(sql, [1, 2], .postgres)
        #expect(r.sql == #"SELECT 'what?', 'it''s ?', "col?" FROM t -- why?"# + "\n" + #"WHERE a = $1 /* really? */ AND b = $2"#)
    }

    @Test func backticksAndBracketsOnSQLiteOnly() throws {
        let sql = "SELECT `a?`, [b?] FROM t WHERE c = ?"
        #expect(try raw(sql, [1], .sqlite).sql == sql)
        // PostgreSQL has no such quotes: every `?` there is a placeholder.
        expectMisuse("has 3 '?' placeholder(s) but 1 value(s)") { _ = try SQLDialect.postgres.render(.raw(SQLFragment(sql, [1]))) }
    }

    @Test func dollarQuotedStringsAndNestedCommentsOnPostgres() throws {
        let sql = "SELECT $$is it?$$, $tag$ what? $tag$ /* a /* nested? */ still? */ FROM t WHERE x = ?"
        #expect(try raw(sql, [1], .postgres).sql == "SELECT $$is it?$$, $tag$ what? $tag$ /* a /* nested? */ still? */ FROM t WHERE x = $1")
    }

    @Test func countMismatchIsMisuse() {
        expectMisuse("has 1 '?' placeholder(s) but 2 value(s)") {
            _ = try SQLDialect.sqlite.render(.select(SQLSelect(from: "t").where(.raw("a > ?", [1, 2]))))
        }
        expectMisuse("has 2 '?' placeholder(s) but 0 value(s)") { _ = try SQLDialect.postgres.render(.raw(SQLFragment("a = ? AND b = ?"))) }
    }

    @Test func hostileIdentifiersAreQuotedNeverExecuted() throws {
        let hostile = #"a"; DROP TABLE x; --"#
        let q = SQLSelect(from: hostile).columns(.column(hostile)).where(.column(hostile).equals(1))
        let expected = #"SELECT "a""; DROP TABLE x; --" FROM "a""; DROP TABLE x; --" WHERE "a""; DROP TABLE x; --" = ?"#
        #expect(try sqlText(.select(q), .sqlite) == expected)
        #expect(SQLDialect.postgres.quoteIdentifier(#"say "hi""#) == #""say ""hi""""#)
        let ddl = SQLCreateTable(hostile, columns: [SQLColumnDefinition(hostile, .text)])
        #expect(try sqlText(.createTable(ddl), .postgres) == #"CREATE TABLE "a""; DROP TABLE x; --" ("a""; DROP TABLE x; --" TEXT COLLATE "C")"#)
    }

    @Test func emptyOrNulIdentifiersAreMisuse() {
        expectMisuse("is empty") { _ = try SQLDialect.sqlite.render(.select(SQLSelect(from: ""))) }
        expectMisuse("NUL") { _ = try SQLDialect.postgres.render(.select(SQLSelect(from: "a\u{0}b"))) }
    }
}
