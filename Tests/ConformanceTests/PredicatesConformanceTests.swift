import Foundation
import Testing
import Unity
import UnityPredicates

/// The flavor contract: rows written here read back identically through ModelDef and the
/// core, and the other way round; exact round trips; the seed's complete example.
@Suite("Predicates: cross-flavor conformance and round trips")
struct PredicatesConformanceTests {
    struct Round: ManagedObjectConvertible, Equatable {
        var i16: Int16 = 0
        var i32: Int32 = 0
        var i64: Int64 = 0
        var int = 0
        var double = 0.0
        var flag = false
        var text = ""
        var date = Date(timeIntervalSince1970: 0)
        var uuid = UUID()
        var price: Decimal = 0
        var blob = Data()
        var url = URL(string: "https://example.com")!
        var kind = PKind.mid
        var note: String?

        static let entityName = "PRound"
        static let attributes: Set<Attribute<Round>> = [
            Attribute(\.i16, "i16"), Attribute(\.i32, "i32"), Attribute(\.i64, "i64"), Attribute(\.int, "int"),
            Attribute(\.double, "double"), Attribute(\.flag, "flag"), Attribute(\.text, "text"), Attribute(\.date, "date"),
            Attribute(\.uuid, "uuid"), Attribute(\.price, "price"), Attribute(\.blob, "blob"), Attribute(\.url, "url"),
            Attribute(\.kind, "kind"), Attribute(\.note, "note"),
        ]
    }

