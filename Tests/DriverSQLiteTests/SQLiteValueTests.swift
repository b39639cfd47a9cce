import DriverSQLite
import Foundation
import Testing

@Suite("SQLite value round trips")
struct SQLiteValueTests {
    /// Stores `value` in an untyped column (no affinity, so nothing is converted) and reads it back.
    func roundTrip(_ value: DatabaseValue, on connection: any DriverConnection) throws -> DatabaseValue {
        try connection.run("CREATE TABLE IF NOT EXISTS box (id INTEGER PRIMARY KEY, v)")
        try connection.run("DELETE FROM box")
        #expect(try connection.run("INSERT INTO box (v) VALUES (?)", [value]) == 1)
        let rows = try connection.rows("SELECT v FROM box")
        try #require(rows.count == 1)
        return rows[0][0]
    }

    @Test func integersKeepTheirFullRange() throws {
        let db = try memoryConnection()
        for v in [Int64.min, Int64.max, 0, -1, 42] {
            #expect(try roundTrip(.integer(v), on: db) == .integer(v))
        }
    }

    @Test func doublesIncludingInfinityRoundTrip() throws {
        let db = try memoryConnection()
        for v in [Double.infinity, -Double.infinity, 0.1, -2.5e300, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude] {
            #expect(try roundTrip(.double(v), on: db) == .double(v))
        }
    }

    @Test func nanIsRejectedAsMisuse() throws {
        let db = try memoryConnection()
        try db.run("CREATE TABLE box (v)")
        let error = databaseError { try db.run("INSERT INTO box (v) VALUES (?)", [.double(.nan)]) }
        guard case .misuse(let message)? = error else {
            Issue.record("expected .misuse, got \(String(describing: error))")
            return
        }
        #expect(message.contains("NaN"))
        #expect(try db.scalar("SELECT count(*) FROM box") == .integer(0))
    }

    @Test func textSurvivesEmptyNulAndEmoji() throws {
        let db = try memoryConnection()
        for s in ["", "a\0b", "👩‍👩‍👧‍👦 café ☕️", "plain", String(repeating: "x", count: 100_000)] {
            #expect(try roundTrip(.text(s), on: db) == .text(s))
        }
        #expect(try db.scalar("SELECT length(CAST(? AS BLOB))", [.text("a\0b")]) == .integer(3))
    }

    @Test func emptyBlobIsNotNull() throws {
        let db = try memoryConnection()
        #expect(try roundTrip(.blob(Data()), on: db) == .blob(Data()))
        #expect(try db.scalar("SELECT typeof(v) FROM box") == .text("blob"))
        #expect(try roundTrip(.null, on: db) == .null)
        #expect(try db.scalar("SELECT typeof(v) FROM box") == .text("null"))
    }

    @Test func largeBlobRoundTrips() throws {
        let db = try memoryConnection()
        var bytes = [UInt8](repeating: 0, count: 8 * 1024 * 1024)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 31 &+ i >> 11) }
        let data = Data(bytes)
        #expect(try roundTrip(.blob(data), on: db) == .blob(data))
    }

    @Test func boolIsStoredAsZeroOrOne() throws {
        let db = try memoryConnection()
        #expect(try roundTrip(.bool(true), on: db) == .integer(1))
        #expect(try roundTrip(.bool(false), on: db) == .integer(0))
    }

    @Test func dateKeepsMicroseconds() throws {
        let db = try memoryConnection()
        let date = DateText.date(microsecondsSinceReferenceDate: 765_432_109_876_543)
        let stored = try roundTrip(.date(date), on: db)
        #expect(stored == .text(DateText.format(date)))
        let back = try #require(Date.fromDatabaseValue(stored))
        #expect(DateText.microsecondsSinceReferenceDate(back) == 765_432_109_876_543)
    }

    @Test func uuidIsSixteenByteBlob() throws {
        let db = try memoryConnection()
        let uuid = UUID()
        let stored = try roundTrip(.uuid(uuid), on: db)
        #expect(stored == .blob(uuid.databaseBytes))
        #expect(try db.scalar("SELECT length(v) FROM box") == .integer(16))
        #expect(UUID.fromDatabaseValue(stored) == uuid)
    }

    @Test func decimalKeepsItsDigits() throws {
        let db = try memoryConnection()
        let decimal = try #require(Decimal(string: "12345678901234567890.123456789", locale: Locale(identifier: "en_US_POSIX")))
        let stored = try roundTrip(.decimal(decimal), on: db)
        #expect(stored == .text("12345678901234567890.123456789"))
        #expect(Decimal.fromDatabaseValue(stored) == decimal)
    }

    @Test func jsonIsText() throws {
        let db = try memoryConnection()
        #expect(try roundTrip(.json(#"{"a":[1,2]}"#), on: db) == .text(#"{"a":[1,2]}"#))
        #expect(try db.scalar("SELECT json_extract(v, '$.a[1]') FROM box") == .integer(2))
    }

    @Test func columnTypesMapToValues() throws {
        let db = try memoryConnection()
        let rows = try db.rows("SELECT 1 AS i, 1.5 AS d, 'x' AS t, x'00ff' AS b, NULL AS n")
        try #require(rows.count == 1)
        #expect(rows[0].values == [.integer(1), .double(1.5), .text("x"), .blob(Data([0, 255])), .null])
        #expect(rows[0].columnNames == ["i", "d", "t", "b", "n"])
    }
}
