import Foundation
import Testing
import Unity
import UnityRowCoding

/// Fixtures of the generated-coding tests: the same columns as a `@RowCoded` model and as a
/// plain `Codable` one, so every value can be compared between the two codings.
enum GeneratedCodingFixtures {
    enum Mood: String, Codable, Sendable, DatabaseValueConvertible { case calm, busy }
    enum Level: Int, Codable, Sendable, DatabaseValueConvertible { case low = 1, high = 9 }

    /// A nested Codable value: stored as a JSON document.
    struct Meta: Codable, Equatable, Sendable {
        var tags: [String]
        var at: Date
        var score: Double?
    }

    static let table = "coding_all"

    /// Every mapped type, as columns (custom names for two of them).
    static let columns: [SQLColumnDefinition] = [
        SQLColumnDefinition("id", .int64, primaryKey: .plain),
        SQLColumnDefinition("i", .int64, notNull: true), SQLColumnDefinition("i8", .int64, notNull: true),
        SQLColumnDefinition("i16", .int64, notNull: true), SQLColumnDefinition("i32", .int64, notNull: true),
        SQLColumnDefinition("u8", .int64, notNull: true), SQLColumnDefinition("u16", .int64, notNull: true),
        SQLColumnDefinition("u32", .int64, notNull: true), SQLColumnDefinition("u64", .int64, notNull: true),
        SQLColumnDefinition("u", .int64, notNull: true),
        SQLColumnDefinition("d", .double, notNull: true), SQLColumnDefinition("f", .double, notNull: true),
        SQLColumnDefinition("b", .bool, notNull: true), SQLColumnDefinition("s", .text, notNull: true),
        SQLColumnDefinition("bytes", .blob, notNull: true), SQLColumnDefinition("made_at", .date, notNull: true),
        SQLColumnDefinition("uuid", .uuid, notNull: true), SQLColumnDefinition("amount", .decimal, notNull: true),
        SQLColumnDefinition("meta", .json, notNull: true), SQLColumnDefinition("mood", .text, notNull: true),
        SQLColumnDefinition("level", .int64, notNull: true),
        SQLColumnDefinition("opt_s", .text), SQLColumnDefinition("opt_i", .int64),
        SQLColumnDefinition("opt_date", .date), SQLColumnDefinition("opt_meta", .json),
        SQLColumnDefinition("opt_mood", .text), SQLColumnDefinition("opt_amount", .decimal),
    ]

    @RowCoded
    struct Generated: ModelDef, Equatable {
        enum CodingKeys: String, CodingKey {
            case id, i, i8, i16, i32, u8, u16, u32, u64, u, d, f, b, s, bytes, madeAt = "made_at", uuid, amount, meta
            case mood, level, optS = "opt_s", optI = "opt_i", optDate = "opt_date", optMeta = "opt_meta"
            case optMood = "opt_mood", optAmount = "opt_amount", existsInDatabase
        }

        static let tableName = GeneratedCodingFixtures.table
        var id: Int64
        var i: Int
        var i8: Int8
        var i16: Int16
        var i32: Int32
        var u8: UInt8
        var u16: UInt16
        var u32: UInt32
        var u64: UInt64
        var u: UInt
        var d: Double
        var f: Float
        var b: Bool
        var s: String
        var bytes: Data
        var madeAt: Date
        var uuid: UUID
        var amount: Decimal
        var meta: Meta
        var mood: Mood
        var level: Level
        var optS: String?
        var optI: Int?
        var optDate: Date?
        var optMeta: Meta?
        var optMood: Mood?
        var optAmount: Decimal?
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// The same model through `Codable`.
    struct Plain: ModelDef, Equatable {
        enum CodingKeys: String, CodingKey {
            case id, i, i8, i16, i32, u8, u16, u32, u64, u, d, f, b, s, bytes, madeAt = "made_at", uuid, amount, meta
            case mood, level, optS = "opt_s", optI = "opt_i", optDate = "opt_date", optMeta = "opt_meta"
            case optMood = "opt_mood", optAmount = "opt_amount", existsInDatabase
        }

