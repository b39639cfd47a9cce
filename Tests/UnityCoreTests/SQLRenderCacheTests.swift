import Foundation
import Testing
@testable import Unity

@Suite struct SQLRenderCacheTests {
    @Test func sameShapeDifferentValuesReusesTheSQLWithNewBindings() throws {
        // A private dialect, so that the cache's contents are this test's alone.
        let dialect = SQLDialect.postgresLike(capacity: 10)
        func query(_ name: String, _ ids: [Int]) -> SQLStatement {
            .select(SQLSelect(from: "users").where(SQLExpression.column("name").beginsWith(name) && SQLExpression.column("id").isIn(ids)))
        }
        let a = try dialect.render(query("Ann", [1, 2]))
        #expect(dialect.cachedShapeCount == 1)
        let b = try dialect.render(query("Bob", [3, 4]))
        #expect(dialect.cachedShapeCount == 1)  // a hit: no new shape
        #expect(a.sql == b.sql)
        #expect(b.sql == #"SELECT * FROM "users" WHERE "name" LIKE $1 ESCAPE $2 AND "id" IN ($3, $4)"#)
        #expect(b.bindings == [.text("Bob%"), .text("\\"), .integer(3), .integer(4)])
        // A different shape (three ids) renders anew.
        let c = try dialect.render(query("Cy", [5, 6, 7]))
        #expect(dialect.cachedShapeCount == 2)
        #expect(c.sql.hasSuffix(#"IN ($3, $4, $5)"#))
    }

    @Test func differentIdentifiersOrKeywordsAreDifferentShapes() throws {
        let dialect = SQLDialect.postgresLike(capacity: 10)
        let a = try dialect.render(.select(SQLSelect(from: "a").where(SQLExpression.column("x").equals(1))))
        let b = try dialect.render(.select(SQLSelect(from: "b").where(SQLExpression.column("x").equals(1))))
        let c = try dialect.render(.select(SQLSelect(from: "a").where(SQLExpression.column("x").notEquals(1))))
        let d = try dialect.render(.select(SQLSelect(from: "a").where(.raw("x = ?", [1]))))
        let e = try dialect.render(.select(SQLSelect(from: "a").where(.raw("y = ?", [1]))))
        #expect(Set([a.sql, b.sql, c.sql, d.sql, e.sql]).count == 5)
        #expect(dialect.cachedShapeCount == 5)
    }

    @Test func fragmentsSharingAShapeStillValidateTheirCount() throws {
        let dialect = SQLDialect.postgresLike(capacity: 10)
        _ = try dialect.render(.raw(SQLFragment("a = ?", [1])))
        expectMisuse("but 2 value(s)") { _ = try dialect.render(.raw(SQLFragment("a = ?", [1, 2]))) }
        #expect(try dialect.render(.raw(SQLFragment("a = ?", [9]))).bindings == [.integer(9)])
    }

    @Test func limitsArePartOfTheShape() throws {
        let dialect = SQLDialect.postgresLike(capacity: 10)
        let two = try dialect.render(.select(SQLSelect(from: "t").limit(2, offset: 5)))
        let three = try dialect.render(.select(SQLSelect(from: "t").limit(3, offset: 6)))
        #expect(two.sql == #"SELECT * FROM "t" LIMIT 2 OFFSET $1"#)
        #expect(three.sql == #"SELECT * FROM "t" LIMIT 3 OFFSET $1"#)
        #expect(three.bindings == [.integer(6)])
        #expect(dialect.cachedShapeCount == 2)
        // Another offset is the same shape.
        #expect(try dialect.render(.select(SQLSelect(from: "t").limit(3, offset: 9))).sql == three.sql)
        #expect(dialect.cachedShapeCount == 2)
        #expect(try dialect.render(.select(SQLSelect(from: "t").limit(-1))).sql == #"SELECT * FROM "t" LIMIT -1"#)
    }

