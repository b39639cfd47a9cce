import Foundation
import Logging
import Testing
import Unity
import UnityPersistable

/// The active-record flavor's fixture world: the seed's Hat / Store / Order / Customer, in a
/// namespace of their own so that they never clash with other flavors' fixtures.
enum PersistableFixtures {
    // This class models a hat in a store. (The seed's example as written, modulo Swift 6:
    // `[String: (any DatabaseValueConvertible)?]` and `.orderedAscending`.)
    struct Hat: Persistable {

        // MARK: - Structure

        // The primary key of the record.
        var id: Int?

        // The color of the hat.
        var color: String

        // The size of the hat's brim.
        var brimSize: Int

        // The id of the store this hat is sold in.
        var storeId: Int

        // The time when the hat was created.
        let createdAt: Timestamp?

        // The time when the hat was last updated.
        let updatedAt: Timestamp?

        init(color: String, brimSize: Int, storeId: Int) {
            self.color = color
            self.brimSize = brimSize
            self.storeId = storeId
            self.id = nil
            self.createdAt = nil
            self.updatedAt = nil
        }

        //MARK: - Associations

        // This method gets the store that this hat is sold in.
        var store: Store? { return Query<Store>().find(storeId) }

        // This method gets the orders that were made for this hat.
        //
        // It returns a Query rather than an Array so that you can run other
        // filters or related queries on this relationship without having to fetch
        // all the records from the database.
        var orders: Query<Order> { return toMany() }

        // This methods gets the customers who have purchased this hat.
        var customers: Query<Customer> { return toMany(through: orders) }

        //MARK: - Persistence

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
        var hats: Query<Hat> { toMany() }
    }

    struct Order: Persistable {
        var id: Int?
        var hatId: Int
        var customerId: Int?
        /// nil on insert: the column's default (1) applies.
        var quantity: Int?
        var note: String?
        init(hatId: Int, customerId: Int?, quantity: Int? = nil, note: String? = nil) {
            self.hatId = hatId
            self.customerId = customerId
            self.quantity = quantity
            self.note = note
        }
        static var tableName: String { "orders" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            hatId = try databaseRow.read("hat_id")
            customerId = try databaseRow.read("customer_id")
            quantity = try databaseRow.read("quantity")
            note = try databaseRow.read("note")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["hat_id": hatId, "customer_id": customerId, "quantity": quantity, "note": note]
        }
    }

    /// A class record: `required init(databaseRow:)`.
    final class Customer: Persistable {
        var id: Int?
        var name: String?
        var orderId: Int?
        init(name: String?, orderId: Int? = nil) {
            self.name = name
            self.orderId = orderId
        }
        static var tableName: String { "customers" }
        required init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
            orderId = try databaseRow.read("order_id")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name, "order_id": orderId] }
    }

    /// A type name of two words, for ``Persistable/foreignKeyName()``.
    struct StoreItem: Persistable {
        var id: Int?
        static var tableName: String { "store_items" }
        init(databaseRow: DatabaseRow) throws { id = try databaseRow.read("id") }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { [:] }
    }

    /// Creates the fixture tables through the core's AST.
    static func createTables(_ db: Database) throws {
        let id = SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement)
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("stores", columns: [
                id, SQLColumnDefinition("name", .text, notNull: true),
            ])))
            try conn.execute(.createTable(SQLCreateTable("hats", columns: [
                id,
                SQLColumnDefinition("color", .text, notNull: true),
                SQLColumnDefinition("brim_size", .int64, notNull: true),
                SQLColumnDefinition("store_id", .int64, notNull: true),
                SQLColumnDefinition("created_at", .date),
                SQLColumnDefinition("updated_at", .date),
            ])))
            try conn.execute(.createTable(SQLCreateTable("orders", columns: [
                id,
                SQLColumnDefinition("hat_id", .int64, notNull: true),
                SQLColumnDefinition("customer_id", .int64),
                SQLColumnDefinition("quantity", .int64, notNull: true, default: .literal(.integer(1))),
                SQLColumnDefinition("note", .text),
            ])))
            try conn.execute(.createTable(SQLCreateTable("customers", columns: [
                id,
                SQLColumnDefinition("name", .text, notNull: true),
                SQLColumnDefinition("order_id", .int64),
            ])))
            try conn.execute(.createTable(SQLCreateTable("store_items", columns: [id])))
        }
    }

    /// A fresh database on `backend` with the fixture tables, the default database of `body`'s
    /// scope (task-local, so suites run in parallel).
    static func withWorld<T>(_ backend: Backend, configuration: DatabaseConfiguration = DatabaseConfiguration(),
                             _ body: (Database) throws -> T) throws -> T {
        try withTestDatabase(backend, configuration: configuration) { db in
            try createTables(db)
            return try DefaultDatabase.withDatabase(db) { try body(db) }
        }
    }

    /// A logger that keeps every message, and the messages it kept.
    static func capturingConfiguration(echo: Bool = false) -> (DatabaseConfiguration, Mutexed<[String]>) {
        let captured = Mutexed<[String]>([])
        var logger = Logger(label: "unity.test.persistable") { _ in CapturingLogHandler(captured) }
        logger.logLevel = .trace
        return (DatabaseConfiguration(echo: echo, logger: logger), captured)
    }
}
