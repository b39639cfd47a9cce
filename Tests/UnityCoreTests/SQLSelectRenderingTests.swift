import Foundation
import Testing
@testable import Unity

@Suite struct SQLSelectRenderingTests {
    @Test func selectStarFromTable() throws {
        #expect(try sqlText(.select(SQLSelect(from: "hats")), .sqlite) == #"SELECT * FROM "hats""#)
        #expect(try sqlText(.select(SQLSelect(from: "hats", as: "h")), .postgres) == #"SELECT * FROM "hats" AS "h""#)
    }

    @Test func joinWithWhereMatchesTheTailorExample() throws {
        let q = SQLSelect(from: "customers")
            .columns(.all(table: "customers"))
            .join(.inner, "orders", on: .column("orders", "customer_id").equals(.column("customers", "id")))
            .where(.column("orders", "hat_id").equals(5))
        let expectedBody = #"SELECT "customers".* FROM "customers" INNER JOIN "orders" ON "orders"."customer_id" = "customers"."id" WHERE "orders"."hat_id" = "#
        let lite = try rendered(.select(q), .sqlite)
        #expect(lite.sql == expectedBody + "?")
        #expect(lite.bindings == [.integer(5)])
        let pg = try rendered(.select(q), .postgres)
        #expect(pg.sql == expectedBody + "$1")
        #expect(pg.bindings == [.integer(5)])
    }

    @Test(arguments: [
        (SQLJoinKind.inner, "INNER JOIN"), (.left, "LEFT JOIN"), (.right, "RIGHT JOIN"), (.full, "FULL JOIN"),
    ])
    func everyJoinKindWithOn(kind: SQLJoinKind, keyword: String) throws {
        let q = SQLSelect(from: "a").join(kind, "b", as: "bb", on: .column("bb", "a_id").equals(.column("a", "id")))
        #expect(try sqlText(.select(q), .postgres) == #"SELECT * FROM "a" \#(keyword) "b" AS "bb" ON "bb"."a_id" = "a"."id""#)
    }

    @Test func crossJoinAndMisusedJoins() throws {
        let q = SQLSelect(from: "a").join(.cross, "b")
        #expect(try sqlText(.select(q), .sqlite) == #"SELECT * FROM "a" CROSS JOIN "b""#)
        expectMisuse("needs an ON condition") { _ = try SQLDialect.sqlite.render(.select(SQLSelect(from: "a").join(.left, "b"))) }
        expectMisuse("CROSS JOIN takes no ON") {
            _ = try SQLDialect.postgres.render(.select(SQLSelect(from: "a").join(.cross, "b", on: .true)))
        }
    }

    @Test func rawJoinFragmentIsRewritten() throws {
        let q = SQLSelect(from: "hats").join(.fragment(SQLFragment("LEFT JOIN orders ON orders.hat_id = hats.id AND orders.qty > ?", [3])))
            .where(.column("color").equals("red"))
        let pg = try rendered(.select(q), .postgres)
        #expect(pg.sql == #"SELECT * FROM "hats" LEFT JOIN orders ON orders.hat_id = hats.id AND orders.qty > $1 WHERE "color" = $2"#)
        #expect(pg.bindings == [.integer(3), .text("red")])
    }

