import DriverPostgres
import Foundation
import Testing
import Unity

/// Values at the edges of the mapping, on both backends: every value Unity accepts on write
/// reads back equal; one it cannot represent is refused on write; a stored value that does not
/// fit the Swift type asked for fails that read only, naming the column.
@Suite("Core: value edges")
struct ValueEdgeTests {
    func makeTable(_ db: Database, _ columns: [SQLColumnDefinition]) throws {
        try db.write { conn in
            _ = try conn.execute(.createTable(SQLCreateTable("edge", columns: [SQLColumnDefinition("id", .int64, primaryKey: .plain)] + columns)))
        }
    }

    func count(_ db: Database) throws -> Int? {
        try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM edge") }
    }

    func expectMisuse(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected DatabaseError.misuse, nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as DatabaseError {
            guard case .misuse = error else {
                Issue.record("expected .misuse, got \(error)", sourceLocation: sourceLocation)
                return
            }
        } catch {
            Issue.record("expected DatabaseError.misuse, got \(error)", sourceLocation: sourceLocation)
        }
    }

    /// The sign of zero: PostgreSQL keeps `-0.0`; SQLite stores a whole-number REAL as an
    /// integer, so it reads back `0.0` (the README's value table says so). Both are equal to
    /// zero, so only the sign bit tells them apart.
    @Test(arguments: Backend.allCases)
    func negativeZero(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db, [SQLColumnDefinition("x", .double)])
            try db.write { _ = try $0.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(1), "x": .double(-0.0)]))) }
            let back = try #require(try db.read { try $0.fetchValue(Double.self, sql: "SELECT x FROM edge WHERE id = 1") })
            #expect(back == 0)
            #expect(back.sign == (backend == .postgres ? .minus : .plus))
        }
    }

    /// Any non-zero integer reads as `true` (SQLite's own rule, and C's), zero as `false`.
    @Test(arguments: Backend.allCases)
    func booleansFromIntegers(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let row = try #require(try db.read { try $0.fetchOne(sql: "SELECT 2 AS two, -1 AS minus, 1 AS one, 0 AS zero") })
            #expect(try row.decode(Bool.self, column: "two") == true)
            #expect(try row.decode(Bool.self, column: "minus") == true)
            #expect(try row.decode(Bool.self, column: "one") == true)
            #expect(try row.decode(Bool.self, column: "zero") == false)
        }
    }

    /// A date is kept to the nearest microsecond, on both backends: 0.6 µs after an instant
    /// is stored as 1 µs after it, 0.4 µs as the instant itself (never truncated).
    @Test(arguments: Backend.allCases)
    func datesRoundToTheNearestMicrosecond(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db, [SQLColumnDefinition("d", .date)])
            let base = 700_000_000.0   // 2023-03-07 20:26:40 UTC
            try db.write { conn in
                try conn.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(1), "d": .date(Date(timeIntervalSinceReferenceDate: base + 0.0000006))])))
                try conn.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(2), "d": .date(Date(timeIntervalSinceReferenceDate: base + 0.0000004))])))
            }
            let up = try #require(try db.read { try $0.fetchValue(Date.self, sql: "SELECT d FROM edge WHERE id = 1") })
            let down = try #require(try db.read { try $0.fetchValue(Date.self, sql: "SELECT d FROM edge WHERE id = 2") })
            #expect(DateText.microsecondsSinceReferenceDate(up) == 700_000_000_000_001)
            #expect(DateText.microsecondsSinceReferenceDate(down) == 700_000_000_000_000)
        }
    }

    static let year10000 = Date(timeIntervalSinceReferenceDate: 2_921_574 * 86_400)
    static let lastMicroOf9999 = Date(timeIntervalSinceReferenceDate: 252_423_993_599.5)
    static let year1 = Date(timeIntervalSinceReferenceDate: -730_485 * 86_400)

    @Test("dates: each backend's range round-trips; SQLite refuses years past 9999 on write", arguments: Backend.allCases)
    func dateRanges(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db, [SQLColumnDefinition("v", .date)])
            let inRange = [Self.year1, Date.distantPast, Date.distantFuture, Self.lastMicroOf9999,
                           Date(timeIntervalSinceReferenceDate: 189_302_400.123456)]
            try db.write { conn in
                for (i, d) in inRange.enumerated() {
                    _ = try conn.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(Int64(i)), "v": .date(d)])))
                }
            }
            let back = try db.read { conn in
                try conn.fetchAll(sql: "SELECT v FROM edge ORDER BY id").map { try $0.decode(Date.self, column: "v") }
            }
            #expect(back == inRange)

            let beyond = [Self.year10000, Date(timeIntervalSinceReferenceDate: 9e12)]
            for (i, d) in beyond.enumerated() {
                let insert = SQLInsert(into: "edge", values: ["id": .integer(Int64(100 + i)), "v": .date(d)])
                switch backend {
                case .sqlite:
                    expectMisuse { try db.write { _ = try $0.execute(.insert(insert)) } }
                case .postgres:
                    try db.write { _ = try $0.execute(.insert(insert)) }
                    let read = try db.read { try $0.fetchValue(Date.self, sql: "SELECT v FROM edge WHERE id = \(100 + i)") }
                    #expect(read == d)
                }
            }
            // Beyond every backend's range: refused on write, nothing stored.
            for (i, d) in [Date(timeIntervalSinceReferenceDate: 9.3e12), Date(timeIntervalSinceReferenceDate: -2.5e11)].enumerated() {
                expectMisuse {
                    try db.write { _ = try $0.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(Int64(200 + i)), "v": .date(d)]))) }
                }
            }
            #expect(try count(db) == inRange.count + (backend == .postgres ? beyond.count : 0))
        }
    }

    @Test("Decimal.nan is refused on write, as Double.nan; nothing is written", arguments: Backend.allCases)
    func decimalNaN(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db, [SQLColumnDefinition("v", .decimal)])
            expectMisuse {
                try db.write { _ = try $0.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(1), "v": Decimal.nan.databaseValue]))) }
            }
            expectMisuse {
                try db.write { _ = try $0.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(2), "v": .double(.nan)]))) }
            }
            #expect(try count(db) == 0)
        }
    }

    @Test("a REAL read as Decimal is its shortest decimal; 1e300 and 1e-300 throw, never NaN", arguments: Backend.allCases)
    func realToDecimal(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db, [SQLColumnDefinition("v", .double)])
            let values: [Double] = [0.1, 2.675, 1e300, 1e-300, 123456.789]
            try db.write { conn in
                for (i, v) in values.enumerated() {
                    _ = try conn.execute(.insert(SQLInsert(into: "edge", values: ["id": .integer(Int64(i)), "v": .double(v)])))
                }
            }
            let rows = try db.read { try $0.fetchAll(sql: "SELECT id, v FROM edge ORDER BY id") }
            #expect(try rows[0].decode(Decimal.self, column: "v") == Decimal(string: "0.1"))
            #expect(try rows[1].decode(Decimal.self, column: "v") == Decimal(string: "2.675"))
            #expect(try rows[4].decode(Decimal.self, column: "v") == Decimal(string: "123456.789"))
            for i in [2, 3] {
                do {
                    let d = try rows[i].decode(Decimal.self, column: "v")
                    Issue.record("\(values[i]) read as Decimal \(d)")
                } catch let error as DatabaseError {
                    guard case .typeConversion(let failure) = error else {
                        Issue.record("expected .typeConversion, got \(error)")
                        continue
                    }
                    #expect(failure.column == "v")
                }
                #expect(try rows[i].decode(Double.self, column: "v") == values[i])
            }
        }
    }

    @Test("a stored number with more than 38 significant digits fails only its Decimal read, naming the column",
          arguments: Backend.allCases)
    func wideNumbers(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTable(db, [SQLColumnDefinition("big", .decimal), SQLColumnDefinition("name", .text)])
            let digits = "1234567890123456789012345678901234567890.5"
            try db.write { conn in
                _ = try conn.execute(sql: "INSERT INTO edge (id, big, name) VALUES (1, '\(digits)', 'kept')")
            }
            let row = try #require(try db.read { try $0.fetchOne(sql: "SELECT id, big, name FROM edge") })
            #expect(try row.decode(Int.self, column: "id") == 1)
            #expect(try row.decode(String.self, column: "name") == "kept")
            do {
                let d = try row.decode(Decimal.self, column: "big")
                Issue.record("a 41-digit number read as the Decimal \(d)")
            } catch let error as DatabaseError {
                guard case .typeConversion(let failure) = error else {
                    Issue.record("expected .typeConversion, got \(error)")
                    return
                }
                #expect(failure.column == "big")
            }
            if backend == .postgres {
                #expect(try row.decode(String.self, column: "big") == digits)
            }
        }
    }
}

