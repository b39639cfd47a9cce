import Foundation
import Testing
import UnityORM

/// The ORM's JSON filters and full-text search, against the shared fixture's literals.
@Suite("ORM: JSON filters and full-text search")
struct ORMSearchTests {
    final class Item: AmigoModel {
        var id = 0
        var title = ""
        var body = ""
        var settings: String?
        override class var ormFields: ORMFieldTable {
            ORMFieldTable(Item.self, .property("id", \.id), .property("title", \.title), .property("body", \.body),
                          .property("settings", \.settings))
        }
    }

    static func model() -> ORMModel {
        ORMModel(Item.self, table: "item",
                 Column("id", type: Int.self, primaryKey: true),
                 Column("title", type: String.self, optional: false),
                 Column("body", type: String.self, optional: false),
                 Column("settings", type: String.self))
    }

    @Test(arguments: Backend.allCases)
    func jsonAndSearch(_ backend: Backend) throws {
        try withAmigo(backend, [Self.model()], createAll: false) { amigo, test in
            try SearchFixture.create(test.database)
            let items = amigo.query(Item.self).orderBy("id")
            #expect(try items.filter(json: "settings", at: ["theme"], equals: "dark").all().map(\.id) == [1, 3])
            #expect(try items.filter(json: "settings", at: ["limits", "daily"], as: .integer) { $0.greaterThan(10) }.all().map(\.id) == [1])
            #expect(try items.filter(json: "settings", contains: #"{"tags":["admin"]}"#).all().map(\.id) == [1])
            #expect(try items.filter(json: "settings", hasKey: "beta").all().map(\.id) == [3])
            #expect(try items.filter(json: "settings", at: ["theme"], equals: "dark").filter("title = ?", "Gardening").all().map(\.id) == [3])
            // A column the mapping does not have is an ORM error, before any SQL runs.
            #expect(throws: ORMError.self) { try items.filter(json: "nope", hasKey: "x").all() }

            let found = try amigo.query(Item.self).search("data", in: SearchFixture.index).all()
            #expect(Set(found.map(\.id)) == [1, 2, 4])
            #expect(found.first?.id == 4)
            #expect(try amigo.query(Item.self).search("gard* sun", in: SearchFixture.index).all().map(\.id) == [3])
        }
    }
}
