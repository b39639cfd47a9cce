import Foundation
import Testing
import Unity

/// The SQL-first flavor's JSON filters and full-text search, against the shared fixture's literals.
@Suite("SQL-first: JSON filters and full-text search")
struct ModelDefSearchTests {
    struct Item: ModelDef {
        var id: Int
        var title: String
        var body: String
        var settings: String?

        typealias ModelType = Item
        static let tableName = "item"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [] }
        static let syncable = false
    }

    @Test(arguments: Backend.allCases)
    func jsonAndSearch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try SearchFixture.create(db)
            let byId = [ModelOrdering.ascending("id")]
            #expect(try Item.instances(json: "settings", at: ["theme"], equals: "dark", orderedBy: byId, in: db).map(\.id) == [1, 3])
            let settings = SQLExpression.column("settings")
            #expect(try Item.instances(where: settings.jsonValue(at: ["limits", "daily"], as: .integer).greaterThan(10),
                                       orderedBy: byId, in: db).map(\.id) == [1])
            // As text, "5" sorts after "10", and the string "12" counts as well as the numbers.
            #expect(try Item.instances(where: settings.jsonValue(at: ["limits", "daily"]).greaterThan("10"),
                                       orderedBy: byId, in: db).map(\.id) == [1, 2, 3])
            #expect(try Item.instances(where: settings.jsonHasKey("beta"), in: db).map(\.id) == [3])
            #expect(try Item.count(where: settings.jsonContains(json: #"{"tags":["admin"]}"#), in: db) == 1)

            let found = try Item.search("data", in: SearchFixture.index, in: db)
            #expect(Set(found.map(\.id)) == [1, 2, 4])
            #expect(found.first?.id == 4)
            #expect(try Item.search("data", in: SearchFixture.index, limit: 1, in: db).map(\.id) == [4])
            #expect(try Item.search("\"isolate data\"", in: SearchFixture.index, in: db).map(\.id) == [1])
            #expect(try Item.instances(where: SearchFixture.index.matches("tomat*"), orderedBy: [.relevance("tomat*", in: SearchFixture.index)],
                                       in: db).map(\.id) == [3])
        }
    }
}
