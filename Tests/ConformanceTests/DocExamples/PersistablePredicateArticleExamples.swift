import Foundation
import Testing
import Unity
import UnityPersistable

// The code of UnityPersistable's "Filtering with #Predicate", compiled and run on both backends.
// Its records live in a namespace of their own, so the seed's names never meet other fixtures.

enum TailorPredicateDocs {
    struct Store: Persistable, PredicateMappable {
        var id: Int?
        var name: String
        init(name: String) { self.name = name }
        static var tableName: String { "stores" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
        var hats: Query<Hat> { toMany() }
        var hatList: [Hat] { hats.all() }

        static let predicateSchema = PredicateSchema(Store.self)
            .column(\Store.id, "id")
            .column(\Store.name, "name")
            .toMany(\Store.hatList)                           // hats.store_id = stores.id
    }

    struct Hat: Persistable, PredicateMappable {
        var id: Int?
        var color: String
        var brimSize: Int
        var nick: String?
        var storeId: Int?

        var store: Store? { storeId.flatMap { Query<Store>().find($0) } }
        var orders: Query<Order> { toMany() }
        var orderList: [Order] { orders.all() }               // a collection, for to-many key paths
        var shout: String { color.uppercased() }              // computed: no column

        static var tableName: String { "hats" }

        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            color = try databaseRow.read("color")
            brimSize = try databaseRow.read("brim_size")
            nick = try databaseRow.read("nick")
            storeId = try databaseRow.read("store_id")
        }

        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["color": color, "brim_size": brimSize, "nick": nick, "store_id": storeId]
        }