    @Test func columnListsRenderTheirNamesAndAreToldApartByThem() throws {
        let dialect = SQLDialect.postgresLike(capacity: 10)
        func select(_ list: SQLColumnList) -> SQLStatement {
            .select(SQLSelect(from: "t").columns(.columns(list)).where(SQLExpression.column("a").equals(1)))
        }
        let ab = try dialect.render(select(SQLColumnList(table: "t", ["a", "b"])))
        #expect(ab.sql == #"SELECT "t"."a", "t"."b" FROM "t" WHERE "a" = $1"#)
        #expect(ab.bindings == [.integer(1)])
        // Same count, other names; other table; bare names: each its own text.
        #expect(try dialect.render(select(SQLColumnList(table: "t", ["a", "c"]))).sql == #"SELECT "t"."a", "t"."c" FROM "t" WHERE "a" = $1"#)
        #expect(try dialect.render(select(SQLColumnList(table: "u", ["a", "b"]))).sql == #"SELECT "u"."a", "u"."b" FROM "t" WHERE "a" = $1"#)
        #expect(try dialect.render(select(SQLColumnList(table: nil, ["a", "b"]))).sql == #"SELECT "a", "b" FROM "t" WHERE "a" = $1"#)
        #expect(dialect.cachedShapeCount == 4)
        // An equal list made again is the same shape.
        #expect(try dialect.render(select(SQLColumnList(table: "t", ["a", "b"]))).sql == ab.sql)
        #expect(dialect.cachedShapeCount == 4)
        // Names are quoted and checked like any identifier.
        #expect(try dialect.render(select(SQLColumnList(table: "t", [#"we"ird"#]))).sql.hasPrefix(#"SELECT "t"."we""ird" FROM"#))
        expectMisuse("is empty") { _ = try dialect.render(select(SQLColumnList(table: "t", []))) }
        expectMisuse("is empty") { _ = try dialect.render(select(SQLColumnList(table: "t", ["a", ""]))) }
        // Twice: a failed rendering caches nothing.
        expectMisuse("is empty") { _ = try dialect.render(select(SQLColumnList(table: "t", []))) }
    }

