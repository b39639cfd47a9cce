import DriverPostgres
import Foundation
import Testing

/// The values at the edges of PostgreSQL's types, each read twice: alone (binary format) and
/// beside an `interval` column, which has no binary decoder and so puts the whole statement in
/// text format. Both paths must give the same value, or the same error.
@Suite("PostgreSQL value edges, binary and text paths")
struct PostgresValueEdgeTests {
    enum Path: String, CaseIterable, CustomTestStringConvertible {
        case binary, text
        var testDescription: String { rawValue }
    }

    /// The value of `expression` read through `path`.
    func readValue(_ db: any DriverConnection, _ expression: String, _ path: Path) throws -> DatabaseValue {
        switch path {
        case .binary:
            return try scalar(db, "SELECT \(expression) AS v")
        case .text:
            let row = try #require(try rows(db, "SELECT \(expression) AS v, '1 day'::interval AS i").first)
            #expect(row["i"] == .text("1 day"), "the interval column must force the text path")
            return row[0]
        }
    }

    static func day(_ days: Int64) -> DatabaseValue { .date(DateText.date(daysSinceReferenceDate: days)) }
    static func micros(_ micros2001: Int64) -> DatabaseValue { .date(DateText.date(microsecondsSinceReferenceDate: micros2001)) }
    /// PostgreSQL's END_TIMESTAMP - 1: 294276-12-31 23:59:59.999999 in µs since 2000.
    static let maxTimestampMicros2000: Int64 = 9_223_371_331_199_999_999

    /// (expression, expected value); day counts are from 2001-01-01, computed with the
    /// proleptic Gregorian calendar.
    static let dateCases: [(String, DatabaseValue)] = [
        ("DATE '300000-01-01'", day(108_841_899)),
        ("DATE '5874897-12-31'", day(2_145_031_582)),
        ("DATE '10000-01-01'", day(2_921_574)),
        ("DATE '0001-01-01'", day(-730_485)),
        ("DATE '0044-03-15 BC'", day(-746_483)),
        ("DATE '4714-11-24 BC'", day(-2_451_911)),
        ("'infinity'::date", .date(.distantFuture)),
        ("'-infinity'::date", .date(.distantPast)),
        ("'infinity'::timestamp", .date(.distantFuture)),
        ("'-infinity'::timestamptz", .date(.distantPast)),
        ("TIMESTAMP '10000-01-01 00:00:00'", .date(Date(timeIntervalSinceReferenceDate: 2_921_574 * 86_400))),
        ("TIMESTAMP '294276-12-31 23:59:59.999999'", micros(maxTimestampMicros2000 - 31_622_400_000_000)),
        ("TIMESTAMPTZ '294276-12-31 23:59:59.999999+00'", micros(maxTimestampMicros2000 - 31_622_400_000_000)),
        ("TIMESTAMP '0044-03-15 12:30:00 BC'", .date(Date(timeIntervalSinceReferenceDate: -746_483 * 86_400 + 45_000))),
        ("TIMESTAMPTZ '0044-03-15 12:30:00+00 BC'", .date(Date(timeIntervalSinceReferenceDate: -746_483 * 86_400 + 45_000))),
        ("TIMESTAMP '4714-11-24 00:00:00 BC'", .date(Date(timeIntervalSinceReferenceDate: -2_451_911 * 86_400))),
        ("TIMESTAMPTZ '1962-02-17 23:15:30-00:44:30'", .date(Date(timeIntervalSinceReferenceDate: -14_197 * 86_400))),
        ("TIMESTAMPTZ '2007-01-01 05:45:00+05:45'", .date(Date(timeIntervalSinceReferenceDate: 189_302_400))),
    ]