        static let predicateSchema = PredicateSchema(Hat.self)   // the table "hats", keyed by id
            .column(\Hat.id, "id")
            .column(\Hat.color, "color")
            .column(\Hat.brimSize, "brim_size")
            .column(\Hat.nick, "nick")
            .column(\Hat.storeId, "store_id")
            .toOne(\Hat.store)                                // hats.store_id = stores.id
            .toMany(\Hat.orderList)                           // orders.hat_id = hats.id
    }

    struct Order: Persistable, PredicateMappable {
        var id: Int?
        var hatId: Int
        var quantity: Int
        var note: String?
        init(hatId: Int, quantity: Int, note: String?) {
            self.hatId = hatId
            self.quantity = quantity
            self.note = note
        }
        static var tableName: String { "orders" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            hatId = try databaseRow.read("hat_id")
            quantity = try databaseRow.read("quantity")
            note = try databaseRow.read("note")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["hat_id": hatId, "quantity": quantity, "note": note]
        }
        static let predicateSchema = PredicateSchema(Order.self)
            .column(\Order.id, "id")
            .column(\Order.quantity, "quantity")
            .column(\Order.note, "note")
    }

    static func filtering() throws -> [Hat] {
        let hats = try Hat.query
            .filter(#Predicate<Hat> { $0.brimSize > 10 && $0.nick != "old" })
            .order(SortDescriptor(\Hat.brimSize, order: .reverse))
            .all()                                            // nick nil is kept: nil != "old"
        return hats
    }

    static func composing() throws -> (hats: [Hat], count: Int) {
        let query = try Hat.query.filter(["color": "red"])              // the flavor's own filter
            .filter(#Predicate<Hat> { $0.brimSize > 10 })                 // AND-ed with it
            .order("store_id", .orderedAscending)                         // orderings apply in the order added
            .order(SortDescriptor(\Hat.nick))                             // nil first, as Swift sorts
            .limit(10)
        let hats = query.all()
        let count = query.count()                                         // counted by the database
        return (hats, count)
    }

    static func relationships() throws -> [[Int]] {
        let atAtelier = try Hat.query.filter(#Predicate<Hat> { $0.store?.name == "Atelier" }).all()
        let neverOrdered = try Hat.query.filter(#Predicate<Hat> { $0.orderList.isEmpty }).all()
        let bigOrders = try Hat.query.filter(#Predicate<Hat> { $0.orderList.contains { $0.quantity >= 3 } }).all()
        let busyStores = try Store.query.filter(#Predicate<Store> { $0.hatList.count >= 2 }).all()
        guard let first = Hat.query.find(1) else { return [] }
        let gifts = try first.orders.filter(#Predicate<Order> { $0.note == "gift" }).all()
        return [atAtelier, neverOrdered, bigOrders].map { $0.compactMap(\.id) } + [busyStores.compactMap(\.id), gifts.compactMap(\.id)]
    }

    static func untranslatable() -> String {
        do {
            let shouting = try Hat.query.filter(#Predicate<Hat> { $0.shout == "RED" })
            return "\(shouting.count())"
        } catch let error as PredicateTranslationError {
            print(error.reason)               // the key path … maps to no column of "hats": add it to Hat.predicateSchema
            return error.reason
        } catch {
            return "\(error)"
        }
    }
}

extension TailorPredicateDocs.Hat {
    init(color: String, brimSize: Int, nick: String?, storeId: Int?) {
        self.color = color
        self.brimSize = brimSize
        self.nick = nick
        self.storeId = storeId
    }
}

@Suite("Documentation: UnityPersistable's Filtering with #Predicate")
struct PersistablePredicateArticleExamples {
    /// Stores Atelier (1) and Bowler (2); hats red 8 (no nick, Atelier), red 11 "old"
    /// (Atelier), red 14 "top" (Bowler), blue 12 (no nick, Bowler); orders: hat 1 ×1 "gift",
    /// hat 3 ×3 and ×1.
    func withShop(_ backend: Backend, _ body: () throws -> Void) throws {
        try withTestDatabase(backend) { db in
            let id = SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement)
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("stores", columns: [id, SQLColumnDefinition("name", .text, notNull: true)])))
                try conn.execute(.createTable(SQLCreateTable("hats", columns: [
                    id, SQLColumnDefinition("color", .text, notNull: true), SQLColumnDefinition("brim_size", .int64, notNull: true),
                    SQLColumnDefinition("nick", .text), SQLColumnDefinition("store_id", .int64)])))
                try conn.execute(.createTable(SQLCreateTable("orders", columns: [
                    id, SQLColumnDefinition("hat_id", .int64, notNull: true), SQLColumnDefinition("quantity", .int64, notNull: true),
                    SQLColumnDefinition("note", .text)])))
            }
            try DefaultDatabase.withDatabase(db) {
                typealias Docs = TailorPredicateDocs
                // One save at a time, so that the ids follow the order written here.
                for name in ["Atelier", "Bowler"] { _ = try Docs.Store(name: name).saveOrThrow() }
                for hat in [
                    Docs.Hat(color: "red", brimSize: 8, nick: nil, storeId: 1), Docs.Hat(color: "red", brimSize: 11, nick: "old", storeId: 1),
                    Docs.Hat(color: "red", brimSize: 14, nick: "top", storeId: 2), Docs.Hat(color: "blue", brimSize: 12, nick: nil, storeId: 2),
                ] {
                    _ = try hat.saveOrThrow()
                }
                for order in [Docs.Order(hatId: 1, quantity: 1, note: "gift"), Docs.Order(hatId: 3, quantity: 3, note: nil),
                              Docs.Order(hatId: 3, quantity: 1, note: nil)] {
                    _ = try order.saveOrThrow()
                }
                try body()
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func filteringAndComposing(_ backend: Backend) throws {
        try withShop(backend) { () throws in
            #expect(try TailorPredicateDocs.filtering().compactMap(\.id) == [3, 4])
            let composed = try TailorPredicateDocs.composing()
            #expect(composed.hats.compactMap(\.id) == [2, 3])
            #expect(composed.count == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsAndErrors(_ backend: Backend) throws {
        try withShop(backend) { () throws in
            #expect(try TailorPredicateDocs.relationships() == [[1, 2], [2, 4], [3], [1, 2], [1]])
            let reason = TailorPredicateDocs.untranslatable()
            #expect(reason.contains("maps to no column of \"hats\": add it to Hat.predicateSchema"))
        }
    }
}
