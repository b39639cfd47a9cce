import Foundation
import Testing
import Unity

/// Bulk loads (`Connection.copy(into:columns:rows:)`, binary COPY on PostgreSQL, prepared
/// INSERTs on SQLite) and exports (`copyOut`), against what the INSERT path stores.
@Suite("Core: COPY bulk loads and exports")
struct CoreCopyTests {
    /// One column per mapped value type (and the conversions a COPY makes to a narrower
    /// or other column type), the same on both tables compared.
    static let columns: [SQLColumnDefinition] = [
        SQLColumnDefinition("id", .int64, primaryKey: .plain),
        SQLColumnDefinition("i8", .int64), SQLColumnDefinition("i4", .int32), SQLColumnDefinition("i2", .int16),
        SQLColumnDefinition("f8", .double), SQLColumnDefinition("f4", .custom("REAL")), SQLColumnDefinition("b", .bool),
        SQLColumnDefinition("t", .text), SQLColumnDefinition("vc", .varchar(40)), SQLColumnDefinition("bin", .blob),
        SQLColumnDefinition("ts", .date), SQLColumnDefinition("tsl", .custom("TIMESTAMP")), SQLColumnDefinition("u", .uuid),
        SQLColumnDefinition("n", .decimal), SQLColumnDefinition("n2", .custom("NUMERIC(12,2)")), SQLColumnDefinition("jb", .json),
        SQLColumnDefinition("j", .custom("JSON")), SQLColumnDefinition("nint", .decimal), SQLColumnDefinition("f8int", .double),
        SQLColumnDefinition("jbtext", .json),
    ]

    static func decimal(_ text: String) -> DatabaseValue {
        .decimal(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!)
    }

    /// Boundary values of every type, then a row of NULLs.
    static let rows: [[DatabaseValue]] = [
        [.integer(1), .integer(.max), .integer(Int64(Int32.max)), .integer(Int64(Int16.max)),
         .double(.greatestFiniteMagnitude), .double(Double(Float.greatestFiniteMagnitude)), .bool(true),
         .text("héllo\t\n\"'\\ 🎉"), .text("varchar ✓"), .blob(Data([0, 1, 0x5C, 0xFF])),
         .date(Date(timeIntervalSince1970: 1_709_210_096.789012)), .date(Date(timeIntervalSince1970: 1_709_210_096.5)),
         .uuid(UUID(uuidString: "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6")!),
         decimal("12345678901234567890.123456789"), decimal("1.005"), .json("{\"a\": [1, 2.50, null], \"b\": \"x\"}"),
         .text("{ \"keep\" :  \"spacing\" }"), .integer(.min), .integer(9_007_199_254_740_993), .text("{\"k\": true}")],
        [.integer(2), .integer(.min), .integer(Int64(Int32.min)), .integer(Int64(Int16.min)),
         .double(-0.0), .double(-0.0), .bool(false),
         .text(""), .text(""), .blob(Data()),
         .date(.distantPast), .date(Date(timeIntervalSince1970: -1_000_000_000.000001)),
         .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000000")!),
         decimal("-0.000000000000000000000000000001"), decimal("-99.999"), .json("[]"),
         .text("null"), .integer(0), .integer(-1), .text("\"str\"")],
        [.integer(3), .integer(0), .integer(0), .integer(0),
         .double(.infinity), .double(-.infinity), .bool(true),
         .text(String(repeating: "long ", count: 2_000)), .text("x"), .blob(Data(repeating: 7, count: 70_000)),
         .date(.distantFuture), .date(Date(timeIntervalSinceReferenceDate: 0)),
         .uuid(UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!),
         decimal("99999999999999999999999999999999999999"), decimal("0"), .json("{\"nested\": {\"deep\": [true, false]}}"),
         .text("1.50"), .integer(42), .integer(Int64(1) << 53), .text("[1, \"two\"]")],
        [.integer(4), .integer(-1), .integer(-1), .integer(-1),
         .double(0.1), .double(0.1), .bool(false),
         .text("NUL-free text with a backslash \\N"), .text("tab\there"), .blob(Data([0xDE, 0xAD, 0xBE, 0xEF])),
         .date(Date(timeIntervalSince1970: 0.000001)), .date(Date(timeIntervalSince1970: 951_782_400)),
         .uuid(UUID(uuidString: "123E4567-E89B-12D3-A456-426614174000")!),
         .decimal(Decimal(sign: .plus, exponent: 20, significand: 123)), decimal("12345678.9"), .json("\"ü\""),
         .text("[1,2]"), .integer(-7), .integer(.max), .text("{}")],
        [.integer(5), .null, .null, .null, .double(.leastNonzeroMagnitude)] + [DatabaseValue](repeating: .null, count: 15),
        [.integer(6)] + [DatabaseValue](repeating: .null, count: 19),
    ]

