import Foundation
import Testing
import Unity
import UnityRowCoding

/// Foundation's `#Predicate` and `SortDescriptor` compiled to SQL: every case is checked
/// against a literal list of ids AND against `predicate.evaluate` over the same objects in
/// Swift, on both backends.
@Suite("#Predicate compiled to SQL")
struct PredicateSQLTests {
    enum PdKind: String, Codable, Sendable, DatabaseValueConvertible { case small, medium, big }

    @RowCoded
    struct PdGadget: ModelDef, Equatable {
        var id: Int
        var name: String
        var nick: String?
        var score: Int
        var ratio: Double
        var price: Decimal
        var flag: Bool
        var born: Date
        var kind: PdKind
        var existsInDatabase = false
        static let tableName = "pd_gadget"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        /// A computed property: no column.
        var shout: String { name.uppercased() }
    }

    static func day(_ text: String) -> Date {
        let f = ISO8601DateFormatter()
        return f.date(from: text) ?? Date(timeIntervalSince1970: .nan)
    }

    static let gadgets: [PdGadget] = [
        PdGadget(id: 1, name: "alice", nick: nil, score: 10, ratio: 0.5, price: Decimal(string: "10.00")!,
                 flag: true, born: day("1990-01-01T00:00:00Z"), kind: .small),
        PdGadget(id: 2, name: "Bob", nick: "bobby", score: 42, ratio: -1.25, price: Decimal(string: "9.91")!,
                 flag: false, born: day("1960-06-30T12:00:00Z"), kind: .big),
        PdGadget(id: 3, name: "bo%b", nick: "", score: -7, ratio: 3, price: Decimal(string: "12345678901234567890.12")!,
                 flag: true, born: day("2020-02-29T08:30:00Z"), kind: .big),
        PdGadget(id: 4, name: "\u{00C9}mile", nick: "em", score: 0, ratio: 0, price: Decimal(string: "12345678901234567890.13")!,
                 flag: false, born: day("1969-12-31T23:59:59Z"), kind: .small),
        PdGadget(id: 5, name: "", nick: nil, score: 100, ratio: 2.5, price: Decimal(-1),
                 flag: true, born: day("1970-01-01T00:00:00Z"), kind: .medium),
        PdGadget(id: 6, name: "zed", nick: "Zed", score: 33, ratio: 33, price: Decimal(0),
                 flag: false, born: day("1900-01-01T00:00:00Z"), kind: .medium),
    ]

