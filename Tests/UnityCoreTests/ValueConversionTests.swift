import Foundation
import Testing
@testable import Unity

@Suite("Value conversions")
struct ValueConversionTests {
    @Test func dateTextRoundTripsToTheMicrosecond() throws {
        let micros: [Int64] = [0, 1, -1, 123_456_789_012_345, -978_307_200_000_000, 700_000_000_123_456]
        for m in micros {
            let d = DateText.date(microsecondsSinceReferenceDate: m)
            let text = DateText.format(d)
            let back = try #require(DateText.parse(text), "parse \(text)")
            #expect(DateText.microsecondsSinceReferenceDate(back) == m, "\(text)")
        }
    }

    @Test func dateTextFormatIsUTC() {
        #expect(DateText.format(Date(timeIntervalSince1970: 0)) == "1970-01-01 00:00:00.000000")
        #expect(DateText.format(DateText.date(microsecondsSinceReferenceDate: 1)) == "2001-01-01 00:00:00.000001")
    }

    /// The stack-buffer form writes the same text, for known literals at the edges: far years
    /// (5 and 6 digits, before year 0), the clamped text beyond 64-bit microseconds.
    @Test func dateTextFormatsIntoABuffer() {
        func formatted(_ date: Date) -> String {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: DateText.maxFormattedLength) { buffer in
                String(decoding: UnsafeBufferPointer(start: buffer.baseAddress, count: DateText.format(date, into: buffer.baseAddress!)), as: UTF8.self)
            }
        }
        let cases: [(Date, String)] = [
            (Date(timeIntervalSince1970: 0), "1970-01-01 00:00:00.000000"),
            (DateText.date(microsecondsSinceReferenceDate: -1), "2000-12-31 23:59:59.999999"),
            (Date(timeIntervalSince1970: 1_700_000_000.123456), "2023-11-14 22:13:20.123456"),
            (DateText.date(microsecondsSinceReferenceDate: 9_000_000_000_000_000_000), "287199-08-25 16:00:00.000000"),
            (DateText.date(microsecondsSinceReferenceDate: -9_000_000_000_000_000_000), "-283198-05-10 08:00:00.000000"),
            (Date(timeIntervalSinceReferenceDate: 1e300), "9999-12-31 23:59:59.999999"),
            (Date(timeIntervalSinceReferenceDate: -1e300), "0001-01-01 00:00:00.000000"),
        ]
        for (date, text) in cases {
            #expect(formatted(date) == text)
            #expect(DateText.format(date) == text)
        }
    }

    @Test func dateTextParsesFarDatesAndOffsets() throws {
        let y1 = try #require(DateText.parse("0001-01-01 00:00:00"))
        #expect(DateText.format(y1) == "0001-01-01 00:00:00.000000")
        let y9999 = try #require(DateText.parse("9999-12-31 23:59:59"))
        #expect(DateText.format(y9999) == "9999-12-31 23:59:59.000000")
        let offset = try #require(DateText.parse("2024-02-29T12:00:00+02:00"))
        #expect(DateText.format(offset) == "2024-02-29 10:00:00.000000")
        #expect(DateText.parse("2024-13-01") == nil)
        #expect(DateText.parse("not a date") == nil)
        #expect(DateText.parse("2024-01-01 10:00:00junk") == nil)
    }

    @Test func narrowIntegersAreRangeChecked() {
        #expect(Int8.fromDatabaseValue(.integer(127)) == 127)
        #expect(Int8.fromDatabaseValue(.integer(128)) == nil)
        #expect(UInt8.fromDatabaseValue(.integer(-1)) == nil)
        #expect(Int32.fromDatabaseValue(.integer(Int64(Int32.max) + 1)) == nil)
        #expect(Int64.fromDatabaseValue(.double(2.5)) == nil)
        #expect(Int64.fromDatabaseValue(.double(2)) == 2)
        #expect(Int64.fromDatabaseValue(.decimal(Decimal(string: "12")!)) == 12)
        #expect(Int64.fromDatabaseValue(.decimal(Decimal(string: "12.5")!)) == nil)
    }

    @Test func storageFormsConvertToSemanticTypes() throws {
        let uuid = UUID()
        #expect(UUID.fromDatabaseValue(.blob(uuid.databaseBytes)) == uuid)
        #expect(UUID.fromDatabaseValue(.text(uuid.uuidString)) == uuid)
        #expect(UUID.fromDatabaseValue(.blob(Data([1, 2, 3]))) == nil)
        #expect(Bool.fromDatabaseValue(.integer(0)) == false)
        #expect(Bool.fromDatabaseValue(.integer(1)) == true)
        let dec = try #require(Decimal(string: "12345678901234567890123456789012345678"))
        #expect(Decimal.fromDatabaseValue(.text("12345678901234567890123456789012345678")) == dec)
        #expect(String.fromDatabaseValue(.integer(1)) == nil)
    }

    @Test func optionalReadsNullAsNil() {
        let none: Int?? = Optional<Int>.fromDatabaseValue(.null)
        #expect(none == .some(nil))
        let bad: String?? = Optional<String>.fromDatabaseValue(.integer(3))
        #expect(bad == nil)
    }

    enum Color: String, Codable, DatabaseValueConvertible { case red, blue }

    @Test func rawRepresentableUsesRawValue() {
        #expect(Color.red.databaseValue == .text("red"))
        #expect(Color.fromDatabaseValue(.text("blue")) == .blue)
        #expect(Color.fromDatabaseValue(.text("green")) == nil)
    }

    @Test func rowLooksUpByNameAndReportsConversionErrors() throws {
        let row = Row(["id": 1, "Name": "x", "note": nil])
        #expect(row["id"] == .integer(1))
        #expect(row["name"] == .text("x"))  // case-insensitive fallback
        #expect(row["missing"] == nil)
        #expect(try row.decode(Int.self, column: "id") == 1)
        #expect(try row.decodeIfPresent(String.self, column: "note") == nil)
        #expect(throws: DatabaseError.typeConversion(ConversionFailure(column: "Name", expectedType: "Int", actual: "'x'"))) {
            try row.decode(Int.self, column: "Name")
        }
        #expect(throws: DatabaseError.typeConversion(ConversionFailure(column: "note", expectedType: "String", actual: "NULL"))) {
            try row.decode(String.self, column: "note")
        }
    }

    struct Tag: Codable, Equatable { var label: String; var weight: Int }
    struct Record: Codable, Equatable {
        var id: Int64
        var name: String?
        var when: Date
        var uid: UUID
        var price: Decimal
        var color: Color
        var tags: [Tag]
        var existsInDatabase: Bool
    }

    @Test func codableRecordsRoundTripThroughRows() throws {
        let r = Record(id: 7, name: nil, when: DateText.date(microsecondsSinceReferenceDate: 42), uid: UUID(),
                       price: Decimal(string: "1.25")!, color: .blue, tags: [Tag(label: "a", weight: 1)], existsInDatabase: false)
        let pairs = try RowEncoder(skippedKeys: ["existsInDatabase"]).encode(r)
        #expect(pairs.map(\.column) == ["id", "name", "when", "uid", "price", "color", "tags"])
        #expect(pairs[1].value == .null)
        guard case .json(let json) = pairs[6].value else {
            Issue.record("tags should be JSON, got \(pairs[6].value)")
            return
        }
        #expect(json == #"[{"label":"a","weight":1}]"#)
        // Read back the way SQLite hands values back: storage classes only.
        let stored: [DatabaseValue] = [.integer(7), .null, .text(DateText.format(r.when)), .blob(r.uid.databaseBytes),
                                       .text("1.25"), .text("blue"), .text(json)]
        let row = Row(layout: RowLayout(columnNames: pairs.map(\.column)), values: stored)
        var back = try RowDecoder(defaultValues: ["existsInDatabase": .bool(true)]).decode(Record.self, from: row)
        #expect(back.existsInDatabase)
        back.existsInDatabase = false
        #expect(back == r)
    }

    @Test func decodingAWrongTypeNamesTheColumn() {
        let row = Row(["id": "seven", "name": nil, "when": "2024-01-01", "uid": .blob(Data()), "price": "1", "color": "red", "tags": "[]", "existsInDatabase": true])
        #expect(throws: DatabaseError.typeConversion(ConversionFailure(column: "id", expectedType: "Int64", actual: "'seven'"))) {
            try RowDecoder().decode(Record.self, from: row)
        }
    }
}

