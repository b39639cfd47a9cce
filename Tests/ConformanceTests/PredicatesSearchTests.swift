import Foundation
import Testing
import Unity
import UnityPredicates

struct PSearchItem: ManagedObjectConvertible, Equatable {
    var id: Int64 = 0
    var title = ""
    var settings: String?
    static let entityName = "item"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<PSearchItem>> = [Attribute(\.id, "id"), Attribute(\.title, "title"), Attribute(\.settings, "settings")]
}

/// The predicates flavor's JSON operators and full-text search, against the shared fixture's literals.
@Suite("Predicates: JSON operators and full-text search")
struct PredicatesSearchTests {
    @Test(arguments: Backend.allCases)
    func jsonAndSearch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try SearchFixture.create(db)
            let container = PersistentContainer(database: db, models: [PSearchItem.self], createsSchema: false)
            let answers = try container.perform { ctx in
                [try ctx.fetch(PSearchItem.all.where(Query.json(\PSearchItem.settings, ["theme"]) == "dark").sort(\.id), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.json(\PSearchItem.settings, ["limits", "daily"], as: .integer) > 10).sort(\.id), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.json(\PSearchItem.settings, ["theme"]) != "dark").sort(\.id), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.json(\PSearchItem.settings, ["theme"]).isNull).sort(\.id), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.jsonContains(\PSearchItem.settings, json: #"{"tags":["admin"]}"#)), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.jsonHasKey(\PSearchItem.settings, "beta")), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.matches("data", in: SearchFixture.index) && \PSearchItem.id != 4).sort(\.id), \.id),
                 try ctx.fetch(PSearchItem.all.where(Query.matches("data", in: SearchFixture.index)).sortByRelevance("data", in: SearchFixture.index).limit(1), \.id)]
            }
            #expect(answers == [[1, 3], [1], [2], [4], [1], [3], [1, 2], [4]])
        }
    }
}
