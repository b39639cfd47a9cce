import DriverPostgres
import DriverSQLite        // or DriverPostgres; both re-export Unity
import UnityPersistable
import Foundation
import Testing
import Unity

// The code of the UnityPersistable catalog's articles, compiled and run on both backends.
// Every ```swift block of those articles stands here line for line (DocumentationExamplesTests
// checks that).
//
// The records live in the `TailorDocs` namespace so that the seed's names (Hat, Store, Order,
// Customer) never meet the other test files' fixtures. The getting-started case sets the
// process-wide default database, so it is part of the serialized `ModelDefTests` suite; the
// other cases set a default for their own task only (`DefaultDatabase.withDatabase`).

enum TailorDocs {
    // MARK: GettingStarted: the seed's model

    // This class models a hat in a store.
    struct Hat: Persistable {
        var id: Int?
        var color: String
        var brimSize: Int
        var storeId: Int
        let createdAt: Timestamp?      // Timestamp is Foundation's Date
        let updatedAt: Timestamp?

        init(color: String, brimSize: Int, storeId: Int) {
            self.color = color
            self.brimSize = brimSize
            self.storeId = storeId
            self.id = nil
            self.createdAt = nil
            self.updatedAt = nil
        }

        // The store this hat is sold in, the orders made for it, and its customers.
        var store: Store? { return Query<Store>().find(storeId) }
        var orders: Query<Order> { return toMany() }                    // orders.hat_id = id
        var customers: Query<Customer> { return toMany(through: orders) }

        static var tableName: String { return "hats" }

        init(databaseRow: DatabaseRow) throws {
            self.id = try databaseRow.read("id")                         // Int?: nil for NULL
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
        var hats: Query<Hat> { toMany() }                                  // hats.store_id = id
    }

    struct Order: Persistable {
        var id: Int?
        var hatId: Int
        var customerId: Int
        init(hatId: Int, customerId: Int) {
            self.hatId = hatId
            self.customerId = customerId
        }
        static var tableName: String { "orders" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            hatId = try databaseRow.read("hat_id")
            customerId = try databaseRow.read("customer_id")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["hat_id": hatId, "customer_id": customerId]
        }
    }

    final class Customer: Persistable {
        var id: Int?
        var name: String
        init(name: String) { self.name = name }
        static var tableName: String { "customers" }
        required init(databaseRow: DatabaseRow) throws {             // a class: required
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
    }

    static func openOnSQLite(path: String) throws -> Database {
        let db = try Database(driver: SQLiteDriver(path: path))   // a file path, or ":memory:"
        DefaultDatabase.push(db)                                  // the default of every call given no database
        return db
    }

    static func openOnPostgres(postgresURL: String) throws -> Database {
        let db = try Database(driver: PostgresDriver(postgresURL))
        DefaultDatabase.push(db)
        return db
    }

