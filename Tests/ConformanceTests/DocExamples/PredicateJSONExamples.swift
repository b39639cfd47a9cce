import Foundation
import Testing
import Unity
import UnityRowCoding

// The code of "Filtering with #Predicate" and "JSON documents you can query" on key paths into
// a `Codable` property, compiled and run on both backends.

struct GeoPoint: Codable, Sendable, PredicateJSONMapped {
    var lat: Double
    var lon: Double
    static var predicateJSONKeys: [PartialKeyPath<GeoPoint>: String] { [\.lat: "lat", \.lon: "lon"] }
}

struct ShippingAddress: DatabaseJSONConvertible, Sendable, PredicateJSONMapped {
    var city: String
    var zip: String?
    var geo: GeoPoint?
    enum CodingKeys: String, CodingKey { case city, zip = "postal_code", geo }
    static var predicateJSONKeys: [PartialKeyPath<ShippingAddress>: String] {
        [\.city: "city", \.zip: "postal_code", \.geo: "geo"]
    }
}

@RowCoded
struct Shopper: ModelDef {
    var id: Int
    var address: ShippingAddress
    var existsInDatabase = false
    static let tableName = "shopper"
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

func northernShoppers(in db: Database) throws -> [Shopper] {
    try Shopper.instances(matching: #Predicate { $0.address.city != "Oslo" && ($0.address.geo?.lat ?? 0) > 60 },
                          orderBy: [SortDescriptor(\.id)], in: db)
}

@Suite("Documentation: #Predicate into JSON documents")
struct PredicateJSONArticleExamples {
    @Test(arguments: Backend.allCases)
    func keyPathsIntoDocuments(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("shopper", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("address", .json, notNull: true),
                ])))
            }
            let shoppers = [
                Shopper(id: 1, address: ShippingAddress(city: "Oslo", zip: "0150", geo: GeoPoint(lat: 59.9, lon: 10.7))),
                Shopper(id: 2, address: ShippingAddress(city: "Troms\u{F8}", zip: nil, geo: GeoPoint(lat: 69.6, lon: 18.9))),
                Shopper(id: 3, address: ShippingAddress(city: "Bod\u{F8}", zip: "8001", geo: nil)),
            ]
            try DBManager.executeStatements(try shoppers.map { try $0.createSaveStatement() }, in: db)
            #expect(try northernShoppers(in: db).map(\.id) == [2])
            // A nil zip is an absent key: `!=` keeps it, as Swift does.
            #expect(try Shopper.instances(matching: #Predicate { $0.address.zip != "0150" }, orderBy: [SortDescriptor(\.id)], in: db)
                .map(\.id) == [2, 3])
        }
    }
}
