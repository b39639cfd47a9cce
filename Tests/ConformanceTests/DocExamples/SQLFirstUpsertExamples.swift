import Foundation
import Testing
import Unity

// The code of the SQLFirstUpserts article of the Unity catalog, compiled and run on both
// backends (DocumentationExamplesTests checks that every block stands here line for line).

enum SQLFirstUpsertDocs {
    struct Plant: ModelDef, Equatable {
        var id: String
        var serverId: String?
        var name: String
        var waterings: Int

        static let tableName = "Plant"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.serverId] }
    }

    static let plantSQL = """
        CREATE TABLE "Plant" (
          "id" TEXT PRIMARY KEY,
          "serverId" TEXT UNIQUE,
          "name" TEXT NOT NULL,
          "waterings" INTEGER NOT NULL CHECK ("waterings" >= 0)
        );
        """
}

@Suite struct SQLFirstUpsertExamples {
    typealias Plant = SQLFirstUpsertDocs.Plant

    @Test(arguments: Backend.allCases)
    func theArticleRunsAsWritten(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try $0.executeScript(SQLFirstUpsertDocs.plantSQL) }
            try DefaultDatabase.withDatabase(db) {
                let first = try Plant(id: "p1", serverId: "s1", name: "fern", waterings: 1).insertOrIgnore()
                // first.outcome == .inserted
                let again = try Plant(id: "p1", serverId: "s1", name: "palm", waterings: 9).insertOrIgnore()
                // again.outcome == .unchanged, again.value.name == "fern": the row as stored
                #expect(first.outcome == .inserted)
                #expect(again.outcome == .unchanged)
                #expect(again.value.name == "fern")
                do {
                    try Plant(id: "p9", serverId: nil, name: "cactus", waterings: -1).insertOrIgnore()
                    Issue.record("a CHECK failure was swallowed")
                } catch DatabaseError.constraintViolation(let kind, _) {
                    #expect(kind == .check)
                }

                let results = try Plant.insertOrUpdate([
                    Plant(id: "p1", serverId: "s1", name: "fern", waterings: 2),
                    Plant(id: "p2", serverId: "s2", name: "ivy", waterings: 1),
                ])
                // results.map(\.outcome) == [.updated, .inserted]
                #expect(results.map(\.outcome) == [.updated, .inserted])

                let fromServer = try Plant(id: "tmp", serverId: "s2", name: "English ivy", waterings: 0)
                    .insertOrUpdate(onConflict: ["serverId"], updating: ["name"])
                // fromServer.value == Plant(id: "p2", serverId: "s2", name: "English ivy", waterings: 1, existsInDatabase: true)
                #expect(fromServer.value == Plant(id: "p2", serverId: "s2", name: "English ivy", waterings: 1, existsInDatabase: true))
                #expect(fromServer.outcome == .updated)

                let declined = try Plant(id: "p1", serverId: "s1", name: "fern", waterings: 0)
                    .insertOrUpdate(where: .raw(#""Plant"."waterings" < ?"#, [.integer(2)]))
                // declined.outcome == .unchanged: the stored fern has been watered twice
                #expect(declined.outcome == .unchanged)
                #expect(declined.value.waterings == 2)

                #expect(try Plant.allInstances(orderedBy: [.ascending("id")]) == [
                    Plant(id: "p1", serverId: "s1", name: "fern", waterings: 2, existsInDatabase: true),
                    Plant(id: "p2", serverId: "s2", name: "English ivy", waterings: 1, existsInDatabase: true),
                ])
            }
        }
    }
}
