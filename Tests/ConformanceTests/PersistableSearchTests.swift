import Foundation
import Testing
import Unity
import UnityPersistable

/// The Persistable flavor's JSON filters and full-text search, against the shared fixture's literals.
@Suite("Persistable: JSON filters and full-text search")
struct PersistableSearchTests {
    struct Item: Persistable {
        var id: Int?
        var title: String
        static var tableName: String { "item" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            title = try databaseRow.read("title")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["title": title] }
    }

    @Test(arguments: Backend.allCases)
    func jsonAndSearch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try SearchFixture.create(db)
            let items = Query<Item>().order("id", .orderedAscending)
            #expect(try items.filter(json: "settings", at: ["theme"], equals: "dark").allOrThrow(db).compactMap(\.id) == [1, 3])
            #expect(try items.filter(items.json("settings", ["limits", "daily"], as: .integer).greaterThan(10))
                .allOrThrow(db).compactMap(\.id) == [1])
            #expect(try items.filter(json: "settings", contains: ["tags": ["admin"]]).allOrThrow(db).compactMap(\.id) == [1])
            #expect(try items.filter(json: "settings", hasKey: "beta").allOrThrow(db).compactMap(\.id) == [3])
            #expect(try items.filter(json: "settings", hasKey: "daily", at: ["limits"]).countOrThrow(db) == 3)

            let found = try Query<Item>().matching("data", in: SearchFixture.index).allOrThrow(db)
            #expect(Set(found.compactMap(\.id)) == [1, 2, 4])
            #expect(found.first?.id == 4)
            #expect(try Query<Item>().matching("data fast", in: SearchFixture.index).allOrThrow(db).compactMap(\.id) == [2])
            #expect(try Query<Item>().matching("NOT", in: SearchFixture.index).countOrThrow(db) == 0)
        }
    }
}