        static let tableName = GeneratedCodingFixtures.table
        var id: Int64
        var i: Int
        var i8: Int8
        var i16: Int16
        var i32: Int32
        var u8: UInt8
        var u16: UInt16
        var u32: UInt32
        var u64: UInt64
        var u: UInt
        var d: Double
        var f: Float
        var b: Bool
        var s: String
        var bytes: Data
        var madeAt: Date
        var uuid: UUID
        var amount: Decimal
        var meta: Meta
        var mood: Mood
        var level: Level
        var optS: String?
        var optI: Int?
        var optDate: Date?
        var optMeta: Meta?
        var optMood: Mood?
        var optAmount: Decimal?
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }

        init(_ g: Generated) {
            id = g.id; i = g.i; i8 = g.i8; i16 = g.i16; i32 = g.i32; u8 = g.u8; u16 = g.u16; u32 = g.u32
            u64 = g.u64; u = g.u; d = g.d; f = g.f; b = g.b; s = g.s; bytes = g.bytes; madeAt = g.madeAt
            uuid = g.uuid; amount = g.amount; meta = g.meta; mood = g.mood; level = g.level; optS = g.optS
            optI = g.optI; optDate = g.optDate; optMeta = g.optMeta; optMood = g.optMood; optAmount = g.optAmount
            existsInDatabase = g.existsInDatabase
        }

        /// The generated model with the same values.
        var generated: Generated {
            Generated(id: id, i: i, i8: i8, i16: i16, i32: i32, u8: u8, u16: u16, u32: u32, u64: u64, u: u, d: d, f: f,
                      b: b, s: s, bytes: bytes, madeAt: madeAt, uuid: uuid, amount: amount, meta: meta, mood: mood,
                      level: level, optS: optS, optI: optI, optDate: optDate, optMeta: optMeta, optMood: optMood,
                      optAmount: optAmount, existsInDatabase: existsInDatabase)
        }
    }

    static let date = Date(timeIntervalSince1970: 1_700_000_000.5)
    static let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    /// Extreme values of every type, optionals filled.
    static let full = Generated(
        id: 1, i: Int(Int64.min), i8: -128, i16: 32_767, i32: Int32.min, u8: 255, u16: 65_535, u32: UInt32.max,
        u64: UInt64(Int64.max), u: 42, d: 0.1, f: 1.5, b: true, s: "héllo, 世界 'quoted' \"x\"", bytes: Data([0, 1, 2, 255]),
        madeAt: date, uuid: uuid, amount: Decimal(string: "12345.678901")!,
        meta: Meta(tags: ["a", "b"], at: date, score: 2.5), mood: .busy, level: .high,
        optS: "", optI: -7, optDate: date, optMeta: Meta(tags: [], at: date, score: nil), optMood: .calm,
        optAmount: Decimal(string: "-0.001")!)

    /// Optionals NULL, zero values.
    static let sparse = Generated(
        id: 2, i: 0, i8: 0, i16: 0, i32: 0, u8: 0, u16: 0, u32: 0, u64: 0, u: 0, d: -0.0, f: 0, b: false, s: "",
        bytes: Data(), madeAt: Date(timeIntervalSince1970: 0), uuid: uuid, amount: 0, meta: Meta(tags: [], at: date, score: nil),
        mood: .calm, level: .low, optS: nil, optI: nil, optDate: nil, optMeta: nil, optMood: nil, optAmount: nil)

    static func createTable(_ db: Database) throws {
        try db.write { conn in _ = try conn.execute(.createTable(SQLCreateTable(table, columns: columns))) }
    }
}

/// The generated row coding of `@RowCoded` and `Codable` write and read the same values for
/// every mapped type, on both backends, whichever wrote the row.
@Suite("ModelDef: generated row coding")
struct ModelDefGeneratedCodingTests {
    typealias Generated = GeneratedCodingFixtures.Generated
    typealias Plain = GeneratedCodingFixtures.Plain

