import Foundation
import Testing
@testable import Unity

@Suite struct SQLWriteRenderingTests {
    @Test func singleAndMultiRowInsert() throws {
        let one = SQLInsert(into: "hats", values: ["color": .text("red"), "brim_size": .integer(10)])
        let lite = try rendered(.insert(one), .sqlite)
        #expect(lite.sql == #"INSERT INTO "hats" ("color", "brim_size") VALUES (?, ?)"#)
        #expect(lite.bindings == [.text("red"), .integer(10)])
        let many = SQLInsert(into: "hats", columns: ["color", "brim_size"],
                             values: [[.value("red"), .value(1)], [.value("blue"), .literal(.default)]])
        let pg = try rendered(.insert(many), .postgres)
        #expect(pg.sql == #"INSERT INTO "hats" ("color", "brim_size") VALUES ($1, $2), ($3, DEFAULT)"#)
        #expect(pg.bindings == [.text("red"), .integer(1), .text("blue")])
    }

    @Test func placeholderRowsRenderOnePlaceholderPerValue() throws {
        let insert = SQLInsert(into: "hats", columns: ["color", "brim_size"], placeholderRows: 3)
        let pg = try rendered(.insert(insert), .postgres)
        #expect(pg.sql == #"INSERT INTO "hats" ("color", "brim_size") VALUES ($1, $2), ($3, $4), ($5, $6)"#)
        #expect(pg.bindings.count == 6)
        #expect(try sqlText(.insert(insert), .sqlite) == #"INSERT INTO "hats" ("color", "brim_size") VALUES (?, ?), (?, ?), (?, ?)"#)
    }

    @Test func insertDefaultValuesAndMisuse() throws {
        let d = SQLInsert(into: "log", columns: [], source: .defaultValues)
        #expect(try sqlText(.insert(d), .sqlite) == #"INSERT INTO "log" DEFAULT VALUES"#)
        expectMisuse("row 1 has 1 values for 2 columns") {
            _ = try SQLDialect.sqlite.render(.insert(SQLInsert(into: "t", columns: ["a", "b"], values: [[.value(1)]])))
        }
        expectMisuse("has no rows") { _ = try SQLDialect.postgres.render(.insert(SQLInsert(into: "t", columns: ["a"], values: []))) }
    }

    @Test func upsertDoUpdateWithExcludedWhereAndReturning() throws {
        let upsert = SQLInsert(into: "players", columns: ["id", "name", "score"],
                               values: [[.value(1), .value("Ann"), .value(10)]])
            .onConflict(["id"], doUpdate: [SQLAssignment("score", .excluded("score")), SQLAssignment("name", value: "Ann")],
                        where: SQLExpression.column("players", "score").lessThan(.excluded("score")))
            .returning(.all)
        let lite = try rendered(.insert(upsert), .sqlite)
        #expect(lite.sql == #"INSERT INTO "players" ("id", "name", "score") VALUES (?, ?, ?) ON CONFLICT ("id") DO UPDATE SET "score" = excluded."score", "name" = ? WHERE "players"."score" < excluded."score" RETURNING *"#)
        #expect(lite.bindings == [.integer(1), .text("Ann"), .integer(10), .text("Ann")])
        let pg = try rendered(.insert(upsert), .postgres)
        #expect(pg.sql == #"INSERT INTO "players" ("id", "name", "score") VALUES ($1, $2, $3) ON CONFLICT ("id") DO UPDATE SET "score" = excluded."score", "name" = $4 WHERE "players"."score" < excluded."score" RETURNING *"#)
    }