    static func createSchema(_ db: Database) throws -> [String] {
        let migrator = Migrator(migrations: [
            Migration("0001_stores_and_hats", statements: [
                .createTable(SQLCreateTable("stores", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("name", .text, notNull: true),
                ])),
                .createTable(SQLCreateTable("hats", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("color", .text, notNull: true),
                    SQLColumnDefinition("brim_size", .int64, notNull: true),
                    SQLColumnDefinition("store_id", .int64, notNull: true, references: SQLForeignKeyReference("stores", columns: ["id"])),
                    SQLColumnDefinition("created_at", .date),
                    SQLColumnDefinition("updated_at", .date),
                ])),
            ]),
            Migration("0002_customers_and_orders", statements: [
                .createTable(SQLCreateTable("customers", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("name", .text, notNull: true),
                ])),
                .createTable(SQLCreateTable("orders", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("hat_id", .int64, notNull: true, references: SQLForeignKeyReference("hats", columns: ["id"])),
                    SQLColumnDefinition("customer_id", .int64, notNull: true, references: SQLForeignKeyReference("customers", columns: ["id"])),
                ])),
            ]),
        ])
        let applied = try migrator.migrate(db)   // the migrations it applied now: none the second time
        return applied
    }

    static func gettingStarted() throws {
        guard let store = Store(name: "Main St").save(), let storeId = store.id else { return }

        for (color, size) in [("red", 8), ("red", 11), ("red", 14), ("blue", 12), ("", 10)] {
            let hat = Hat(color: color, brimSize: size, storeId: storeId)
            let validation = Validation("hat")
                .validate(presenceOf: "color", hat.color)
                .validate("brimSize", hat.brimSize, inRange: 5...15)
            if validation.valid, let saved = hat.save() {
                print("saved hat \(saved.id ?? 0)")                 // 1, 2, 3, 4: the empty color is not saved
            }
        }
        #expect(Hat.query.count() == 4)

        var query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", [10])
        query = query.order("brim_size", .orderedAscending)
        let hats = query.all()                                       // the hats of sizes 11 and 14
        let last = query.last()                                      // the hat of size 14
        #expect(hats.map(\.brimSize) == [11, 14])
        #expect(last?.brimSize == 14)

        if var hat = query.first() {
            hat.brimSize = 12
            hat.save()                                               // an UPDATE: the hat has an id
        }
        #expect(query.first()?.brimSize == 12)

        if let blue = Hat.query.filter(["color": "blue"]).first() {
            blue.destroy()                                           // DELETE by id
        }
        #expect(Hat.query.count() == 3)

        if let hat = query.first(), let hatId = hat.id, let ann = Customer(name: "Ann").save(), let annId = ann.id {
            Order(hatId: hatId, customerId: annId).save()
            print(hat.customers.all().map(\.name))                   // ["Ann"]
            print(hat.store?.name ?? "")                             // "Main St"
        }
        #expect(query.first()?.customers.all().map(\.name) == ["Ann"])
        #expect(query.first()?.store?.name == "Main St")
    }

    // MARK: The landing page

    static func landing() {
        let red = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", [10])
            .order("brim_size", .orderedAscending)
        let hats = red.all()                                   // [Hat]
        let count = red.count()                                // counted by the database
        if var hat = red.first() {
            hat.brimSize = 12
            hat.save()                                         // an UPDATE: the hat has an id
        }
        #expect(hats.map(\.brimSize) == [11, 14] && count == 2)
        #expect(red.first()?.brimSize == 12)
    }

    // MARK: Queries

    static func fetching() throws {
        let red = Hat.query.filter(["color": "red"]).order("brim_size", .orderedDescending)
        let all = red.all()                          // [Hat]; a failure is logged and answers []
        let checked = try red.allOrThrow()           // the same, but a failure throws
        let first = red.first()                      // LIMIT 1
        let byId = red.find(2)                       // id 2, if it is red
        let count = red.count()                      // counted by the database
        let none = red.isEmpty                       // also isEmpty() and isEmptyOrThrow()
        #expect(all.map(\.brimSize) == [14, 11, 8])
        #expect(checked.count == 3 && first?.brimSize == 14 && byId?.brimSize == 11)
        #expect(count == 3 && !none)
    }

    static func building() throws {
        let sizes = Hat.query
            .filter("brim_size BETWEEN ? AND ?", [9, 15])             // raw SQL, values bound
            .filter("color", inList: ["red", "blue"])                  // IN, the column quoted
            .filter(["store_id": 1])                                   // =, the column quoted (nil: IS NULL)
            .order("brim_size", .orderedAscending)
            .limit(2)
            .offset(1)
            .all()
            .map(\.brimSize)                                           // [12, 14]
        let withStore = Hat.query
            .join(Store.self, fromColumn: "id", toColumn: "store_id")  // INNER JOIN stores ON stores.id = hats.store_id
            .filter("stores.name = ?", ["Main St"])
            .count()                                                   // 5
        #expect(sizes == [12, 14])
        #expect(withStore == 5)
    }

    static func sqlOfAQuery(_ db: Database) throws -> RenderedSQL {
        let query = Hat.query.filter(["color": "red"]).filter("brim_size > ?", [10]).order("brim_size", .orderedAscending)
        let sql = try query.toSql()
        // SELECT * FROM "hats" WHERE "hats"."color" = ? AND (brim_size > ?) ORDER BY "hats"."brim_size" ASC
        let rows = try db.fetchAll(sql: sql.sql, sql.bindings)        // runs as it is on either backend
        #expect(rows.count == 2)
        return sql
    }

    static func streamingAndPages() throws {
        var colors: [String] = []
        try Hat.query.order("id", .orderedAscending).forEach { hat in   // one row in memory at a time
            colors.append(hat.color)
        }
        let page = Hat.query.order("id", .orderedAscending).paginate(page: 2, pageSize: 3)
        let onPage = page.all().map(\.brimSize)                         // the 4th and 5th hats
        let pages = page.numberOfPages                                  // 2
        #expect(colors == ["red", "red", "red", "blue", "green"])
        #expect(onPage == [12, 9])
        #expect(pages == 2)
    }

    static func genericQueries() -> [Int] {
        let queries: [any QueryType] = [
            GenericQuery(recordType: Hat.self).filter(["color": "red"]),
            Query<Store>(),
        ]
        let counts = queries.map { $0.count() }                          // [3, 1]
        let records = GenericQuery(recordType: Hat.self).limit(2).allRecords()   // [any Persistable]
        #expect(records.count == 2)
        return counts
    }

    // MARK: Validations

    static func validations() {
        let hat = Hat(color: "", brimSize: 20, storeId: 1)
        let validation = Validation("hat")
            .validate(presenceOf: "color", hat.color)                    // blank
            .validate("brimSize", hat.brimSize, inRange: 5...15)         // tooHigh, data ["max": "15"]
        let valid = validation.valid                                     // false
        let messages = validation.errors.map(\.message)                  // ["blank", "tooHigh"]
        let onSize = validation["brimSize"].first?.data                  // ["max": "15"]
        #expect(!valid)
        #expect(messages == ["blank", "tooHigh"])
        #expect(onSize == ["max": "15"])
    }

    static func uniqueness() {
        let hat = Hat(color: "red", brimSize: 11, storeId: 1)
        let validation = Validation(Hat.self)                            // the model name "hat"
            .validate(uniquenessOf: ["color": hat.color, "brim_size": hat.brimSize], on: hat)
        let taken = validation.errors.first                              // key "brim_size_color", message "taken"
        #expect(taken == ValidationError(modelName: "hat", key: "brim_size_color", message: "taken"))
    }

    static func customChecks() {
        let hat = Hat(color: "plaid", brimSize: 6, storeId: 1)
        let validation = Validation("hat")
            .validate { hat.color == "plaid" ? [("color", "unfashionable", [:])] : [] }
            .withError("brimSize", "tooLow", data: ["min": "7"])
        #expect(validation.errors.map(\.key) == ["color", "brimSize"])
    }

    static func localizedMessages() -> [String] {
        let localization = DictionaryLocalization([
            "hat.errors.brim_size.too_low": "is smaller than \\(min)",
            "model.errors.blank": "can't be blank",
        ])
        let validation = Validation("hat")
            .validate(presenceOf: "color", "")
            .validate("brimSize", 3, inRange: 5...15)
        let messages = validation.errors.map { $0.localize(localization) }   // ["can't be blank", "is smaller than 5"]
        return messages
    }

    // MARK: Relationships

    static func relationships() throws {
        guard let hat = Hat.query.filter(["brim_size": 14]).first() else { return }
        let orders = hat.orders.all()                                   // WHERE orders.hat_id = ?
        let customers = hat.customers.order("name", .orderedAscending).all()
        let store = hat.store                                           // Query<Store>().find(storeId)
        let key = Hat.foreignKeyName()                                  // "hat_id"
        #expect(orders.count == 2)
        #expect(customers.map(\.name) == ["Ann", "Bob"])
        #expect(store?.name == "Main St" && key == "hat_id")
    }

    static func throughTheOtherWay() throws -> [String] {
        guard let ann = Query<Customer>().filter(["name": "Ann"]).first() else { return [] }
        let annsOrders: Query<Order> = ann.toMany()                     // orders.customer_id = ann's id
        let annsHats: Query<Hat> = ann.toMany(through: annsOrders)
        // SELECT hats.* FROM hats INNER JOIN orders ON orders.hat_id = hats.id WHERE orders.customer_id = ?
        return annsHats.all().map(\.color)
    }

    static func withoutNPlusOne() throws -> [(String, Int)] {
        let hatsAndOrders = try Hat.query.order("id", .orderedAscending).allIncluding(Query<Order>())
        // Two statements: the hats, then every order WHERE hat_id IN (SELECT hats.id FROM …)
        return hatsAndOrders.map { ($0.record.color, $0.children.count) }
    }

    // MARK: Batches and transactions

    static func batches() throws {
        let made = (1...100).map { Hat(color: "gray", brimSize: 5 + $0 % 10, storeId: 1) }
        let saved = try Hat.saveAll(made)                               // one transaction; ids assigned, in order
        let bigger = saved.map { hat -> Hat in
            var hat = hat
            hat.brimSize += 1
            return hat
        }
        _ = try Hat.saveAll(bigger)                                      // updates: every record has an id
        let destroyed = try Hat.destroyAll(Array(saved.prefix(10)))      // 10
        #expect(saved.allSatisfy { $0.id != nil })
        #expect(destroyed == 10)
        #expect(Hat.query.filter(["color": "gray"]).count() == 90)
    }

    static func transactions(_ db: Database) throws {
        do {
            try db.write { _ in
                let store = try Store(name: "Elm St").saveOrThrow()        // joins the transaction
                _ = try Hat(color: "green", brimSize: 7, storeId: store.id ?? 0).saveOrThrow()
                _ = try Hat(color: "green", brimSize: 7, storeId: 999).saveOrThrow()   // no store 999: a foreign-key error
            }
        } catch DatabaseError.constraintViolation(.foreignKey, _) {
            // Rolled back: neither the store nor the first hat was kept.
        }
        #expect(Query<Store>().filter(["name": "Elm St"]).count() == 0)
    }

    static func errors() {
        let gone = Hat(color: "red", brimSize: 9, storeId: 1)
        do {
            _ = try gone.saveOrThrow()
        } catch DatabaseError.constraintViolation(let kind, _) {
            print(kind)   // .foreignKey: there is no store 1 in this database
        } catch {
            print(error)
        }
        let unsaved = gone.save()   // nil, and the error is logged through the database's logger
        #expect(unsaved == nil)
    }

    // MARK: Existing schemas, enums and decimals

    enum HatStyle: StringPersistableEnum {
        case fedora, darkBlue, wideBrim
        static let cases: [HatStyle] = [.fedora, .darkBlue, .wideBrim]
    }

    struct Invoice: Persistable {
        var id: Int?
        var customer: String
        var total: Decimal
        var style: HatStyle?
        static var tableName: String { "Invoices" }                     // the table's own spelling
        static var decimalColumns: Set<String> { ["Total"] }
        init(customer: String, total: Decimal, style: HatStyle? = nil) {
            self.customer = customer
            self.total = total
            self.style = style
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            customer = try databaseRow.read("CustomerName")
            total = try databaseRow.read("Total")
            style = try databaseRow.read("Style")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["CustomerName": customer, "Total": total, "Style": style]    // "Note" is left to its default
        }
    }

    static func existingSchema() throws -> [String] {
        let ten = Decimal(string: "10.00") ?? 0
        Invoice(customer: "Ann", total: Decimal(string: "9.91") ?? 0, style: .darkBlue).save()
        Invoice(customer: "Bob", total: ten).save()
        Invoice(customer: "Cy", total: Decimal(string: "100.5") ?? 0).save()

        let large = Invoice.query.filter(SQLExpression.decimal(.column("Invoices", "Total")).greaterThanOrEquals(Decimal(10)))
            .all()                                                        // Bob's and Cy's: compared as numbers
        let cheapestFirst = Invoice.query.order("Total", .orderedAscending).all()   // 9.91, 10.00, 100.5: as numbers
        let exactlyTen = Invoice.query.filter(["Total": Decimal(10)]).all()   // matches the stored 10.00
        let darkBlue = Invoice.query.filter(["Style": HatStyle.darkBlue]).first()   // stored as "dark_blue"
        #expect(exactlyTen.map(\.customer) == ["Bob"])
        #expect(darkBlue?.customer == "Ann")
        #expect(large.map(\.customer).sorted() == ["Bob", "Cy"])
        return cheapestFirst.map(\.customer)
    }
}