    @Test("dates from 4714 BC to 5874897 AD, BC eras, 5+ digit years and infinities read the same on both paths",
          arguments: Path.allCases)
    func dates(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            for (expression, expected) in Self.dateCases {
                #expect(try readValue(db, expression, path) == expected, "\(expression)")
            }
        }
    }

    @Test("a far-future date never traps; stored, it reads back on both paths", arguments: Path.allCases)
    func farFutureDateInATable(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            try db.executeScript("CREATE TABLE d (v date, t timestamp, tz timestamptz)")
            try db.executeScript("INSERT INTO d VALUES ('300000-01-01', '294276-12-31 23:59:59.999999', 'infinity')")
            let suffix = path == .text ? ", '1 day'::interval AS i" : ""
            let row = try #require(try rows(db, "SELECT v, t, tz\(suffix) FROM d").first)
            #expect(row["v"] == Self.day(108_841_899))
            #expect(row["t"] == Self.micros(Self.maxTimestampMicros2000 - 31_622_400_000_000))
            #expect(row["tz"] == .date(.distantFuture))
        }
    }

    @Test("timestamptz text with an offset that has seconds reads in any session zone", arguments: Path.allCases)
    func secondsOffsetsInTheSessionZone(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            // A user's own SET overrides what Unity pinned: the decoder must still read it.
            try db.executeScript("SET TimeZone TO 'Africa/Monrovia'")
            let text = try scalar(db, "SELECT TIMESTAMPTZ '1962-02-18 00:00:00+00'::text")
            #expect(text == .text("1962-02-17 23:15:30-00:44:30"))
            #expect(try readValue(db, "TIMESTAMPTZ '1962-02-18 00:00:00+00'", path) == Self.day(-14_197))
            try db.executeScript("SET TimeZone TO 'Asia/Kathmandu'")
            #expect(try readValue(db, "TIMESTAMPTZ '2007-01-01 00:00:00+00'", path) == .date(Date(timeIntervalSinceReferenceDate: 189_302_400)))
        }
    }

    @Test("float4 reads as the widened stored float on both paths (1.1::float4 is 1.100000023841858)",
          arguments: Path.allCases)
    func float4(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            #expect(try readValue(db, "1.1::float4", path) == .double(1.100000023841858))
            #expect(try readValue(db, "'3.4028235e38'::float4", path) == .double(Double(Float.greatestFiniteMagnitude)))
            #expect(try readValue(db, "'1e-45'::float4", path) == .double(Double(Float.leastNonzeroMagnitude)))
            #expect(try readValue(db, "'Infinity'::float4", path) == .double(.infinity))
            #expect(try readValue(db, "'-Infinity'::float4", path) == .double(-.infinity))
            guard case .double(let nan) = try readValue(db, "'NaN'::float4", path) else {
                Issue.record("NaN float4 is not a double")
                return
            }
            #expect(nan.isNaN)
            #expect(try readValue(db, "0.1::float8", path) == .double(0.1))
            #expect(try readValue(db, "'1.7976931348623157e308'::float8", path) == .double(.greatestFiniteMagnitude))
            #expect(try readValue(db, "'5e-324'::float8", path) == .double(.leastNonzeroMagnitude))
        }
    }

    @Test("integer extremes read the same on both paths", arguments: Path.allCases)
    func integers(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            #expect(try readValue(db, "(-32768)::int2", path) == .integer(-32768))
            #expect(try readValue(db, "2147483647::int4", path) == .integer(2_147_483_647))
            #expect(try readValue(db, "(-9223372036854775808)::int8", path) == .integer(Int64.min))
            #expect(try readValue(db, "4294967295::oid", path) == .integer(4_294_967_295))
        }
    }

    @Test("a NUMERIC beyond Decimal's 38 digits is its exact digits as text; reading it as Decimal names the column",
          arguments: Path.allCases)
    func wideNumeric(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            let digits41 = "1234567890123456789012345678901234567890.5"
            #expect(try readValue(db, "\(digits41)::numeric", path) == .text(digits41))
            let digits50 = "12345678901234567890123456789012345678901234567890"
            #expect(try readValue(db, "\(digits50)::numeric", path) == .text(digits50))
            let thousand = String(repeating: "7", count: 1000)
            #expect(try readValue(db, "\(thousand)::numeric", path) == .text(thousand))
            // 38 digits still fit exactly.
            let digits38 = "12345678901234567890.123456789012345678"
            #expect(try readValue(db, "\(digits38)::numeric", path) == .decimal(Decimal(string: digits38)!))
            // Tiny and huge values with few digits fit, through exponents.
            #expect(try readValue(db, "1e-100::numeric", path) == .decimal(Decimal(sign: .plus, exponent: -100, significand: 1)))
            #expect(try readValue(db, "1e120::numeric", path) == .decimal(Decimal(sign: .plus, exponent: 120, significand: 1)))
            #expect(try readValue(db, "-0.000::numeric", path) == .decimal(0))

            // In a table row: the other columns and the column as String still read.
            try db.executeScript("CREATE TABLE n (id int, big numeric, small numeric)")
            try db.executeScript("INSERT INTO n VALUES (1, \(digits41), 2.5)")
            let suffix = path == .text ? ", '1 day'::interval AS i" : ""
            let row = try #require(try rows(db, "SELECT id, big, small\(suffix) FROM n").first)
            #expect(try row.decode(Int.self, column: "id") == 1)
            #expect(try row.decode(Decimal.self, column: "small") == Decimal(string: "2.5"))
            #expect(try row.decode(String.self, column: "big") == digits41)
            let error = databaseError { _ = try row.decode(Decimal.self, column: "big") }
            guard case .typeConversion(let failure)? = error else {
                Issue.record("expected .typeConversion, got \(String(describing: error))")
                return
            }
            #expect(failure.column == "big")
            #expect(failure.expectedType.contains("Decimal"))
        }
    }

    @Test("Decimal.nan is refused on write, as Double.nan")
    func decimalNaNRefused() throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            try db.executeScript("CREATE TABLE n (v numeric)")
            let error = databaseError { try db.execute("INSERT INTO n VALUES ($1)", bindings: [.decimal(.nan)], onRow: nil) }
            guard case .misuse(let message)? = error else {
                Issue.record("expected .misuse, got \(String(describing: error))")
                return
            }
            #expect(message.contains("Decimal.nan"))
            #expect(try scalar(db, "SELECT count(*) FROM n") == .integer(0))
        }
    }

    @Test("every mapped type stored in a table reads the same through both paths, NULLs included", arguments: Path.allCases)
    func tableRoundTrip(_ path: Path) throws {
        try withSchema { (_: TestSchema, db: any DriverConnection) throws in
            try db.executeScript("""
                CREATE TABLE v (id int, i8 bigint, i2 smallint, f8 float8, f4 float4, n numeric, b bool, t text,
                                by bytea, u uuid, j jsonb, jt json, ts timestamptz, tsn timestamp, d date, vc varchar(5), c char(3))
                """)
            let u = UUID(uuidString: "f47ac10b-58cc-4372-a567-0e02b2c3d479")!
            let when = Date(timeIntervalSinceReferenceDate: 189_302_400.123456)
            let values: [DatabaseValue] = [
                .integer(1), .integer(Int64.max), .integer(-32768), .double(-0.1), .double(1.5), .decimal(Decimal(string: "-12345.678900")!),
                .bool(false), .text("é\u{301} 👍🏽 \\ ' \""), .blob(Data([0, 1, 0x5C, 0xFF])), .uuid(u), .json(#"{"a": [1, 2.5, null]}"#),
                .text(#"{"b" : 1}"#), .date(when), .date(when), .date(when), .text("abc"), .text("x"),
            ]
            try db.execute("INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12::json, $13, $14, $15, $16, $17)",
                           bindings: values, onRow: nil)
            try db.execute("INSERT INTO v (id) VALUES (2)", bindings: [], onRow: nil)
            let suffix = path == .text ? ", '1 day'::interval AS forces_text" : ""
            let all = try rows(db, "SELECT id, i8, i2, f8, f4, n, b, t, by, u, j, jt, ts, tsn, d, vc, c\(suffix) FROM v ORDER BY id")
            try #require(all.count == 2)
            let expected: [DatabaseValue] = [
                .integer(1), .integer(Int64.max), .integer(-32768), .double(-0.1), .double(1.5), .decimal(Decimal(string: "-12345.6789")!),
                .bool(false), .text("é\u{301} 👍🏽 \\ ' \""), .blob(Data([0, 1, 0x5C, 0xFF])), .uuid(u), .json(#"{"a": [1, 2.5, null]}"#),
                .json(#"{"b" : 1}"#), .date(when), .date(when), .date(Date(timeIntervalSinceReferenceDate: 189_302_400)),
                .text("abc"), .text("x  "),
            ]
            for (k, value) in expected.enumerated() {
                #expect(all[0][k] == value, "column \(all[0].columnNames[k])")
                if k > 0 { #expect(all[1][k] == .null, "NULL in \(all[1].columnNames[k])") }
            }
        }
    }
}
