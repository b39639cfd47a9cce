import Foundation
import Testing
import Unity
import UnityPersistable

// The code of the Upserts article of the UnityPersistable catalog, compiled and run on both
// backends (DocumentationExamplesTests checks that every block stands here line for line).

enum PersistableUpsertDocs {
    struct Sticker: Persistable, Equatable {
        var id: Int?
        var code: String
        var color: String
        var stock: Int

        init(id: Int? = nil, code: String, color: String, stock: Int) {
            self.id = id
            self.code = code
            self.color = color
            self.stock = stock
        }
        static var tableName: String { "stickers" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            code = try databaseRow.read("code")
            color = try databaseRow.read("color")
            stock = try databaseRow.read("stock")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["code": code, "color": color, "stock": stock]
        }
    }
}

@Suite struct PersistableUpsertExamples {
    typealias Sticker = PersistableUpsertDocs.Sticker

    @Test(arguments: Backend.allCases)
    func theArticleRunsAsWritten(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("stickers", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("code", .text, notNull: true, unique: true),
                    SQLColumnDefinition("color", .text, notNull: true),
                    SQLColumnDefinition("stock", .int64, notNull: true, check: .binary(.column("stock"), .greaterOrEqual, .literal(.integer(0)))),
                ])))
            }
            try DefaultDatabase.withDatabase(db) {
                let star = try Sticker(code: "star", color: "gold", stock: 5).insertOrIgnore()
                // star.outcome == .inserted, star.value.id == 1
                let again = try Sticker(code: "star", color: "red", stock: 1).insertOrIgnore(onConflict: ["code"])
                // again.outcome == .unchanged, again.value.color == "gold"
                let restocked = try Sticker(code: "star", color: "gold", stock: 50)
                    .insertOrUpdate(onConflict: ["code"], updating: ["stock"])
                // restocked.outcome == .updated, restocked.value == Sticker(id: 1, code: "star", color: "gold", stock: 50)
                #expect(star.outcome == .inserted)
                #expect(star.value.id == 1)
                #expect(again.outcome == .unchanged)
                #expect(again.value.color == "gold")
                #expect(restocked == Upserted(Sticker(id: 1, code: "star", color: "gold", stock: 50), outcome: .updated))
                do {
                    try Sticker(code: "comet", color: "blue", stock: -1).insertOrIgnore(onConflict: ["code"])
                    Issue.record("a CHECK failure was swallowed")
                } catch DatabaseError.constraintViolation(let kind, _) {
                    #expect(kind == .check)
                }

                let results = try Sticker.insertOrUpdateAll([
                    Sticker(id: 1, code: "star", color: "silver", stock: 50),
                    Sticker(id: 2, code: "moon", color: "white", stock: 3),
                ], where: Sticker.query.filter(["color": "red"]))
                // results.map(\.outcome) == [.unchanged, .inserted]: the stored star is gold, not red
                #expect(results.map(\.outcome) == [.unchanged, .inserted])
                #expect(try Sticker.query.order("id", .orderedAscending).allOrThrow() == [
                    Sticker(id: 1, code: "star", color: "gold", stock: 50), Sticker(id: 2, code: "moon", color: "white", stock: 3),
                ])
            }
        }
    }
}