    @Test func upsertDoNothing() throws {
        let i = SQLInsert(into: "tags", values: ["name": .text("x")]).onConflictDoNothing(["name"])
        #expect(try sqlText(.insert(i), .postgres) == #"INSERT INTO "tags" ("name") VALUES ($1) ON CONFLICT ("name") DO NOTHING"#)
        let untargeted = SQLInsert(into: "tags", values: ["name": .text("x")]).onConflictDoNothing()
        #expect(try sqlText(.insert(untargeted), .sqlite) == #"INSERT INTO "tags" ("name") VALUES (?) ON CONFLICT DO NOTHING"#)
        expectMisuse("needs the conflict target") {
            _ = try SQLDialect.postgres.render(.insert(SQLInsert(into: "t", values: ["a": 1]).onConflict([], doUpdate: [SQLAssignment("a", .excluded("a"))])))
        }
    }

    @Test func insertSelectWithUpsertGetsWhereOnSQLite() throws {
        let src = SQLSelect(from: "staging").columns(.column("id"), .column("name"))
        let i = SQLInsert(into: "people", columns: ["id", "name"], source: .select(src)).onConflictDoNothing(["id"])
        #expect(try sqlText(.insert(i), .sqlite) == #"INSERT INTO "people" ("id", "name") SELECT "id", "name" FROM "staging" WHERE 1 ON CONFLICT ("id") DO NOTHING"#)
        #expect(try sqlText(.insert(i), .postgres) == #"INSERT INTO "people" ("id", "name") SELECT "id", "name" FROM "staging" ON CONFLICT ("id") DO NOTHING"#)
        let plain = SQLInsert(into: "people", columns: ["id"], source: .select(SQLSelect(from: "staging").columns(.column("id"))))
        #expect(try sqlText(.insert(plain), .sqlite) == #"INSERT INTO "people" ("id") SELECT "id" FROM "staging""#)
    }

    @Test func updateWithWhereAndReturning() throws {
        let u = SQLUpdate("hats", set: [SQLAssignment("color", value: "blue"), SQLAssignment("size", .column("size") + .value(1))])
            .where(SQLExpression.column("id").equals(3))
            .returning(.column("id"), SQLExpression.column("size").as("new_size"))
        let pg = try rendered(.update(u), .postgres)
        #expect(pg.sql == #"UPDATE "hats" SET "color" = $1, "size" = "size" + $2 WHERE "id" = $3 RETURNING "id", "size" AS "new_size""#)
        #expect(pg.bindings == [.text("blue"), .integer(1), .integer(3)])
        expectMisuse("sets no column") { _ = try SQLDialect.sqlite.render(.update(SQLUpdate("hats", set: []))) }
    }

    @Test func deleteWithWhereAndReturning() throws {
        let d = SQLDelete(from: "hats").where(SQLExpression.column("id").isIn([1, 2])).returning(.all)
        let lite = try rendered(.delete(d), .sqlite)
        #expect(lite.sql == #"DELETE FROM "hats" WHERE "id" IN (?, ?) RETURNING *"#)
        #expect(lite.bindings == [.integer(1), .integer(2)])
        #expect(try sqlText(.delete(SQLDelete(from: "hats")), .postgres) == #"DELETE FROM "hats""#)
    }

    @Test func transactionStatementsKeepTheirSpelling() throws {
        #expect(try SQLDialect.sqlite.render(.begin(.immediate)).sql == "BEGIN IMMEDIATE TRANSACTION")
        #expect(try SQLDialect.sqlite.render(.begin(.deferred)).sql == "BEGIN DEFERRED TRANSACTION")
        #expect(try SQLDialect.postgres.render(.begin(.immediate)).sql == "BEGIN")
        #expect(try SQLDialect.postgres.render(.begin(.readOnly)).sql == "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        #expect(try SQLDialect.postgres.render(.commit).sql == "COMMIT")
        #expect(try SQLDialect.sqlite.render(.rollback).sql == "ROLLBACK")
        #expect(try SQLDialect.sqlite.render(.savepoint("s1")).sql == #"SAVEPOINT "s1""#)
        #expect(try SQLDialect.postgres.render(.releaseSavepoint("s\"1")).sql == #"RELEASE SAVEPOINT "s""1""#)
        #expect(try SQLDialect.postgres.render(.rollbackToSavepoint("s1")).sql == #"ROLLBACK TO SAVEPOINT "s1""#)
    }
}