/// Inline literals and identifiers: the same answer on both backends, safe whatever the
/// PostgreSQL server's string settings.
@Suite("Core: inline literals and long identifiers")
struct LiteralAndIdentifierEdgeTests {
    @Test("an inlined string default with backslashes and quotes is stored exactly, even with standard_conforming_strings off",
          arguments: Backend.allCases)
    func inlineStringLiterals(_ backend: Backend) throws {
        try withTestDatabase(backend, connections: 1) { (db: Database) throws in
            let hostile = #"a\'; DROP TABLE lit; --\\ '' \x41 é'"# + "\u{301}"
            try db.withConnection { conn in
                if backend == .postgres { _ = try conn.execute(sql: "SET standard_conforming_strings TO off") }
                _ = try conn.execute(.createTable(SQLCreateTable("lit", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("note", .text, default: .value(hostile)),
                    SQLColumnDefinition("data", .blob, default: .bind(.blob(Data([0x5C, 0x27, 0x00, 0xFF])))),
                ])))
                _ = try conn.execute(sql: "INSERT INTO lit (id) VALUES (1)")
                if backend == .postgres { _ = try conn.execute(sql: "RESET standard_conforming_strings") }
            }
            let row = try #require(try db.read { try $0.fetchOne(sql: "SELECT note, data FROM lit") })
            #expect(try row.decode(String.self, column: "note") == hostile)
            #expect(try row.decode(Data.self, column: "data") == Data([0x5C, 0x27, 0x00, 0xFF]))
        }
    }

    @Test("identifiers over 63 bytes are refused before anything runs, on both backends", arguments: Backend.allCases)
    func longIdentifiers(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let prefix = String(repeating: "n", count: 63)
            for name in [prefix + "1", prefix + "2"] {
                do {
                    try db.write { _ = try $0.execute(.createTable(SQLCreateTable(name, columns: [SQLColumnDefinition("id", .int64)]))) }
                    Issue.record("a \(name.utf8.count)-byte table name was accepted")
                } catch let error as DatabaseError {
                    guard case .misuse = error else {
                        Issue.record("expected .misuse, got \(error)")
                        continue
                    }
                }
            }
            try db.write { _ = try $0.execute(.createTable(SQLCreateTable(prefix, columns: [SQLColumnDefinition("id", .int64)]))) }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM \"\(prefix)\"") } == 0)
        }
    }
}

