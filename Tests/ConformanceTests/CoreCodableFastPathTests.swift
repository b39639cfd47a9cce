import Foundation
import Testing
import Unity

/// A record with a key that is never a column (decoded from a default) and an optional.
private struct Gadget: Codable, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, label, weight, madeAt = "made_at", blob, existsInDatabase
    }

    var id: Int64
    var label: String
    var weight: Double?
    var madeAt: Date
    var blob: Data
    var existsInDatabase = false
}

/// Keeps its decoding container after `init(from:)` returns.
private struct Keeper: Decodable {
    enum CodingKeys: String, CodingKey { case id, label }
    let id: Int64
    let label: String
    let container: KeyedDecodingContainer<CodingKeys>

    init(from decoder: any Decoder) throws {
        container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        label = try container.decode(String.self, forKey: .label)
    }
}

/// The shortcuts the row decoder and encoder take for speed (column-position guesses, names
/// remembered as missing, a reused container, metatype fast paths) must decode and encode
/// exactly what the plain lookups do, whatever order and case the columns come in.
@Suite("Core: Codable fast paths")
struct CoreCodableFastPathTests {
    let decoder = RowDecoder(defaultValues: ["existsInDatabase": .bool(true)])
    let date = Date(timeIntervalSinceReferenceDate: 86_400.25)

    func row(_ names: [String], _ values: [DatabaseValue]) -> Row {
        Row(layout: RowLayout(columnNames: names), values: values)
    }

    @Test func rowsDecoderReadsColumnsInAnyOrderAndFollowsEachRow() throws {
        let rows = rowsDecoder()
        let inOrder = RowLayout(columnNames: ["id", "label", "weight", "made_at", "blob"])
        let shuffled = RowLayout(columnNames: ["blob", "made_at", "weight", "label", "id"])
        let first = try rows.decode(Row(layout: inOrder, values: [1, "a", 1.5, .date(date), .blob(Data([1]))]))
        let second = try rows.decode(Row(layout: inOrder, values: [2, "b", .null, .text("2001-01-02 00:00:00.250000"), .blob(Data([2, 3]))]))
        // A different layout between rows: nothing learned from the first one may leak.
        let third = try rows.decode(Row(layout: shuffled, values: [.blob(Data()), .date(date), 3.0, "c", 3]))
        #expect(first == Gadget(id: 1, label: "a", weight: 1.5, madeAt: date, blob: Data([1]), existsInDatabase: true))
        #expect(second == Gadget(id: 2, label: "b", weight: nil, madeAt: date, blob: Data([2, 3]), existsInDatabase: true))
        #expect(third == Gadget(id: 3, label: "c", weight: 3, madeAt: date, blob: Data(), existsInDatabase: true))
        // The one-row decoder agrees.
        #expect(try decoder.decode(Gadget.self, from: Row(layout: shuffled, values: [.blob(Data()), .date(date), 3.0, "c", 3])) == third)
    }

    private func rowsDecoder() -> RowsDecoder<Gadget> { decoder.rowsDecoder(for: Gadget.self) }

    /// A cursor writes its next row over the previous row's values in place, which it can only
    /// do when nothing else holds that buffer: the rows decoder must not keep it after a row.
    @Test func rowsDecoderLetsGoOfTheRowsValues() throws {
        let rows = rowsDecoder()
        var row = row(["id", "label", "weight", "made_at", "blob"], [7, "g", .null, .date(date), .blob(Data([9]))])
        let before = row.values.withUnsafeBufferPointer { $0.baseAddress }
        #expect(try rows.decode(row) == Gadget(id: 7, label: "g", weight: nil, madeAt: date, blob: Data([9]), existsInDatabase: true))
        // A mutable access copies a shared buffer first: the same address means nobody else held it.
        let after = row.values.withUnsafeMutableBufferPointer { UnsafePointer($0.baseAddress) }
        #expect(before == after)
        row.values[0] = 8
        #expect(try rows.decode(row).id == 8)
    }

    /// A type that keeps its keyed container (unsupported with a rows decoder, see its doc)
    /// gets an error from it after its row, never a crash or another row's value, and the
    /// rows after it still decode in full.
    @Test func aContainerKeptPastItsRowThrows() throws {
        let rows = decoder.rowsDecoder(for: Keeper.self)
        let layout = RowLayout(columnNames: ["id", "label"])
        let first = try rows.decode(Row(layout: layout, values: [1, "a"]))
        #expect(first.id == 1 && first.label == "a")
        #expect(throws: (any Error).self) { try first.container.decode(String.self, forKey: .label) }
        #expect(throws: (any Error).self) { try first.container.decode(Int64.self, forKey: .id) }
        let second = try rows.decode(Row(layout: layout, values: [2, "b"]))
        #expect(second.id == 2 && second.label == "b")
    }

    @Test func aColumnWinsOverTheDefaultAndCaseIsFolded() throws {
        let rows = rowsDecoder()
        // Upper-case names (as PostgreSQL returns quoted ones) are found case-insensitively.
        let upper = try rows.decode(row(["ID", "LABEL", "WEIGHT", "MADE_AT", "BLOB"], [4, "d", .null, .date(date), .blob(Data())]))
        #expect(upper.id == 4 && upper.label == "d" && upper.existsInDatabase)
        // A real existsInDatabase column beats the default, even after rows without one.
        let withFlag = try rows.decode(row(["id", "label", "weight", "made_at", "blob", "existsInDatabase"],
                                           [5, "e", 2.0, .date(date), .blob(Data()), .bool(false)]))
        #expect(withFlag.existsInDatabase == false)
    }