@Suite("Date text fast path")
struct DateTextCanonicalTests {
    @Test func canonicalAndGeneralParsersAgree() throws {
        for m: Int64 in [0, 1, 999_999, 123_456_789_012_345, -86_400_000_001, 700_000_000_123_456] {
            let text = DateText.format(DateText.date(microsecondsSinceReferenceDate: m))
            var copy = text
            let general = copy.withUTF8 { DateText.parseGeneral($0) }
            #expect(DateText.parse(text) == general)
            #expect(DateText.parse(text).flatMap(DateText.microsecondsSinceReferenceDate) == m)
        }
    }

    @Test func canonicalLengthButMalformedIsRejected() {
        for bad in ["2024-01-01 10:00:00.00000x", "2024-01-01T10:00:00.000000", "2024-13-01 10:00:00.000000",
                    "2024-01-01 24:00:00.000000", "2024/01/01 10:00:00.000000", "2024-01-01 10:00:00,000000"] {
            #expect(bad.utf8.count == 26)
            #expect(DateText.parse(bad) == nil || bad.contains("T"), "\(bad)")
        }
        // 'T' as separator is valid ISO 8601, read by the general parser.
        #expect(DateText.parse("2024-01-01T10:00:00.000000") != nil)
    }
}

@Suite("Date text: PostgreSQL's ISO output at the edges")
struct DateTextEdgeTests {
    @Test("offsets ±HH, ±HH:MM, ±HH:MM:SS, ±HHMM and ±HHMMSS")
    func offsets() throws {
        let utc = try #require(DateText.parse("1962-02-18 00:00:00"))
        for text in ["1962-02-17 23:15:30-00:44:30", "1962-02-17 23:15:30-004430", "1962-02-18 05:45:00+05:45",
                     "1962-02-18 05:45:00+0545", "1962-02-18 03:00:00+03", "1962-02-18 00:00:00Z", "1962-02-18T00:00:00+00:00"] {
            #expect(DateText.parse(text) == utc, "\(text)")
        }
        #expect(DateText.parse("1962-02-18 00:00:00+05:4") == nil)
        #expect(DateText.parse("1962-02-18 00:00:00+99") == nil)
    }