    static var comparedRows: [[DatabaseValue]] { rows }

    static func createTables(_ conn: Connection) throws {
        try conn.execute(.createTable(SQLCreateTable("by_insert", columns: columns)))
        try conn.execute(.createTable(SQLCreateTable("by_copy", columns: columns)))
    }

    /// Each row as the server prints it (PostgreSQL: `col::text` of every column) or as the
    /// engine stores it (SQLite: the values with their storage classes).
    static func dump(_ conn: Connection, _ table: String, backend: Backend) throws -> [[String]] {
        let names = columns.map(\.name)
        let select: String
        switch backend {
        case .postgres:
            select = names.map { "\"\($0)\"::text" }.joined(separator: ", ")
        case .sqlite:
            select = names.map { "typeof(\"\($0)\") || ':' || quote(\"\($0)\")" }.joined(separator: ", ")
        }
        return try conn.fetchAll(sql: "SELECT \(select) FROM \"\(table)\" ORDER BY id").map { row in
            try (0..<names.count).map { try row.decode(String?.self, at: $0) ?? "NULL" }
        }
    }

    @Test(arguments: Backend.allCases)
    func copyStoresEveryMappedTypeAsInsertDoes(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try Self.createTables($0) }
            let names = Self.columns.map(\.name)
            try db.write { conn in
                for row in Self.comparedRows {
                    try conn.execute(.insert(SQLInsert(into: "by_insert", columns: names, values: [row.map { .bind($0) }])))
                }
            }
            let written = try db.copy(into: "by_copy", columns: names, rows: Self.comparedRows)
            #expect(written == Self.comparedRows.count)
            let (inserted, copied) = try db.read { conn in
                (try Self.dump(conn, "by_insert", backend: backend), try Self.dump(conn, "by_copy", backend: backend))
            }
            #expect(copied.count == inserted.count)
            for (a, b) in zip(inserted, copied) { #expect(a == b) }
            if backend == .postgres {
                // Known literals, so that a fault made on both paths alike shows too.
                let first = copied[0]
                #expect(first[1] == "9223372036854775807")
                #expect(first[5] == "3.4028235e+38")
                #expect(first[7] == "héllo\t\n\"'\\ 🎉")
                #expect(first[9] == "\\x00015cff")
                #expect(first[10] == "2024-02-29 12:34:56.789012+00")
                #expect(first[11] == "2024-02-29 12:34:56.5")
                #expect(first[12] == "f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
                #expect(first[13] == "12345678901234567890.123456789")
                #expect(first[14] == "1.01")
                #expect(first[15] == "{\"a\": [1, 2.50, null], \"b\": \"x\"}")
                #expect(first[16] == "{ \"keep\" :  \"spacing\" }")
                #expect(first[17] == "-9223372036854775808")
                #expect(first[18] == "9.007199254740992e+15")
                #expect(first[19] == "{\"k\": true}")
                let second = copied[1]
                #expect(second[4] == "-0")
                #expect(second[5] == "-0")
                #expect(second[13] == "-0.000000000000000000000000000001")
                #expect(second[14] == "-100.00")
                #expect(second[17] == "0")
                let third = copied[2]
                #expect(third[4] == "Infinity")
                #expect(third[5] == "-Infinity")
                #expect(third[13] == "99999999999999999999999999999999999999")
                let fourth = copied[3]
                #expect(fourth[5] == "0.1")
                #expect(fourth[13] == "12300000000000000000000")
                #expect(copied[4][4] == "5e-324")
                #expect(copied[5].dropFirst().allSatisfy { $0 == "NULL" })
                // The stored numerics are the same bytes, not just the same text.
                let sameNumerics = try db.read { conn in
                    try conn.fetchValue(Int.self, sql: """
                        SELECT count(*) FROM by_insert i JOIN by_copy c USING (id) \
                        WHERE numeric_send(i.n) IS NOT DISTINCT FROM numeric_send(c.n) \
                        AND numeric_send(i.n2) IS NOT DISTINCT FROM numeric_send(c.n2) \
                        AND float8send(i.f8) IS NOT DISTINCT FROM float8send(c.f8) \
                        AND jsonb_send(i.jb) IS NOT DISTINCT FROM jsonb_send(c.jb)
                        """)
                }
                #expect(sameNumerics == Self.comparedRows.count)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func copyReadsBackThroughTheValueMapping(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try Self.createTables($0) }
            let names = Self.columns.map(\.name)
            try db.copy(into: "by_copy", columns: names, rows: Self.comparedRows)
            let rows = try db.read { try $0.fetchAll(sql: "SELECT id, i8, b, t, bin, ts, u, n FROM by_copy ORDER BY id") }
            #expect(rows.count == 6)
            #expect(try rows[0].decode(Int64.self, column: "i8") == .max)
            #expect(try rows[0].decode(Bool.self, column: "b") == true)
            #expect(try rows[0].decode(String.self, column: "t") == "héllo\t\n\"'\\ 🎉")
            #expect(try rows[0].decode(Data.self, column: "bin") == Data([0, 1, 0x5C, 0xFF]))
            #expect(try rows[0].decode(Date.self, column: "ts") == Date(timeIntervalSince1970: 1_709_210_096.789012))
            #expect(try rows[0].decode(UUID.self, column: "u") == UUID(uuidString: "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6"))
            #expect(try rows[0].decode(Decimal.self, column: "n") == Decimal(string: "12345678901234567890.123456789"))
            #expect(try rows[2].decode(Data.self, column: "bin") == Data(repeating: 7, count: 70_000))
            #expect(try rows[4].decode(String?.self, column: "t") == nil)
        }
    }