    /// The statement values: generated encoding == `RowEncoder`'s, value for value.
    @Test func encodingMatchesCodable() throws {
        let encoder = RowEncoder(skippedKeys: ["existsInDatabase"])
        for model in [GeneratedCodingFixtures.full, GeneratedCodingFixtures.sparse] {
            let codable = try encoder.encode(Plain(model))
            #expect(codable.map(\.column) == Generated.encodingColumns)
            #expect(codable.map(\.value) == (try model.encodedRowValues()))
            for (column, value) in codable {
                #expect(try model.databaseValue(forColumn: column) == value)
            }
        }
        let full = try GeneratedCodingFixtures.full.encodedRowValues()
        // Known literals, not only agreement.
        #expect(full[0] == .integer(1))
        #expect(full[1] == .integer(Int64.min))
        #expect(full[9] == .integer(42))
        #expect(full[12] == .bool(true))
        #expect(full[15] == .date(GeneratedCodingFixtures.date))
        #expect(full[16] == .uuid(GeneratedCodingFixtures.uuid))
        #expect(full[19] == .text("busy"))
        #expect(full[20] == .integer(9))
        #expect(try GeneratedCodingFixtures.sparse.encodedRowValues()[21...].allSatisfy { $0 == .null })
        #expect(Generated.columnName(for: \Generated.madeAt) == "made_at")
        #expect(Generated.columnName(for: \Generated.primaryKeys) == nil)
        #expect(try GeneratedCodingFixtures.full.databaseValue(forColumn: "existsInDatabase") == nil)
    }