    @Test("BC eras and years of 5 to 9 digits; out of range is nil, never a trap")
    func eras() throws {
        #expect(DateText.parse("0044-03-15 BC") == Date(timeIntervalSinceReferenceDate: -746_483 * 86_400))
        #expect(DateText.parse("0044-03-15 12:30:00+00 BC") == Date(timeIntervalSinceReferenceDate: -746_483 * 86_400 + 45_000))
        #expect(DateText.parse("10000-01-01") == Date(timeIntervalSinceReferenceDate: 2_921_574 * 86_400))
        #expect(DateText.parse("5874897-12-31") == Date(timeIntervalSinceReferenceDate: 2_145_031_582 * 86_400))
        #expect(DateText.parse("999999999-12-31 23:59:59.999999+00") != nil)
        #expect(DateText.parse("1000000000-01-01") == nil)
        #expect(DateText.parse("0000-01-01 BC") == nil)
        #expect(DateText.parse("-0044-03-15 BC") == nil)
    }

    @Test("format never wraps: far dates keep their year, and parse reads them back")
    func farFormat() throws {
        let farMicros: Int64 = 9_223_371_331_199_000_000 - 31_622_400_000_000
        let text = DateText.format(DateText.date(microsecondsSinceReferenceDate: farMicros))
        #expect(text.hasPrefix("294276-12-31 23:59:5"), "\(text)")
        #expect(DateText.format(Date(timeIntervalSinceReferenceDate: -746_483 * 86_400)) == "-0043-03-15 00:00:00.000000")
        #expect(DateText.parse("-0043-03-15 00:00:00.000000") == Date(timeIntervalSinceReferenceDate: -746_483 * 86_400))
        // JSON refuses a date it would have to clamp.
        #expect(throws: EncodingError.self) { try JSONCoding.encoder().encode([Date(timeIntervalSinceReferenceDate: 1e300)]) }
    }

