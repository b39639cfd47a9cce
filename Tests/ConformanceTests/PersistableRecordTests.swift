import Foundation
import Testing
import Unity
import UnityPersistable

private typealias Hat = PersistableFixtures.Hat
private typealias Store = PersistableFixtures.Store
private typealias Order = PersistableFixtures.Order
private typealias Customer = PersistableFixtures.Customer

@Suite("Persistable records")
struct PersistableRecordTests {
    @Test(arguments: Backend.allCases)
    func saveInsertsAndReturnsTheSavedCopy(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            let before = Date()
            let saved = try #require(Hat(color: "red", brimSize: 10, storeId: 3).save())
            let id = try #require(saved.id)
            #expect(id >= 1)
            #expect(saved.color == "red" && saved.brimSize == 10 && saved.storeId == 3)
            let created = try #require(saved.createdAt)
            let updated = try #require(saved.updatedAt)
            #expect(created == updated)
            #expect(created.timeIntervalSince(before) > -1 && created.timeIntervalSince(before) < 60)
            // What the database holds equals the copy save() returned, to the microsecond.
            let fetched = try #require(Hat.query.find(id))
            #expect(fetched.color == "red" && fetched.brimSize == 10 && fetched.storeId == 3)
            #expect(fetched.createdAt == created && fetched.updatedAt == updated)
            let row = try #require(try db.read { try $0.fetchOne(sql: "SELECT color, brim_size FROM hats WHERE id = \(id)") })
            #expect(row["color"] == .text("red"))
            #expect(try row.decode(Int.self, column: "brim_size") == 10)
            // A second insert gets another id.
            let second = try #require(Hat(color: "blue", brimSize: 5, storeId: 3).save(db))
            #expect(second.id != saved.id)
        }
    }

    @Test(arguments: Backend.allCases)
    func insertLeavesNilColumnsOutAndUpdateWritesNull(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            let saved = try Order(hatId: 1, customerId: nil, quantity: nil, note: "gift").saveOrThrow()
            // The copy holds what was sent; the row holds the column default.
            #expect(saved.quantity == nil)
            let orderId = try #require(saved.id)
            let fetched = try #require(try Query<Order>().findOrThrow(orderId))
            #expect(fetched.quantity == 1)
            #expect(fetched.note == "gift")
            #expect(fetched.customerId == nil)
            var changed = fetched
            changed.note = nil
            _ = try changed.saveOrThrow()
            let row = try #require(try db.read { try $0.fetchOne(sql: "SELECT note, quantity FROM orders") })
            #expect(row["note"] == .null)
            #expect(try row.decode(Int.self, column: "quantity") == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func timestampsOnUpdate(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            let saved = try Hat(color: "red", brimSize: 10, storeId: 3).saveOrThrow()
            Thread.sleep(forTimeInterval: 0.005)
            var changed = saved
            changed.brimSize = 11
            let resaved = try changed.saveOrThrow()
            #expect(resaved.id == saved.id)
            #expect(resaved.createdAt == saved.createdAt)
            let firstUpdate = try #require(saved.updatedAt)
            let secondUpdate = try #require(resaved.updatedAt)
            #expect(secondUpdate > firstUpdate)
            let hatId = try #require(saved.id)
            #expect(Hat.query.find(hatId)?.brimSize == 11)
            #expect(Hat.query.count() == 1)
            // A nil created_at is filled on an update too.
            _ = try db.write { try $0.execute(sql: "UPDATE hats SET created_at = NULL") }
            let cleared = try #require(Hat.query.first())
            #expect(cleared.createdAt == nil)
            let refilled = try cleared.saveOrThrow()
            #expect(refilled.createdAt != nil)
            #expect(Hat.query.first()?.createdAt == refilled.createdAt)
        }
    }

    @Test(arguments: Backend.allCases)
    func saveFailureReturnsNilLogsAndLeavesNothing(_ backend: Backend) throws {
        let (configuration, logged) = PersistableFixtures.capturingConfiguration()
        try PersistableFixtures.withWorld(backend, configuration: configuration) { db in
            // customers.name is NOT NULL.
            #expect(Customer(name: nil).save() == nil)
            #expect(logged.value.contains { $0.contains("save()") && $0.contains("customers") })
            do {
                _ = try Customer(name: nil).saveOrThrow()
                Issue.record("saveOrThrow did not throw")
            } catch let error as DatabaseError {
                guard case .constraintViolation(.notNull, _) = error else {
                    Issue.record("expected a NOT NULL violation, got \(error)")
                    return
                }
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM customers") } == 0)
            // An update of a row that is gone is an error, not a silent no-op.
            let saved = try Customer(name: "Ann").saveOrThrow()
            #expect(saved.destroy())
            let customerId = try #require(saved.id)
            #expect(throws: PersistableError.recordNotFound(tableName: "customers", id: customerId)) {
                try saved.saveOrThrow()
            }
            #expect(saved.save() == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func classRecordsAndDestroy(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            let ann = try Customer(name: "Ann").saveOrThrow()
            let bob = try Customer(name: "Bob").saveOrThrow()
            #expect(ann !== bob)
            #expect(ann.name == "Ann")
            #expect(Query<Customer>().count() == 2)
            #expect(ann.destroy())
            #expect(Query<Customer>().all().map(\.name) == ["Bob"])
            // Destroying again deletes nothing; an unsaved record cannot be destroyed.
            #expect(try ann.destroyOrThrow() == 0)
            #expect(Customer(name: "Cy").destroy() == false)
            #expect(throws: PersistableError.notSaved(tableName: "customers")) { try Customer(name: "Cy").destroyOrThrow() }
            #expect(Query<Customer>().count(db) == 1)
        }
    }

    @Test
    func equalityByTableAndId() throws {
        let row = DatabaseRow(data: ["id": 4, "color": "red", "brim_size": 1, "store_id": 2])
        let a = try Hat(databaseRow: row)
        var b = try Hat(databaseRow: row)
        b.color = "blue"
        #expect(a == b)
        let store = try Store(databaseRow: DatabaseRow(data: ["id": 4, "name": "x"]))
        #expect(!(a == store))
        #expect(a != store)
        let unsaved1 = Hat(color: "red", brimSize: 1, storeId: 2)
        let unsaved2 = unsaved1
        #expect(!(unsaved1 == unsaved2))
        #expect(Hat.foreignKeyName() == "hat_id")
        #expect(PersistableFixtures.StoreItem.foreignKeyName() == "store_item_id")
        #expect(Customer.modelName() == "customer")
    }

    @Test
    func databaseRowReads() throws {
        let row = DatabaseRow(data: ["id": 7, "name": "Ann", "empty": "", "nothing": .null, "text": "abc"])
        let id: Int = try row.read("id")
        #expect(id == 7)
        let name: String = try row.read("name")
        #expect(name == "Ann")
        #expect(throws: PersistableError.missingField(name: "missing")) { let _: Int = try row.read("missing") }
        #expect(throws: PersistableError.fieldType(name: "text", actualType: "text", desiredType: "Int")) {
            let _: Int = try row.read("text")
        }
        #expect(throws: PersistableError.fieldType(name: "nothing", actualType: "NULL", desiredType: "String")) {
            let _: String = try row.read("nothing")
        }
        // The optional form: nil for a missing column, NULL and the empty string.
        let missing: Int? = try row.read("missing")
        let null: String? = try row.read("nothing")
        let empty: String? = try row.read("empty")
        #expect(missing == nil && null == nil && empty == nil)
        let present: String? = try row.read("name")
        #expect(present == "Ann")
        // A value that is there but of another type is an error, not nil.
        #expect(throws: PersistableError.fieldType(name: "text", actualType: "text", desiredType: "Int")) {
            let _: Int? = try row.read("text")
        }
    }
}

