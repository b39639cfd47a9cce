import Foundation
import Testing
import Unity
import UnityPredicates

/// Every operator on every mapped type, text matching, raw fragments and request shapes,
/// each case on both backends against known literals.
@Suite("Predicates: operators, text matching, requests")
struct PredicatesOperatorTests {
    static let day: TimeInterval = 86_400
    static let base = Date(timeIntervalSince1970: 1_700_000_000.123456)

    /// Five items with distinct values in every column; ids 1...5.
    static func fixture() -> [PItem] {
        let prices: [Decimal] = [Decimal(string: "9.25")!, Decimal(string: "10.5")!, Decimal(100), Decimal(string: "2.75")!, Decimal(string: "1000.125")!]
        let kinds: [PKind] = [.zeta, .alpha, .mid, .alpha, .zeta]
        let levels: [PLevel?] = [nil, .low, .high, .middle, nil]
        var items: [PItem] = []
        for i in 1...5 {
            var item = PItem(id: i)
            item.i8 = Int8(i)
            item.i16 = Int16(i * 10)
            item.i32 = Int32(i * 100)
            item.i64 = Int64(i) * 1_000_000_000_000
            item.double = Double(i) + 0.5
            item.float = Float(i) + 0.25
            item.flag = i % 2 == 0
            item.name = "name\(i)"
            item.note = i <= 2 ? nil : "note\(i)"
            item.date = base.addingTimeInterval(Double(i) * day)
            item.uuid = UUID(uuidString: "00000000-0000-0000-0000-00000000000\(i)")!
            item.price = prices[i - 1]
            item.blob = Data([UInt8(i), 0, 255])
            item.url = URL(string: "https://example.com/\(i)")!
            item.kind = kinds[i - 1]
            item.level = levels[i - 1]
            item.amount = i == 3 ? nil : i * 7
            items.append(item)
        }
        return items
    }

    static func expectEqual<V: Equatable>(_ value: () throws -> V, _ expected: V, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let actual = try value()
        #expect(actual == expected, sourceLocation: sourceLocation)
    }