    @Test("SQLite's text range is years 0000 through 9999")
    func textRange() {
        #expect(DateText.isInTextRange(Date.distantPast))
        #expect(DateText.isInTextRange(Date.distantFuture))
        #expect(DateText.isInTextRange(Date(timeIntervalSinceReferenceDate: 252_423_993_599.5)))
        #expect(!DateText.isInTextRange(Date(timeIntervalSinceReferenceDate: 252_423_993_600)))
        #expect(!DateText.isInTextRange(Date(timeIntervalSinceReferenceDate: -63_145_526_400.5)))
        #expect(!DateText.isInTextRange(Date(timeIntervalSinceReferenceDate: .infinity)))
    }
}

@Suite("Decimal: exact or refused")
struct DecimalExactnessTests {
    @Test("text with more than 38 significant digits is refused, 38 are exact")
    func digits() throws {
        #expect(Decimal.fromDatabaseValue(.text("1234567890123456789012345678901234567890.5")) == nil)
        #expect(Decimal.fromDatabaseValue(.text(String(repeating: "9", count: 39))) == nil)
        let d38 = "12345678901234567890.123456789012345678"
        #expect(Decimal.fromDatabaseValue(.text(d38))?.description == d38)
        let nines = String(repeating: "9", count: 38)
        #expect(Decimal.fromDatabaseValue(.text(nines))?.description == nines)
        #expect(Decimal.fromDatabaseValue(.text("-0." + nines))?.description == "-0." + nines)
        #expect(Decimal.fromDatabaseValue(.text("1000000000000000000000000000000000000001"))?.description == nil)
        #expect(Decimal.fromDatabaseValue(.text("-0.000100")) == Decimal(string: "-0.0001"))
        #expect(Decimal.fromDatabaseValue(.text("1e127")) == Decimal(sign: .plus, exponent: 127, significand: 1))
        #expect(Decimal.fromDatabaseValue(.text("1e170")) == nil)
        #expect(Decimal.fromDatabaseValue(.text("12abc")) == nil)
        #expect(Decimal.fromDatabaseValue(.text("")) == nil)
        #expect(Decimal.fromDatabaseValue(.decimal(.nan)) == nil)
    }

    @Test("a Float read refuses a finite double beyond its range instead of making it infinity")
    func floatRange() {
        #expect(Float.fromDatabaseValue(.double(1e300)) == nil)
        #expect(Float.fromDatabaseValue(.double(.infinity)) == .infinity)
        #expect(Float.fromDatabaseValue(.double(1.100000023841858)) == Float(1.1))
    }

    @Test("a double converts through its shortest representation, or not at all")
    func doubles() {
        #expect(Decimal.fromDatabaseValue(.double(0.1)) == Decimal(string: "0.1"))
        #expect(Decimal.fromDatabaseValue(.double(0.30000000000000004)) == Decimal(string: "0.30000000000000004"))
        #expect(Decimal.fromDatabaseValue(.double(-2.5e-7)) == Decimal(string: "-0.00000025"))
        #expect(Decimal.fromDatabaseValue(.double(1e300)) == nil)
        #expect(Decimal.fromDatabaseValue(.double(1e-300)) == nil)
        #expect(Decimal.fromDatabaseValue(.double(.nan)) == nil)
        #expect(Decimal.fromDatabaseValue(.double(.infinity)) == nil)
        #expect(Decimal.fromDatabaseValue(.double(1e20)) == Decimal(string: "100000000000000000000"))
        #expect(Decimal.fromDatabaseValue(.double(0)) == 0)
    }
}