    /// The builders consume the query they extend (a chain changes one query in place), yet a
    /// query kept in a constant, and every query built from it, stays as it was written.
    @Test func buildersLeaveTheQueryTheyExtendUnchanged() throws {
        let base = SQLSelect(from: "hats").columns(.expression(.column("id")), .expression(.column("name")))
            .join(.left, "sizes", on: .column("sizes", "hat_id").equals(.column("hats", "id")))
            .where(.column("color").equals("red"))
            .orderBy(SQLExpression.column("id").asc)
        let baseSQL = #"SELECT "id", "name" FROM "hats" LEFT JOIN "sizes" ON "sizes"."hat_id" = "hats"."id" WHERE "color" = ? ORDER BY "id" ASC"#
        let narrowed = base.where(.column("size").equals(7)).orderBy(SQLExpression.column("name").desc).limit(3)
        let joined = base.join(.inner, "owners", on: .column("owners", "id").equals(.column("hats", "owner_id")))
            .groupBy(.column("id")).having(SQLExpression.countAll.greaterThan(1)).distinct()
        let unioned = base.union(SQLSelect(from: "caps").columns(.expression(.column("id")), .expression(.column("name"))))
        let renamed = base.columns(.expression(.column("name"))).offset(5)
        #expect(try sqlText(.select(base), .sqlite) == baseSQL)
        #expect(try rendered(.select(base), .sqlite).bindings == [.text("red")])
        #expect(try sqlText(.select(narrowed), .sqlite)
            == #"SELECT "id", "name" FROM "hats" LEFT JOIN "sizes" ON "sizes"."hat_id" = "hats"."id" WHERE "color" = ? AND "size" = ? ORDER BY "id" ASC, "name" DESC LIMIT 3"#)
        #expect(try sqlText(.select(joined), .sqlite)
            == #"SELECT DISTINCT "id", "name" FROM "hats" LEFT JOIN "sizes" ON "sizes"."hat_id" = "hats"."id" INNER JOIN "owners" ON "owners"."id" = "hats"."owner_id" WHERE "color" = ? GROUP BY "id" HAVING COUNT(*) > ? ORDER BY "id" ASC"#)
        #expect(try sqlText(.select(unioned), .sqlite)
            == #"SELECT "id", "name" FROM "hats" LEFT JOIN "sizes" ON "sizes"."hat_id" = "hats"."id" WHERE "color" = ? UNION SELECT "id", "name" FROM "caps" ORDER BY "id" ASC"#)
        #expect(try sqlText(.select(renamed), .sqlite)
            == #"SELECT "name" FROM "hats" LEFT JOIN "sizes" ON "sizes"."hat_id" = "hats"."id" WHERE "color" = ? ORDER BY "id" ASC LIMIT -1 OFFSET ?"#)
        // The base, rendered again after all of that, is unchanged, array by array.
        #expect(try sqlText(.select(base), .sqlite) == baseSQL)
        #expect(base.joins.count == 1 && base.orderBy.count == 1 && base.groupBy.isEmpty && base.compounds.isEmpty)
        #expect(base.limit == nil && base.offset == nil && !base.distinct && base.having == nil && base.columns.count == 2)
    }

    @Test func everyClauseInOrder() throws {
        let q = SQLSelect(from: "orders")
            .distinct()
            .columns(.expression(.column("customer_id")), SQLExpression.count(.column("id"), distinct: true).as("n"),
                     SQLExpression.sum(.column("total")).as("sum"))
            .where(.column("total").greaterThan(10.5))
            .groupBy(.column("customer_id"))
            .having(SQLExpression.countAll.greaterThan(2))
            .orderBy(SQLExpression.column("customer_id").desc.nullsLast, SQLExpression.column("n").asc.nullsFirst)
            .limit(20, offset: 40)
        let expected = #"SELECT DISTINCT "customer_id", COUNT(DISTINCT "id") AS "n", SUM("total") AS "sum" FROM "orders" WHERE "total" > ? GROUP BY "customer_id" HAVING COUNT(*) > ? ORDER BY "customer_id" DESC NULLS LAST, "n" ASC NULLS FIRST LIMIT 20 OFFSET ?"#
        let lite = try rendered(.select(q), .sqlite)
        // SQLite's SUM is Unity's exact decimal aggregate.
        #expect(lite.sql == expected.replacingOccurrences(of: "SUM(", with: "unity_sum("))
        // The LIMIT is a literal (PostgreSQL plans a bound one again on every execution); the
        // OFFSET stays bound.
        #expect(lite.bindings == [.double(10.5), .integer(2), .integer(40)])
        let pg = try rendered(.select(q), .postgres)
        #expect(pg.sql == #"SELECT DISTINCT "customer_id", COUNT(DISTINCT "id") AS "n", SUM("total") AS "sum" FROM "orders" WHERE "total" > $1 GROUP BY "customer_id" HAVING COUNT(*) > $2 ORDER BY "customer_id" DESC NULLS LAST, "n" ASC NULLS FIRST LIMIT 20 OFFSET $3"#)
        #expect(pg.bindings == [.double(10.5), .integer(2), .integer(40)])
    }

