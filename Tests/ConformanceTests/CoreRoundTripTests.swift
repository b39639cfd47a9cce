import Foundation
import Testing
import Unity

/// A nested JSON document stored in one column.
struct Profile: DatabaseJSONConvertible, Equatable {
    struct Address: Codable, Equatable { var city: String; var zip: String? }
    var name: String
    var tags: [String]
    var address: Address
    var scores: [String: Double]
}

/// Every mapped type with its edge values, stored and read back through the core API on each
/// backend: what goes in must come out equal.
@Suite("Core: value round trips")
struct CoreRoundTripTests {
    /// Creates `values(id, v)` with `v` of `type`, stores each value, and returns what comes back.
    func roundTrip<T: DatabaseValueConvertible>(_ db: Database, _ type: ColumnType, _ values: [T]) throws -> [T] {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("vals", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("v", type),
            ])))
            for (i, v) in values.enumerated() {
                try conn.execute(.insert(SQLInsert(into: "vals", values: ["id": .integer(Int64(i)), "v": v.databaseValue])))
            }
        }
        return try db.read { conn in
            try conn.fetchAll(.select(SQLSelect(from: "vals").orderBy(SQLExpression.column("id").asc))).map {
                try $0.decode(T.self, column: "v")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func integers(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let values: [Int64] = [0, 1, -1, Int64.max, Int64.min, 42]
            #expect(try roundTrip(db, .int64, values) == values)
        }
    }

    @Test(arguments: Backend.allCases)
    func narrowIntegersAreRangeCheckedOnRead(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            _ = try roundTrip(db, .int64, [Int64(300)])
            #expect(throws: DatabaseError.typeConversion(ConversionFailure(column: "v", expectedType: "Int8", actual: "300"))) {
                try db.read { try $0.fetchOne(sql: "SELECT v FROM vals")?.decode(Int8.self, column: "v") }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func doublesIncludingInfinities(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let values: [Double] = [0, -0.0, 1.5, -2.25, .infinity, -.infinity, .greatestFiniteMagnitude, .leastNonzeroMagnitude, 0.1]
            let back = try roundTrip(db, .double, values)
            #expect(back == values)
            let floats: [Float] = [1.5, -3.25]
            #expect(try withTestDatabase(backend) { try roundTrip($0, .float, floats) } == floats)
        }
    }

    @Test(arguments: Backend.allCases)
    func nanIsRejectedTheSameWayOnBothBackends(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE n (v DOUBLE PRECISION)") }
            do {
                try db.write { try $0.execute(.insert(SQLInsert(into: "n", values: ["v": .double(.nan)]))) }
                Issue.record("NaN was accepted")
            } catch let error as DatabaseError {
                guard case .misuse = error else {
                    Issue.record("expected .misuse, got \(error)")
                    return
                }
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM n") } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func booleans(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            #expect(try roundTrip(db, .bool, [true, false]) == [true, false])
        }
    }

    @Test(arguments: Backend.allCases)
    func strings(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let values = ["", "plain", "héllo wörld", "日本語テキスト", "🎉👨‍👩‍👧‍👦", "quote ' and \" and \\", String(repeating: "long", count: 10_000)]
            #expect(try roundTrip(db, .text, values) == values)
        }
    }

    /// SQLite keeps a string with U+0000 intact; PostgreSQL's text type cannot hold it at all,
    /// so the PostgreSQL driver refuses it with a typed error instead of truncating it.
    @Test(arguments: Backend.allCases)
    func stringsWithNUL(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            switch backend {
            case .sqlite:
                #expect(try roundTrip(db, .text, ["a\u{0}b"]) == ["a\u{0}b"])
            case .postgres:
                do {
                    _ = try roundTrip(db, .text, ["a\u{0}b"])
                    Issue.record("PostgreSQL accepted NUL in text")
                } catch let error as DatabaseError {
                    guard case .misuse = error else {
                        Issue.record("expected .misuse, got \(error)")
                        return
                    }
                }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func blobs(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            var big = Data(count: 8 * 1024 * 1024)
            big.withUnsafeMutableBytes { raw in
                for i in 0..<raw.count { raw[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
            }
            let values = [Data(), Data([0]), Data([0, 255, 1, 254]), big]
            let back = try roundTrip(db, .blob, values)
            #expect(back.count == values.count)
            for (a, b) in zip(back, values) { #expect(a == b) }
            #expect(try withTestDatabase(backend) { try roundTrip($0, .blob, [[UInt8]([1, 2, 3])]) } == [[1, 2, 3]])
        }
    }

    @Test(arguments: Backend.allCases)
    func emptyBlobIsNotNull(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            _ = try roundTrip(db, .blob, [Data()])
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM vals WHERE v IS NULL") } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func datesToTheMicrosecond(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let micros: [Int64] = [0, 1, -1, 754_311_234_567_891, -123_456_789_012_345, 999_999]
            var values = micros.map { DateText.date(microsecondsSinceReferenceDate: $0) }
            // Far past and far future, to the second.
            values.append(try #require(DateText.parse("0001-01-01 00:00:00")))
            values.append(try #require(DateText.parse("9999-12-31 23:59:59")))
            values.append(try #require(DateText.parse("1969-07-20 20:17:40.123456")))
            let back = try roundTrip(db, .date, values)
            #expect(back.map(DateText.microsecondsSinceReferenceDate) == values.map(DateText.microsecondsSinceReferenceDate))
        }
    }

    @Test(arguments: Backend.allCases)
    func uuids(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let values = [UUID(), UUID(), try #require(UUID(uuidString: "00000000-0000-0000-0000-000000000000")),
                          try #require(UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"))]
            #expect(try roundTrip(db, .uuid, values) == values)
        }
    }

    @Test(arguments: Backend.allCases)
    func decimalsKeepEveryDigit(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let texts = ["0", "1", "-1", "12345678901234567890123456789012345678", "-0.000000000000000000000000000000000001",
                         "3.14159265358979323846264338327950288", "1000000"]
            let values = try texts.map { try #require(Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX"))) }
            #expect(try roundTrip(db, .decimal, values) == values)
        }
    }

    @Test(arguments: Backend.allCases)
    func nestedJSON(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let values = [
                Profile(name: "Ann", tags: ["a", "b"], address: .init(city: "Zürich", zip: nil), scores: ["x": 1.5, "y": -2]),
                Profile(name: "", tags: [], address: .init(city: "東京", zip: "100-0001"), scores: [:]),
            ]
            #expect(try roundTrip(db, .json, values) == values)
        }
    }

    enum Size: String, DatabaseValueConvertible { case small, large }
    enum Level: Int, DatabaseValueConvertible { case low = 1, high = 9 }

    @Test(arguments: Backend.allCases)
    func rawRepresentableEnums(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            #expect(try roundTrip(db, .text, [Size.small, .large]) == [.small, .large])
        }
        try withTestDatabase(backend) { (db: Database) throws in
            #expect(try roundTrip(db, .int64, [Level.low, .high]) == [.low, .high])
        }
    }

    @Test(arguments: Backend.allCases)
    func optionalsAndNull(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let values: [Int?] = [nil, 3, nil]
            #expect(try roundTrip(db, .int64, values) == values)
        }
    }

    @Test(arguments: Backend.allCases)
    func readingTheWrongTypeNamesColumnTypeAndValue(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            _ = try roundTrip(db, .text, ["not a number"])
            #expect(throws: DatabaseError.typeConversion(ConversionFailure(column: "v", expectedType: "Int", actual: "'not a number'"))) {
                try db.read { try $0.fetchOne(sql: "SELECT v FROM vals")?.decode(Int.self, column: "v") }
            }
        }
    }
}