    static func withGadgets(_ backend: Backend, _ body: (Database) throws -> Void) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("pd_gadget", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("name", .text, notNull: true),
                    SQLColumnDefinition("nick", .text),
                    SQLColumnDefinition("score", .int64, notNull: true),
                    SQLColumnDefinition("ratio", .double, notNull: true),
                    SQLColumnDefinition("price", .decimal, notNull: true),
                    SQLColumnDefinition("flag", .bool, notNull: true),
                    SQLColumnDefinition("born", .date, notNull: true),
                    SQLColumnDefinition("kind", .text, notNull: true),
                ])))
            }
            try DBManager.executeStatements(try gadgets.map { try $0.createSaveStatement() }, in: db)
            try body(db)
        }
    }

    /// The ids `predicate` keeps in SQL, checked against Swift's own answer and `expected`.
    static func check(_ predicate: Predicate<PdGadget>, _ expected: [Int], in db: Database,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let swift = try gadgets.filter { try predicate.evaluate($0) }.map(\.id)
        let sql = try PdGadget.instances(matching: predicate, orderBy: [SortDescriptor(\.id)], in: db).map(\.id)
        #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
        #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
    }

    @Test(arguments: Backend.allCases)
    func comparisonsAndLogic(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            try Self.check(#Predicate<PdGadget> { $0.score > 30 }, [2, 5, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.score >= 33 && $0.score <= 42 }, [2, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.score < 0 || $0.ratio > 30 }, [3, 6], in: db)
            try Self.check(#Predicate<PdGadget> { !($0.score == 0) }, [1, 2, 3, 5, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.flag }, [1, 3, 5], in: db)
            try Self.check(#Predicate<PdGadget> { !$0.flag && $0.score != 0 }, [2, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.ratio <= -1.25 }, [2], in: db)
            let big = PdKind.big
            try Self.check(#Predicate<PdGadget> { $0.kind == big }, [2, 3], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func nilMeansSwiftsNil(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            // `!=` keeps the rows whose value is nil, as Swift does (SQL's `<>` would drop them).
            try Self.check(#Predicate<PdGadget> { $0.nick != "em" }, [1, 2, 3, 5, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.nick == nil }, [1, 5], in: db)
            try Self.check(#Predicate<PdGadget> { $0.nick != nil }, [2, 3, 4, 6], in: db)
            try Self.check(#Predicate<PdGadget> { ($0.nick ?? "none") == "none" }, [1, 5], in: db)
            try Self.check(#Predicate<PdGadget> { $0.nick?.isEmpty == true }, [3], in: db)
            try Self.check(#Predicate<PdGadget> { $0.nick.flatMap { $0.count } == 2 }, [4], in: db)
            try Self.check(#Predicate<PdGadget> {
                if let nick = $0.nick { nick.starts(with: "b") } else { false }
            }, [2], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func strings(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            // Code-point order: uppercase before lowercase, "É" (U+00C9) after "z".
            try Self.check(#Predicate<PdGadget> { $0.name < "b" }, [1, 2, 5], in: db)
            try Self.check(#Predicate<PdGadget> { $0.name > "zed" }, [4], in: db)
            try Self.check(#Predicate<PdGadget> { $0.name.contains("o") }, [2, 3], in: db)
            // A wildcard in the needle is taken literally.
            try Self.check(#Predicate<PdGadget> { $0.name.contains("%") }, [3], in: db)
            try Self.check(#Predicate<PdGadget> { $0.name.starts(with: "bo") }, [3], in: db)
            try Self.check(#Predicate<PdGadget> { $0.name.isEmpty }, [5], in: db)
            try Self.check(#Predicate<PdGadget> { $0.name.count == 3 }, [2, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.name == "Bob" }, [2], in: db)
            // Case-sensitive, as Swift is.
            try Self.check(#Predicate<PdGadget> { $0.name == "bob" }, [], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func collectionsRangesAndArithmetic(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            try Self.check(#Predicate<PdGadget> { [1, 4, 9].contains($0.id) }, [1, 4], in: db)
            let none: [Int] = []
            try Self.check(#Predicate<PdGadget> { none.contains($0.id) }, [], in: db)
            let nicks: [String?] = ["em", nil]
            try Self.check(#Predicate<PdGadget> { nicks.contains($0.nick) }, [1, 4, 5], in: db)
            try Self.check(#Predicate<PdGadget> { (10...42).contains($0.score) }, [1, 2, 6], in: db)
            try Self.check(#Predicate<PdGadget> { (10..<42).contains($0.score) }, [1, 6], in: db)
            // A closed range of strings, by code point ("Bob" sorts before "b").
            try Self.check(#Predicate<PdGadget> { ("b"..."c").contains($0.name) }, [3], in: db)
            try Self.check(#Predicate<PdGadget> { $0.score * 2 - 1 > 60 }, [2, 5, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.score % 3 == 0 }, [2, 4, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.score / 4 == -1 }, [3], in: db)
            try Self.check(#Predicate<PdGadget> { -$0.score > 0 }, [3], in: db)
            try Self.check(#Predicate<PdGadget> { ($0.flag ? $0.score : -$0.score) > 5 }, [1, 5], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func decimalsAndDates(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            let big = Decimal(string: "12345678901234567890.12")!
            // Past a double's precision: .12 and .13 differ.
            try Self.check(#Predicate<PdGadget> { $0.price > big }, [4], in: db)
            try Self.check(#Predicate<PdGadget> { $0.price == big }, [3], in: db)
            let ten = Decimal(10)
            // Numerically: 9.91 < 10 = 10.00.
            try Self.check(#Predicate<PdGadget> { $0.price < ten }, [2, 5, 6], in: db)
            let epoch = Date(timeIntervalSince1970: 0)
            try Self.check(#Predicate<PdGadget> { $0.born < epoch }, [2, 4, 6], in: db)
            try Self.check(#Predicate<PdGadget> { $0.born >= epoch }, [1, 3, 5], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func sortDescriptors(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            let all = #Predicate<PdGadget> { _ in true }
            func ids(_ order: [SortDescriptor<PdGadget>], limit: Int? = nil) throws -> [Int] {
                let sql = try PdGadget.instances(matching: all, orderBy: order, limit: limit, in: db).map(\.id)
                let swift = Array(Self.gadgets.sorted(using: order).map(\.id).prefix(limit ?? .max))
                #expect(sql == swift, "Swift sorts the same objects the same way")
                return sql
            }
            #expect(try ids([SortDescriptor(\.name)]) == [5, 2, 1, 3, 6, 4])
            #expect(try ids([SortDescriptor(\.name, order: .reverse)], limit: 2) == [4, 6])
            // nil first in forward order, last in reverse; ties broken by id.
            #expect(try ids([SortDescriptor(\.nick), SortDescriptor(\.id)]) == [1, 5, 3, 6, 2, 4])
            #expect(try ids([SortDescriptor(\.nick, order: .reverse), SortDescriptor(\.id)]) == [4, 2, 6, 3, 1, 5])
            #expect(try ids([SortDescriptor(\.price)]) == [5, 6, 2, 1, 3, 4])
            #expect(try ids([SortDescriptor(\.born, order: .reverse)]) == [3, 1, 5, 4, 2, 6])
        }
    }

    @Test(arguments: Backend.allCases)
    func countAndDelete(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            #expect(try PdGadget.count(matching: #Predicate { $0.flag }, in: db) == 3)
            #expect(try PdGadget.deleteAll(matching: #Predicate { $0.nick == nil }, in: db) == 2)
            #expect(try PdGadget.allInstances(orderedBy: [.ascending("id")], in: db).map(\.id) == [2, 3, 4, 6])
        }
    }

    @Test(arguments: Backend.allCases)
    func whatCannotBeTranslatedThrowsBeforeAnythingRuns(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            // A computed property has no column.
            let error = #expect(throws: PredicateTranslationError.self) {
                try PdGadget.deleteAll(matching: #Predicate { $0.shout == "BOB" }, in: db)
            }
            #expect(error?.reason.contains("maps to no column of \"pd_gadget\"") == true)
            // A type cast.
            #expect(throws: PredicateTranslationError.self) {
                try PdGadget.deleteAll(matching: #Predicate { ($0.nick as Any?) is String }, in: db)
            }
            // Decimal arithmetic (SQLite would compute it in floating point).
            #expect(throws: PredicateTranslationError.self) {
                try PdGadget.count(matching: #Predicate { $0.price + $0.price > 1 }, in: db)
            }
            #expect(try PdGadget.count(in: db) == 6, "nothing was deleted")
        }
    }

    @Test(arguments: Backend.allCases)
    func aModelWithoutAColumnMappingGetsATypedError(_ backend: Backend) throws {
        try Self.withGadgets(backend) { (db: Database) throws in
            let error = #expect(throws: PredicateTranslationError.self) {
                try ModelDefTests.UnmappedInvoice.instances(matching: #Predicate { $0.id == 1 }, in: db)
            }
            #expect(error?.reason.contains("@RowCoded") == true)
        }
    }
}