    /// The same table seen by the SQL-first flavor (URL as its text).
    struct RoundDef: ModelDef, Equatable {
        var Z_PK: Int64
        var i16: Int16
        var i32: Int32
        var i64: Int64
        var int: Int
        var double: Double
        var flag: Bool
        var text: String
        var date: Date
        var uuid: UUID
        var price: Decimal
        var blob: Data
        var url: String
        var kind: PKind
        var note: String?
        static let tableName = "PRound"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.Z_PK] }

        static func == (l: RoundDef, r: RoundDef) -> Bool {
            l.Z_PK == r.Z_PK && l.asRound == r.asRound
        }

        var asRound: Round {
            Round(i16: i16, i32: i32, i64: i64, int: int, double: double, flag: flag, text: text, date: date, uuid: uuid,
                  price: price, blob: blob, url: URL(string: url)!, kind: kind, note: note)
        }
    }

    static let microsecondDate = Date(timeIntervalSince1970: 1_234_567_890.123456)

    static let minimum = Round(i16: .min, i32: .min, i64: .min, int: Int(Int64.min), double: -1.5e300, flag: false,
                               text: "Ωmega – Я – é – 😀", date: Date(timeIntervalSince1970: -1_000_000.000001),
                               uuid: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!,
                               price: Decimal(string: "-12345678901234567890.123456789")!, blob: Data(),
                               url: URL(string: "https://example.com/a?b=c&d=%20")!, kind: .zeta, note: nil)
    static let maximum = Round(i16: .max, i32: .max, i64: .max, int: Int(Int64.max), double: 0.1, flag: true,
                               text: "", date: microsecondDate,
                               uuid: UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFE")!,
                               price: Decimal(string: "0.000000000000000000000000000001")!, blob: Data([0, 1, 254, 255]),
                               url: URL(string: "file:///tmp/x%20y")!, kind: .alpha, note: "n")

    @Test(arguments: Backend.allCases)
    func exactRoundTripsAcrossFlavors(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [Round.self])
            let now = Date()
            var current = Self.maximum
            current.date = now
            try c.perform { ctx in
                for value in [Self.minimum, Self.maximum, current] { _ = try ctx.insert(value) }
            }
            // Back through this flavor: exact, and Date() to the microsecond.
            let mine = try c.perform { ctx in try ctx.fetch(Round.all.where(raw: "1 = 1").sort(\.i16).sort(\.date)).map { try $0.decode() } }
            #expect(mine.count == 3)
            #expect(mine[0] == Self.minimum)
            #expect(mine[1] == Self.maximum)
            #expect(abs(mine[2].date.timeIntervalSince(now)) < 0.000001)
            // Through ModelDef.
            let defs = try RoundDef.allInstances(orderedBy: [.ascending("Z_PK")], in: db)
            #expect(defs.map(\.asRound) == mine)
            // Through the core, against literals.
            let row = try #require(try db.fetchOne(sql: "SELECT i16, i64, text, price, uuid, url, kind, note FROM \"PRound\" ORDER BY \"Z_PK\" LIMIT 1"))
            #expect(try row.decode(Int16.self, column: "i16") == Int16.min)
            #expect(try row.decode(Int64.self, column: "i64") == Int64.min)
            #expect(try row.decode(String.self, column: "text") == "Ωmega – Я – é – 😀")
            #expect(try row.decode(Decimal.self, column: "price") == Decimal(string: "-12345678901234567890.123456789")!)
            #expect(try row.decode(UUID.self, column: "uuid") == UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
            #expect(try row.decode(String.self, column: "url") == "https://example.com/a?b=c&d=%20")
            #expect(try row.decode(String.self, column: "kind") == "zeta")
            #expect(row["note"] == .null)

            // The other way: ModelDef and the core write, this flavor reads.
            var def = RoundDef(Z_PK: 1000, i16: -7, i32: 7, i64: 70, int: 700, double: 2.5, flag: true, text: "def",
                               date: Self.microsecondDate, uuid: UUID(uuidString: "12345678-1234-1234-1234-123456789ABC")!,
                               price: Decimal(string: "19.99")!, blob: Data([9]), url: "https://def.example/", kind: .mid, note: "from def")
            def = try def.save(in: db)
            _ = try db.execute(.insert(SQLInsert(into: "PRound", values: [
                "Z_PK": .integer(2000), "i16": .integer(1), "i32": .integer(2), "i64": .integer(3), "int": .integer(4),
                "double": .double(0.25), "flag": .bool(false), "text": .text("core"), "date": .date(Self.microsecondDate),
                "uuid": .uuid(UUID(uuidString: "ABCDEF00-0000-0000-0000-000000000000")!), "price": .decimal(Decimal(string: "0.5")!),
                "blob": .blob(Data([1, 2])), "url": .text("https://core.example/"), "kind": .text("alpha"), "note": .null,
            ])))
            let read = try c.perform { ctx in
                try ctx.fetch(Round.all.where(\Round.text === ["def", "core"]).sort(\.text)).map { try $0.decode() }
            }
            #expect(read == [
                Round(i16: 1, i32: 2, i64: 3, int: 4, double: 0.25, flag: false, text: "core", date: Self.microsecondDate,
                      uuid: UUID(uuidString: "ABCDEF00-0000-0000-0000-000000000000")!, price: Decimal(string: "0.5")!,
                      blob: Data([1, 2]), url: URL(string: "https://core.example/")!, kind: .alpha, note: nil),
                def.asRound,
            ])
            // Predicates on values written elsewhere.
            #expect(try c.perform { ctx in try ctx.fetch(Round.all.where(\Round.date == Self.microsecondDate).sort(\.text), \.text) }
                == ["", "core", "def"])
            #expect(try c.perform { ctx in try ctx.fetch(Round.all.where(\Round.price > Decimal(1)).sort(\.price), \.text) } == ["def"])
        }
    }

    /// The seed's complete example, as written there.
    @Test(arguments: Backend.allCases)
    func seedExample(_ backend: Backend) throws {
        try withTestDatabase(backend) { database in
            let db = PersistentContainer(database: database, models: [T.self])
            try db.perform { ctx in
                for (marker, amount, name) in [("a", 1, "zed"), ("b", 11, "ann"), ("c", 2, "complex"), ("d", 0, "dora"),
                                               ("e", 12, "bob"), ("f", 3, "flex"), ("g", 4, "gus"), ("h", 20, "hal")] {
                    _ = try ctx.insert(T(marker: marker, amount: amount, name: name))
                }
            }
            let query = T
                .all
                .where(\T.marker === ["a", "d"] || \T.amount > 10 || Query.endsWith(\T.name, "ex"))
                .sort(\.name)
                .limit(5)

            let result = try db.perform { ctx in
                try ctx.fetch(query).map { try $0.decode() }
            }
            #expect(result.map(\.name) == ["ann", "bob", "complex", "dora", "flex"])
        }
    }
}