/// Text orders and compares in binary code-point order on both backends (SQLite's BINARY
/// collation; PostgreSQL columns declared through the AST are `COLLATE "C"`).
@Suite("Core: text order is code-point order")
struct TextOrderTests {
    static let words = ["b", "B", "a", "A", "é", "e", "Z", "_x", "ä", "ab", "a b", "10", "9", "Ω"]
    /// Sorted by Unicode scalar values (the same as UTF-8 byte order).
    static let codePointOrder = words.sorted { Array($0.unicodeScalars.map(\.value)).lexicographicallyPrecedes($1.unicodeScalars.map(\.value)) }

    static func check(_ db: Database) throws {
        try db.write { conn in
            _ = try conn.execute(.createTable(SQLCreateTable("words", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("w", .text),
                SQLColumnDefinition("v", .varchar(10)),
            ])))
            _ = try conn.execute(.createIndex(SQLCreateIndex("words_w", on: "words", columns: ["w"])))
            for (i, w) in words.enumerated() {
                _ = try conn.execute(.insert(SQLInsert(into: "words", values: ["id": .integer(Int64(i)), "w": .text(w), "v": .text(w)])))
            }
        }
        for column in ["w", "v"] {
            let ordered = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "words").orderBy(SQLExpression.column(column).asc))).map { try $0.decode(String.self, column: column) }
            }
            #expect(ordered == codePointOrder, "ORDER BY \(column)")
            let below = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "words").where(.binary(.column(column), .less, .bind(.text("a"))))
                    .orderBy(SQLExpression.column(column).asc))).map { try $0.decode(String.self, column: column) }
            }
            #expect(below == codePointOrder.filter { $0.unicodeScalars.lexicographicallyPrecedes("a".unicodeScalars) }, "\(column) < 'a'")
            let maximum = try db.read { try $0.fetchOne(.select(SQLSelect(from: "words").columns([.expression(SQLExpression.function(name: "max", arguments: [.column(column)], distinct: false))]))) }
            #expect(maximum?[0] == .text("Ω"))
        }
    }

    @Test(arguments: Backend.allCases)
    func codePointOrder(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in try Self.check(db) }
    }

    @Test("PostgreSQL: the same order in a database whose locale is ICU en-US; ORDER BY still uses the index")
    func postgresLocaleDoesNotChangeOrder() throws {
        let base = try #require(postgresURL)
        let name = "unity_icu_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let admin = try Database(driver: PostgresDriver(base, connections: 1))
        defer {
            _ = try? admin.withConnection { try $0.execute(sql: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
            admin.close()
        }
        try admin.withConnection {
            _ = try $0.execute(sql: "CREATE DATABASE \(name) LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8' TEMPLATE template0")
        }
        var url = base
        if let query = url.firstIndex(of: "?") { url = String(url[..<query]) }
        if let slash = url.range(of: "/", options: .backwards) { url = String(url[..<slash.lowerBound]) }
        let db = try Database(driver: PostgresDriver(url + "/" + name, connections: 2))
        defer { db.close() }
        // The server's own order differs here: that is what the column collation overrides.
        let serverOrder = try db.read { try $0.fetchAll(sql: "SELECT w FROM (VALUES ('a'), ('B')) AS t(w) ORDER BY w").map { try $0.decode(String.self, column: "w") } }
        #expect(serverOrder == ["a", "B"])
        try Self.check(db)
        let plan = try db.withConnection { conn in
            _ = try conn.execute(sql: "SET enable_seqscan TO off")
            defer { _ = try? conn.execute(sql: "RESET enable_seqscan") }
            return try conn.fetchAll(sql: "EXPLAIN SELECT w FROM words ORDER BY w").map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
        }
        #expect(plan.contains("words_w"), "\(plan)")
    }
}