@Suite("Persistable batches")
struct PersistableBatchTests {
    @Test(arguments: Backend.allCases)
    func saveAllInsertAllDestroyAll(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            // 1,200 new orders: several multi-row INSERTs; ids come back in the order given.
            let orders = (0..<1_200).map { Order(hatId: $0, customerId: $0 % 3 == 0 ? nil : $0, quantity: $0 % 2 == 0 ? nil : 5) }
            let saved = try Order.saveAll(orders)
            #expect(saved.count == 1_200)
            let ids = saved.compactMap(\.id)
            #expect(ids.count == 1_200 && Set(ids).count == 1_200)
            for order in Query<Order>().all() {
                let copy = try #require(saved.first { $0.id == order.id })
                #expect(copy.hatId == order.hatId && copy.customerId == order.customerId)
                #expect(order.quantity == (order.hatId % 2 == 0 ? 1 : 5))
            }
            // Updates and inserts mixed; the updates write NULL.
            // (The copies saved hold nil quantities, which an update would write as NULL into a
            // NOT NULL column: update what the database holds.)
            var changed = Query<Order>().filter("id", inList: saved.prefix(3).compactMap(\.id)).order("id", .orderedAscending).all()
            for i in changed.indices { changed[i].note = "n\(i)" }
            changed.append(Order(hatId: 5_000, customerId: nil))
            let resaved = try Order.saveAll(changed, db)
            #expect(resaved.prefix(3).map(\.id) == saved.prefix(3).map(\.id))
            #expect(Query<Order>().filter("note IS NOT NULL").count() == 3)
            #expect(Query<Order>().count() == 1_201)
            // All or nothing: one row gone rolls the whole batch back.
            #expect(try Order.destroyAll([saved[0]]) == 1)
            let goneId = try #require(saved[0].id)
            var batch = Query<Order>().filter("id", inList: saved[1...2].compactMap(\.id)).all()
            for i in batch.indices { batch[i].note = "rolled back" }
            #expect(throws: PersistableError.recordNotFound(tableName: "orders", id: goneId)) {
                try Order.saveAll(batch + [saved[0]])
            }
            #expect(Query<Order>().filter(["note": "rolled back"]).count() == 0)
            // Application-assigned ids.
            let stores = try Store.insertAll([try Store(databaseRow: DatabaseRow(data: ["id": 70, "name": "a"])),
                                              Store(name: "b")])
            #expect(stores.first?.id == 70)
            #expect(Query<Store>().find(70)?.name == "a")
            #expect(Query<Store>().count() == 2)
            #expect(throws: PersistableError.notSaved(tableName: "stores")) { try Store.destroyAll([Store(name: "x")]) }
            #expect(try Store.destroyAll(stores) == 2)
        }
    }
}

