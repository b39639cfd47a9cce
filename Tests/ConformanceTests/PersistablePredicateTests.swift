import Foundation
import Testing
import Unity
import UnityPersistable

/// `#Predicate` and `SortDescriptor` in the active-record flavor: `Hat.query.filter(#Predicate…)`
/// and `order(SortDescriptor(…))`, composed with the rest of `Query`. Every case is checked
/// against a literal list of ids AND against `predicate.evaluate` over the same records in
/// Swift (relationship properties run their own queries there), on both backends.
@Suite("Persistable: #Predicate and SortDescriptor")
struct PersistablePredicateTests {
    enum Style: String, StringPersistableEnum, Codable, Sendable {
        case fedora, darkBlue
        static let cases: [Style] = [.fedora, .darkBlue]
    }

    /// Equatable, so that a predicate can compare a hat's store with nil.
    struct Store: Persistable, PredicateMappable, Equatable, Sendable {
        var id: Int?
        var name: String
        var city: String?
        static var tableName: String { "stores" }
        init(name: String, city: String?) {
            self.name = name
            self.city = city
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
            city = try databaseRow.read("city")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name, "city": city] }
        var hats: Query<Hat> { toMany() }
        var hatList: [Hat] { hats.order("id", .orderedAscending).all() }

        static let predicateSchema = PredicateSchema(Store.self)
            .column(\Store.id, "id")
            .column(\Store.name, "name")
            .column(\Store.city, "city")
            .toMany(\Store.hatList)
    }

    struct Hat: Persistable, PredicateMappable, Sendable {
        var id: Int?
        var color: String
        var brimSize: Int
        var nick: String?
        var weight: Double?
        var price: Decimal
        var onSale: Bool
        var madeAt: Date
        var tag: UUID?
        var style: Style
        var storeId: Int?

        var store: Store? { storeId.flatMap { Query<Store>().find($0) } }
        var orders: Query<Order> { toMany() }
        var orderList: [Order] { orders.all() }
        var customers: Query<Customer> { toMany(through: orders) }
        var customerList: [Customer] { customers.all() }
        /// Computed from a column: no column of its own.
        var shout: String { color.uppercased() }

        static var tableName: String { "hats" }
        init(id: Int? = nil, color: String, brimSize: Int, nick: String?, weight: Double?, price: String, onSale: Bool,
             madeAt: Double, tag: UUID?, style: Style, storeId: Int?) {
            self.id = id
            self.color = color
            self.brimSize = brimSize
            self.nick = nick
            self.weight = weight
            self.price = Decimal(string: price) ?? .nan
            self.onSale = onSale
            self.madeAt = Date(timeIntervalSince1970: madeAt)
            self.tag = tag
            self.style = style
            self.storeId = storeId
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            color = try databaseRow.read("color")
            brimSize = try databaseRow.read("brim_size")
            nick = try databaseRow.read("nick")
            weight = try databaseRow.read("weight")
            price = try databaseRow.read("price")
            onSale = try databaseRow.read("on_sale")
            madeAt = try databaseRow.read("made_at")
            tag = try databaseRow.read("tag")
            style = try databaseRow.read("style")
            storeId = try databaseRow.read("store_id")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["color": color, "brim_size": brimSize, "nick": nick, "weight": weight, "price": price, "on_sale": onSale,
             "made_at": madeAt, "tag": tag, "style": style, "store_id": storeId]
        }

        static let predicateSchema = PredicateSchema(Hat.self)
            .column(\Hat.id, "id")
            .column(\Hat.color, "color")
            .column(\Hat.brimSize, "brim_size")
            .column(\Hat.nick, "nick")
            .column(\Hat.weight, "weight")
            .column(\Hat.price, "price")
            .column(\Hat.onSale, "on_sale")
            .column(\Hat.madeAt, "made_at")
            .column(\Hat.tag, "tag")
            .column(\Hat.style, "style")
            .column(\Hat.storeId, "store_id")
            .toOne(\Hat.store)
            .toMany(\Hat.orderList)
            .toMany(\Hat.customerList, through: Order.self)
    }

    struct Order: Persistable, PredicateMappable, Sendable {
        var id: Int?
        var hatId: Int
        var customerId: Int
        var quantity: Int
        var note: String?
        var hat: Hat? { Query<Hat>().find(hatId) }
        var customer: Customer? { Query<Customer>().find(customerId) }
        static var tableName: String { "orders" }
        init(hatId: Int, customerId: Int, quantity: Int, note: String?) {
            self.hatId = hatId
            self.customerId = customerId
            self.quantity = quantity
            self.note = note
        }
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

        static let predicateSchema = PredicateSchema(Order.self)
            .column(\Order.id, "id")
            .column(\Order.quantity, "quantity")
            .column(\Order.note, "note")
            .toOne(\Order.hat)
            .toOne(\Order.customer)
    }

    struct Customer: Persistable, PredicateMappable, Sendable {
        var id: Int?
        var name: String
        static var tableName: String { "customers" }
        init(name: String) { self.name = name }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
        var orderList: [Order] { toMany().order("id", .orderedAscending).all() }

        static let predicateSchema = PredicateSchema(Customer.self)
            .column(\Customer.id, "id")
            .column(\Customer.name, "name")
            .toMany(\Customer.orderList)
    }

    /// An order that loads its hat when it is read: a to-one key path that is not optional,
    /// so that descriptors can sort through it.
    struct Sale: Persistable, PredicateMappable, Sendable {
        var id: Int?
        var quantity: Int
        var hat: Hat
        static var tableName: String { "orders" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            quantity = try databaseRow.read("quantity")
            let hatId: Int = try databaseRow.read("hat_id")
            guard let hat = try Query<Hat>().findOrThrow(hatId) else {
                throw PersistableError.recordNotFound(tableName: Hat.tableName, id: hatId)
            }
            self.hat = hat
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["quantity": quantity, "hat_id": hat.id] }

        static let predicateSchema = PredicateSchema(Sale.self)
            .column(\Sale.id, "id")
            .column(\Sale.quantity, "quantity")
            .toOne(\Sale.hat)                                  // orders.hat_id = hats.id
    }

    /// A schema built for another table than the record's.
    struct Misnamed: Persistable, PredicateMappable, Sendable {
        var id: Int?
        static var tableName: String { "hats" }
        init(databaseRow: DatabaseRow) throws { id = try databaseRow.read("id") }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { [:] }
        static let predicateSchema = PredicateSchema(table: "hat").column(\Misnamed.id, "id")
    }

    static let tagA = UUID(uuidString: "00000000-0000-0000-0000-00000000000A") ?? UUID()
    static let tagB = UUID(uuidString: "FFFFFFFF-0000-0000-0000-00000000000B") ?? UUID()

    // Stores: 1 Atelier (Paris), 2 Bowler (no city), 3 Cap (Oslo, no hats).
    // Customers: 1 Ann, 2 Bob, 3 Cy, 4 Dee (no orders).
    // Orders 1…6: hat 1 by Ann ×2 and Bob ×1 (gift); hat 2 by Ann ×5; hat 4 by Cy ×1 (note "");
    // hat 6 by Bob ×3 and by Bob again ×1.
    static let hats: [Hat] = [
        Hat(color: "red", brimSize: 10, nick: nil, weight: 0.5, price: "10.00", onSale: true,
            madeAt: 631_152_000, tag: nil, style: .fedora, storeId: 1),                          // 1990-01-01
        Hat(color: "Red", brimSize: 12, nick: "bobby", weight: -1.25, price: "9.91", onSale: false,
            madeAt: -299_246_400, tag: tagA, style: .darkBlue, storeId: 1),                       // 1960-07-10
        Hat(color: "blue", brimSize: 12, nick: "ace", weight: nil, price: "12345678901234567890.12", onSale: true,
            madeAt: 1_582_965_000, tag: nil, style: .darkBlue, storeId: 2),                       // 2020-02-29
        Hat(color: "\u{00C9}mile", brimSize: 14, nick: "em", weight: 0, price: "12345678901234567890.13", onSale: false,
            madeAt: -1, tag: tagB, style: .fedora, storeId: 2),                                   // a second before 1970
        Hat(color: "", brimSize: 8, nick: nil, weight: 2.5, price: "-1", onSale: true,
            madeAt: 0, tag: nil, style: .fedora, storeId: nil),
        Hat(color: "zed", brimSize: 16, nick: "Zed", weight: 33, price: "0", onSale: false,
            madeAt: -2_208_988_800, tag: nil, style: .darkBlue, storeId: 1),                      // 1900-01-01
        Hat(color: "bo%b", brimSize: -3, nick: "x_y", weight: nil, price: "0.01", onSale: true,
            madeAt: 946_684_800, tag: nil, style: .fedora, storeId: 2),                           // 2000-01-01
    ]

    static func createTables(_ db: Database) throws {
        let id = SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement)
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("stores", columns: [
                id, SQLColumnDefinition("name", .text, notNull: true), SQLColumnDefinition("city", .text)])))
            try conn.execute(.createTable(SQLCreateTable("hats", columns: [
                id,
                SQLColumnDefinition("color", .text, notNull: true),
                SQLColumnDefinition("brim_size", .int64, notNull: true),
                SQLColumnDefinition("nick", .text),
                SQLColumnDefinition("weight", .double),
                SQLColumnDefinition("price", .decimal, notNull: true),
                SQLColumnDefinition("on_sale", .bool, notNull: true),
                SQLColumnDefinition("made_at", .date, notNull: true),
                SQLColumnDefinition("tag", .uuid),
                SQLColumnDefinition("style", .text, notNull: true),
                SQLColumnDefinition("store_id", .int64),
            ])))
            try conn.execute(.createTable(SQLCreateTable("customers", columns: [
                id, SQLColumnDefinition("name", .text, notNull: true)])))
            try conn.execute(.createTable(SQLCreateTable("orders", columns: [
                id,
                SQLColumnDefinition("hat_id", .int64, notNull: true),
                SQLColumnDefinition("customer_id", .int64, notNull: true),
                SQLColumnDefinition("quantity", .int64, notNull: true),
                SQLColumnDefinition("note", .text),
            ])))
        }
    }

    /// A fresh database with the stores, hats, customers and orders above, the default database
    /// of `body`'s task (relationship properties read it while Swift evaluates a predicate).
    static func withShop(_ backend: Backend, _ body: (Database) throws -> Void) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try createTables(db)
            try DefaultDatabase.withDatabase(db) {
                // One save at a time, so that the ids follow the order written here (a batch
                // groups its records by the columns they fill).
                for store in [Store(name: "Atelier", city: "Paris"), Store(name: "Bowler", city: nil), Store(name: "Cap", city: "Oslo")] {
                    _ = try store.saveOrThrow(db)
                }
                for hat in hats { _ = try hat.saveOrThrow(db) }
                for name in ["Ann", "Bob", "Cy", "Dee"] { _ = try Customer(name: name).saveOrThrow(db) }
                for order in [
                    Order(hatId: 1, customerId: 1, quantity: 2, note: nil), Order(hatId: 1, customerId: 2, quantity: 1, note: "gift"),
                    Order(hatId: 2, customerId: 1, quantity: 5, note: nil), Order(hatId: 4, customerId: 3, quantity: 1, note: ""),
                    Order(hatId: 6, customerId: 2, quantity: 3, note: nil), Order(hatId: 6, customerId: 2, quantity: 1, note: "again"),
                ] {
                    _ = try order.saveOrThrow(db)
                }
                #expect(try Hat.query.order("id", .orderedAscending).allOrThrow().map(\.color) == hats.map(\.color))
                try body(db)
            }
        }
    }

    /// The ids `predicate` keeps through `query` (by default every record), checked against
    /// `expected` and against Swift's own answer over the same records, fetched.
    static func check<Record: PredicateMappable>(_ predicate: Predicate<Record>, _ expected: [Int],
                                                 _ query: Query<Record> = Query<Record>(),
                                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        let records = try query.order("id", .orderedAscending).allOrThrow()
        let swift = try records.filter { try predicate.evaluate($0) }.compactMap(\.id)
        let sql = try query.filter(predicate).order("id", .orderedAscending).allOrThrow().compactMap(\.id)
        #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
        #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
    }

    @Test(arguments: Backend.allCases)
    func comparisonsLogicAndEveryValueType(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            try Self.check(#Predicate<Hat> { $0.brimSize > 12 }, [4, 6])
            try Self.check(#Predicate<Hat> { $0.brimSize >= 10 && $0.brimSize <= 12 }, [1, 2, 3])
            try Self.check(#Predicate<Hat> { $0.brimSize < 0 || $0.color == "zed" }, [6, 7])
            try Self.check(#Predicate<Hat> { $0.onSale }, [1, 3, 5, 7])
            try Self.check(#Predicate<Hat> { !$0.onSale && $0.brimSize != 14 }, [2, 6])
            try Self.check(#Predicate<Hat> { ($0.weight ?? 0) > 1 }, [5, 6])
            let ten = Decimal(10)
            let big = Decimal(string: "12345678901234567890.12") ?? 0
            try Self.check(#Predicate<Hat> { $0.price < ten }, [2, 5, 6, 7])
            try Self.check(#Predicate<Hat> { $0.price > big }, [4])
            let epoch = Date(timeIntervalSince1970: 0)
            try Self.check(#Predicate<Hat> { $0.madeAt < epoch }, [2, 4, 6])
            let tagA = Self.tagA
            try Self.check(#Predicate<Hat> { $0.tag == tagA }, [2])
            try Self.check(#Predicate<Hat> { $0.tag != nil }, [2, 4])
            let dark = Style.darkBlue
            try Self.check(#Predicate<Hat> { $0.style == dark }, [2, 3, 6])
            try Self.check(#Predicate<Hat> { ($0.onSale ? $0.brimSize : 0) > 9 }, [1, 3])
            try Self.check(#Predicate<Hat> { $0.brimSize * 2 > 25 }, [4, 6])
            try Self.check(#Predicate<Hat> { -$0.brimSize > 0 }, [7])
        }
    }

    @Test(arguments: Backend.allCases)
    func nilMeansSwiftsNil(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            // `!=` keeps the records whose value is nil, as Swift does (SQL's `<>` would drop them).
            try Self.check(#Predicate<Hat> { $0.nick != "em" }, [1, 2, 3, 5, 6, 7])
            try Self.check(#Predicate<Hat> { $0.weight != 0.5 }, [2, 3, 4, 5, 6, 7])
            try Self.check(#Predicate<Hat> { $0.nick == nil }, [1, 5])
            try Self.check(#Predicate<Hat> { ($0.nick ?? "none") == "none" }, [1, 5])
            try Self.check(#Predicate<Hat> { $0.nick?.isEmpty == false }, [2, 3, 4, 6, 7])
            try Self.check(#Predicate<Hat> {
                if let nick = $0.nick { nick.starts(with: "b") } else { false }
            }, [2])
        }
    }

    @Test(arguments: Backend.allCases)
    func stringsCollectionsAndRanges(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            try Self.check(#Predicate<Hat> { $0.color.contains("e") }, [1, 2, 3, 4, 6])
            // Wildcards in the needle are taken literally.
            try Self.check(#Predicate<Hat> { $0.color.contains("%") }, [7])
            try Self.check(#Predicate<Hat> { $0.nick?.contains("_") == true }, [7])
            try Self.check(#Predicate<Hat> { $0.color.starts(with: "r") }, [1])
            try Self.check(#Predicate<Hat> { $0.color.isEmpty }, [5])
            // Code-point order: "Red" and "" before "b", "Émile" after "z".
            try Self.check(#Predicate<Hat> { $0.color < "b" }, [2, 5])
            let colors = ["red", "zed"]
            try Self.check(#Predicate<Hat> { colors.contains($0.color) }, [1, 6])
            try Self.check(#Predicate<Hat> { (10...12).contains($0.brimSize) }, [1, 2, 3])
            try Self.check(#Predicate<Hat> { (10..<12).contains($0.brimSize) }, [1])
        }
    }

    @Test(arguments: Backend.allCases)
    func composesWithTheQuerysOwnFiltersOrderingsAndLimits(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            let bigger = #Predicate<Hat> { $0.brimSize > 10 }
            // AND-ed with a dictionary filter and a raw one, in either order.
            try Self.check(bigger, [2, 6], Hat.query.filter(["store_id": 1]))
            try Self.check(bigger, [2], Hat.query.filter(["store_id": 1]).filter("brim_size < ?", [16]))
            let both = try Hat.query.filter(bigger).filter(["store_id": 1]).filter(#Predicate<Hat> { $0.nick != "Zed" })
            #expect(try both.allOrThrow().compactMap(\.id) == [2])

            // Orderings apply in the order they were added: the flavor's own, then the descriptor.
            let onSale = #Predicate<Hat> { $0.onSale && $0.storeId != nil }
            let ordered = try Hat.query.filter(onSale).order("store_id", .orderedAscending)
                .order(SortDescriptor(\Hat.brimSize, order: .reverse))
            #expect(try ordered.allOrThrow().compactMap(\.id) == [1, 3, 7])
            let descriptorFirst = try Hat.query.filter(onSale).order(SortDescriptor(\Hat.brimSize, order: .reverse))
                .order("store_id", .orderedAscending)
            #expect(try descriptorFirst.allOrThrow().compactMap(\.id) == [3, 1, 7])

            // Limits and offsets, count, first, last, find, pages: all through the same query.
            let byBrim = try Hat.query.filter(#Predicate<Hat> { $0.brimSize > 0 })
                .order([SortDescriptor(\Hat.brimSize), SortDescriptor(\Hat.id)])
            #expect(try byBrim.allOrThrow().compactMap(\.id) == [5, 1, 2, 3, 4, 6])
            #expect(try byBrim.offset(1).limit(2).allOrThrow().compactMap(\.id) == [1, 2])
            #expect(byBrim.all().compactMap(\.id) == [5, 1, 2, 3, 4, 6])
            let sale = try Hat.query.filter(#Predicate<Hat> { $0.onSale }).order(SortDescriptor(\Hat.brimSize))
            #expect(sale.count() == 4)
            #expect(try sale.countOrThrow() == 4)
            #expect(try sale.limit(2).countOrThrow() == 2)
            #expect(sale.first()?.id == 7)
            #expect(try sale.firstOrThrow()?.id == 7)
            #expect(sale.last()?.id == 3)
            #expect(try sale.lastOrThrow()?.id == 3)
            #expect(sale.find(2) == nil, "hat 2 is not on sale")
            #expect(try sale.findOrThrow(3)?.color == "blue")
            #expect(try sale.paginate(page: 2, pageSize: 3).allOrThrow().compactMap(\.id) == [3])
            #expect(sale.isEmpty() == false)

            // A join: the predicate's columns are qualified with the table, so they stay unambiguous.
            let paris = try Hat.query.join(Store.self, fromColumn: "id", toColumn: "store_id")
                .filter("stores.city = ?", ["Paris"]).filter(bigger)
            #expect(try paris.allOrThrow().compactMap(\.id).sorted() == [2, 6])
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipQueriesTakePredicatesToo(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            let atelier = try #require(try Query<Store>().findOrThrow(1))
            try Self.check(#Predicate<Hat> { $0.nick != nil }, [2, 6], atelier.hats)
            let first = try #require(try Hat.query.findOrThrow(1))
            try Self.check(#Predicate<Order> { $0.quantity > 1 }, [1], first.orders)
            // Through orders: a joined query, filtered and ordered by the customers' key paths.
            let notAnn = try first.customers.filter(#Predicate<Customer> { $0.name != "Ann" })
                .order(SortDescriptor(\Customer.name))
            #expect(try notAnn.allOrThrow().map(\.name) == ["Bob"])
            let sixth = try #require(try Hat.query.findOrThrow(6))
            #expect(try sixth.customers.filter(#Predicate<Customer> { $0.name == "Bob" }).countOrThrow() == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsInsideThePredicate(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            // To one: a scalar subquery; nil where the hat has no store.
            try Self.check(#Predicate<Hat> { $0.store?.name == "Atelier" }, [1, 2, 6])
            try Self.check(#Predicate<Hat> { $0.store?.name != "Atelier" }, [3, 4, 5, 7])
            try Self.check(#Predicate<Hat> { $0.store == nil }, [5])
            try Self.check(#Predicate<Hat> { $0.store?.city == nil }, [3, 4, 5, 7])
            try Self.check(#Predicate<Order> { $0.hat?.color == "red" }, [1, 2])
            try Self.check(#Predicate<Order> { $0.hat?.store?.name == "Bowler" }, [4])
            // To many, through the foreign key toMany() follows.
            try Self.check(#Predicate<Store> { $0.hatList.contains { $0.brimSize > 14 } }, [1])
            try Self.check(#Predicate<Store> { $0.hatList.allSatisfy { $0.onSale } }, [3])
            try Self.check(#Predicate<Store> { $0.hatList.isEmpty }, [3])
            try Self.check(#Predicate<Store> { $0.hatList.count >= 3 }, [1, 2])
            try Self.check(#Predicate<Hat> { $0.orderList.count == 2 }, [1, 6])
            try Self.check(#Predicate<Hat> { $0.orderList.contains { $0.quantity >= 3 } }, [2, 6])
            try Self.check(#Predicate<Hat> { $0.orderList.isEmpty }, [3, 5, 7])
            try Self.check(#Predicate<Customer> { $0.orderList.contains { $0.hat?.color == "zed" } }, [2])
            // Many to many, through the orders table (toMany(through:)'s join).
            try Self.check(#Predicate<Hat> { $0.customerList.contains { $0.name == "Bob" } }, [1, 6])
            try Self.check(#Predicate<Hat> { $0.customerList.count == 1 }, [2, 4])
        }
    }

    @Test(arguments: Backend.allCases)
    func sortDescriptorsSortAsSwiftSorts(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            func ids(_ order: [SortDescriptor<Hat>]) throws -> [Int] {
                let sql = try Hat.query.order(order).allOrThrow()
                let swift = sql.sorted(using: order)
                #expect(sql.compactMap(\.id) == swift.compactMap(\.id), "Swift sorts the same records the same way")
                return sql.compactMap(\.id)
            }
            #expect(try ids([SortDescriptor(\Hat.color)]) == [5, 2, 3, 7, 1, 6, 4])
            #expect(try ids([SortDescriptor(\Hat.color, order: .reverse)]) == [4, 6, 1, 7, 3, 2, 5])
            // nil first in forward order, last in reverse; ties broken by id.
            #expect(try ids([SortDescriptor(\Hat.nick), SortDescriptor(\Hat.id)]) == [1, 5, 6, 3, 2, 4, 7])
            #expect(try ids([SortDescriptor(\Hat.nick, order: .reverse), SortDescriptor(\Hat.id)]) == [7, 4, 2, 3, 6, 1, 5])
            #expect(try ids([SortDescriptor(\Hat.price)]) == [5, 6, 7, 2, 1, 3, 4])
            #expect(try ids([SortDescriptor(\Hat.madeAt, order: .reverse)]) == [3, 7, 1, 5, 4, 2, 6])
            #expect(try ids([SortDescriptor(\Hat.weight), SortDescriptor(\Hat.id)]) == [3, 7, 2, 4, 1, 5, 6])
            // `last()` reverses the descriptor with its nil placement: the last hat by nick is
            // the greatest nick, never a nil one.
            #expect(try Hat.query.order(SortDescriptor(\Hat.nick)).lastOrThrow()?.id == 7)
        }
    }

    @Test(arguments: Backend.allCases)
    func sortingThroughAToOneThatIsAlwaysThere(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            // Orders 1, 2: hat 1 (red, 10); 3: hat 2 (Red, 12); 4: hat 4 (Émile, 14); 5, 6: hat 6 (zed, 16).
            try Self.check(#Predicate<Sale> { $0.hat.color == "red" }, [1, 2])
            try Self.check(#Predicate<Sale> { $0.hat.brimSize > 12 && $0.quantity == 1 }, [4, 6])
            let order = [SortDescriptor(\Sale.hat.brimSize, order: .reverse), SortDescriptor(\Sale.id)]
            let sales = try Sale.query.order(order).allOrThrow()
            #expect(sales.compactMap(\.id) == [5, 6, 4, 3, 1, 2])
            #expect(sales.sorted(using: order).compactMap(\.id) == [5, 6, 4, 3, 1, 2], "Swift sorts them the same way")
            let byColor = try Sale.query.order(SortDescriptor(\Sale.hat.color)).order(SortDescriptor(\Sale.id)).allOrThrow()
            #expect(byColor.compactMap(\.id) == [3, 1, 2, 5, 6, 4], "code-point order: R, r, z, É")
        }
    }

    @Test(arguments: Backend.allCases)
    func whatCannotBeTranslatedThrowsAndLeavesTheDatabaseAsItWas(_ backend: Backend) throws {
        try Self.withShop(backend) { (db: Database) throws in
            // A computed property has no column: the error names the key path and the fix.
            let error = #expect(throws: PredicateTranslationError.self) {
                try Hat.destroyAll(try Hat.query.filter(#Predicate<Hat> { $0.shout == "RED" }).allOrThrow(), db)
            }
            #expect(error?.reason.contains("maps to no column of \"hats\": add it to Hat.predicateSchema") == true)
            // A type cast.
            #expect(throws: PredicateTranslationError.self) {
                try Hat.destroyAll(try Hat.query.filter(#Predicate<Hat> { ($0.nick as Any?) is String }).allOrThrow(), db)
            }
            // Decimal arithmetic.
            #expect(throws: PredicateTranslationError.self) {
                try Hat.query.filter(#Predicate<Hat> { $0.price + $0.price > 1 })
            }
            // Sorting through an optional to-one relationship is not translated.
            #expect(throws: PredicateTranslationError.self) {
                try Hat.query.order(SortDescriptor(\Hat.store?.name))
            }
            // Inside a transaction: the write before the failed filter is rolled back.
            #expect(throws: PredicateTranslationError.self) {
                try db.transaction { _ in
                    _ = try Customer(name: "Eve").saveOrThrow(db)
                    _ = try Customer.query.filter(#Predicate<Customer> { $0.orderList.first?.quantity == 1 }).allOrThrow(db)
                }
            }
            #expect(try Hat.query.countOrThrow() == 7, "nothing was deleted")
            #expect(try Hat.query.order("id", .orderedAscending).allOrThrow().map(\.color) == Self.hats.map(\.color))
            #expect(try Customer.query.order("id", .orderedAscending).allOrThrow().map(\.name) == ["Ann", "Bob", "Cy", "Dee"])
            // A schema that describes another table than the record's says so.
            let misnamed = #expect(throws: PredicateTranslationError.self) {
                try Misnamed.query.filter(#Predicate<Misnamed> { $0.id == 1 })
            }
            #expect(misnamed?.reason.contains("Misnamed.tableName is \"hats\"") == true)
        }
    }

    /// Where SQL cannot mean what Swift means (the documented differences): a string outside
    /// NFC equals its NFC form in Swift, not in SQL; Tailor's optional read turns a stored empty
    /// string into nil, while the predicate compares what the column holds.
    @Test(arguments: Backend.allCases)
    func theDocumentedDifferences(_ backend: Backend) throws {
        try Self.withShop(backend) { (_: Database) throws in
            let decomposed = "E\u{0301}mile"
            let predicate = #Predicate<Hat> { $0.color == decomposed }
            let swift = try Hat.query.allOrThrow().filter { try predicate.evaluate($0) }.compactMap(\.id)
            #expect(swift == [4])
            #expect(try Hat.query.filter(predicate).allOrThrow().isEmpty)
            let composed = decomposed.precomposedStringWithCanonicalMapping
            #expect(try Hat.query.filter(#Predicate<Hat> { $0.color == composed }).allOrThrow().compactMap(\.id) == [4])

            // Order 4's note is stored as "": read back as nil, but not NULL in SQL.
            let noNote = #Predicate<Order> { $0.note == nil }
            let orders = try Order.query.order("id", .orderedAscending).allOrThrow()
            #expect(try orders.filter { try noNote.evaluate($0) }.compactMap(\.id) == [1, 3, 4, 5])
            #expect(try Order.query.filter(noNote).order("id", .orderedAscending).allOrThrow().compactMap(\.id) == [1, 3, 5])
            #expect(try Order.query.filter(#Predicate<Order> { $0.note == "" }).allOrThrow().compactMap(\.id) == [4])
        }
    }

    @Test
    func theConditionIsAndedAndTheOrderingAppendedInTheStatement() throws {
        // `brimSize` is not optional, so no NULLS clause (PostgreSQL could not walk an index with it).
        let query = try Hat.query.filter(["color": "red"]).filter(#Predicate<Hat> { $0.nick != "x" })
            .order("id", .orderedAscending).order(SortDescriptor(\Hat.brimSize, order: .reverse))
        let sql = try query.toSql(dialect: .sqlite)
        #expect(sql.sql == #"SELECT * FROM "hats" WHERE "hats"."color" = ? AND "hats"."nick" IS NOT ? ORDER BY "hats"."id" ASC, "hats"."brim_size" DESC"#)
        #expect(sql.bindings == [.text("red"), .text("x")])
    }
}