    /// What the INSERT path refuses or converts, the load refuses or converts the same way:
    /// a double into BIGINT, an integer too wide for INTEGER, a date into a DATE and a TEXT
    /// column (PostgreSQL's casts), NaN.
    @Test(arguments: Backend.allCases)
    func valuesWithoutABinaryFormGoTheInsertWay(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let columns = [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("d", .custom("DATE")),
                SQLColumnDefinition("t", .text), SQLColumnDefinition("i4", .int32),
            ]
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("a", columns: columns)))
                try conn.execute(.createTable(SQLCreateTable("b", columns: columns)))
            }
            let at = Date(timeIntervalSince1970: 1_709_210_096.789012)
            // 600 rows copied, then one a COPY cannot encode, then more.
            var rows: [[DatabaseValue]] = (0..<600).map { [.integer(Int64($0)), .null, .text("r\($0)"), .integer(Int64($0))] }
            rows.append([.integer(600), .date(at), .date(at), .integer(1)])
            rows += (601..<700).map { [.integer(Int64($0)), .null, .text("r\($0)"), .integer(7)] }
            try db.write { conn in
                for row in rows {
                    try conn.execute(.insert(SQLInsert(into: "a", columns: ["id", "d", "t", "i4"], values: [row.map { .bind($0) }])))
                }
            }
            #expect(try db.copy(into: "b", columns: ["id", "d", "t", "i4"], rows: rows) == 700)
            let (a, b) = try db.read { conn in
                (try conn.fetchAll(sql: "SELECT id, d, t, i4 FROM a ORDER BY id"), try conn.fetchAll(sql: "SELECT id, d, t, i4 FROM b ORDER BY id"))
            }
            #expect(a == b)
            if backend == .postgres {
                #expect(try db.read { try $0.fetchValue(String.self, sql: "SELECT d::text || ' ' || t FROM b WHERE id = 600") }
                    == "2024-02-29 2024-02-29 12:34:56.789012+00")
            }

            // An integer INTEGER cannot hold, in the middle: the same error as an INSERT's, nothing
            // kept (SQLite's INTEGER holds any 64-bit integer).
            guard backend == .postgres else { return }
            var wide = (1000..<1600).map { [DatabaseValue.integer(Int64($0)), .null, .null, .integer(1)] }
            wide[300][3] = .integer(Int64(Int32.max) + 1)
            let insertError = #expect(throws: DatabaseError.self) {
                try db.write { conn in
                    for row in wide { try conn.execute(.insert(SQLInsert(into: "a", columns: ["id", "d", "t", "i4"], values: [row.map { .bind($0) }]))) }
                }
            }
            let copyError = #expect(throws: DatabaseError.self) {
                try db.copy(into: "b", columns: ["id", "d", "t", "i4"], rows: wide)
            }
            #expect(caseName(insertError) == caseName(copyError))
            #expect(caseName(copyError) != nil)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM b") } == 700)

            // NaN: refused before anything is written, as the INSERT path refuses it.
            try db.write { try $0.execute(sql: "CREATE TABLE f (id BIGINT PRIMARY KEY, x DOUBLE PRECISION)") }
            let nanRows: [[DatabaseValue]] = (0..<600).map { [.integer(Int64($0)), .double($0 == 599 ? .nan : 1)] }
            #expect(throws: DatabaseError.self) { try db.copy(into: "f", columns: ["id", "x"], rows: nanRows) }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM f") } == 0)
        }
    }

    /// A duplicate key in the middle of a 5,000-row load: the error an INSERT batch gives,
    /// and the table as it was.
    @Test(arguments: Backend.allCases)
    func aDuplicateKeyRollsTheWholeLoadBack(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
                try conn.execute(sql: "INSERT INTO items (id, name) VALUES (1, 'one'), (2, 'two'), (3, 'three')")
            }
            var rows = (0..<5_000).map { [DatabaseValue.integer(Int64(100 + $0)), .text("item \($0)")] }
            rows[2_500][0] = .integer(110)
            let viaInsert = #expect(throws: DatabaseError.self) {
                try db.write { conn in
                    try conn.executeBatch(rows.map { .insert(SQLInsert(into: "items", columns: ["id", "name"], values: [$0.map { .bind($0) }])) })
                }
            }
            let viaCopy = #expect(throws: DatabaseError.self) {
                try db.copy(into: "items", columns: ["id", "name"], rows: rows)
            }
            guard case .constraintViolation(.unique, _)? = viaCopy else {
                Issue.record("expected a unique-constraint violation, got \(String(describing: viaCopy))")
                return
            }
            #expect(caseName(viaInsert) == caseName(viaCopy))
            // Inside a transaction that goes on: the load alone is undone.
            try db.write { conn in
                #expect(throws: DatabaseError.self) { try conn.copy(into: "items", columns: ["id", "name"], rows: rows) }
                try conn.execute(sql: "INSERT INTO items (id, name) VALUES (4, 'four')")
            }
            let names = try db.read { try $0.fetchAll(sql: "SELECT name FROM items ORDER BY id").map { try $0.decode(String.self, at: 0) } }
            #expect(names == ["one", "two", "three", "four"])
        }
    }

    @Test(arguments: Backend.allCases)
    func aRowOfTheWrongWidthWritesNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try $0.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT)") }
            var rows = (0..<800).map { [DatabaseValue.integer(Int64($0)), .text("n")] }
            rows[700] = [.integer(700)]
            #expect(throws: DatabaseError.misuse("row 701 of the COPY into \(db.dialect.quoteIdentifier("items")) has 1 values for 2 columns")) {
                try db.copy(into: "items", columns: ["id", "name"], rows: rows)
            }
            // A source that fails: its error, nothing written.
            struct SourceFailed: Error {}
            var produced = 0
            #expect(throws: SourceFailed.self) {
                try db.withConnection { (conn: Connection) throws in
                    try conn.copy(into: "items", columns: ["id", "name"]) { row in
                        produced += 1
                        if produced == 1_650 { throw SourceFailed() }
                        row = [.integer(Int64(produced)), .text("n")]
                        return true
                    }
                }
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM items") } == 0)
        }
    }

    /// `people` (a generated key and a name) with one row, id 1, so that the next generated
    /// key is 2.
    static func createPeopleWithOneRow(_ conn: Connection) throws {
        try conn.execute(.createTable(SQLCreateTable("people", columns: [
            SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("name", .text, notNull: true),
        ])))
        try conn.execute(sql: "INSERT INTO people (name) VALUES ('first')")
    }

    /// The flavors' path: ids allocated from the table's sequence in row order, returned, and
    /// the sequence left where a generated-id INSERT continues without a fix.
    @Test(arguments: Backend.allCases)
    func generatedIdsComeBackInRowOrder(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try Self.createPeopleWithOneRow($0) }
            let ids = try db.write { conn in
                try conn.insertByCopyIfWorthwhile(into: "people", columns: ["name"], count: 1_500, generatedIdColumn: "id") { index, values in
                    values = [.text("p\(index)")]
                }
            }
            guard backend == .postgres else {
                #expect(ids == nil)
                return
            }
            #expect(ids == (2...1_501).map { Int64($0) })
            let byId = try db.read { conn in
                try conn.fetchAll(sql: "SELECT id, name FROM people ORDER BY id").map { (try $0.decode(Int64.self, at: 0), try $0.decode(String.self, at: 1)) }
            }
            #expect(byId.count == 1_501)
            #expect(byId[1].0 == 2 && byId[1].1 == "p0")
            #expect(byId[1_500].0 == 1_501 && byId[1_500].1 == "p1499")
            let next = try db.write { try $0.fetchValue(Int64.self, sql: "INSERT INTO people (name) VALUES ('after') RETURNING id") }
            #expect(next == 1_502)
            // Below the threshold the caller's INSERTs run.
            let small = try db.write { conn in
                try conn.insertByCopyIfWorthwhile(into: "people", columns: ["name"], count: Connection.copyThreshold - 1, generatedIdColumn: "id") { _, _ in }
            }
            #expect(small == nil)
        }
    }

    /// Keys taken from the sequence before a load, then named by its rows, streamed: the values
    /// an INSERT would have taken, nothing skipped, and nil where there is nothing to take them
    /// from (SQLite, a column without a sequence, a batch too small for COPY).
    @Test(arguments: Backend.allCases)
    func allocatedKeysAreNamedByAStreamedLoad(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try Self.createPeopleWithOneRow(conn)
                try conn.execute(.createTable(SQLCreateTable("plain", columns: [SQLColumnDefinition("n", .int64)])))
            }
            let written = try db.write { conn -> Int? in
                guard let ids = try conn.allocateSequenceValues(table: "people", column: "id", count: 600) else {
                    #expect(try conn.insertByCopyIfWorthwhile(into: "people", columns: ["id", "name"], expectedRows: 600) { _ in
                        Issue.record("a backend without COPY made a row")
                        return false
                    } == nil)
                    return nil
                }
                #expect(ids == (2...601).map { Int64($0) })
                var next = 0
                return try conn.insertByCopyIfWorthwhile(into: "people", columns: ["id", "name"], expectedRows: ids.count) { values in
                    guard next < ids.count else { return false }
                    values = [.integer(ids[next]), .text("p\(next)")]
                    next += 1
                    return true
                }
            }
            guard backend == .postgres else {
                #expect(written == nil)
                #expect(try db.write { try $0.allocateSequenceValues(table: "people", column: "id", count: 600) } == nil)
                return
            }
            #expect(written == 600)
            let names = try db.read { try $0.fetchAll(sql: "SELECT id, name FROM people ORDER BY id") }
            #expect(names.count == 601)
            #expect(try names[1].decode(Int64.self, at: 0) == 2)
            #expect(try names[1].decode(String.self, at: 1) == "p0")
            #expect(try names[600].decode(Int64.self, at: 0) == 601)
            #expect(try names[600].decode(String.self, at: 1) == "p599")
            let after = try db.write { try $0.fetchValue(Int64.self, sql: "INSERT INTO people (name) VALUES ('after') RETURNING id") }
            #expect(after == 602)
            let (small, withoutSequence) = try db.write { conn in
                (try conn.allocateSequenceValues(table: "people", column: "id", count: Connection.copyThreshold - 1),
                 try conn.allocateSequenceValues(table: "plain", column: "n", count: 600))
            }
            #expect(small == nil && withoutSequence == nil)
            // Nothing was taken by the calls that returned nil.
            #expect(try db.write { try $0.fetchValue(Int64.self, sql: "INSERT INTO people (name) VALUES ('last') RETURNING id") } == 603)
        }
    }

    /// Ids the caller gives to an identity column move its sequence past them, as an INSERT's do.
    @Test(arguments: Backend.allCases)
    func explicitIdsKeepTheSequenceAhead(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("people", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("name", .text),
                ])))
            }
            try db.copy(into: "people", columns: ["id", "name"], rows: (1...700).map { [.integer(Int64($0 * 2)), .text("x")] })
            let next = try db.write { try $0.fetchValue(Int64.self, sql: "INSERT INTO people (name) VALUES ('after') RETURNING id") }
            #expect(next == 1_401)
        }
    }

    @Test(arguments: Backend.allCases)
    func copyOutStreamsWhatWasWritten(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("ledger", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("who", .text),
                    SQLColumnDefinition("amount", .decimal), SQLColumnDefinition("at", .date), SQLColumnDefinition("memo", .blob),
                    SQLColumnDefinition("ok", .bool),
                ])))
            }
            let at = Date(timeIntervalSince1970: 1_700_000_000.25)
            try db.copy(into: "ledger", columns: ["id", "who", "amount", "at", "memo", "ok"], rows: [
                [.integer(1), .text("Ann"), Self.decimal("10.50"), .date(at), .blob(Data([1, 2])), .bool(true)],
                [.integer(2), .text("Bo"), Self.decimal("-3.25"), .null, .null, .bool(false)],
                [.integer(3), .null, Self.decimal("0.001"), .date(at.addingTimeInterval(1)), .blob(Data()), .null],
            ])
            var who: [String?] = []
            var amounts: [Decimal] = []
            var dates: [Date?] = []
            var memos: [Data?] = []
            var flags: [Bool?] = []
            let count = try db.copyOut(SQLSelect(from: "ledger").orderBy(SQLExpression.column("id").asc)) { row in
                who.append(try row.decode(String?.self, column: "who"))
                amounts.append(try row.decode(Decimal.self, column: "amount"))
                dates.append(try row.decode(Date?.self, column: "at"))
                memos.append(try row.decode(Data?.self, column: "memo"))
                flags.append(try row.decode(Bool?.self, column: "ok"))
            }
            #expect(count == 3)
            #expect(who == ["Ann", "Bo", nil])
            #expect(amounts == [Decimal(string: "10.5")!, Decimal(string: "-3.25")!, Decimal(string: "0.001")!])
            #expect(dates == [at, nil, at.addingTimeInterval(1)])
            #expect(memos == [Data([1, 2]), nil, Data()])
            #expect(flags == [true, false, nil])

            // A query with a bound value (which COPY cannot take) streams through a cursor.
            var ids: [Int64] = []
            let filtered = try db.copyOut(SQLSelect(from: "ledger").columns(.column("id"))
                .where(SQLExpression.column("id").greaterThan(Int64(1))).orderBy(SQLExpression.column("id").asc)) { ids.append(try $0.decode(Int64.self, at: 0)) }
            #expect(filtered == 2)
            #expect(ids == [2, 3])

            // A consumer that stops: its error, and the connection still serves.
            struct Enough: Error {}
            try db.withConnection { (conn: Connection) throws in
                var seen = 0
                #expect(throws: Enough.self) {
                    try conn.copyOut(SQLSelect(from: "ledger")) { _ in
                        seen += 1
                        if seen == 2 { throw Enough() }
                    }
                }
                #expect(seen == 2)
                #expect(try conn.fetchValue(Int.self, sql: "SELECT count(*) FROM ledger") == 3)
            }
        }
    }

    /// A keyed table with a second unique column, and 300 rows: ids 1…300, names `old<id>`.
    static func createKeyedPeople(_ conn: Connection) throws {
        try conn.execute(.createTable(SQLCreateTable("people", columns: [
            SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("name", .text, notNull: true),
            SQLColumnDefinition("email", .text, unique: true),
        ])))
        try conn.executeBatch((1...300).map { id in
            .insert(SQLInsert(into: "people", columns: ["id", "name", "email"],
                              values: [[.bind(.integer(Int64(id))), .bind(.text("old\(id)")), .bind(.text("e\(id)"))]]))
        })
    }

    /// Rows `ids` for `people`, named `new<id>`, emails `e<id>` (an existing row's own).
    static func stageRows(_ conn: Connection, _ ids: [Int], updating: [String] = ["name", "email"]) throws -> Bool {
        try conn.upsertByCopyIfWorthwhile(into: "people", columns: ["id", "name", "email"], conflictColumns: ["id"],
                                          updating: updating, count: ids.count) { index, values in
            values = [.integer(Int64(ids[index])), .text("new\(ids[index])"), .text("e\(ids[index])")]
        }
    }

    static func names(_ conn: Connection) throws -> [Int: String] {
        var out: [Int: String] = [:]
        for row in try conn.fetchAll(sql: "SELECT id, name FROM people") { out[try row.decode(Int.self, at: 0)] = try row.decode(String.self, at: 1) }
        return out
    }

    /// A keyed batch of which half the keys exist: PostgreSQL stages it (COPY, then one
    /// INSERT … SELECT that meets the taken keys and goes again as an upsert); SQLite
    /// declines, having written nothing. Then an all-new batch in the same transaction (the
    /// staging table's name is free again), and the sequence moved past the given ids.
    @Test(arguments: Backend.allCases)
    func aKeyedBatchIsStagedAndUpserted(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try Self.createKeyedPeople($0) }
            let staged = try db.write { conn in
                let first = try Self.stageRows(conn, Array(151...750))
                let second = try Self.stageRows(conn, Array(1_001...1_300))
                return [first, second]
            }
            guard backend == .postgres else {
                #expect(staged == [false, false])
                let names = try db.read { try Self.names($0) }
                #expect(names.count == 300 && names[300] == "old300")
                return
            }
            #expect(staged == [true, true])
            let names = try db.read { try Self.names($0) }
            #expect(names.count == 1_050)
            #expect(names[150] == "old150" && names[151] == "new151" && names[300] == "new300" && names[750] == "new750")
            #expect(names[751] == nil && names[1_001] == "new1001" && names[1_300] == "new1300")
            // The identity sequence moved past the ids given.
            let next = try db.write { try $0.fetchOne(sql: "INSERT INTO people (name) VALUES ('gen') RETURNING id")?.decode(Int.self, at: 0) }
            #expect(next == 1_301)
            // No staging table is left behind.
            let left = try db.read { try $0.fetchOne(sql: "SELECT to_regclass('pg_temp.unity_copy_staging')::text")?.decode(String?.self, at: 0) }
            #expect(left == .some(nil))
        }
    }

    /// With no column to update, a taken key keeps its row (`DO NOTHING`).
    @Test func aKeyedBatchWithNothingToUpdateKeepsTakenRows() throws {
        try withTestDatabase(.postgres) { db in
            try db.write { try Self.createKeyedPeople($0) }
            #expect(try db.write { try Self.stageRows($0, Array(201...600), updating: []) })
            let names = try db.read { try Self.names($0) }
            #expect(names.count == 600 && names[201] == "old201" && names[300] == "old300" && names[301] == "new301")
        }
    }

    /// A second unique column taken by another row fails the batch with the upsert's error
    /// (a unique violation) and keeps nothing of it; the transaction goes on, and the next
    /// staged batch in it works.
    @Test func aStagedBatchThatFailsLeavesNothing() throws {
        try withTestDatabase(.postgres) { db in
            try db.write { try Self.createKeyedPeople($0) }
            try db.write { (conn: Connection) throws -> Void in
                let error = #expect(throws: DatabaseError.self) {
                    try conn.upsertByCopyIfWorthwhile(into: "people", columns: ["id", "name", "email"], conflictColumns: ["id"],
                                                      updating: ["name", "email"], count: 400) { index, values in
                        let id = 401 + index
                        // Row 250's email is row 7's.
                        values = [.integer(Int64(id)), .text("new\(id)"), .text(index == 250 ? "e7" : "e\(id)")]
                    }
                }
                guard case .constraintViolation(.unique, _)? = error else {
                    Issue.record("expected a unique violation, got \(String(describing: error))")
                    return
                }
                #expect(try Self.names(conn).count == 300)
                #expect(try Self.stageRows(conn, Array(301...600)))
            }
            let names = try db.read { try Self.names($0) }
            #expect(names.count == 600 && names[7] == "old7" && names[600] == "new600" && names[651] == nil)
        }
    }

    /// Through a transaction-mode pooler's rules (one statement at a time, inside a transaction).
    @Test func copyWorksInPoolerMode() throws {
        try withTestDatabase(.postgres, configuration: DatabaseConfiguration(poolerMode: .transaction)) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("people", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("name", .text),
                ])))
            }
            let ids = try db.write { conn in
                try conn.insertByCopyIfWorthwhile(into: "people", columns: ["name"], count: 600, generatedIdColumn: "id") { index, values in
                    values = [.text("p\(index)")]
                }
            }
            #expect(ids == (1...600).map { Int64($0) })
            try db.copy(into: "people", columns: ["id", "name"], rows: [[.integer(1_000), .text("x")]])
            var names: [String] = []
            try db.copyOut(SQLSelect(from: "people").columns(.column("name")).orderBy(SQLExpression.column("id").asc)) {
                names.append(try $0.decode(String.self, at: 0))
            }
            #expect(names.count == 601)
            #expect(names.first == "p0")
            #expect(names.last == "x")
            // A keyed batch through a staging table, under the same rules.
            let staged = try db.write { conn in
                try conn.upsertByCopyIfWorthwhile(into: "people", columns: ["id", "name"], conflictColumns: ["id"], updating: ["name"],
                                                  count: 400) { index, values in
                    values = [.integer(Int64(401 + index)), .text("q\(401 + index)")]
                }
            }
            #expect(staged)
            let renamed = try db.read { try $0.fetchAll(sql: "SELECT name FROM people WHERE id IN (400, 401, 800) ORDER BY id") }
            #expect(renamed.map { $0["name"] } == [.text("p399"), .text("q401"), .text("q800")])
        }
    }

    @Test func theStatementsRenderWithQuotedIdentifiers() throws {
        let copy = try SQLDialect.postgres.renderUncached(.copyFrom(SQLCopyFrom(into: "My \"T\"", columns: ["a", "B c"])))
        #expect(copy.sql == "COPY \"My \"\"T\"\"\" (\"a\", \"B c\") FROM STDIN (FORMAT binary)")
        let out = try SQLDialect.postgres.renderUncached(.copyTo(SQLSelect(from: "t").columns(.column("x"))))
        #expect(out.sql == "COPY (SELECT \"x\" FROM \"t\") TO STDOUT (FORMAT binary)")
        #expect(throws: DatabaseError.self) {
            try SQLDialect.postgres.renderUncached(.copyTo(SQLSelect(from: "t").where(SQLExpression.column("x").greaterThan(1))))
        }
        #expect(throws: DatabaseError.self) {
            try SQLDialect.sqlite.renderUncached(.copyFrom(SQLCopyFrom(into: "t", columns: ["a"])))
        }
        let staging = try SQLDialect.postgres.renderUncached(.createStagingTable(SQLStagingTable("s\"x", like: "My T", columns: ["a", "B c"])))
        #expect(staging.sql == "CREATE TEMPORARY TABLE \"s\"\"x\" ON COMMIT DROP AS SELECT \"a\", \"B c\" FROM \"My T\" WITH NO DATA")
        #expect(throws: DatabaseError.self) {
            try SQLDialect.sqlite.renderUncached(.createStagingTable(SQLStagingTable("s", like: "t", columns: ["a"])))
        }
    }
}

/// The name of an error's case (`constraintViolation`, `misuse`, …), to compare the kind of
/// two errors whose messages differ.
private func caseName(_ error: DatabaseError?) -> String? {
    guard let error else { return nil }
    return String(describing: Mirror(reflecting: error).children.first?.label ?? "\(error)")
}