/// The schema of the existing-schema article: SQLite declares its money column TEXT, as the
/// sample database it comes from does; PostgreSQL has NUMERIC.
private func createInvoices(_ db: Database, _ backend: Backend) throws {
    let total = backend == .sqlite ? "TEXT" : "NUMERIC(10, 2)"
    let id = backend == .sqlite ? "INTEGER PRIMARY KEY" : "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
    try db.write { conn in
        try conn.execute(sql: """
            CREATE TABLE "Invoices" (
              id \(id),
              "CustomerName" TEXT NOT NULL,
              "Total" \(total) NOT NULL,
              "Style" TEXT,
              "Note" TEXT DEFAULT 'none'
            )
            """)
    }
}

extension ModelDefTests {
    /// The getting-started article, opening the database as it does (the process-wide default).
    @Test(arguments: Backend.allCases)
    func docPersistableGettingStarted(_ backend: Backend) throws {
        let baseDepth = DefaultDatabase.depth
        let db: Database
        var dropSchema: (() -> Void)?
        switch backend {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("unity-tailor-docs-\(UUID().uuidString).sqlite").path
            dropSchema = { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
            db = try TailorDocs.openOnSQLite(path: path)
        case .postgres:
            // A schema of the test's own: the URL names it (libpq's `options`), so the
            // article's call stays as it is.
            let test = try TestDatabase(.postgres)
            dropSchema = { test.tearDown() }
            let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
            if url.contains("pooler=") {
                // Through a transaction-mode pooler, which refuses libpq's `options`: the
                // schema is pinned per transaction by the driver's search path instead.
                db = try Database(driver: PostgresDriver(url, searchPath: test.location))
                DefaultDatabase.push(db)
            } else {
                let separator = url.contains("?") ? "&" : "?"
                db = try TailorDocs.openOnPostgres(postgresURL: url + separator + "options=-csearch_path%3D\(test.location)")
            }
        }
        defer {
            while DefaultDatabase.depth > baseDepth { DefaultDatabase.pop()?.close() }
            dropSchema?()
        }
        #expect(DefaultDatabase.current === db)
        #expect(try TailorDocs.createSchema(db) == ["0001_stores_and_hats", "0002_customers_and_orders"])
        #expect(try TailorDocs.createSchema(db) == [])
        try TailorDocs.gettingStarted()
        // The values written, read back through the core: the validation kept the empty color out.
        let colors = try db.read { try $0.fetchAll(sql: "SELECT color FROM hats ORDER BY id").map { try $0.decode(String.self, at: 0) } }
        #expect(colors == ["red", "red", "red"])
    }
}

@Suite("Documentation: the UnityPersistable catalog's examples")
struct PersistableArticleExamples {
    /// A database with the getting-started schema, the default of `body`'s task, holding a
    /// store (id 1) and the hats red 8, red 11, red 14, blue 12 and green 9.
    func withHats(_ backend: Backend, _ body: (Database) throws -> Void) throws {
        try withTestDatabase(backend) { db in
            _ = try TailorDocs.createSchema(db)
            try DefaultDatabase.withDatabase(db) {
                let store = try TailorDocs.Store(name: "Main St").saveOrThrow()
                #expect(store.id == 1)
                for (color, size) in [("red", 8), ("red", 11), ("red", 14), ("blue", 12), ("green", 9)] {
                    _ = try TailorDocs.Hat(color: color, brimSize: size, storeId: 1).saveOrThrow()
                }
                try body(db)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func queries(_ backend: Backend) throws {
        try withHats(backend) { db in
            try TailorDocs.fetching()
            try TailorDocs.building()
            let sql = try TailorDocs.sqlOfAQuery(db)
            #expect(sql.sql == #"SELECT * FROM "hats" WHERE "hats"."color" = ? AND (brim_size > ?) ORDER BY "hats"."brim_size" ASC"#)
            #expect(sql.bindings == [.text("red"), .integer(10)])
            try TailorDocs.streamingAndPages()
            #expect(TailorDocs.genericQueries() == [3, 1])
        }
    }

    @Test(arguments: Backend.allCases)
    func landingPage(_ backend: Backend) throws {
        try withHats(backend) { _ in TailorDocs.landing() }
    }

    @Test(arguments: Backend.allCases)
    func validations(_ backend: Backend) throws {
        try withHats(backend) { _ in
            TailorDocs.validations()
            TailorDocs.uniqueness()
            TailorDocs.customChecks()
            #expect(TailorDocs.localizedMessages() == ["can't be blank", "is smaller than 5"])
        }
    }

    @Test(arguments: Backend.allCases)
    func relationships(_ backend: Backend) throws {
        try withHats(backend) { _ in
            let ann = try TailorDocs.Customer(name: "Ann").saveOrThrow()
            let bob = try TailorDocs.Customer(name: "Bob").saveOrThrow()
            for (hat, customer) in [(3, ann), (3, bob), (1, ann)] {
                _ = try TailorDocs.Order(hatId: hat, customerId: try #require(customer.id)).saveOrThrow()
            }
            try TailorDocs.relationships()
            #expect(try TailorDocs.throughTheOtherWay().sorted() == ["red", "red"])
            let counts = try TailorDocs.withoutNPlusOne()
            #expect(counts.map(\.1) == [1, 0, 2, 0, 0])
            #expect(counts.map(\.0) == ["red", "red", "red", "blue", "green"])
        }
    }

    @Test(arguments: Backend.allCases)
    func batchesAndTransactions(_ backend: Backend) throws {
        try withHats(backend) { db in
            try TailorDocs.batches()
            try TailorDocs.transactions(db)
            #expect(TailorDocs.Hat.query.filter(["color": "green"]).count() == 1)
        }
        try withTestDatabase(backend) { db in
            _ = try TailorDocs.createSchema(db)
            DefaultDatabase.withDatabase(db) { TailorDocs.errors() }
        }
    }

    @Test(arguments: Backend.allCases)
    func existingSchemas(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try createInvoices(db, backend)
            try DefaultDatabase.withDatabase(db) {
                #expect(try TailorDocs.existingSchema() == ["Ann", "Bob", "Cy"])
                let stored = try db.read { try $0.fetchAll(sql: #"SELECT "Style", "Note" FROM "Invoices" ORDER BY id"#) }
                #expect(try stored.map { try $0.decodeIfPresent(String.self, column: "Style") } == ["dark_blue", nil, nil])
                #expect(try stored.map { try $0.decode(String.self, column: "Note") } == ["none", "none", "none"])
            }
        }
    }
}
