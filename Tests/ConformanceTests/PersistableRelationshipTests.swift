import Foundation
import Testing
import Unity
import UnityPersistable

private typealias Hat = PersistableFixtures.Hat
private typealias Store = PersistableFixtures.Store
private typealias Order = PersistableFixtures.Order
private typealias Customer = PersistableFixtures.Customer

@Suite("Persistable relationships")
struct PersistableRelationshipTests {
    @Test
    func throughRendersTheTwoJoins() throws {
        let hat = try Hat(databaseRow: DatabaseRow(data: ["id": 5, "color": "red", "brim_size": 1, "store_id": 1]))
        let customers = try hat.customers.toSql(dialect: .sqlite)
        #expect(customers.sql == #"SELECT "customers".* FROM "customers" INNER JOIN "orders" ON "orders"."customer_id" = "customers"."id" WHERE "orders"."hat_id" = ?"#)
        #expect(customers.bindings == [.integer(5)])
        let reversed: Query<Customer> = hat.toMany(through: hat.orders, joinToMany: true)
        let sql = try SQLDialect.postgres.render(.select(reversed.statement))
        #expect(sql.sql == #"SELECT "customers".* FROM "customers" INNER JOIN "orders" ON "orders"."id" = "customers"."order_id" WHERE "orders"."hat_id" = $1"#)
        let explicit: Query<Order> = hat.toMany(foreignKey: "gift_hat_id")
        #expect(try explicit.toSql(dialect: .sqlite).sql == #"SELECT * FROM "orders" WHERE "orders"."gift_hat_id" = ?"#)
    }

    @Test(arguments: Backend.allCases)
    func toManyAndThrough(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            let store = try Store(name: "Main").saveOrThrow()
            let storeId = try #require(store.id)
            let red = try Hat(color: "red", brimSize: 10, storeId: storeId).saveOrThrow()
            let blue = try Hat(color: "blue", brimSize: 12, storeId: storeId).saveOrThrow()
            let redId = try #require(red.id)
            let blueId = try #require(blue.id)
            let ann = try Customer(name: "Ann").saveOrThrow()
            let bob = try Customer(name: "Bob").saveOrThrow()
            _ = try Order(hatId: redId, customerId: ann.id, quantity: 2).saveOrThrow()
            _ = try Order(hatId: redId, customerId: bob.id).saveOrThrow()
            _ = try Order(hatId: blueId, customerId: bob.id).saveOrThrow()

            #expect(red.store?.name == "Main")
            #expect(red.orders.count() == 2)
            #expect(blue.orders.all().map(\.customerId) == [bob.id])
            // Returned as queries: they filter further.
            #expect(red.orders.filter(["quantity": 2]).all().map(\.customerId) == [ann.id])
            #expect(red.customers.order("name", .orderedAscending).all().compactMap(\.name) == ["Ann", "Bob"])
            #expect(blue.customers.all().compactMap(\.name) == ["Bob"])
            #expect(store.hats.order("id", .orderedAscending).all().map(\.color) == ["red", "blue"])
            // An unsaved hat has no orders (not the orders whose hat_id is NULL).
            #expect(Hat(color: "x", brimSize: 1, storeId: storeId).orders.count(db) == 0)
            // joinToMany: the result table holds the key (customers.order_id).
            let order = try #require(red.orders.order("id", .orderedAscending).first())
            let cy = try Customer(name: "Cy", orderId: order.id).saveOrThrow()
            let viaOrder: Query<Customer> = red.toMany(through: red.orders, joinToMany: true)
            #expect(viaOrder.all().map(\.id) == [cy.id])
        }
    }

    @Test(arguments: Backend.allCases)
    func parentsWithChildrenInTwoStatements(_ backend: Backend) throws {
        let (configuration, logged) = PersistableFixtures.capturingConfiguration(echo: true)
        try PersistableFixtures.withWorld(backend, configuration: configuration) { db in
            var hatIds: [Int] = []
            for i in 0..<12 {
                let hat = try Hat(color: i % 2 == 0 ? "red" : "blue", brimSize: i, storeId: 1).saveOrThrow()
                hatIds.append(try #require(hat.id))
            }
            // Hat i has i % 4 orders.
            for (i, id) in hatIds.enumerated() {
                for q in 0..<(i % 4) { _ = try Order(hatId: id, customerId: nil, quantity: q + 1).saveOrThrow() }
            }
            for parents in [Query<Hat>().filter(["color": "red"]), Query<Hat>().order("id", .orderedAscending),
                            Query<Hat>().order("id", .orderedAscending).limit(3)] {
                let before = logged.value.count
                let loaded = try parents.allIncluding(Query<Order>().order("quantity", .orderedAscending))
                let statements = logged.value[before...].filter { $0.hasPrefix("SELECT") }
                #expect(statements.count == 2)
                #expect(loaded.count == parents.count())
                for (hat, orders) in loaded {
                    let hatId = try #require(hat.id)
                    let index = try #require(hatIds.firstIndex(of: hatId))
                    #expect(orders.map(\.quantity) == (0..<(index % 4)).map { $0 + 1 })
                    #expect(orders.allSatisfy { $0.hatId == hat.id })
                }
            }
            #expect(try Query<Hat>().limit(3).order("id", .orderedAscending).allIncluding(Query<Order>(), db).map { $0.children.count } == [0, 1, 2])
        }
    }
}
