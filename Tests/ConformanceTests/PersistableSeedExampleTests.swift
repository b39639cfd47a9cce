import Foundation
import Testing
import Unity
import UnityPersistable

private typealias Hat = PersistableFixtures.Hat
private typealias Store = PersistableFixtures.Store
private typealias Order = PersistableFixtures.Order
private typealias Customer = PersistableFixtures.Customer

/// The seed's examples as written there (modulo Swift 6), on both backends.
@Suite("Persistable seed example")
struct PersistableSeedExampleTests {
    @Test(arguments: Backend.allCases)
    func seedExample(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { _ in
            let store = try #require(Store(name: "Main St").save())
            let storeId = try #require(store.id)
            var saved: [Hat] = []
            func saveRecord(_ hat: Hat) { if let hat = hat.save() { saved.append(hat) } }

            for (color, size) in [("red", 8), ("red", 11), ("red", 14), ("blue", 12), ("", 10)] {
                let hat = Hat(color: color, brimSize: size, storeId: storeId)
                let validation = Validation("hat")
                  .validate(presenceOf: "color", hat.color)
                  .validate("brimSize", hat.brimSize, inRange: 5...15)

                if validation.valid {
                  saveRecord(hat)
                }
            }
            #expect(saved.count == 4)

            var query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", ["10"])
            query = query.order("brim_size", .orderedAscending)

            let hats = query.all()
            var printed: [String] = []
            for hat in hats {
              printed.append(String(hat.id ?? 0))
            }
            #expect(printed == ["2", "3"])

            if let hat = query.last() {
              #expect(hat.brimSize == 14)
            }
            else {
              Issue.record("No hat")
            }

            // Associations.
            let hat = saved[1]
            #expect(hat.store?.name == "Main St")
            let ann = try #require(Customer(name: "Ann").save())
            let hatId = try #require(hat.id)
            _ = try #require(Order(hatId: hatId, customerId: ann.id).save())
            #expect(hat.orders.count() == 1)
            #expect(hat.customers.all().compactMap(\.name) == ["Ann"])
            #expect(Hat.query.count() == 4)
        }
    }
}