    static func withItems(_ backend: Backend, _ body: (PersistentContainer) throws -> Void) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: predicateModels)
            try container.perform { ctx in for item in fixture() { try ctx.insert(item) } }
            try body(container)
        }
    }

    static func ids(_ c: PersistentContainer, _ p: QueryPredicate) throws -> [Int] {
        try c.perform { ctx in try ctx.fetch(PItem.all.where(p).sort(\.id), \.id) }
    }

    @Test(arguments: Backend.allCases)
    func comparisonsOnEveryType(_ backend: Backend) throws {
        try Self.withItems(backend) { c in
            let f = Self.fixture()
            // Integers
            try Self.expectEqual({ try Self.ids(c, \PItem.id == 3) }, [3])
            try Self.expectEqual({ try Self.ids(c, \PItem.i8 > 3) }, [4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.i16 >= 30) }, [3, 4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.i32 < 300) }, [1, 2])
            try Self.expectEqual({ try Self.ids(c, \PItem.i64 <= 2_000_000_000_000) }, [1, 2])
            try Self.expectEqual({ try Self.ids(c, \PItem.id != 3) }, [1, 2, 4, 5])
            // Floating point
            try Self.expectEqual({ try Self.ids(c, \PItem.double == 2.5) }, [2])
            try Self.expectEqual({ try Self.ids(c, \PItem.double > 3.5) }, [4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.float == Float(4.25)) }, [4])
            try Self.expectEqual({ try Self.ids(c, \PItem.float < Float(2.25)) }, [1])
            // Bool
            try Self.expectEqual({ try Self.ids(c, \PItem.flag == true) }, [2, 4])
            try Self.expectEqual({ try Self.ids(c, \PItem.flag != true) }, [1, 3, 5])
            // String (binary order: "name1" < "name3")
            try Self.expectEqual({ try Self.ids(c, \PItem.name == "name4") }, [4])
            try Self.expectEqual({ try Self.ids(c, \PItem.name < "name3") }, [1, 2])
            // Date (to the microsecond)
            try Self.expectEqual({ try Self.ids(c, \PItem.date == f[2].date) }, [3])
            try Self.expectEqual({ try Self.ids(c, \PItem.date > f[2].date) }, [4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.date >= f[2].date.addingTimeInterval(0.000001)) }, [4, 5])
            // UUID, Data, URL
            try Self.expectEqual({ try Self.ids(c, \PItem.uuid == f[1].uuid) }, [2])
            try Self.expectEqual({ try Self.ids(c, \PItem.uuid != f[1].uuid) }, [1, 3, 4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.blob == Data([5, 0, 255])) }, [5])
            try Self.expectEqual({ try Self.ids(c, \PItem.url == URL(string: "https://example.com/2")!) }, [2])
            // Decimal compares as a number on both backends (as text "9.25" > "100").
            try Self.expectEqual({ try Self.ids(c, \PItem.price > Decimal(string: "9.5")!) }, [2, 3, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.price < Decimal(10)) }, [1, 4])
            try Self.expectEqual({ try Self.ids(c, \PItem.price == Decimal(string: "1000.125")!) }, [5])
            // Raw-value enums compare by raw value, even when not Comparable.
            try Self.expectEqual({ try Self.ids(c, \PItem.kind == .alpha) }, [2, 4])
            #expect(try Self.ids(c, \PItem.kind < .mid) == [2, 4]) // "alpha" < "mid"
            try Self.expectEqual({ try Self.ids(c, \PItem.level >= .middle) }, [3, 4])
            // Optionals: == nil / != nil are IS NULL / IS NOT NULL.
            try Self.expectEqual({ try Self.ids(c, \PItem.note == nil) }, [1, 2])
            try Self.expectEqual({ try Self.ids(c, \PItem.note != nil) }, [3, 4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.level == nil) }, [1, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.amount > 14) }, [4, 5])
            // != value leaves NULL rows out (as SQL and Core Data), on both backends.
            try Self.expectEqual({ try Self.ids(c, \PItem.amount != 7) }, [2, 4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.note != "note3") }, [4, 5])
        }
    }

    @Test(arguments: Backend.allCases)
    func logicAndIn(_ backend: Backend) throws {
        try Self.withItems(backend) { c in
            try Self.expectEqual({ try Self.ids(c, \PItem.id == 1 || \PItem.id == 4) }, [1, 4])
            try Self.expectEqual({ try Self.ids(c, \PItem.id > 1 && \PItem.id < 4) }, [2, 3])
            try Self.expectEqual({ try Self.ids(c, !(\PItem.id === [1, 2, 3])) }, [4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.id > 4 || \PItem.id < 3 && \PItem.flag == true) }, [2, 5])
            try Self.expectEqual({ try Self.ids(c, Query.not(Query.or(Query.equalTo(\PItem.id, 1), Query.in(\PItem.id, [2, 3])))) }, [4, 5])
            try Self.expectEqual({ try Self.ids(c, Query.and(Query.greaterThan(\PItem.id, 1), Query.lessThanOrEqualTo(\PItem.id, 2))) }, [2])
            try Self.expectEqual({ try Self.ids(c, \PItem.kind === [.zeta, .mid]) }, [1, 3, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.level === [nil, .high]) }, [1, 3, 5])
            // An empty list matches nothing; its negation everything.
            try Self.expectEqual({ try Self.ids(c, \PItem.id === []) }, [])
            try Self.expectEqual({ try Self.ids(c, !(\PItem.id === [])) }, [1, 2, 3, 4, 5])
            // Thousands of values work on both backends.
            let many = Array(4...5003)
            try Self.expectEqual({ try Self.ids(c, \PItem.id === many) }, [4, 5])
            let uuids = (0..<3000).map { _ in UUID() } + [Self.fixture()[0].uuid]
            try Self.expectEqual({ try Self.ids(c, \PItem.uuid === uuids) }, [1])
        }
    }

    @Test(arguments: Backend.allCases)
    func textMatchingFoldsCaseAndAccentsAlike(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            let stored = ["Café", "ÉCOLE", "école", "Ωmega", "ωmega", "Ярослав", "ярослав", "plain", "100% sure", "a_b", "axb",
                         "back\\slash", "straße", "Ǻngström"]
            try c.perform { ctx in
                for (i, n) in stored.enumerated() { try ctx.insert(PItem(id: i + 1, name: n)) }
            }
            func names(_ p: QueryPredicate) throws -> [String] {
                try c.perform { ctx in try ctx.fetch(PItem.all.where(p).sort(\.id), \.name) }
            }
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "cafe")) }, ["Café"])
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "CAF")) }, ["Café"])
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "é")) }, ["ÉCOLE", "école"])
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "e")) }, ["ÉCOLE", "école"])
            try Self.expectEqual({ try names(Query.endsWith(\PItem.name, "OLE")) }, ["ÉCOLE", "école"])
            // Each operator anchors where it says.
            try Self.expectEqual({ try names(Query.endsWith(\PItem.name, "E")) }, ["Café", "ÉCOLE", "école", "100% sure", "straße"])
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "E")) }, ["ÉCOLE", "école"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "E")) }, ["Café", "ÉCOLE", "école", "Ωmega", "ωmega", "100% sure", "straße"])
            try Self.expectEqual({ try names(Query.matches(\PItem.name, "ecole")) }, ["ÉCOLE", "école"])
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "Ω")) }, ["Ωmega", "ωmega"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "ЯРОС")) }, ["Ярослав", "ярослав"])
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "angst")) }, ["Ǻngström"])
            try Self.expectEqual({ try names(Query.matches(\PItem.name, "CAFE")) }, ["Café"])
            // Exact matching.
            try Self.expectEqual({ try names(Query.beginsWith(\PItem.name, "é", caseInsensitive: false)) }, ["école"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "cafe", caseInsensitive: false)) }, [])
            try Self.expectEqual({ try names(Query.endsWith(\PItem.name, "слав", caseInsensitive: false)) }, ["Ярослав", "ярослав"])
            try Self.expectEqual({ try names(\PItem.name == "café") }, [])
            // %, _ and the escape character are literal.
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "%")) }, ["100% sure"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "a_b")) }, ["a_b"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "_")) }, ["a_b"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "\\")) }, ["back\\slash"])
            try Self.expectEqual({ try names(Query.contains(\PItem.name, "%", caseInsensitive: false)) }, ["100% sure"])
            // Optional text attributes.
            try Self.expectEqual({ try names(Query.contains(\PItem.note, "x")) }, [])
        }
    }

    @Test(arguments: Backend.allCases)
    func requestsRawWhereSortLimitOffset(_ backend: Backend) throws {
        try Self.withItems(backend) { c in
            // Raw fragments, alone and combined with typed predicates.
            try Self.expectEqual({ try Self.ids(c, "i8 > 3") }, [4, 5])
            try Self.expectEqual({ try Self.ids(c, \PItem.id == 4 || !"i8 > 1") }, [1, 4])
            try Self.expectEqual({ try Self.ids(c, QueryPredicate.raw("i16 BETWEEN ? AND ?", 20, 40) && \PItem.flag == false) }, [3])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.where(raw: "i32 >= ?", 400).sort(\.id), \.id) } }, [4, 5])
            // A later where replaces the earlier one.
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.where(\PItem.id == 1).where(\PItem.id == 2), \.id) } }, [2])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.where(\PItem.id == 1).where(raw: "id = ?", 3), \.id) } }, [3])
            // Sort appends; limit and offset.
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.kind).sort(\.id, ascending: false), \.id) } }, [4, 2, 3, 5, 1])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.id).limit(2).offset(1), \.id) } }, [2, 3])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.id).offset(3), \.id) } }, [4, 5])
            // Ascending puts nil first, descending last, on both backends.
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.amount).sort(\.id), \.id) } }, [3, 1, 2, 4, 5])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.amount, ascending: false), \.id) } }, [5, 4, 2, 1, 3])
            // Enums sort by raw value; Decimal by number.
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.level).sort(\.id), \.id) } }, [1, 5, 2, 4, 3])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.price), \.id) } }, [4, 1, 2, 3, 5])
            // Requests are values: deriving one leaves the original as it was.
            let base = PItem.all.where(\PItem.id > 2)
            _ = base.limit(1).sort(\.id, ascending: false)
            try Self.expectEqual({ try c.perform { ctx in try ctx.count(of: base) } }, 3)
        }
    }

    /// Models whose attributes cannot be reached at a fixed offset (a final class's, a computed
    /// property) and one that can through a nested struct decode and encode the same values.
    @Test(arguments: Backend.allCases)
    func classAndNestedAndComputedAttributes(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [PClassItem.self, PNested.self])
            try c.perform { ctx in
                for i in 1...3 {
                    let item = PClassItem()
                    item.id = i
                    item.name = "class \(i)"
                    item.score = i == 2 ? nil : Double(i) + 0.25
                    try ctx.insert(item)
                    var nested = PNested()
                    nested.inner = PNested.Inner(label: "n\(i)", size: Int16(i) * 100)
                    nested.total = i * 10
                    try ctx.insert(nested)
                }
            }
            let items = try c.perform { ctx in try ctx.fetch(PClassItem.all.sort(\.id)).map { try $0.decode() } }
            #expect(items.map(\.id) == [1, 2, 3])
            #expect(items.map(\.name) == ["class 1", "class 2", "class 3"])
            #expect(items.map(\.score) == [1.25, nil, 3.25])
            let nested = try c.perform { ctx in
                try ctx.fetch(PNested.all.where(\PNested.inner.size >= Int16(200)).sort(\.inner.label)).map { try $0.decode() }
            }
            #expect(nested == [PNested(inner: .init(label: "n2", size: 200), total: 20),
                               PNested(inner: .init(label: "n3", size: 300), total: 30)])
            // What the tables hold, read through the core: the computed attribute stored its value.
            let stored = try db.read { conn in
                try conn.fetchAll(sql: "SELECT label, size, doubled FROM \"PNested\" ORDER BY label").map {
                    [try $0.decode(String.self, at: 0), String(try $0.decode(Int.self, at: 1)), String(try $0.decode(Int.self, at: 2))]
                }
            }
            #expect(stored == [["n1", "100", "20"], ["n2", "200", "40"], ["n3", "300", "60"]])
            // Changing one attribute of a fetched class object writes it.
            try c.perform { ctx in
                let first = try #require(try ctx.fetchOne(PClassItem.all.where(\PClassItem.id == 1)))
                try first.encode(\.name, "renamed")
            }
            #expect(try c.perform { ctx in try ctx.fetch(PClassItem.all.sort(\.id), \.name) } == ["renamed", "class 2", "class 3"])
        }
    }

    /// Decimals that a double cannot tell apart still compare and sort exactly on both backends
    /// (SQLite compares the column's exact digits through its `unity_decimal` collation; a CAST
    /// to NUMERIC would round both sides to the same double).
    @Test(arguments: Backend.allCases)
    func decimalsBeyondADoublesPrecisionCompareExactly(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            let prices = ["12345678901234567890.5", "12345678901234567890.25", "12345678901234567890.375", "-0.000000000000000000001"]
            try c.perform { ctx in
                for (i, text) in prices.enumerated() {
                    var item = PItem(id: i + 1)
                    item.price = try #require(Decimal(string: text))
                    try ctx.insert(item)
                }
            }
            let middle = try #require(Decimal(string: "12345678901234567890.3"))
            try Self.expectEqual({ try Self.ids(c, \PItem.price > middle) }, [1, 3])
            try Self.expectEqual({ try Self.ids(c, \PItem.price <= middle) }, [2, 4])
            try Self.expectEqual({ try Self.ids(c, \PItem.price == Decimal(string: "12345678901234567890.375")!) }, [3])
            try Self.expectEqual({ try Self.ids(c, \PItem.price != Decimal(string: "12345678901234567890.375")!) }, [1, 2, 4])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.price), \.id) } }, [4, 2, 3, 1])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.price, ascending: false), \.id) } }, [1, 3, 2, 4])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(PItem.all.sort(\.price), \.price) } },
                                 [prices[3], prices[1], prices[2], prices[0]].map { Decimal(string: $0)! })
        }
    }

    @Test(arguments: Backend.allCases)
    func stringsSortInByteOrder(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            let names = ["b", "2", "a", "10", "Z", "é", "z", "É", "ω"]
            try c.perform { ctx in for n in names { try ctx.insert(T(marker: n, amount: 0, name: n)) } }
            let sorted = try c.perform { ctx in try ctx.fetch(T.all.sort(\.name), \.name) }
            #expect(sorted == ["10", "2", "Z", "a", "b", "z", "É", "é", "ω"])
            try Self.expectEqual({ try c.perform { ctx in try ctx.fetch(T.all.where(\T.name > "Z").sort(\.name), \.name) } }, ["a", "b", "z", "É", "é", "ω"])
        }
    }

    @Test(arguments: Backend.allCases)
    func unknownKeyPathIsATypedError(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            let log = ErrorLog()
            let logged = PersistentContainer(database: db, models: predicateModels, logError: log.log)
            #expect(throws: PredicatesError.self) { try logged.perform { ctx in try ctx.fetch(T.all.where(\T.marker.count == 1)) } }
            #expect(log.all.count == 1)
            try Self.expectEqual({ try c.perform { ctx in try ctx.count(of: T.all) } }, 0)
        }
    }
}
