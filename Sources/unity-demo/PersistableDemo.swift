// The active-record flavor (UnityPersistable) in the demo: the seed's Hat / Store / Order /
// Customer, as written there (modulo Swift 6 syntax), on whatever database main.swift opened.
import Foundation
import Unity
import UnityPersistable

enum PersistableDemo {
    // This class models a hat in a store.
    struct Hat: Persistable {
        var id: Int?
        var color: String
        var brimSize: Int
        var storeId: Int
        let createdAt: Timestamp?
        let updatedAt: Timestamp?

        init(color: String, brimSize: Int, storeId: Int) {
            self.color = color
            self.brimSize = brimSize
            self.storeId = storeId
            self.id = nil
            self.createdAt = nil
            self.updatedAt = nil
        }

        var store: Store? { return Query<Store>().find(storeId) }
        var orders: Query<Order> { return toMany() }
        var customers: Query<Customer> { return toMany(through: orders) }

        static var tableName: String { return "hats" }

        init(databaseRow: DatabaseRow) throws {
            self.id = try databaseRow.read("id")
            self.color = try databaseRow.read("color")
            self.brimSize = try databaseRow.read("brim_size")
            self.storeId = try databaseRow.read("store_id")
            self.createdAt = try databaseRow.read("created_at")
            self.updatedAt = try databaseRow.read("updated_at")
        }

        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            return [
                "color": color,
                "brim_size": brimSize,
                "store_id": storeId,
                "created_at": createdAt,
                "updated_at": updatedAt
            ]
        }

        static let query = Query<Hat>()
    }

    struct Store: Persistable {
        var id: Int?
        var name: String
        init(name: String) { self.name = name }
        static var tableName: String { "stores" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
    }

    struct Order: Persistable {
        var id: Int?
        var hatId: Int
        var customerId: Int
        init(hatId: Int, customerId: Int) { self.hatId = hatId; self.customerId = customerId }
        static var tableName: String { "orders" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            hatId = try databaseRow.read("hat_id")
            customerId = try databaseRow.read("customer_id")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["hat_id": hatId, "customer_id": customerId] }
    }

    final class Customer: Persistable {
        var id: Int?
        var name: String
        init(name: String) { self.name = name }
        static var tableName: String { "customers" }
        required init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
    }

    static func createTables(_ db: Database) throws {
        let id = SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement)
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("stores", columns: [id, SQLColumnDefinition("name", .text, notNull: true)])))
            try conn.execute(.createTable(SQLCreateTable("hats", columns: [
                id, SQLColumnDefinition("color", .text, notNull: true), SQLColumnDefinition("brim_size", .int64, notNull: true),
                SQLColumnDefinition("store_id", .int64, notNull: true), SQLColumnDefinition("created_at", .date),
                SQLColumnDefinition("updated_at", .date),
            ])))
            try conn.execute(.createTable(SQLCreateTable("orders", columns: [
                id, SQLColumnDefinition("hat_id", .int64, notNull: true), SQLColumnDefinition("customer_id", .int64, notNull: true),
            ])))
            try conn.execute(.createTable(SQLCreateTable("customers", columns: [id, SQLColumnDefinition("name", .text, notNull: true)])))
        }
    }

    /// Runs the tour on `db` (also the default database, as the seed's calls expect).
    static func run(_ db: Database) throws {
        section("Active record (UnityPersistable): the seed's Hat, Store, Order and Customer")
        try createTables(db)
        try DefaultDatabase.withDatabase(db) {
            guard let store = Store(name: "Main St").save(), let storeId = store.id else { return }
            for (color, size) in [("red", 8), ("red", 11), ("red", 14), ("blue", 12), ("", 10), ("red", 30)] {
                let hat = Hat(color: color, brimSize: size, storeId: storeId)
                let validation = Validation("hat")
                    .validate(presenceOf: "color", hat.color)
                    .validate("brimSize", hat.brimSize, inRange: 5...15)
                if validation.valid {
                    hat.save()
                } else {
                    let messages = DictionaryLocalization([
                        "model.errors.blank": "can't be blank",
                        "hat.errors.brim_size.too_high": "brim must be at most \\(max)",
                    ])
                    print("not saved (\(color.isEmpty ? "no color" : color), \(size)): "
                        + validation.errors.map { "\($0.key) \($0.localize(messages))" }.joined(separator: "; "))
                }
            }

            var query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", ["10"])
            query = query.order("brim_size", .orderedAscending)
            print("toSql: \(try query.toSql().sql)")
            for hat in query.all() {
                print("red hat \(hat.id ?? 0) with brim \(hat.brimSize), created \(hat.createdAt.map { DateText.format($0) } ?? "?")")
            }
            if let hat = query.last() {
                print("Last hat is \(hat.id ?? 0) (brim \(hat.brimSize)); its store: \(hat.store?.name ?? "none")")
                if let ann = Customer(name: "Ann").save(), let bob = Customer(name: "Bob").save(),
                   let hatId = hat.id, let annId = ann.id, let bobId = bob.id {
                    Order(hatId: hatId, customerId: annId).save()
                    Order(hatId: hatId, customerId: bobId).save()
                }
                print("hat.orders.count() = \(hat.orders.count()); customers: \(hat.customers.order("name", .orderedAscending).all().map(\.name))")
            } else {
                print("No hat")
            }
            print("count \(Hat.query.count()), pages of 2: \(Hat.query.paginate(page: 1, pageSize: 2).numberOfPages)")
            let withOrders = try Hat.query.order("id", .orderedAscending).allIncluding(Query<Order>())
            print("hats with their orders in two statements: \(withOrders.map { "\($0.record.id ?? 0):\($0.children.count)" })")
            print("a column name is an identifier, never SQL: Query<Hat>().order(\"color; DROP TABLE hats\", …).all() → "
                + "\(Query<Hat>().order("color; DROP TABLE hats", .orderedAscending).all().count) hats, and the table still has \(Hat.query.count())")
        }
    }
}
