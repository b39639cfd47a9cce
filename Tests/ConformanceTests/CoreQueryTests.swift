import Foundation
import Testing
import Unity

/// The AST executed on both engines gives the same answers: DDL, and every kind of expression.
@Suite("Core: DDL and expressions on both engines")
struct CoreQueryTests {
    func makeItems(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("item", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("kind", .text, notNull: true),
                SQLColumnDefinition("price", .double),
                SQLColumnDefinition("qty", .int32, notNull: true, default: .literal(.integer(0))),
                SQLColumnDefinition("active", .bool, notNull: true, default: .true),
            ])))
            let rows: [(Int, String, Double?, Int)] = [(1, "a", 1.5, 3), (2, "a", 2.5, 0), (3, "b", nil, 7), (4, "c", 10, 1), (5, "b", 4, 2)]
            try conn.execute(.insert(SQLInsert(into: "item", columns: ["id", "kind", "price", "qty"],
                                               values: rows.map { [.value($0.0), .value($0.1), .value($0.2), .value($0.3)] })))
        }
    }

    func ids(_ db: Database, _ condition: SQLExpression) throws -> [Int] {
        try db.read { conn in
            try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("id")).where(condition).orderBy(SQLExpression.column("id").asc)))
                .map { try $0.decode(Int.self, at: 0) }
        }
    }

    @Test(arguments: Backend.allCases)
    func conditions(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeItems(db)
            let price = SQLExpression.column("price")
            #expect(try ids(db, price.between(.value(2), and: .value(5))) == [2, 5])
            #expect(try ids(db, price.isNull) == [3])
            #expect(try ids(db, price.isNotNull && SQLExpression.column("qty").greaterThan(2)) == [1])
            #expect(try ids(db, SQLExpression.column("kind").equals("c") || SQLExpression.column("qty").equals(0)) == [2, 4])
            #expect(try ids(db, !(SQLExpression.column("kind").isIn(["a", "b"]))) == [4])
            #expect(try ids(db, SQLExpression.column("kind").isNotIn([String]())) == [1, 2, 3, 4, 5])
            #expect(try ids(db, price.isNotDistinct(from: .null)) == [3])
            #expect(try ids(db, SQLExpression.column("active").equals(true)) == [1, 2, 3, 4, 5])
            #expect(try ids(db, SQLExpression.column("kind").endsWith("b")) == [3, 5])
            #expect(try ids(db, .raw("qty * 2 > ?", [5])) == [1, 3])
            let exists = SQLExpression.exists(SQLSelect(from: "item", as: "other").where(
                SQLExpression.column("other", "kind").equals(.column("item", "kind")) && SQLExpression.column("other", "id").notEquals(.column("item", "id"))))
            #expect(try ids(db, exists) == [1, 2, 3, 5])
        }
    }

    @Test(arguments: Backend.allCases)
    func expressionsAndAggregates(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeItems(db)
            let rows = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item")
                    .columns(.expression(.column("kind"), alias: "kind"),
                             .expression(.count(.column("id")), alias: "n"),
                             .expression(.sum(.column("qty")), alias: "qty"),
                             .expression(.max(.column("price")), alias: "top"))
                    .groupBy(.column("kind"))
                    .having(SQLExpression.count(.column("id")).greaterThan(1))
                    .orderBy(SQLExpression.column("kind").asc)))
            }
            #expect(try rows.map { try $0.decode(String.self, column: "kind") } == ["a", "b"])
            #expect(try rows.map { try $0.decode(Int.self, column: "n") } == [2, 2])
            #expect(try rows.map { try $0.decode(Int.self, column: "qty") } == [3, 9])
            #expect(try rows.map { try $0.decode(Double.self, column: "top") } == [2.5, 4])

            let labels = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item")
                    .columns(.expression(.case([SQLCaseBranch(when: SQLExpression.column("qty").greaterThan(2), then: .value("many")),
                                               SQLCaseBranch(when: SQLExpression.column("qty").equals(0), then: .value("none"))],
                                              else: .value("few")), alias: "label"),
                             .expression(.cast(.column("qty"), .text), alias: "qty_text"),
                             .expression(.binary(.column("kind"), .concat, .value("!")), alias: "shout"),
                             .expression(.coalesce(.column("price"), .value(-1.0)), alias: "p"))
                    .orderBy(SQLExpression.column("id").asc)))
            }
            #expect(try labels.map { try $0.decode(String.self, column: "label") } == ["many", "none", "many", "few", "few"])
            #expect(try labels.map { try $0.decode(String.self, column: "qty_text") } == ["3", "0", "7", "1", "2"])
            #expect(try labels.map { try $0.decode(String.self, column: "shout") } == ["a!", "a!", "b!", "c!", "b!"])
            #expect(try labels.map { try $0.decode(Double.self, column: "p") } == [1.5, 2.5, -1, 10, 4])
        }
    }

    @Test(arguments: Backend.allCases)
    func distinctLimitOffsetAndUnion(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeItems(db)
            let kinds = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("kind")).distinct().orderBy(SQLExpression.column("kind").desc)))
                    .map { try $0.decode(String.self, at: 0) }
            }
            #expect(kinds == ["c", "b", "a"])
            let page = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("id")).orderBy(SQLExpression.column("id").asc).limit(2, offset: 2)))
                    .map { try $0.decode(Int.self, at: 0) }
            }
            #expect(page == [3, 4])
            let skipped = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("id")).orderBy(SQLExpression.column("id").asc).offset(3)))
                    .map { try $0.decode(Int.self, at: 0) }
            }
            #expect(skipped == [4, 5])
            let union = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("kind")).where(SQLExpression.column("id").equals(1))
                    .union(SQLSelect(from: "item").columns(.column("kind")).where(SQLExpression.column("id").equals(2)))))
                    .map { try $0.decode(String.self, at: 0) }
            }
            #expect(union == ["a"])
            let nullsOrder = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("id"))
                    .orderBy(SQLOrdering(.column("price"), .ascending, nulls: .last))))
                    .map { try $0.decode(Int.self, at: 0) }
            }
            #expect(nullsOrder == [1, 2, 5, 4, 3])
        }
    }

    @Test(arguments: Backend.allCases)
    func ddlIndexesAndAlterTable(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeItems(db)
            try db.write { conn in
                let index = SQLCreateIndex("item_kind_qty", on: "item", columns: ["kind", "qty"], unique: true, ifNotExists: true)
                try conn.execute(.createIndex(index))
                try conn.execute(.createIndex(index))  // IF NOT EXISTS: a no-op the second time
            }
            // The unique index is enforced as a unique constraint.
            do {
                try db.write { try $0.execute(.insert(SQLInsert(into: "item", values: ["id": 9, "kind": "a", "qty": 3]))) }
                Issue.record("the unique index did not hold")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .unique)
            }
            try db.write { conn in
                try conn.execute(.alterTable(SQLAlterTable("item", .addColumn(SQLColumnDefinition("note", .text, notNull: true, default: .literal(.string("none")))))))
                try conn.execute(.alterTable(SQLAlterTable("item", .renameColumn("note", to: "remark"))))
                try conn.execute(.alterTable(SQLAlterTable("item", .renameTo("article"))))
                try conn.execute(.dropIndex(SQLDropIndex("item_kind_qty", ifExists: true)))
                try conn.execute(.dropIndex(SQLDropIndex("item_kind_qty", ifExists: true)))
            }
            let remarks = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "article").columns(.column("remark")))).map { try $0.decode(String.self, at: 0) }
            }
            #expect(remarks == Array(repeating: "none", count: 5))
            // The index is gone: the former duplicate goes in now.
            try db.write { try $0.execute(.insert(SQLInsert(into: "article", values: ["id": 9, "kind": "a", "qty": 3]))) }
            try db.write { conn in
                try conn.execute(.dropTable(SQLDropTable("article")))
                try conn.execute(.dropTable(SQLDropTable("article", ifExists: true)))
            }
            #expect(throws: DatabaseError.self) {
                try db.read { try $0.fetchAll(.select(SQLSelect(from: "article"))) }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func compositeKeysAndTableConstraints(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("member", columns: [
                    SQLColumnDefinition("g", .int64, notNull: true), SQLColumnDefinition("u", .int64, notNull: true),
                    SQLColumnDefinition("email", .varchar(50)), SQLColumnDefinition("n", .int64),
                ], constraints: [.primaryKey(["g", "u"]), .unique(["email"]), .check(SQLExpression.column("n").greaterThanOrEquals(0))])))
                try conn.execute(.insert(SQLInsert(into: "member", values: ["g": 1, "u": 1, "email": "a@x", "n": 1])))
                try conn.execute(.insert(SQLInsert(into: "member", values: ["g": 1, "u": 2, "email": "b@x", "n": 1])))
            }
            for (values, kind) in [
                (["g": 1, "u": 1, "email": "c@x", "n": 1] as KeyValuePairs<String, DatabaseValue>, ConstraintKind.unique),
                (["g": 2, "u": 1, "email": "a@x", "n": 1], .unique),
                (["g": 2, "u": 2, "email": "d@x", "n": -1], .check),
            ] {
                do {
                    try db.write { try $0.execute(.insert(SQLInsert(into: "member", values: values))) }
                    Issue.record("no violation for \(values)")
                } catch DatabaseError.constraintViolation(let got, _) {
                    #expect(got == kind)
                }
            }
        }
    }

    /// A LIMIT is written into the SQL as a number (OFFSET stays bound): the render cache must
    /// tell limits apart, and PostgreSQL must keep one plan for a repeated limited query
    /// instead of planning it again on every execution, as it did with a bound LIMIT.
    @Test(arguments: Backend.allCases)
    func limitsAreWrittenIntoTheSQLAndKeepTheirPlan(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeItems(db)
            func page(_ limit: Int, offset: Int? = nil, above price: Double = 0) throws -> [Int] {
                try db.read { conn in
                    try conn.fetchAll(.select(SQLSelect(from: "item").columns(.column("id"))
                        .where(SQLExpression.column("price").greaterThanOrEquals(price))
                        .orderBy(SQLExpression.column("price").asc).limit(limit, offset: offset)))
                        .map { try $0.decode(Int.self, at: 0) }
                }
            }
            // Same shape, different limits and offsets: each answer is its own.
            #expect(try page(2) == [1, 2])
            #expect(try page(3) == [1, 2, 5])
            #expect(try page(2, offset: 1) == [2, 5])
            #expect(try page(2, offset: 3) == [4])
            #expect(try page(1, above: 3) == [5])
            #expect(try db.dialect.render(.select(SQLSelect(from: "item").limit(7, offset: 4))).bindings == [.integer(4)])

            guard backend == .postgres else { return }
            let plans = try db.read { conn -> (generic: Int64, custom: Int64) in
                let query = SQLSelect(from: "item").columns(.column("id"))
                    .where(SQLExpression.column("price").greaterThanOrEquals(.bind(.double(0))))
                    .orderBy(SQLExpression.column("price").asc).limit(4)
                for i in 0..<10 { _ = try conn.fetchAll(.select(query.where(SQLExpression.column("price").greaterThanOrEquals(Double(i) / 10)))) }
                let row = try conn.fetchOne(sql: "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%LIMIT 4'")
                return (try row?.decode(Int64.self, at: 0) ?? -1, try row?.decode(Int64.self, at: 1) ?? -1)
            }
            // PostgreSQL tries five custom plans, then keeps the generic one.
            #expect(plans.generic >= 1)
            #expect(plans.custom <= 5)
        }
    }
}