    @Test func missingColumnsAndWrongTypesStillThrow() {
        let rows = rowsDecoder()
        #expect(throws: DatabaseError.self) { try rows.decode(row(["id", "label"], [1, "a"])) }
        #expect(throws: DatabaseError.self) {
            try rows.decode(row(["id", "label", "weight", "made_at", "blob"], ["x", "a", .null, .date(date), .blob(Data())]))
        }
        #expect(throws: DatabaseError.self) {
            try rows.decode(row(["id", "label", "weight", "made_at", "blob"], [1, "a", "heavy", .date(date), .blob(Data())]))
        }
    }

    @Test func layoutLookupFoldsCaseWithoutChangingWhichColumnWins() {
        let layout = RowLayout(columnNames: ["Name", "name", "ÉTÉ", "x"])
        #expect(layout.index(of: "name") == 1)
        #expect(layout.index(of: "NAME") == 0)
        #expect(layout.index(of: "été") == 2)
        #expect(layout.index(of: "nam") == nil)
        #expect(layout.index(of: "names") == nil)
    }

    @Test func encoderKeepsOrderSkipsKeysAndTypesValues() throws {
        let gadget = Gadget(id: 7, label: "g", weight: nil, madeAt: date, blob: Data([9]), existsInDatabase: true)
        let pairs = try RowEncoder(skippedKeys: ["existsInDatabase"]).encode(gadget)
        #expect(pairs.map(\.column) == ["id", "label", "weight", "made_at", "blob"])
        #expect(pairs.map(\.value) == [.integer(7), .text("g"), .null, .date(date), .blob(Data([9]))])
    }

    /// More columns than the encoder scans before it indexes them, with one written twice.
    struct Wide: Encodable {
        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            for i in 0..<40 { try container.encode(Int64(i), forKey: Key(stringValue: "c\(i)")) }
            try container.encode(Int64(100), forKey: Key(stringValue: "c3"))
            try container.encode(Int64(200), forKey: Key(stringValue: "c30"))
        }
    }

    /// A few columns (scanned, not indexed): one written twice, and a name in NFC and in NFD,
    /// which the database sees as two columns.
    struct Narrow: Encodable {
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Wide.Key.self)
            try container.encode("a", forKey: Wide.Key(stringValue: "name"))
            try container.encode(Int64(1), forKey: Wide.Key(stringValue: "\u{E9}t\u{E9}"))
            try container.encode(Int64(2), forKey: Wide.Key(stringValue: "e\u{301}te\u{301}"))
            try container.encode("b", forKey: Wide.Key(stringValue: "name"))
        }
    }

    @Test func columnsAreToldApartByTheirBytes() throws {
        let pairs = try RowEncoder().encode(Narrow())
        #expect(pairs.map { Array($0.column.utf8) } == [Array("name".utf8), [0xC3, 0xA9, 0x74, 0xC3, 0xA9],
                                                         [0x65, 0xCC, 0x81, 0x74, 0x65, 0xCC, 0x81]])
        #expect(pairs.map(\.value) == [.text("b"), .integer(1), .integer(2)])
        // The same past the scan limit, where the encoder indexes its columns.
        struct WideNFD: Encodable {
            func encode(to encoder: any Encoder) throws {
                try Wide().encode(to: encoder)
                var container = encoder.container(keyedBy: Wide.Key.self)
                try container.encode(Int64(1), forKey: Wide.Key(stringValue: "\u{E9}"))
                try container.encode(Int64(2), forKey: Wide.Key(stringValue: "e\u{301}"))
                try container.encode(Int64(3), forKey: Wide.Key(stringValue: "\u{E9}"))
            }
        }
        let wide = try RowEncoder().encode(WideNFD())
        #expect(wide.count == 42)
        #expect(wide[40].value == .integer(3) && wide[41].value == .integer(2))
    }

    /// Skipped keys are matched by their bytes too, whether the encoder lists few of them or
    /// hashes many.
    @Test func skippedKeysAreMatchedByTheirBytes() throws {
        let nfc = "\u{E9}t\u{E9}", nfd = "e\u{301}te\u{301}"
        for extra in [[], ["k1", "k2", "k3", "k4"]] as [[String]] {
            let pairs = try RowEncoder(skippedKeys: Set([nfc, "name"] + extra)).encode(Narrow())
            #expect(pairs.map { Array($0.column.utf8) } == [Array(nfd.utf8)])
            #expect(pairs.map(\.value) == [.integer(2)])
        }
    }

    @Test func aColumnWrittenTwiceKeepsItsPlaceAndTheLastValue() throws {
        let pairs = try RowEncoder().encode(Wide())
        #expect(pairs.count == 40)
        #expect(pairs[3].column == "c3" && pairs[3].value == .integer(100))
        #expect(pairs[30].column == "c30" && pairs[30].value == .integer(200))
        #expect(pairs[39].column == "c39" && pairs[39].value == .integer(39))
    }
}
