import Foundation
import Testing
@testable import Unity

@Suite struct SQLExpressionRenderingTests {
    let count = SQLExpression.column("count")
    let date = SQLExpression.column("date")
    let id = SQLExpression.column("id")

    /// `\T.count == 10 || \T.date > Date() && !(\T.id === [1,2,3])`: AND binds tighter.
    @Test func andOrPrecedenceOfTheSwormExample() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let e = count.equals(10) || (date.greaterThan(now) && !id.isIn([1, 2, 3]))
        let lite = try whereSQL(e, .sqlite)
        #expect(lite.sql == #"SELECT * FROM "t" WHERE "count" = ? OR ("date" > ? AND (NOT ("id" IN (?, ?, ?))))"#)
        #expect(lite.bindings == [.integer(10), .date(now), .integer(1), .integer(2), .integer(3)])
        let pg = try whereSQL(e, .postgres)
        #expect(pg.sql == #"SELECT * FROM "t" WHERE "count" = $1 OR ("date" > $2 AND (NOT ("id" IN ($3, $4, $5))))"#)
    }

    @Test func orInsideAndIsParenthesizedAndChainsFlatten() throws {
        let e = (count.equals(1) || count.equals(2)) && id.greaterThan(0) && id.lessThan(9)
        #expect(try whereSQL(e, .sqlite).sql == #"SELECT * FROM "t" WHERE ("count" = ? OR "count" = ?) AND "id" > ? AND "id" < ?"#)
        let flat = count.equals(1) || count.equals(2) || count.equals(3)
        #expect(try whereSQL(flat, .sqlite).sql == #"SELECT * FROM "t" WHERE "count" = ? OR "count" = ? OR "count" = ?"#)
    }

    @Test func emptyConjunctionAndDisjunction() throws {
        #expect(try whereSQL(.and([]), .postgres).sql == #"SELECT * FROM "t" WHERE 1 = 1"#)
        #expect(try whereSQL(.or([]), .postgres).sql == #"SELECT * FROM "t" WHERE 1 = 0"#)
    }

    @Test func arithmeticAndConcatParenthesizeCompoundOperands() throws {
        let e = ((SQLExpression.column("a") + .value(1)) * .column("b")).greaterThan(.unary(.negate, .column("c")))
        #expect(try whereSQL(e, .sqlite).sql == #"SELECT * FROM "t" WHERE (("a" + ?) * "b") > (-"c")"#)
        let concat = SQLExpression.binary(.column("first"), .concat, .value(" ")).equals("x")
        #expect(try whereSQL(concat, .postgres).sql == #"SELECT * FROM "t" WHERE ("first" || $1) = $2"#)
    }

    @Test func emptyInListIsFalseAndEmptyNotInIsTrue() throws {
        let none: [Int] = []
        let inEmpty = try whereSQL(id.isIn(none), .postgres)
        #expect(inEmpty.sql == #"SELECT * FROM "t" WHERE 1 = 0"#)
        #expect(inEmpty.bindings.isEmpty)
        #expect(try whereSQL(id.isNotIn(none), .sqlite).sql == #"SELECT * FROM "t" WHERE 1 = 1"#)
        #expect(try whereSQL(!id.isIn(none), .sqlite).sql == #"SELECT * FROM "t" WHERE NOT (1 = 0)"#)
    }

    @Test func nullChecksAndDistinctFrom() throws {
        #expect(try whereSQL(id.isNull, .sqlite).sql == #"SELECT * FROM "t" WHERE "id" IS NULL"#)
        #expect(try whereSQL(id.isNotNull, .postgres).sql == #"SELECT * FROM "t" WHERE "id" IS NOT NULL"#)
        #expect(try whereSQL(id.isDistinct(from: .value(1)), .postgres).sql == #"SELECT * FROM "t" WHERE "id" IS DISTINCT FROM $1"#)
        #expect(try whereSQL(id.isDistinct(from: .value(1)), .sqlite).sql == #"SELECT * FROM "t" WHERE "id" IS NOT ?"#)
        #expect(try whereSQL(id.isNotDistinct(from: .null), .sqlite).sql == #"SELECT * FROM "t" WHERE "id" IS NULL"#)
        #expect(try whereSQL(id.isNotDistinct(from: .null), .postgres).sql == #"SELECT * FROM "t" WHERE "id" IS NOT DISTINCT FROM NULL"#)
    }

    @Test func betweenAndNotBetween() throws {
        let r = try whereSQL(id.between(.value(1), and: .value(5)), .postgres)
        #expect(r.sql == #"SELECT * FROM "t" WHERE "id" BETWEEN $1 AND $2"#)
        #expect(r.bindings == [.integer(1), .integer(5)])
        #expect(try whereSQL(.between(id, low: .value(1), high: .value(5), negated: true), .sqlite).sql == #"SELECT * FROM "t" WHERE "id" NOT BETWEEN ? AND ?"#)
    }

    @Test func booleanLiteralsPerDialect() throws {
        #expect(try whereSQL(.column("active").equals(.true), .sqlite).sql == #"SELECT * FROM "t" WHERE "active" = 1"#)
        #expect(try whereSQL(.column("active").equals(.false), .postgres).sql == #"SELECT * FROM "t" WHERE "active" = FALSE"#)
        // Bound booleans stay bound.
        #expect(try whereSQL(.column("active").equals(true), .sqlite).bindings == [.bool(true)])
    }

    @Test func functionsAggregatesCaseAndCast() throws {
        let e = SQLExpression.case([SQLCaseBranch(when: id.greaterThan(10), then: .value("big"))], else: .value("small"))
        let q = SQLSelect(from: "t").columns(
            .expression(.lower(.column("name"))), .expression(.upper(.column("name"))),
            .expression(.coalesce(.column("nick"), .column("name"), .value("?"))),
            .expression(.length(.column("name"))), .expression(.avg(.column("n"))), .expression(.min(.column("n"))),
            .expression(.max(.column("n"))), .expression(.function("json_extract", .column("doc"), .value("$.a"))),
            e.as("size"), .expression(.cast(.column("n"), .int64)))
        let lite = try rendered(.select(q), .sqlite)
        #expect(lite.sql == #"SELECT lower("name"), upper("name"), coalesce("nick", "name", ?), length("name"), unity_avg("n"), MIN("n"), MAX("n"), json_extract("doc", ?), CASE WHEN "id" > ? THEN ? ELSE ? END AS "size", CAST("n" AS INTEGER) FROM "t""#)
        #expect(lite.bindings == [.text("?"), .text("$.a"), .integer(10), .text("big"), .text("small")])
        let pg = try rendered(.select(q), .postgres)
        #expect(pg.sql.hasSuffix(#"CASE WHEN "id" > $3 THEN $4 ELSE $5 END AS "size", CAST("n" AS BIGINT) FROM "t""#))
    }

    @Test func invalidFunctionNameIsMisuse() {
        expectMisuse("not a valid SQL function name") {
            _ = try SQLDialect.sqlite.render(.select(SQLSelect(from: "t").columns(.expression(.function("x(); DROP TABLE t; --")))))
        }
    }

    @Test func plainLikeIsCaseSensitiveAndInsensitiveFormPerDialect() throws {
        let name = SQLExpression.column("name")
        #expect(try whereSQL(name.like("A%"), .sqlite).sql == #"SELECT * FROM "t" WHERE "name" LIKE ?"#)
        #expect(try whereSQL(name.like("A%"), .postgres).sql == #"SELECT * FROM "t" WHERE "name" LIKE $1"#)
        #expect(try whereSQL(name.like("a%", caseInsensitive: true), .postgres).sql == #"SELECT * FROM "t" WHERE "name" ILIKE $1"#)
        #expect(try whereSQL(name.like("a%", caseInsensitive: true), .sqlite).sql == #"SELECT * FROM "t" WHERE lower("name") LIKE lower(?)"#)
    }

    @Test func beginsEndsContainsEscapeWildcards() throws {
        let name = SQLExpression.column("name")
        let begins = try whereSQL(name.beginsWith("50%_off\\"), .postgres)
        #expect(begins.sql == #"SELECT * FROM "t" WHERE "name" LIKE $1 ESCAPE $2"#)
        #expect(begins.bindings == [.text(#"50\%\_off\\%"#), .text("\\")])
        let ends = try whereSQL(name.endsWith("ex"), .sqlite)
        #expect(ends.sql == #"SELECT * FROM "t" WHERE "name" LIKE ? ESCAPE ?"#)
        #expect(ends.bindings == [.text("%ex"), .text("\\")])
        let contains = try whereSQL(name.contains("a_b", caseInsensitive: true), .sqlite)
        #expect(contains.sql == #"SELECT * FROM "t" WHERE lower("name") LIKE lower(?) ESCAPE ?"#)
        #expect(contains.bindings == [.text(#"%a\_b%"#), .text("\\")])
        #expect(SQLExpression.escapeLikePattern("100%") == #"100\%"#)
    }

    @Test func rawFragmentInsideAndIsParenthesized() throws {
        let e = SQLExpression.column("color").equals("red") && .raw("brim_size > ? OR brim_size IS NULL", [10])
        let pg = try whereSQL(e, .postgres)
        #expect(pg.sql == #"SELECT * FROM "t" WHERE "color" = $1 AND (brim_size > $2 OR brim_size IS NULL)"#)
        #expect(pg.bindings == [.text("red"), .integer(10)])
    }
}
