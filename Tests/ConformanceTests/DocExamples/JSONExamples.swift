import Foundation
import Testing
import Unity

// The code of the "JSON documents you can query" article, compiled and run on both backends.

@Suite("Documentation: JSON documents")
struct JSONArticleExamples {
    @Test(arguments: Backend.allCases)
    func queryingDocuments(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("profile", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("settings", .json),
                ])))
                _ = try conn.execute(.insert(SQLInsert(into: "profile", values: [
                    "id": .integer(1), "settings": .json(#"{"theme":"dark","limits":{"daily":25},"tags":["admin","beta"]}"#)])))
                _ = try conn.execute(.insert(SQLInsert(into: "profile", values: [
                    "id": .integer(2), "settings": .json(#"{"theme":"light","limits":{"daily":5},"tags":[],"beta":null}"#)])))
            }

            // A value at a path, as text or as a typed value.
            let settings = SQLExpression.column("settings")
            let darkOrBusy = settings.jsonValue(at: ["theme"]).equals("dark")
                || settings.jsonValue(at: ["limits", "daily"], as: .integer).greaterThan(10)
            let firstTag = settings.jsonValue(at: ["tags", 0], as: .string)

            // Containment (PostgreSQL's @>) and a member's presence.
            let admins = try settings.jsonContains(["tags": ["admin"]])
            let mentionsBeta = settings.jsonHasKey("beta")

            func ids(_ condition: SQLExpression) throws -> [Int] {
                try db.read { conn in
                    try conn.fetchAll(.select(SQLSelect(from: "profile").columns(.column("id"))
                        .where(condition).orderBy(SQLExpression.column("id").asc)))
                        .map { try $0.decode(Int.self, at: 0) }
                }
            }
            #expect(try ids(darkOrBusy) == [1])
            #expect(try ids(firstTag.equals("admin")) == [1])
            #expect(try ids(admins) == [1])
            #expect(try ids(mentionsBeta) == [2])

            // An expression index on a path, for the filters on the same path and type.
            let migrator = Migrator(migrations: [
                Migration("0002_profile_theme", statements: [
                    SQLJSONIndex("profile_theme", on: "profile", column: "settings", path: ["theme"]).statement,
                ]),
            ])
            _ = try migrator.migrate(db)
            #expect(try ids(settings.jsonValue(at: ["theme"]).equals("light")) == [2])
        }
    }
}