    @Test func plainSelectListsAreHashedWhenSetAndToldApartByEveryName() throws {
        let dialect = SQLDialect.postgresLike(capacity: 20)
        let base = SQLSelect(from: "t").columns(.column("a"), .expression(.column("t", "b"), alias: "x"), .all(table: "t"))
        #expect(base.columnsDigest != nil)
        func render(_ select: SQLSelect) throws -> RenderedSQL {
            try dialect.render(.select(select.where(SQLExpression.column("a").equals(1))))
        }
        let first = try render(base)
        #expect(first.sql == #"SELECT "a", "t"."b" AS "x", "t".* FROM "t" WHERE "a" = $1"#)
        #expect(first.bindings == [.integer(1)])
        #expect(try render(base).sql == first.sql)
        #expect(dialect.cachedShapeCount == 1)
        // Another name, table, alias, star's table or order: each its own text.
        let variants: [(SQLSelect, String)] = [
            (base.columns(.column("z"), .expression(.column("t", "b"), alias: "x"), .all(table: "t")),
             #"SELECT "z", "t"."b" AS "x", "t".* FROM "t" WHERE "a" = $1"#),
            (base.columns(.column("a"), .expression(.column("u", "b"), alias: "x"), .all(table: "t")),
             #"SELECT "a", "u"."b" AS "x", "t".* FROM "t" WHERE "a" = $1"#),
            (base.columns(.column("a"), .expression(.column("t", "b"), alias: "y"), .all(table: "t")),
             #"SELECT "a", "t"."b" AS "y", "t".* FROM "t" WHERE "a" = $1"#),
            (base.columns(.column("a"), .expression(.column("t", "b"), alias: nil), .all(table: "t")),
             #"SELECT "a", "t"."b", "t".* FROM "t" WHERE "a" = $1"#),
            (base.columns(.column("a"), .expression(.column("t", "b"), alias: "x"), .all(table: nil)),
             #"SELECT "a", "t"."b" AS "x", * FROM "t" WHERE "a" = $1"#),
            (base.columns(.expression(.column("t", "b"), alias: "x"), .column("a"), .all(table: "t")),
             #"SELECT "t"."b" AS "x", "a", "t".* FROM "t" WHERE "a" = $1"#),
            // The same names as one SQLColumnList are another shape with the same text.
            (base.columns(.columns(SQLColumnList(table: nil, ["a", "b"]))), #"SELECT "a", "b" FROM "t" WHERE "a" = $1"#),
            (base.columns(.column("a"), .column("b")), #"SELECT "a", "b" FROM "t" WHERE "a" = $1"#),
        ]
        for (select, sql) in variants {
            #expect(try render(select).sql == sql)
        }
        #expect(dialect.cachedShapeCount == 1 + variants.count)

        // Changed in place, the list is hashed again.
        var changed = base
        changed.columns.append(.column("c"))
        #expect(try render(changed).sql == #"SELECT "a", "t"."b" AS "x", "t".*, "c" FROM "t" WHERE "a" = $1"#)
        changed.columns[0] = .column("d")
        #expect(try render(changed).sql == #"SELECT "d", "t"."b" AS "x", "t".*, "c" FROM "t" WHERE "a" = $1"#)

        // Any other item (here one that binds a value) leaves the list to the walk.
        var bound = base
        bound.columns.insert(.expression(.bind(.integer(7)), alias: "seven"), at: 1)
        #expect(bound.columnsDigest == nil)
        let withValue = try render(bound)
        #expect(withValue.sql == #"SELECT "a", $1 AS "seven", "t"."b" AS "x", "t".* FROM "t" WHERE "a" = $2"#)
        #expect(withValue.bindings == [.integer(7), .integer(1)])
        bound.columns.remove(at: 1)
        #expect(bound.columnsDigest == base.columnsDigest)
        #expect(try render(bound).sql == first.sql)
    }

    @Test func canonicallyEquivalentNamesAreDifferentShapes() throws {
        // Equal as Swift strings, different identifiers to a database.
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        let dialect = SQLDialect.postgresLike(capacity: 10)
        for name in [composed, decomposed] {
            let expected: [UInt8] = Array(#"SELECT ""#.utf8) + Array(name.utf8) + Array(#"" FROM "t""#.utf8)
            let plain = try dialect.render(.select(SQLSelect(from: "t").columns(.column(name))))
            let listed = try dialect.render(.select(SQLSelect(from: "t").columns(.columns(SQLColumnList(table: nil, [name])))))
            #expect(Array(plain.sql.utf8) == expected)
            #expect(Array(listed.sql.utf8) == expected)
        }
        #expect(dialect.cachedShapeCount == 4)
    }

    @Test func cacheIsBounded() throws {
        let dialect = SQLDialect.postgresLike(capacity: 3)
        for i in 0..<10 { _ = try dialect.render(.select(SQLSelect(from: "t\(i)"))) }
        #expect(dialect.cachedShapeCount == 3)
        #expect(try dialect.render(.select(SQLSelect(from: "t0"))).sql == #"SELECT * FROM "t0""#)
    }

    @Test func concurrentRenderingAgreesWithUncached() async throws {
        let dialect = SQLDialect.postgresLike(capacity: 50)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<200 {
                        let s = SQLStatement.select(SQLSelect(from: "t\(i % 20)").where(SQLExpression.column("v").equals(task * 1000 + i)))
                        let cached = try dialect.render(s)
                        let fresh = try dialect.renderUncached(s)
                        guard cached == fresh else { throw DatabaseError.misuse("cache disagreed: \(cached) vs \(fresh)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(dialect.cachedShapeCount == 20)
    }
}

extension SQLDialect {
    /// A PostgreSQL dialect with its own cache of the given capacity.
    static func postgresLike(capacity: Int) -> SQLDialect {
        let p = SQLDialect.postgres
        return SQLDialect(
            name: p.name, placeholderStyle: p.placeholderStyle, allowsBacktickAndBracketIdentifiers: p.allowsBacktickAndBracketIdentifiers,
            allowsDollarQuotedStrings: p.allowsDollarQuotedStrings, booleanLiterals: p.booleanLiterals,
            supportsReturning: p.supportsReturning, supportsUpsert: p.supportsUpsert, upsertSelectNeedsWhere: p.upsertSelectNeedsWhere,
            caseInsensitiveLike: p.caseInsensitiveLike, supportsIsDistinctFrom: p.supportsIsDistinctFrom,
            offsetRequiresLimit: p.offsetRequiresLimit, autoIncrementPrimaryKey: p.autoIncrementPrimaryKey,
            primaryKeyNeedsExplicitNotNull: p.primaryKeyNeedsExplicitNotNull, binaryLiteralStyle: p.binaryLiteralStyle,
            inlineDateSuffix: p.inlineDateSuffix, typeNames: p.typeNames, beginStatements: p.beginStatements,
            supportsServerCursors: p.supportsServerCursors, supportsCopy: p.supportsCopy, cacheCapacity: capacity)
    }
}