extension PersistableBatchTests {
    /// An order whose `valuesToPersist()` names `note` only when it has one: records of one type
    /// with different column sets in one batch.
    struct SparseOrder: Persistable {
        var id: Int?
        var hatId: Int
        var note: String?
        static var tableName: String { "orders" }
        init(id: Int? = nil, hatId: Int, note: String?) {
            self.id = id
            self.hatId = hatId
            self.note = note
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            hatId = try databaseRow.read("hat_id")
            note = try databaseRow.read("note")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            note.map { ["hat_id": hatId, "note": $0] } ?? ["hat_id": hatId]
        }
    }

    /// Records of several shapes (NULLs in different places, application-assigned ids beside
    /// database ones, different column sets) over more than one 500-row chunk: the copies come
    /// back in the order given, each with the id its row got, and every row holds its values.
    @Test(arguments: Backend.allCases)
    func batchesOfMixedShapesKeepTheOrderGiven(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            var orders: [PersistableFixtures.Order] = []
            for i in 0..<1_300 {
                var order = PersistableFixtures.Order(hatId: i, customerId: i % 5 == 0 ? nil : 1_000 + i,
                                                      quantity: i % 3 == 0 ? nil : i, note: i % 7 == 0 ? "seven \(i)" : nil)
                if i % 4 == 0 { order = try PersistableFixtures.Order(databaseRow: DatabaseRow(data: [
                    "id": .integer(Int64(-1 - i)), "hat_id": .integer(Int64(i)),
                    "customer_id": i % 5 == 0 ? .null : .integer(Int64(1_000 + i)),
                    "quantity": i % 3 == 0 ? .null : .integer(Int64(i)), "note": i % 7 == 0 ? .text("seven \(i)") : .null,
                ])) }
                orders.append(order)
            }
            let copies = try PersistableFixtures.Order.insertAll(orders, db)
            #expect(copies.map(\.hatId) == Array(0..<1_300))
            // (Negative assigned ids: SQLite gives a new row the largest id plus one, which a
            // larger assigned id inserted later could then collide with.)
            #expect(copies[0].id == -1 && copies[4].id == -5 && copies[1_296].id == -1_297)
            #expect(Set(copies.compactMap(\.id)).count == 1_300)
            let stored = Dictionary(uniqueKeysWithValues: try Query<PersistableFixtures.Order>().allOrThrow(db).map { ($0.id ?? -1, $0) })
            #expect(stored.count == 1_300)
            for (i, copy) in copies.enumerated() {
                let id = try #require(copy.id)
                let row = try #require(stored[id])
                #expect(row.hatId == i)
                #expect(row.customerId == (i % 5 == 0 ? nil : 1_000 + i))
                #expect(row.quantity == (i % 3 == 0 ? 1 : i))  // nil left out: the column default
                #expect(row.note == (i % 7 == 0 ? "seven \(i)" : nil))
            }
            // Different column sets in one batch, new and existing records mixed.
            var sparse = (0..<600).map { SparseOrder(hatId: 5_000 + $0, note: $0 % 2 == 0 ? "even" : nil) }
            sparse.append(SparseOrder(id: copies[1].id, hatId: 7, note: "updated"))
            let saved = try SparseOrder.saveAll(sparse, db)
            #expect(saved.map(\.hatId) == (0..<600).map { 5_000 + $0 } + [7])
            #expect(saved.last?.id == copies[1].id)
            #expect(try Query<SparseOrder>().filter(["note": "even"]).countOrThrow(db) == 300)
            let updatedId = try #require(copies[1].id)
            #expect(try Query<SparseOrder>().findOrThrow(updatedId, db)?.note == "updated")
            for copy in saved.prefix(600) {
                let id = try #require(copy.id)
                let row = try #require(try Query<SparseOrder>().findOrThrow(id, db))
                #expect(row.hatId == copy.hatId && row.note == copy.note)
            }
            // Records without columns: one DEFAULT VALUES insert each.
            let items = try PersistableFixtures.StoreItem.insertAll([PersistableFixtures.StoreItem](
                repeating: try PersistableFixtures.StoreItem(databaseRow: DatabaseRow(data: [:])), count: 3), db)
            #expect(Set(items.compactMap(\.id)).count == 3)
            #expect(try Query<PersistableFixtures.StoreItem>().countOrThrow(db) == 3)
        }
    }

    /// A batch that fails in a later chunk (a taken id) leaves the table as it was.
    @Test(arguments: Backend.allCases)
    func aBatchThatFailsLateLeavesNothing(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            _ = try PersistableFixtures.Order.insertAll([try PersistableFixtures.Order(databaseRow: DatabaseRow(data: [
                "id": 9_999, "hat_id": 1, "quantity": 2,
            ]))], db)
            var orders = (0..<1_100).map { PersistableFixtures.Order(hatId: $0, customerId: nil, quantity: 3) }
            orders.append(try PersistableFixtures.Order(databaseRow: DatabaseRow(data: ["id": 9_999, "hat_id": 2, "quantity": 4])))
            #expect(throws: DatabaseError.self) { try PersistableFixtures.Order.insertAll(orders, db) }
            let left = try Query<PersistableFixtures.Order>().allOrThrow(db)
            #expect(left.count == 1)
            #expect(left.first?.id == 9_999 && left.first?.hatId == 1 && left.first?.quantity == 2)
        }
    }
}

@Suite("Persistable in transactions")
struct PersistableTransactionTests {
    struct Abort: Error {}

    @Test(arguments: Backend.allCases)
    func saveInsideAWriteJoinsItsTransaction(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            #expect(throws: Abort.self) {
                try db.write { _ in
                    let saved = try PersistableFixtures.Store(name: "temp").saveOrThrow(db)
                    // Seen inside the transaction…
                    #expect(Query<PersistableFixtures.Store>().find(saved.id ?? 0, db)?.name == "temp")
                    throw Abort()
                }
            }
            // …and gone with its rollback.
            #expect(Query<PersistableFixtures.Store>().count(db) == 0)
            try db.write { _ in
                _ = try PersistableFixtures.Store(name: "kept").saveOrThrow()
                _ = try PersistableFixtures.Store(name: "kept too").saveOrThrow()
            }
            #expect(Query<PersistableFixtures.Store>().count(db) == 2)
        }
    }
}
