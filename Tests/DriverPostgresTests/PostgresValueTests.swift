import DriverPostgres
import Foundation
import Testing

@Suite("PostgreSQL values")
struct PostgresValueTests {
    @Test("integers round-trip through BIGINT, including the extremes")
    func integers() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (v BIGINT, i4 INTEGER, i2 SMALLINT)")
            for v: Int64 in [Int64.min, Int64.max, 0, -1, 42] {
                try db.execute("INSERT INTO t (v) VALUES ($1)", bindings: [.integer(v)], onRow: nil)
                #expect(try scalar(db, "SELECT $1", [.integer(v)]) == .integer(v))
            }
            let stored = try rows(db, "SELECT v FROM t ORDER BY v").map(\.[0])
            #expect(stored == [.integer(.min), .integer(-1), .integer(0), .integer(42), .integer(.max)])
            try db.execute("INSERT INTO t (i4, i2) VALUES ($1, $2)", bindings: [.integer(-2_147_483_648), .integer(32767)], onRow: nil)
            let narrow = try rows(db, "SELECT i4, i2, 7::oid FROM t WHERE i4 IS NOT NULL")
            #expect(narrow.map(\.values) == [[.integer(-2_147_483_648), .integer(32767), .integer(7)]])
        }
    }

    @Test("doubles round-trip with ±infinity; NaN is refused with .misuse like on SQLite")
    func doubles() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (v DOUBLE PRECISION, r REAL)")
            for v in [Double.infinity, -.infinity, 0.1, -1.5e-300, .greatestFiniteMagnitude, .leastNonzeroMagnitude] {
                try db.execute("INSERT INTO t (v) VALUES ($1)", bindings: [.double(v)], onRow: nil)
                #expect(try scalar(db, "SELECT v FROM t WHERE v = $1", [.double(v)]) == .double(v))
            }
            #expect(try scalar(db, "SELECT 1.5::real") == .double(1.5))
            let error = databaseError { try db.execute("INSERT INTO t (v) VALUES ($1)", bindings: [.double(.nan)], onRow: nil) }
            guard case .misuse(let message) = error else {
                Issue.record("NaN should be .misuse, got \(String(describing: error))")
                return
            }
            #expect(message.contains("NaN"))
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(6))
        }
    }

    @Test("text round-trips: empty, emoji, long; NUL is refused with a clear error")
    func text() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id SERIAL PRIMARY KEY, v TEXT, vc VARCHAR(10), c CHAR(3))")
            let samples = ["", "héllo wörld", "🎉👩‍👩‍👧 emoji", String(repeating: "long ", count: 20_000), "quote ' and \" and \\"]
            for s in samples {
                try db.execute("INSERT INTO t (v) VALUES ($1)", bindings: [.text(s)], onRow: nil)
            }
            let stored = try rows(db, "SELECT v FROM t ORDER BY id").map(\.[0])
            #expect(stored == samples.map(DatabaseValue.text))
            try db.execute("INSERT INTO t (vc, c) VALUES ($1, $2)", bindings: ["abc", "x"], onRow: nil)
            let padded = try rows(db, "SELECT vc, c, 'nm'::name, 'q'::\"char\" FROM t WHERE vc IS NOT NULL")
            #expect(padded.map(\.values) == [[.text("abc"), .text("x  "), .text("nm"), .text("q")]])

            let error = databaseError { try db.execute("INSERT INTO t (v) VALUES ($1)", bindings: [.text("a\u{0}b")], onRow: nil) }
            guard case .misuse(let message) = error else {
                Issue.record("text with NUL should be .misuse, got \(String(describing: error))")
                return
            }
            #expect(message.contains("NUL"))
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(Int64(samples.count + 1)))
        }
    }

    @Test("booleans and NULL")
    func boolsAndNull() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (b BOOLEAN, n TEXT)")
            try db.execute("INSERT INTO t VALUES ($1, $2), ($3, $4)", bindings: [true, .null, false, .null], onRow: nil)
            let stored = try rows(db, "SELECT b, n FROM t ORDER BY b")
            #expect(stored.map(\.values) == [[.bool(false), .null], [.bool(true), .null]])
            #expect(try scalar(db, "SELECT $1", [.null]) == .null)
        }
    }

    @Test("blobs round-trip: empty and 8 MB")
    func blobs() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id INT PRIMARY KEY, v BYTEA)")
            var big = Data(count: 8 * 1024 * 1024)
            for i in stride(from: 0, to: big.count, by: 997) { big[i] = UInt8(truncatingIfNeeded: i &* 31) }
            big[big.count - 1] = 0xFF
            try db.execute("INSERT INTO t VALUES (1, $1), (2, $2), (3, $3)", bindings: [.blob(Data()), .blob(big), .blob(Data([0, 1, 0]))], onRow: nil)
            let stored = try rows(db, "SELECT v FROM t ORDER BY id").map(\.[0])
            #expect(stored.count == 3)
            #expect(stored[0] == .blob(Data()))
            #expect(stored[1] == .blob(big))
            #expect(stored[2] == .blob(Data([0, 1, 0])))
            #expect(try scalar(db, "SELECT v IS NULL FROM t WHERE id = 1") == .bool(false))
        }
    }

    @Test("empty values and NULLs side by side stay apart, in rows and through a cursor")
    func emptyIsNotNull() throws {
        try withSchema { _, db in
            try db.executeScript("""
                CREATE TABLE t (id INT PRIMARY KEY, s TEXT, b BYTEA, j JSONB, a TEXT[]);
                INSERT INTO t VALUES (1, '', '\\x', NULL, NULL), (2, NULL, NULL, '""', '{}');
                """)
            let expected: [[DatabaseValue]] = [
                [.text(""), .blob(Data()), .null, .null],
                [.null, .null, .json(#""""#), .text("{}")],
            ]
            #expect(try rows(db, "SELECT s, b, j, a FROM t ORDER BY id").map(\.values) == expected)
            var streamed: [[DatabaseValue]] = []
            let cursor = try db.openCursor("SELECT s, b, j, a FROM t ORDER BY id", bindings: [])
            while let row = try cursor.next() { streamed.append(row.values) }
            #expect(streamed == expected)
        }
    }

    @Test("dates keep microseconds and reach year 1 and 9999; infinity maps to distant dates")
    func dates() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id INT PRIMARY KEY, v TIMESTAMPTZ, ts TIMESTAMP, d DATE)")
            let micro = DateText.date(microsecondsSinceReferenceDate: 757_382_400_123_457)
            let yearOne = try #require(DateText.parse("0001-01-01 00:00:00"))
            // Near year 9999 a Date (a Double of seconds since 2001) only resolves ~30 µs,
            // so the far-future sample is a whole second.
            let year9999 = try #require(DateText.parse("9999-12-31 23:59:59"))
            let beforeEpoch = try #require(DateText.parse("1969-07-20 20:17:40.000001"))
            let dates = [micro, yearOne, year9999, beforeEpoch]
            for (i, d) in dates.enumerated() {
                try db.execute("INSERT INTO t (id, v, ts, d) VALUES ($1, $2, $2, $2)", bindings: [.integer(Int64(i)), .date(d)], onRow: nil)
            }
            let stored = try rows(db, "SELECT v, ts FROM t ORDER BY id")
            #expect(stored.map(\.[0]) == dates.map(DatabaseValue.date))
            #expect(stored.map(\.[1]) == dates.map(DatabaseValue.date))
            #expect(try scalar(db, "SELECT to_char(v AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') FROM t WHERE id = 0")
                == .text(DateText.format(micro)))
            #expect(try scalar(db, "SELECT to_char(v AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') FROM t WHERE id = 1")
                == .text("0001-01-01 00:00:00.000000"))
            #expect(try scalar(db, "SELECT d FROM t WHERE id = 2") == .date(try #require(DateText.parse("9999-12-31"))))
            #expect(try scalar(db, "SELECT '2024-02-29'::date") == .date(try #require(DateText.parse("2024-02-29 00:00:00"))))
            #expect(try scalar(db, "SELECT 'infinity'::timestamptz") == .date(.distantFuture))
            #expect(try scalar(db, "SELECT '-infinity'::timestamp") == .date(.distantPast))
            #expect(try scalar(db, "SELECT 'infinity'::date") == .date(.distantFuture))
            // A string goes into a timestamptz column too (text is sent untyped).
            try db.execute("INSERT INTO t (id, v) VALUES (10, $1)", bindings: ["2020-01-02 03:04:05.5+00"], onRow: nil)
            #expect(try scalar(db, "SELECT v FROM t WHERE id = 10") == .date(try #require(DateText.parse("2020-01-02 03:04:05.5"))))
        }
    }

    @Test("UUIDs round-trip, and a string goes into a uuid column")
    func uuids() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id UUID PRIMARY KEY)")
            let a = UUID()
            let b = try #require(UUID(uuidString: "F47AC10B-58CC-4372-A567-0E02B2C3D479"))
            try db.execute("INSERT INTO t VALUES ($1)", bindings: [.uuid(a)], onRow: nil)
            try db.execute("INSERT INTO t VALUES ($1)", bindings: [.text("f47ac10b-58cc-4372-a567-0e02b2c3d479")], onRow: nil)
            #expect(try scalar(db, "SELECT id FROM t WHERE id = $1", [.uuid(a)]) == .uuid(a))
            #expect(try scalar(db, "SELECT id FROM t WHERE id = $1", [.uuid(b)]) == .uuid(b))
        }
    }

    @Test("decimals round-trip exactly, 38 digits included")
    func decimals() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id INT PRIMARY KEY, v NUMERIC)")
            let texts = [
                "12345678901234567890123456789012345678", "-99999999999999999999999999999999999999",
                "0", "-0.000123", "1234.5", "0.1", "10000", "123456789.000000001", "-1",
            ]
            let values = try texts.map { try #require(Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX"))) }
            for (i, v) in values.enumerated() {
                try db.execute("INSERT INTO t VALUES ($1, $2)", bindings: [.integer(Int64(i)), .decimal(v)], onRow: nil)
            }
            let stored = try rows(db, "SELECT v FROM t ORDER BY id").map(\.[0])
            #expect(stored == values.map(DatabaseValue.decimal))
            #expect(try scalar(db, "SELECT v::text FROM t WHERE id = 0") == .text(texts[0]))
            #expect(try scalar(db, "SELECT 1234.5000::numeric(10,4)") == .decimal(Decimal(string: "1234.5")!))
            #expect(try scalar(db, "SELECT 0.00000001::numeric") == .decimal(Decimal(string: "0.00000001")!))
            let nan = try scalar(db, "SELECT 'NaN'::numeric")
            guard case .double(let d) = nan, d.isNaN else {
                Issue.record("numeric NaN should decode as .double(.nan), got \(nan)")
                return
            }
        }
    }

    @Test("JSON documents round-trip through jsonb and json")
    func json() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (id INT PRIMARY KEY, b JSONB, j JSON)")
            let doc = #"{"a":[1,2,{"b":null,"c":[true,false]}],"d":"é🎉","e":{"f":{"g":1.5}}}"#
            try db.execute("INSERT INTO t VALUES (1, $1, $2)", bindings: [.json(doc), .text(doc)], onRow: nil)
            let row = try #require(try rows(db, "SELECT b, j FROM t").first)
            guard case .json(let fromJsonb) = row[0] else {
                Issue.record("jsonb should decode as .json, got \(row[0])")
                return
            }
            let parsed = try JSONSerialization.jsonObject(with: Data(fromJsonb.utf8)) as? NSDictionary
            let expected = try JSONSerialization.jsonObject(with: Data(doc.utf8)) as? NSDictionary
            #expect(parsed != nil && parsed == expected)
            #expect(row[1] == .json(doc))
            #expect(try scalar(db, "SELECT b->'e'->'f'->>'g' FROM t") == .text("1.5"))
        }
    }

    @Test("a result with a type lacking a binary decoder is read in text format")
    func textFallback() throws {
        try withSchema { _, db in
            let u = "f47ac10b-58cc-4372-a567-0e02b2c3d479"
            let row = try #require(try rows(db, """
                SELECT '12:34'::time AS t, 7::int4 AS i, 2.5::float8 AS f, 12.50::numeric AS n, true AS b,
                       'x'::text AS s, '\\x0102ff'::bytea AS by, '2020-01-02 03:04:05.25+00'::timestamptz AS ts,
                       '2020-01-02'::date AS d, '\(u)'::uuid AS u, '{"a": 1}'::jsonb AS j, NULL::int AS nul,
                       'infinity'::timestamptz AS inf
                """).first)
            #expect(row["t"] == .text("12:34:00"))
            #expect(row["i"] == .integer(7))
            #expect(row["f"] == .double(2.5))
            #expect(row["n"] == .decimal(Decimal(string: "12.5")!))
            #expect(row["b"] == .bool(true))
            #expect(row["s"] == .text("x"))
            #expect(row["by"] == .blob(Data([1, 2, 255])))
            #expect(row["ts"] == .date(DateText.parse("2020-01-02 03:04:05.25")!))
            #expect(row["d"] == .date(DateText.parse("2020-01-02")!))
            #expect(row["u"] == .uuid(UUID(uuidString: u)!))
            #expect(row["j"] == .json(#"{"a": 1}"#))
            #expect(row["nul"] == .null)
            #expect(row["inf"] == .date(.distantFuture))
        }
    }

    @Test("rows changed counts writes only; parameter count mismatches are .misuse")
    func changedRowsAndParameterCount() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (v INT)")
            #expect(try db.execute("INSERT INTO t SELECT generate_series(1, 5)", bindings: [], onRow: nil) == 5)
            #expect(try db.execute("UPDATE t SET v = v + 1 WHERE v > $1", bindings: [.integer(2)], onRow: nil) == 3)
            #expect(try db.execute("SELECT * FROM t", bindings: [], onRow: nil) == 0)
            #expect(try db.execute("DELETE FROM t WHERE v = $1 RETURNING v", bindings: [.integer(6)], onRow: nil) == 1)
            #expect(try db.execute("CREATE TABLE u (x INT)", bindings: [], onRow: nil) == 0)
            #expect(try db.execute("INSERT INTO u SELECT v FROM t WHERE v > 100", bindings: [], onRow: nil) == 0)
            #expect(try db.execute("INSERT INTO u SELECT generate_series(1, 12)", bindings: [], onRow: nil) == 12)
            #expect(try db.execute("MERGE INTO u USING t ON u.x = t.v WHEN MATCHED THEN DELETE", bindings: [], onRow: nil) == 4)
            #expect(try db.execute("SET LOCAL statement_timeout = 0", bindings: [], onRow: nil) == 0)
            #expect(try db.execute("UPDATE u SET x = x", bindings: [], onRow: nil) == 8)
            let error = databaseError { try db.execute("SELECT $1::int + $2::int", bindings: [.integer(1)], onRow: nil) }
            guard case .misuse = error else {
                Issue.record("a missing binding should be .misuse, got \(String(describing: error))")
                return
            }
        }
    }

    @Test("the statement cache survives DEALLOCATE ALL and a changed table")
    func statementCacheRecovers() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (a INT); INSERT INTO t VALUES (1)")
            #expect(try rows(db, "SELECT * FROM t").map(\.values) == [[.integer(1)]])
            try db.executeScript("DEALLOCATE ALL")
            #expect(try rows(db, "SELECT * FROM t").map(\.values) == [[.integer(1)]])
            try db.executeScript("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'")
            let after = try rows(db, "SELECT * FROM t")
            #expect(after.map(\.values) == [[.integer(1), .text("x")]])
            #expect(after.first?.columnNames == ["a", "b"])
            // More distinct statements than the cache holds: eviction deallocates quietly.
            for i in 0..<600 {
                #expect(try scalar(db, "SELECT \(i)::int8 + $1", [.integer(1)]) == .integer(Int64(i + 1)))
            }
            #expect(try scalar(db, "SELECT count(*) FROM pg_prepared_statements") == .integer(512))
        }
    }

    /// A batch whose binding sets have more parameter-type shapes than the cache holds (a
    /// NULL has no type, so each pattern of NULLs is another statement) keeps every statement
    /// it prepared until it has sent them: evicting one of its own failed with 26000.
    @Test("a batch needing more statements than the cache holds evicts none of its own")
    func batchLargerThanTheStatementCache() throws {
        try withSchema { _, db in
            let columns = (0..<10).map { "c\($0)" }
            try db.executeScript("CREATE TABLE t (id INT8, " + columns.map { "\($0) INT8" }.joined(separator: ", ") + ")")
            let sql = "INSERT INTO t VALUES (" + (1...11).map { "$\($0)" }.joined(separator: ", ") + ")"
            // 700 distinct patterns of NULL and int8 over ten columns.
            let sets: [[DatabaseValue]] = (0..<700).map { i in
                [.integer(Int64(i))] + (0..<10).map { bit in (i >> bit) & 1 == 1 ? .integer(Int64(bit)) : .null }
            }
            #expect(try db.executeBatch(sql, bindingSets: sets) == 700)
            #expect(try scalar(db, "SELECT count(*) FROM t") == .integer(700))
            #expect(try scalar(db, "SELECT sum(c9)::int8 FROM t") == .integer(9 * 188))
            // The cache shrinks back to its capacity on the next statements.
            #expect(try scalar(db, "SELECT count(*) FROM t WHERE c0 IS NULL") == .integer(350))
            for i in 0..<5 {
                #expect(try scalar(db, "SELECT \(i)::int8 + $1", [.integer(1)]) == .integer(Int64(i + 1)))
            }
            #expect(try scalar(db, "SELECT count(*) FROM pg_prepared_statements") == .integer(512))
        }
    }

    @Test("connecting to a closed port fails with .connectionFailed")
    func connectionFailure() throws {
        let error = databaseError { _ = try PostgresDriver("postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2").connect(role: .writer) }
        guard case .connectionFailed(let context) = error else {
            Issue.record("expected .connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(!context.message.isEmpty)
        let driver = PostgresDriver("host=127.0.0.1", connections: 3)
        #expect(driver.poolShape == .uniform(connections: 3))
        #expect(driver.dialect == .postgres)
    }
}
