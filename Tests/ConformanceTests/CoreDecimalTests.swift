import Foundation
import Testing
import Unity

/// `Decimal` orders, compares, sums and averages as a number with exact digits on both
/// backends: PostgreSQL's NUMERIC, and on SQLite decimal text with the `unity_decimal`
/// collation and the exact `unity_sum` / `unity_avg` aggregates.
@Suite("Core: Decimal as a number on both backends")
struct CoreDecimalTests {
    static func d(_ text: String) -> Decimal {
        Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))!
    }

    /// id → price; as text they sort 0.1, 0.2, 10, 100.005, 25.86, 9.91.
    static let prices: [(Int, String)] = [(1, "9.91"), (2, "25.86"), (3, "10"), (4, "0.1"), (5, "0.2"), (6, "100.005")]

    func ids(_ db: Database, _ table: String, where condition: SQLExpression? = nil, order: SQLOrdering) throws -> [Int] {
        var select = SQLSelect(from: table).columns(.column("id")).orderBy(order)
        if let condition { select = select.where(condition) }
        return try db.read { try $0.fetchAll(.select(select)).map { try $0.decode(Int.self, at: 0) } }
    }

    func aggregate(_ db: Database, _ table: String, _ expression: SQLExpression, where condition: SQLExpression? = nil) throws -> Decimal? {
        var select = SQLSelect(from: table).columns(.expression(expression, alias: "v"))
        if let condition { select = select.where(condition) }
        return try db.read { try $0.fetchOne(.select(select))?.decode(Decimal?.self, at: 0) }
    }

    /// The same questions about a table, whatever declared its column.
    func checkNumericBehaviour(_ db: Database, _ table: String, price: SQLExpression = .column("price")) throws {
        #expect(try ids(db, table, order: price.asc) == [4, 5, 1, 3, 2, 6])
        #expect(try ids(db, table, order: price.desc) == [6, 2, 3, 1, 5, 4])
        #expect(try ids(db, table, where: price.greaterThanOrEquals(.value(Self.d("10"))), order: price.asc) == [3, 2, 6])
        #expect(try ids(db, table, where: price.greaterThanOrEquals(.value(10)), order: price.asc) == [3, 2, 6])
        #expect(try ids(db, table, where: price.lessThan(.value(Self.d("9.92"))), order: price.asc) == [4, 5, 1])
        #expect(try ids(db, table, where: price.equals(.value(Self.d("9.910"))), order: price.asc) == [1])
        #expect(try ids(db, table, where: price.between(.value(Self.d("0.15")), and: .value(Self.d("25.86"))), order: price.asc) == [5, 1, 3, 2])

        let small = SQLExpression.column("id").isIn([4, 5])
        #expect(try aggregate(db, table, .sum(price), where: small) == Self.d("0.3"))
        #expect(try aggregate(db, table, .avg(price), where: small) == Self.d("0.15"))
        #expect(try aggregate(db, table, .sum(price)) == Self.d("146.075"))
        #expect(try aggregate(db, table, .min(price)) == Self.d("0.1"))
        #expect(try aggregate(db, table, .max(price)) == Self.d("100.005"))
        #expect(try aggregate(db, table, .sum(price), where: .column("id").equals(99)) == nil)
    }

    @Test(arguments: Backend.allCases)
    func astDeclaredDecimalColumn(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("item", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("price", .decimal),
                ])))
                for (id, price) in Self.prices {
                    try conn.execute(.insert(SQLInsert(into: "item", values: ["id": .integer(Int64(id)), "price": .decimal(Self.d(price))])))
                }
            }
            try checkNumericBehaviour(db, "item")
            // Exact digits beyond a double's: 30 significant digits round-trip and sum exactly.
            let long = Self.d("12345678901234567890.1234567891")
            try db.write { _ = try $0.execute(.insert(SQLInsert(into: "item", values: ["id": .integer(7), "price": .decimal(long)]))) }
            let back = try db.read { try $0.fetchOne(.select(SQLSelect(from: "item").columns(.column("price")).where(.column("id").equals(7))))?.decode(Decimal.self, at: 0) }
            #expect(back == long)
            #expect(try aggregate(db, "item", .sum(.column("price")), where: SQLExpression.column("id").isIn([4, 7])) == Self.d("12345678901234567890.2234567891"))
            #expect(try ids(db, "item", order: SQLExpression.column("price").desc).first == 7)
        }
    }

    /// A column the user declares NUMERIC in a `.sql` migration (the same text on both).
    @Test(arguments: Backend.allCases)
    func userDeclaredNumericColumn(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try Migrator(migrations: [Migration("0001_money", sql: """
                CREATE TABLE money (id INTEGER PRIMARY KEY, price NUMERIC(12, 3));
                """)]).migrate(db)
            try db.write { conn in
                for (id, price) in Self.prices {
                    try conn.execute(.insert(SQLInsert(into: "money", values: ["id": .integer(Int64(id)), "price": .decimal(Self.d(price))])))
                }
            }
            try checkNumericBehaviour(db, "money")
        }
    }

    /// A money column that a schema Unity did not create declares TEXT on SQLite (as sample
    /// databases do) and NUMERIC on PostgreSQL: wrapped in `.decimal`, it compares, orders and
    /// aggregates as a number on both, with the same answers. Unwrapped, SQLite's own rules
    /// apply and the column orders as text.
    @Test(arguments: Backend.allCases)
    func textDeclaredMoneyColumnWrappedAsDecimal(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let type = backend == .sqlite ? "TEXT" : "NUMERIC(12, 3)"
            try Migrator(migrations: [Migration("0001_invoice", sql: """
                CREATE TABLE invoice (id INTEGER PRIMARY KEY, price \(type));
                """)]).migrate(db)
            try db.write { conn in
                for (id, price) in Self.prices {
                    try conn.execute(.insert(SQLInsert(into: "invoice", values: ["id": .integer(Int64(id)), "price": .decimal(Self.d(price))])))
                }
            }
            try checkNumericBehaviour(db, "invoice", price: .decimal(.column("price")))
            #expect(try ids(db, "invoice", where: SQLExpression.decimal(.column("price")).greaterThan(.value(Self.d("9.91"))), order: SQLExpression.column("id").asc) == [2, 3, 6])
            if backend == .sqlite {
                // What a raw comparison gets: SQLite's text order on a TEXT column.
                #expect(try ids(db, "invoice", order: SQLExpression.column("price").desc) == [1, 2, 6, 3, 5, 4])
            }
        }
    }

    /// The renderer spells the wrapper as a collation on SQLite and not at all on PostgreSQL.
    @Test func decimalOperandRendering() throws {
        let condition = SQLExpression.decimal(.column("price")).greaterThanOrEquals(.value(Self.d("10")))
        let query = SQLStatement.select(SQLSelect(from: "t").columns(.column("id")).where(condition).orderBy(SQLExpression.decimal(.column("price")).desc))
        #expect(try SQLDialect.sqlite.render(query).sql == #"SELECT "id" FROM "t" WHERE "price" COLLATE "unity_decimal" >= ? ORDER BY "price" COLLATE "unity_decimal" DESC"#)
        #expect(try SQLDialect.postgres.render(query).sql == #"SELECT "id" FROM "t" WHERE "price" >= $1 ORDER BY "price" DESC"#)
    }

    /// Every `Decimal` Swift can hold reads back equal: 38 and 39 significant digits, the
    /// greatest and least finite magnitudes, the smallest positive value; each checked against
    /// the literal it was written from, through a `.decimal` column and a bound value.
    @Test(arguments: Backend.allCases)
    func boundaryDecimalsReadBackEqual(_ backend: Backend) throws {
        let cases: [(Int, Decimal, String)] = [
            (1, Self.d("1234567890123456789012345678901234567.8"), "1234567890123456789012345678901234567.8"),
            (2, Self.d("3.14159265358979323846264338327950288419"), "3.14159265358979323846264338327950288419"),
            (3, Self.d("-340282366920938463463374607431768211455"), "-340282366920938463463374607431768211455"),
            (4, Decimal.greatestFiniteMagnitude, "340282366920938463463374607431768211455" + String(repeating: "0", count: 127)),
            (5, Decimal.leastFiniteMagnitude, "-340282366920938463463374607431768211455" + String(repeating: "0", count: 127)),
            (6, Decimal.leastNonzeroMagnitude, "0." + String(repeating: "0", count: 126) + "1"),
            (7, Self.d("99999999999999999999999999999999999999"), "99999999999999999999999999999999999999"),
        ]
        // The literals and the values agree, so a reading that matches one matches both.
        for (_, value, text) in cases { #expect(value.description == text) }
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("big", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("v", .decimal),
                ])))
                for (id, value, _) in cases {
                    try conn.execute(.insert(SQLInsert(into: "big", values: ["id": .integer(Int64(id)), "v": .decimal(value)])))
                }
            }
            for (id, value, text) in cases {
                let row = try db.read { try $0.fetchOne(.select(SQLSelect(from: "big").columns(.column("v")).where(.column("id").equals(id)))) }
                #expect(try row?.decode(Decimal.self, at: 0) == value, "id \(id)")
                #expect(try row?.decode(Decimal.self, at: 0).description == text, "id \(id)")
                // Found by equality with the bound value, as a lookup would.
                let found = try db.read { try $0.fetchOne(.select(SQLSelect(from: "big").columns(.column("id")).where(SQLExpression.column("v").equals(.value(value))))) }
                #expect(try found?.decode(Int.self, at: 0) == id, "id \(id)")
            }
            // Ordered as numbers at the extremes.
            #expect(try ids(db, "big", order: SQLExpression.column("v").asc) == [5, 3, 6, 2, 1, 7, 4])
        }
    }

    /// One more than the largest mantissa, stored by SQL (no `Decimal` can be bound with it),
    /// is never rounded: reading it as `Decimal` throws `typeConversion` naming the column,
    /// the same column reads as its exact text, and an exact SUM that needs more digits than
    /// `Decimal` holds is an error rather than a rounded number.
    @Test(arguments: Backend.allCases)
    func decimalsBeyondTheMantissaAreRefusedNotRounded(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let type = backend == .sqlite ? "TEXT COLLATE unity_decimal" : "NUMERIC"
            try Migrator(migrations: [Migration("0001_wide", sql: """
                CREATE TABLE wide (id INTEGER PRIMARY KEY, v \(type));
                INSERT INTO wide (id, v) VALUES (1, '340282366920938463463374607431768211456');
                INSERT INTO wide (id, v) VALUES (2, '300000000000000000000000000000000000000');
                INSERT INTO wide (id, v) VALUES (3, '0.1');
                """)]).migrate(db)
            let row = try db.read { try $0.fetchOne(.select(SQLSelect(from: "wide").columns(.column("v")).where(.column("id").equals(1)))) }
            #expect(try row?.decode(String.self, at: 0) == "340282366920938463463374607431768211456")
            do {
                _ = try row?.decode(Decimal.self, at: 0)
                Issue.record("a 39-digit value above the largest mantissa read as a Decimal")
            } catch let error as DatabaseError {
                guard case .typeConversion(let failure) = error else {
                    Issue.record("expected .typeConversion, got \(error)")
                    return
                }
                #expect("\(failure)".contains("340282366920938463463374607431768211456"))
            }
            // 2 + 3 needs 40 significant digits: an error on both backends, never rounded.
            #expect(throws: (any Error).self) {
                _ = try aggregate(db, "wide", .sum(.column("v")), where: SQLExpression.column("id").isIn([2, 3]))
            }
            // The largest 39-digit value reads exactly beside it.
            try db.write { _ = try $0.execute(.insert(SQLInsert(into: "wide", values: ["id": .integer(4), "v": .decimal(Self.d("340282366920938463463374607431768211455"))]))) }
            #expect(try aggregate(db, "wide", .max(.column("v")), where: SQLExpression.column("id").isIn([2, 4])) == Self.d("340282366920938463463374607431768211455"))
        }
    }

    /// Integer and double columns keep their own aggregate results.
    @Test(arguments: Backend.allCases)
    func otherColumnsAggregateAsBefore(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("n", columns: [
                    SQLColumnDefinition("i", .int64), SQLColumnDefinition("x", .double),
                ])))
                try conn.execute(.insert(SQLInsert(into: "n", columns: ["i", "x"], values: [[.value(1), .value(1.5)], [.value(2), .value(2.25)]])))
            }
            let row = try db.read { conn in
                try conn.fetchOne(.select(SQLSelect(from: "n").columns(
                    .expression(.sum(.column("i")), alias: "si"), .expression(.sum(.column("x")), alias: "sx"),
                    .expression(.avg(.column("x")), alias: "ax"), .expression(.avg(.column("i")), alias: "ai"))))
            }
            #expect(try row?.decode(Int.self, column: "si") == 3)
            #expect(try row?.decode(Double.self, column: "sx") == 3.75)
            #expect(try row?.decode(Double.self, column: "ax") == 1.875)
            #expect(try row?.decode(Double.self, column: "ai") == 1.5)
            #expect(try row?.decode(Decimal.self, column: "ai") == Self.d("1.5"))
        }
    }
}
