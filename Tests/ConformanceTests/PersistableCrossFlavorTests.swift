import Foundation
import Testing
import Unity
import UnityPersistable

/// The flavor contract: rows written through the active-record flavor read back identically
/// through the SQL-first flavor (`ModelDef`) and the core, and the other way round.
@Suite("Persistable across flavors")
struct PersistableCrossFlavorTests {
    enum Finish: String, DatabaseValueConvertible, Codable {
        case matte, glossy
    }

    /// The active-record view of the table.
    struct Gadget: Persistable {
        var id: Int?
        var name: String
        var count: Int
        var price: Double
        var active: Bool
        var madeAt: Date
        var code: UUID
        var amount: Decimal
        var payload: Data
        var note: String?
        var finish: Finish

        static var tableName: String { "gadgets" }
        init(name: String, count: Int, price: Double, active: Bool, madeAt: Date, code: UUID, amount: Decimal,
             payload: Data, note: String?, finish: Finish) {
            self.name = name; self.count = count; self.price = price; self.active = active; self.madeAt = madeAt
            self.code = code; self.amount = amount; self.payload = payload; self.note = note; self.finish = finish
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
            count = try databaseRow.read("count")
            price = try databaseRow.read("price")
            active = try databaseRow.read("active")
            madeAt = try databaseRow.read("made_at")
            code = try databaseRow.read("code")
            amount = try databaseRow.read("amount")
            payload = try databaseRow.read("payload")
            note = try databaseRow.read("note")
            finish = try databaseRow.read("finish")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["name": name, "count": count, "price": price, "active": active, "made_at": madeAt, "code": code,
             "amount": amount, "payload": payload, "note": note, "finish": finish]
        }
    }

    /// The SQL-first view of the same table.
    struct GadgetModel: ModelDef {
        var id: Int
        var name: String
        var count: Int
        var price: Double
        var active: Bool
        var madeAt: Date
        var code: UUID
        var amount: Decimal
        var payload: Data
        var note: String?
        var finish: Finish
        static let tableName = "gadgets"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        enum CodingKeys: String, CodingKey {
            case id, name, count, price, active, madeAt = "made_at", code, amount, payload, note, finish, existsInDatabase
        }
    }

    static func createTable(_ db: Database) throws {
        try db.write {
            try $0.execute(.createTable(SQLCreateTable("gadgets", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                SQLColumnDefinition("name", .text, notNull: true),
                SQLColumnDefinition("count", .int64, notNull: true),
                SQLColumnDefinition("price", .double, notNull: true),
                SQLColumnDefinition("active", .bool, notNull: true),
                SQLColumnDefinition("made_at", .date, notNull: true),
                SQLColumnDefinition("code", .uuid, notNull: true),
                SQLColumnDefinition("amount", .decimal, notNull: true),
                SQLColumnDefinition("payload", .blob, notNull: true),
                SQLColumnDefinition("note", .text),
                SQLColumnDefinition("finish", .text, notNull: true),
            ])))
        }
    }

    static let madeAt = Date(timeIntervalSince1970: 1_700_000_000.123456)
    static let code = UUID(uuidString: "0E8C6A52-8F1E-4C1B-9E8A-3D2B1C0F9A77")!
    static let amount = Decimal(string: "12345.678901")!

    @Test(arguments: Backend.allCases)
    func persistableToModelDefAndCore(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            let saved = try Gadget(name: "héllo ✓", count: -42, price: 0.1, active: true, madeAt: Self.madeAt, code: Self.code,
                                   amount: Self.amount, payload: Data([0, 1, 255]), note: nil, finish: .glossy).saveOrThrow(db)
            let id = try #require(saved.id)
            // Through the SQL-first flavor.
            let model = try #require(try GadgetModel.firstInstanceWhere("id = ?", id, in: db))
            #expect(model.name == "héllo ✓" && model.count == -42 && model.price == 0.1 && model.active)
            #expect(model.madeAt == Self.madeAt && model.code == Self.code && model.amount == Self.amount)
            #expect(model.payload == Data([0, 1, 255]) && model.note == nil && model.finish == .glossy)
            // Through the core.
            let row = try #require(try db.read { try $0.fetchOne(.select(SQLSelect(from: "gadgets"))) })
            #expect(try row.decode(String.self, column: "name") == "héllo ✓")
            #expect(try row.decode(Int.self, column: "count") == -42)
            #expect(try row.decode(Bool.self, column: "active"))
            #expect(try row.decode(Date.self, column: "made_at") == Self.madeAt)
            #expect(try row.decode(UUID.self, column: "code") == Self.code)
            #expect(try row.decode(Decimal.self, column: "amount") == Self.amount)
            #expect(try row.decode(Finish.self, column: "finish") == .glossy)
            #expect(row["note"] == .null)
            // And the flavor itself reads what it wrote.
            let back = try #require(try Query<Gadget>().findOrThrow(id, db))
            #expect(back.madeAt == Self.madeAt && back.amount == Self.amount && back.code == Self.code && back.note == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func modelDefAndCoreToPersistable(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            try GadgetModel(id: 100, name: "Ünï", count: Int(Int32.max) + 7, price: -2.5, active: false, madeAt: Self.madeAt,
                            code: Self.code, amount: Self.amount, payload: Data(), note: "n", finish: .matte).save(in: db)
            try db.write {
                try $0.execute(.insert(SQLInsert(into: "gadgets", values: [
                    "id": 101, "name": "core", "count": 3, "price": 1.5, "active": .bool(true), "made_at": .date(Self.madeAt),
                    "code": .uuid(Self.code), "amount": .decimal(Self.amount), "payload": .blob(Data([9])), "note": .null,
                    "finish": "glossy",
                ])))
            }
            let gadgets = Query<Gadget>().order("id", .orderedAscending).all(db)
            #expect(gadgets.compactMap(\.id) == [100, 101])
            let fromModel = gadgets[0]
            #expect(fromModel.name == "Ünï" && fromModel.count == Int(Int32.max) + 7 && fromModel.price == -2.5 && !fromModel.active)
            #expect(fromModel.madeAt == Self.madeAt && fromModel.code == Self.code && fromModel.amount == Self.amount)
            #expect(fromModel.payload.isEmpty && fromModel.note == "n" && fromModel.finish == .matte)
            let fromCore = gadgets[1]
            #expect(fromCore.name == "core" && fromCore.active && fromCore.payload == Data([9]) && fromCore.note == nil)
            #expect(fromCore.madeAt == Self.madeAt && fromCore.finish == .glossy)
            // An update through this flavor is seen by the SQL-first one.
            var changed = fromModel
            changed.note = nil
            changed.count = 1
            _ = try changed.saveOrThrow(db)
            let model = try #require(try GadgetModel.firstInstanceWhere("id = ?", 100, in: db))
            #expect(model.note == nil && model.count == 1 && model.amount == Self.amount)
        }
    }
}