    @Test func offsetWithoutLimit() throws {
        let q = SQLSelect(from: "t").offset(5)
        #expect(try sqlText(.select(q), .sqlite) == #"SELECT * FROM "t" LIMIT -1 OFFSET ?"#)
        #expect(try sqlText(.select(q), .postgres) == #"SELECT * FROM "t" OFFSET $1"#)
    }

    @Test func subqueryInFromAndAsExpressionAndExists() throws {
        let inner = SQLSelect(from: "orders").columns(.column("hat_id")).where(.column("qty").greaterThan(1))
        let q = SQLSelect(from: .subquery(inner, alias: "o"))
            .columns(.expression(.column("o", "hat_id")),
                     SQLExpression.subquery(SQLSelect(from: "hats").columns(.expression(.countAll))).as("total"))
            .where(.exists(SQLSelect(from: "hats").columns(.expression(.literal(.integer(1))))
                .where(.column("hats", "id").equals(.column("o", "hat_id")))))
        let pg = try rendered(.select(q), .postgres)
        #expect(pg.sql == #"SELECT "o"."hat_id", (SELECT COUNT(*) FROM "hats") AS "total" FROM (SELECT "hat_id" FROM "orders" WHERE "qty" > $1) AS "o" WHERE EXISTS (SELECT 1 FROM "hats" WHERE "hats"."id" = "o"."hat_id")"#)
        #expect(pg.bindings == [.integer(1)])
    }

    @Test func inSubqueryForManyToManyThroughTable() throws {
        let through = SQLSelect(from: "workout_meta").columns(.column("exercise")).where(.column("workout").equals(7))
        let q = SQLSelect(from: "exercises").where(SQLExpression.column("id").isIn(through))
        #expect(try sqlText(.select(q), .postgres) == #"SELECT * FROM "exercises" WHERE "id" IN (SELECT "exercise" FROM "workout_meta" WHERE "workout" = $1)"#)
        let notIn = SQLSelect(from: "exercises").where(SQLExpression.column("id").isNotIn(through))
        #expect(try sqlText(.select(notIn), .sqlite) == #"SELECT * FROM "exercises" WHERE "id" NOT IN (SELECT "exercise" FROM "workout_meta" WHERE "workout" = ?)"#)
    }

    @Test func unionAndUnionAll() throws {
        let a = SQLSelect(from: "a").columns(.column("x")).where(.column("x").greaterThan(1))
        let b = SQLSelect(from: "b").columns(.column("x"))
        let q = a.union(b).union(b, all: true).orderBy(SQLExpression.column("x").asc).limit(3)
        let pg = try rendered(.select(q), .postgres)
        #expect(pg.sql == #"SELECT "x" FROM "a" WHERE "x" > $1 UNION SELECT "x" FROM "b" UNION ALL SELECT "x" FROM "b" ORDER BY "x" ASC LIMIT 3"#)
        expectMisuse("cannot have its own ORDER BY") { _ = try SQLDialect.sqlite.render(.select(a.union(b.limit(1)))) }
    }

    @Test func selectWithoutTable() throws {
        let q = SQLSelect(columns: [.expression(.value(1), alias: "one")])
        let lite = try rendered(.select(q), .sqlite)
        #expect(lite.sql == #"SELECT ? AS "one""#)
        #expect(lite.bindings == [.integer(1)])
    }
    @Test func reversedOrderingFlipsDirectionAndNulls() throws {
        let term = SQLExpression.column("a").asc.nullsFirst.reversed
        #expect(term.direction == .descending)
        #expect(term.nulls == .last)
        #expect(try sqlText(.select(SQLSelect(from: "t").orderBy(term)), .sqlite) == #"SELECT * FROM "t" ORDER BY "a" DESC NULLS LAST"#)
    }

    @Test func dialectsDifferAndKnowTheirNames() {
        #expect(SQLDialect.sqlite != SQLDialect.postgres)
        #expect(SQLDialect.sqlite.name == "sqlite")
        #expect(SQLDialect.postgres.name == "postgres")
        #expect(SQLDialect.postgresLike(capacity: 5) == SQLDialect.postgres)
    }
}