    @Test(arguments: Backend.allCases)
    func generatedAndCodableReadAndWriteTheSameValues(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try GeneratedCodingFixtures.createTable(db)
            // Row 1 written by the generated coding, row 2 by Codable; then the reverse.
            let savedFull = try GeneratedCodingFixtures.full.save(in: db)
            let savedSparse = try Plain(GeneratedCodingFixtures.sparse).save(in: db)
            var expectedFull = GeneratedCodingFixtures.full
            expectedFull.existsInDatabase = true
            var expectedSparse = GeneratedCodingFixtures.sparse
            expectedSparse.existsInDatabase = true
            #expect(savedFull == expectedFull)
            #expect(savedSparse.generated == expectedSparse)

            let generated = try Generated.allInstances(orderedBy: [.ascending("id")], in: db)
            let plain = try Plain.allInstances(orderedBy: [.ascending("id")], in: db)
            #expect(generated == [expectedFull, expectedSparse])
            #expect(plain.map(\.generated) == generated)
            #expect(try Generated.firstInstanceWhere("id = ?", 2, in: db) == expectedSparse)

            // The same rows decoded by both codings, straight from the core.
            let rows = try db.read { try $0.fetchAll(.select(SQLSelect(from: GeneratedCodingFixtures.table).orderBy(SQLExpression.column("id").asc))) }
            let decoder = RowDecoder(defaultValues: ["existsInDatabase": .bool(true)])
            for (row, expected) in zip(rows, [expectedFull, expectedSparse]) {
                #expect(try row.decode(as: Generated.self) == expected)
                #expect(try decoder.decode(Plain.self, from: row).generated == expected)
            }

            // Updates through both, then a batch insert through both.
            var changed = expectedFull
            changed.s = "changed"
            changed.optS = nil
            changed.optMeta = nil
            try changed.save(in: db)
            var changedPlain = Plain(expectedSparse)
            changedPlain.optI = 99
            changedPlain.amount = Decimal(string: "0.5")!
            try changedPlain.save(in: db)
            #expect(try Generated.allInstances(orderedBy: [.ascending("id")], in: db) == [changed, changedPlain.generated])

            var batch: [ModelStatement] = []
            for id in Int64(10)..<Int64(15) {
                var model = GeneratedCodingFixtures.full
                model.id = id
                model.optI = id % 2 == 0 ? nil : Int(id)
                batch.append(id % 2 == 0 ? try model.createSaveStatement() : try Plain(model).createSaveStatement())
            }
            try DBManager.executeStatements(batch, in: db)
            let batchRows = try Generated.instancesWhere("id >= ?", 10, orderedBy: [.ascending("id")], in: db)
            #expect(batchRows.map(\.id) == [10, 11, 12, 13, 14])
            #expect(batchRows.map(\.optI) == [nil, 11, nil, 13, nil])
            #expect(try Plain.instancesWhere("id >= ?", 10, orderedBy: [.ascending("id")], in: db).map(\.generated) == batchRows)
        }
    }

    /// Columns missing from the row: optionals are nil in both codings; a non-optional without
    /// a default throws in both; `existsInDatabase` is true unless the row has such a column.
    @Test(arguments: Backend.allCases)
    func missingColumnsAndDefaults(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try GeneratedCodingFixtures.createTable(db)
            try GeneratedCodingFixtures.full.save(in: db)
            let names = GeneratedCodingFixtures.columns.map(\.name).filter { !$0.hasPrefix("opt_") }
            let query = SQLSelect(columns: names.map { .expression(.column($0), alias: nil) }, from: .table(GeneratedCodingFixtures.table, alias: nil))
            let generated = try Generated.instances(query, in: db)
            let plain = try Plain.instances(query, in: db)
            #expect(generated.count == 1)
            #expect(generated.first?.optS == nil && generated.first?.optMeta == nil && generated.first?.optAmount == nil)
            #expect(generated.first?.amount == Decimal(string: "12345.678901")!)
            #expect(plain.map(\.generated) == generated)

            let withoutName = SQLSelect(columns: [.expression(.column("id"), alias: nil)], from: .table(GeneratedCodingFixtures.table, alias: nil))
            #expect(throws: DatabaseError.self) { try Generated.instances(withoutName, in: db) }
            #expect(throws: DatabaseError.self) { try Plain.instances(withoutName, in: db) }
        }
    }

    /// A `var` with a default keeps it when its column is missing (Codable would throw); a
    /// value of the wrong type throws a conversion error naming the column, in both codings.
    @Test func defaultsAndConversionErrors() throws {
        let layout = RowLayout(columnNames: ["id", "label"])
        let row = Row(layout: layout, values: [7, "seven"])
        let model = try row.decode(as: WithDefaults.self)
        #expect(model == WithDefaults(id: 7, label: "seven", rating: 3, note: "none", existsInDatabase: true))
        let flagged = Row(layout: RowLayout(columnNames: ["id", "label", "rating", "note", "existsInDatabase"]),
                          values: [8, "eight", 5, .null, .bool(false)])
        #expect(try flagged.decode(as: WithDefaults.self) == WithDefaults(id: 8, label: "eight", rating: 5, note: nil, existsInDatabase: false))

        let wrong = Row(layout: layout, values: ["x", "seven"])
        var generatedError: DatabaseError?
        do { _ = try wrong.decode(as: WithDefaults.self) } catch let error as DatabaseError { generatedError = error }
        var codableError: DatabaseError?
        do { _ = try RowDecoder().decode(WithDefaults.self, from: wrong) } catch let error as DatabaseError { codableError = error }
        guard case .typeConversion(let failure)? = generatedError else {
            Issue.record("expected a conversion error, got \(String(describing: generatedError))")
            return
        }
        #expect(failure.column == "id")
        #expect(failure.expectedType == "Int64")
        #expect(generatedError == codableError)

        // NULL into a non-optional column throws too.
        let null = Row(layout: layout, values: [.null, "seven"])
        #expect(throws: DatabaseError.self) { try null.decode(as: WithDefaults.self) }
        // A UInt64 beyond Int64 cannot be written.
        var big = GeneratedCodingFixtures.sparse
        big.u64 = UInt64.max
        #expect(throws: DatabaseError.self) { try big.encodedRowValues() }
        #expect(throws: DatabaseError.self) { try RowEncoder().encode(Plain(big)) }
    }

    /// Reading with a `RowReader` follows a change of layout between rows.
    @Test func rowReaderResolvesEachLayout() throws {
        var reader = RowReader<WithDefaults>()
        let first = try reader.decode(Row(layout: RowLayout(columnNames: ["id", "label"]), values: [1, "a"]))
        let second = try reader.decode(Row(layout: RowLayout(columnNames: ["LABEL", "rating", "ID"]), values: ["b", 9, 2]))
        #expect(first == WithDefaults(id: 1, label: "a", rating: 3, note: "none", existsInDatabase: true))
        #expect(second == WithDefaults(id: 2, label: "b", rating: 9, note: "none", existsInDatabase: true))
    }

    /// A conformance written by hand, the way the README shows it (its initializer without
    /// `borrowing`, no `decodeRows`): `ModelDef` fetches, saves and streams it through its code,
    /// rows resolved by name in any order, on both backends.
    @Test(arguments: Backend.allCases)
    func handWrittenConformance(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable(HandWritten.tableName, columns: [
                    SQLColumnDefinition("code", .text, primaryKey: .plain),
                    SQLColumnDefinition("qty", .int64, notNull: true),
                    SQLColumnDefinition("note", .text),
                ])))
            }
            try HandWritten(code: "b", qty: 2, note: nil).save(in: db)
            try HandWritten(code: "a", qty: 1, note: "first").save(in: db)
            let all = try HandWritten.allInstances(orderedBy: [.ascending("code")], in: db)
            #expect(all == [HandWritten(code: "a", qty: 1, note: "first", existsInDatabase: true),
                            HandWritten(code: "b", qty: 2, note: nil, existsInDatabase: true)])
            let reordered = try HandWritten.instances(
                SQLSelect(columns: [.expression(.column("note"), alias: nil), .expression(.column("qty"), alias: nil),
                                    .expression(.column("code"), alias: nil)],
                          from: .table(HandWritten.tableName, alias: nil)).orderBy(SQLExpression.column("qty").desc), in: db)
            #expect(reordered.map(\.code) == ["b", "a"])
            #expect(try HandWritten.firstInstanceWhere("qty = ?", 2, in: db)?.code == "b")
            // The core's own fetch of a RowDecodable type reads the same rows.
            let core = try db.read { conn in
                try conn.fetchAll(HandWritten.self, .select(SQLSelect(from: HandWritten.tableName).orderBy(SQLExpression.column("code").asc)))
            }
            #expect(core.map(\.code) == ["a", "b"] && core.map(\.note) == ["first", nil])
        }
    }

    /// A `ModelDef` whose row coding is written by hand.
    struct HandWritten: ModelDef, RowCodable, Equatable {
        enum CodingKeys: String, CodingKey { case code, qty, note, existsInDatabase }
        static let tableName = "hand_written"
        var code: String
        var qty: Int64
        var note: String?
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.code] }

        init(code: String, qty: Int64, note: String?, existsInDatabase: Bool = false) {
            self.code = code
            self.qty = qty
            self.note = note
            self.existsInDatabase = existsInDatabase
        }

        static let decodingColumns = ["code", "qty", "note"]
        init(row: Row, columns: RowColumns) throws {
            code = try columns.decode(0, from: row)
            qty = try columns.decode(1, from: row)
            note = try columns.decodeIfPresent(2, from: row, as: String.self)
            existsInDatabase = true
        }

        static let encodingColumns = ["code", "qty", "note"]
        func encodeRow(to values: inout [DatabaseValue]) throws {
            values.append(try RowCoding.value(code))
            values.append(try RowCoding.value(qty))
            values.append(try RowCoding.valueIfPresent(note))
        }
    }

    @RowCoded
    struct WithDefaults: Codable, Equatable {
        var id: Int64
        var label: String
        var rating: Int = 3
        var note: String? = "none"
        var existsInDatabase = false
    }
}
