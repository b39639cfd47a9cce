import Foundation
import Testing
import Unity
import UnityPersistable

private typealias Hat = PersistableFixtures.Hat
private typealias Store = PersistableFixtures.Store
private typealias Order = PersistableFixtures.Order
private typealias Customer = PersistableFixtures.Customer

@Suite("Persistable queries")
struct PersistableQueryTests {
    /// Hats 1…6: red 10, red 12, blue 12, red 14, green 8, red 16 (store 1 or 2).
    static func seedHats() throws {
        for (color, brim, store) in [("red", 10, 1), ("red", 12, 1), ("blue", 12, 2), ("red", 14, 2), ("green", 8, 1), ("red", 16, 2)] {
            _ = try Hat(color: color, brimSize: brim, storeId: store).saveOrThrow()
        }
    }

    @Test
    func toSqlQuotesColumnsAndBindsValues() throws {
        let query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", ["10"])
            .order("brim_size", .orderedAscending)
        let sqlite = try query.toSql(dialect: .sqlite)
        #expect(sqlite.sql == #"SELECT * FROM "hats" WHERE "hats"."color" = ? AND (brim_size > ?) ORDER BY "hats"."brim_size" ASC"#)
        #expect(sqlite.bindings == [.text("red"), .text("10")])
        // toSql() writes `?` on every backend (the core's raw calls take `?`); the statement
        // rendered by the dialect itself has the backend's own placeholders.
        let postgres = try query.reverse().limit(1).toSql(dialect: .postgres)
        #expect(postgres.sql == #"SELECT * FROM "hats" WHERE "hats"."color" = ? AND (brim_size > ?) ORDER BY "hats"."brim_size" DESC LIMIT 1"#)
        #expect(postgres.bindings == [.text("red"), .text("10")])
        let exact = try SQLDialect.postgres.render(.select(query.reverse().limit(1).statement))
        #expect(exact.sql == #"SELECT * FROM "hats" WHERE "hats"."color" = $1 AND (brim_size > $2) ORDER BY "hats"."brim_size" DESC LIMIT 1"#)
        // A `?` inside a raw fragment's quoted text is not a placeholder, and stays as written.
        let quoted = try Query<Hat>().filter("color <> '?' AND brim_size > ?", [3]).toSql(dialect: .postgres)
        #expect(quoted.sql == #"SELECT * FROM "hats" WHERE color <> '?' AND brim_size > ?"#)
        #expect(quoted.bindings == [.integer(3)])
        // The builders leave the original alone.
        #expect(try query.toSql(dialect: .sqlite) == sqlite)
        // A join selects the table's own columns.
        let joined = try Query<Hat>().join(Store.self, fromColumn: "id", toColumn: "store_id").toSql(dialect: .sqlite)
        #expect(joined.sql == #"SELECT "hats".* FROM "hats" INNER JOIN "stores" ON "stores"."id" = "hats"."store_id""#)
        // Dictionary filters: nil is IS NULL; a [UInt8] value is one blob, never IN.
        let dict = try Query<Order>().filter(["note": nil, "hat_id": [1, 2]]).toSql(dialect: .postgres)
        #expect(dict.sql == #"SELECT * FROM "orders" WHERE "orders"."hat_id" = ? AND "orders"."note" IS NULL"#)
        #expect(dict.bindings == [.blob(Data([1, 2]))])
    }

    @Test(arguments: Backend.allCases)
    func toSqlRunsThroughTheCoreRawCalls(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            try Self.seedHats()
            let query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ? AND note_free <> '?'", [10])
                .order("brim_size", .orderedDescending).limit(2)
            // The fragment names a column the table lacks: the text must still reach the
            // database as written (an undefined-column error, not a placeholder-count misuse).
            let broken = try query.toSql()
            #expect(throws: DatabaseError.self) { try db.fetchAll(sql: broken.sql, broken.bindings) }
            do {
                _ = try db.fetchAll(sql: broken.sql, broken.bindings)
            } catch let error as DatabaseError {
                guard case .undefinedColumn = error else { Issue.record("expected undefinedColumn, got \(error)"); return }
            }
            let runnable = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", [10])
                .order("brim_size", .orderedDescending).limit(2)
            let sql = try runnable.toSql()
            #expect(sql.bindings == [.text("red"), .integer(10)])
            let rows = try db.fetchAll(sql: sql.sql, sql.bindings)
            #expect(try rows.map { try $0.decode(Int.self, column: "brim_size") } == [16, 14])
            #expect(try db.fetchOne(sql: sql.sql, sql.bindings)?.decode(Int.self, column: "id") == 6)
            #expect(try db.read { try $0.fetchAll(sql: sql.sql, sql.bindings) }.count == 2)
            // A count built the same way, and a DELETE made from a query's conditions.
            let ids = try Query<Hat>().select("hats.id").filter(["store_id": 1]).order("id", .orderedAscending).toSql(db)
            #expect(try db.fetchAll(sql: ids.sql, ids.bindings).map { try $0.decode(Int.self, at: 0) } == [1, 2, 5])
            let deleted = try db.execute(sql: "DELETE FROM hats WHERE id IN (\(ids.sql))", ids.bindings)
            #expect(deleted == 3)
            #expect(Query<Hat>().order("id", .orderedAscending).all().compactMap(\.id) == [3, 4, 6])
        }
    }

    @Test(arguments: Backend.allCases)
    func filtersOrdersAndLimits(_ backend: Backend) throws {
        let (configuration, logged) = PersistableFixtures.capturingConfiguration(echo: true)
        try PersistableFixtures.withWorld(backend, configuration: configuration) { db in
            try Self.seedHats()
            var query = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", ["10"])
            query = query.order("brim_size", .orderedAscending)
            #expect(query.all().map(\.brimSize) == [12, 14, 16])
            #expect(query.first()?.brimSize == 12)
            #expect(query.last()?.brimSize == 16)
            // first() and last() put a LIMIT in the SQL.
            let selects = logged.value.filter { $0.hasPrefix("SELECT") }.suffix(2)
            #expect(selects.count == 2 && selects.allSatisfy { $0.contains("LIMIT") })
            #expect(selects.last?.contains("DESC") == true)
            #expect(query.reverse().all().map(\.brimSize) == [16, 14, 12])
            #expect(query.limit(2).all().map(\.brimSize) == [12, 14])
            #expect(query.limit(2).limit(5).all().count == 2)
            #expect(query.offset(1).all().map(\.brimSize) == [14, 16])
            #expect(query.offset(1).limit(1).all().map(\.brimSize) == [14])
            // last() of a limited or offset query is the last of its records.
            #expect(query.limit(2).last()?.brimSize == 14)
            #expect(query.offset(1).last()?.brimSize == 16)
            #expect(query.offset(3).last() == nil)
            // Chained orders apply in the order given.
            let byColorThenBrim = Query<Hat>().order("color", .orderedAscending).order("brim_size", .orderedDescending)
            #expect(byColorThenBrim.all(db).map { "\($0.color)\($0.brimSize)" } == ["blue12", "green8", "red16", "red14", "red12", "red10"])
            #expect(byColorThenBrim.reverse().all().map { "\($0.color)\($0.brimSize)" } == ["red10", "red12", "red14", "red16", "green8", "blue12"])
            // No order: reverse() orders by id descending; last() is the highest id.
            #expect(Query<Hat>().reverse().all().compactMap(\.id) == [6, 5, 4, 3, 2, 1])
            #expect(Query<Hat>().last()?.id == 6)
            #expect(Query<Hat>().first()?.id == 1)
            // IN by filter(_:inList:); nil means IS NULL.
            #expect(Query<Hat>().filter("brim_size", inList: [8, 16]).order("id", .orderedAscending).all().compactMap(\.id) == [5, 6])
            // An array literal is a blob value ([UInt8]), compared for equality as everywhere
            // in Unity, never read as IN: it matches no brim size.
            #expect(Query<Hat>().filter(["brim_size": [8, 16]]).all().isEmpty)
            #expect(Query<Hat>().filter("color", inList: ["blue", "green"]).count() == 2)
            #expect(Query<Hat>().filter("color", inList: [String]()).count() == 0)
            #expect(Query<Hat>().filter(["created_at": nil]).count() == 0)
            #expect(Query<Hat>().filter(["color": "red", "store_id": 2]).count() == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func findCountEmptyAndPages(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            #expect(Query<Hat>().isEmpty)
            #expect(Query<Hat>().count() == 0)
            #expect(PaginatedList(query: Query<Hat>(), page: 1, pageSize: 4).numberOfPages == 1)
            try Self.seedHats()
            #expect(!Query<Hat>().isEmpty)
            #expect(Query<Hat>().filter(["color": "purple"]).isEmpty(db))
            // Tailor's spelling: isEmpty() on the default database.
            #expect(Query<Hat>().filter(["color": "purple"]).isEmpty())
            #expect(!Query<Hat>().filter(["color": "blue"]).isEmpty())
            #expect(try Query<Hat>().filter(["color": "purple"]).isEmptyOrThrow())
            #expect(try !Query<Hat>().filter(["brim_size": 16]).isEmptyOrThrow(db))
            #expect(Query<Hat>().find(3)?.color == "blue")
            #expect(Query<Hat>().filter(["color": "red"]).find(3) == nil)
            #expect(Query<Hat>().find(99) == nil)
            #expect(Query<Hat>().count() == 6)
            #expect(Query<Hat>().filter(["color": "red"]).count() == 4)
            // count() counts what the query would fetch: limit and offset included.
            #expect(Query<Hat>().limit(5).count() == 5)
            #expect(Query<Hat>().order("brim_size", .orderedAscending).offset(4).count() == 2)
            #expect(Query<Hat>().offset(4).limit(10).count() == 2)
            let pages = Query<Hat>().order("id", .orderedAscending).paginate(page: 2, pageSize: 4)
            #expect(pages.numberOfPages == 2)
            #expect(pages.all().compactMap(\.id) == [5, 6])
            #expect(PaginatedList(query: Query<Hat>().order("id", .orderedAscending), page: 1, pageSize: 4).all().compactMap(\.id) == [1, 2, 3, 4])
            #expect(PaginatedList(query: Query<Hat>(), pageSize: 3).numberOfPages(db) == 2)
            #expect(PaginatedList(query: Query<Hat>(), pageSize: 5).numberOfPages == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func selectAndJoins(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            let main = try Store(name: "Main St").saveOrThrow()
            let dock = try Store(name: "Dockside").saveOrThrow()
            _ = try Hat(color: "red", brimSize: 10, storeId: try #require(main.id)).saveOrThrow()
            _ = try Hat(color: "blue", brimSize: 12, storeId: try #require(dock.id)).saveOrThrow()
            let inDock = Query<Hat>().join(Store.self, fromColumn: "id", toColumn: "store_id")
                .filter("stores.name = ?", ["Dockside"])
            #expect(inDock.all().map(\.color) == ["blue"])
            let raw = Query<Hat>().join("INNER JOIN stores ON stores.id = hats.store_id AND stores.name <> ?", ["Dockside"])
            #expect(raw.all().map(\.color) == ["red"])
            #expect(raw.count() == 1)
            // A raw select list: the hats come back with only some columns, so building the
            // record fails and the rows are skipped; the rows themselves are there.
            let narrow = Query<Hat>().select("hats.id, hats.color").order("id", .orderedAscending)
            #expect(try narrow.rows().map { $0.columnNames.count } == [2, 2])
            #expect(try narrow.rows().map { $0["color"] } == [.text("red"), .text("blue")])
            #expect(narrow.all().isEmpty)
            #expect(narrow.count() == 2)
            #expect(Query<Hat>().select("hats.*, ? AS tag", ["x"]).all(db).count == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func badRowsAreLoggedAndSkippedOrThrown(_ backend: Backend) throws {
        let (configuration, logged) = PersistableFixtures.capturingConfiguration()
        try PersistableFixtures.withWorld(backend, configuration: configuration) { db in
            try Self.seedHats()
            // A row whose color is NULL cannot build a Hat (color is not optional).
            _ = try db.write { try $0.execute(sql: "ALTER TABLE hats ADD COLUMN extra TEXT") }
            _ = try db.write { try $0.execute(sql: "CREATE TABLE loose_hats AS SELECT * FROM hats") }
            _ = try db.write { try $0.execute(sql: "UPDATE loose_hats SET color = NULL WHERE id = 2") }
            struct LooseHat: Persistable {
                var id: Int?
                var color: String
                static var tableName: String { "loose_hats" }
                init(databaseRow: DatabaseRow) throws {
                    id = try databaseRow.read("id")
                    color = try databaseRow.read("color")
                }
                func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["color": color] }
            }
            let all = Query<LooseHat>().order("id", .orderedAscending).all()
            #expect(all.compactMap(\.id) == [1, 3, 4, 5, 6])
            #expect(logged.value.contains { $0.contains("skipped a loose_hats row") && $0.contains("color") })
            #expect(throws: PersistableError.fieldType(name: "color", actualType: "NULL", desiredType: "String")) {
                try Query<LooseHat>().allOrThrow()
            }
            var seen: [Int] = []
            try Query<LooseHat>().order("id", .orderedDescending).forEach { seen.append($0.id ?? 0) }
            #expect(seen == [6, 5, 4, 3, 1])
        }
    }

    @Test(arguments: Backend.allCases)
    func columnNamesAreQuotedNotExecuted(_ backend: Backend) throws {
        let (configuration, logged) = PersistableFixtures.capturingConfiguration()
        try PersistableFixtures.withWorld(backend, configuration: configuration) { db in
            try Self.seedHats()
            let evil = "color; DROP TABLE hats"
            #expect(Query<Hat>().order(evil, .orderedAscending).all().isEmpty)
            #expect(logged.value.contains { $0.contains("all() on hats failed") })
            for query in [Query<Hat>().order(evil, .orderedAscending), Query<Hat>().filter([evil: "red"]),
                          Query<Hat>().filter(evil, inList: ["red"]),
                          Query<Hat>().join(Store.self, fromColumn: evil, toColumn: "store_id")] {
                do {
                    _ = try query.allOrThrow()
                    Issue.record("expected an undefined column error")
                } catch let error as DatabaseError {
                    guard case .undefinedColumn = error else {
                        Issue.record("expected an undefined column error, got \(error)")
                        continue
                    }
                }
            }
            // The table is still there, with every row.
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM hats") } == 6)
            // A raw fragment's values are bound, never pasted.
            #expect(Query<Hat>().filter("color = ?", ["red'; DROP TABLE hats; --"]).all().isEmpty)
            #expect(Query<Hat>().count() == 6)
        }
    }

    @Test(arguments: Backend.allCases)
    func typeErasedQueries(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { db in
            try Self.seedHats()
            _ = try Store(name: "Main St").saveOrThrow()
            _ = try Store(name: "Dockside").saveOrThrow()
            // The record type as a value: the same SQL as the typed query.
            let recordType: any Persistable.Type = Hat.self
            let generic = GenericQuery(recordType: recordType).filter(["color": "red"]).filter("brim_size > ?", [10])
                .order("brim_size", .orderedDescending)
            let typed = Query<Hat>().filter(["color": "red"]).filter("brim_size > ?", [10]).order("brim_size", .orderedDescending)
            #expect(generic.tableName == "hats")
            #expect(ObjectIdentifier(generic.recordType) == ObjectIdentifier(Hat.self))
            #expect(try generic.toSql(dialect: .postgres) == typed.toSql(dialect: .postgres))
            #expect(generic.statement == typed.statement)
            let records = generic.allRecords()
            #expect(records.map { ($0 as? Hat)?.brimSize } == [16, 14, 12])
            #expect(try generic.allRecordsOrThrow(db).compactMap(\.id) == [6, 4, 2])
            #expect(generic.count() == 3)
            #expect(try generic.limit(2).countOrThrow(db) == 2)
            #expect(generic.reverse().limit(1).allRecords().compactMap(\.id) == [2])
            #expect(generic.offset(2).allRecords().compactMap(\.id) == [2])
            #expect(!generic.isEmpty())
            #expect(GenericQuery(recordType: Hat.self).filter(["color": "purple"]).isEmpty())
            #expect(try GenericQuery(recordType: Hat.self).filter("color", inList: ["blue", "green"]).isEmptyOrThrow(db) == false)
            #expect(GenericQuery(recordType: Hat.self).filter(SQLExpression.column("hats", "brim_size").equals(.bind(.integer(8))))
                .allRecords().compactMap(\.id) == [5])
            let inDock = GenericQuery(recordType: Hat.self).join(Store.self, fromColumn: "id", toColumn: "store_id")
                .filter("stores.name = ?", ["Dockside"]).order("id", .orderedAscending)
            #expect(inDock.allRecords().compactMap(\.id) == [3, 4, 6])
            #expect(GenericQuery(recordType: Hat.self).select("hats.id").count() == 6)
            // Queries of different record types side by side; Query conforms too.
            let queries: [any QueryType] = [Query<Hat>().filter(["store_id": 1]), GenericQuery(recordType: Store.self),
                                            Query<Order>()]
            #expect(queries.map { $0.count() } == [3, 2, 0])
            #expect(queries.map(\.tableName) == ["hats", "stores", "orders"])
            #expect(queries[1].order("name", .orderedAscending).allRecords().compactMap { ($0 as? Store)?.name } == ["Dockside", "Main St"])
            #expect(Query<Hat>().filter(["brim_size": 12]).order("id", .orderedAscending).allRecords().compactMap(\.id) == [2, 3])
            // Builders leave the original alone; equal queries compare equal.
            #expect(GenericQuery(recordType: Hat.self).limit(1) == GenericQuery(recordType: Hat.self).limit(1))
            #expect(GenericQuery(recordType: Hat.self) != GenericQuery(recordType: Store.self))
            #expect(generic.count() == 3)
            // A failure is logged and answers empty; the throwing form throws it.
            let missing = GenericQuery(recordType: Hat.self).order("no_such_column", .orderedAscending)
            #expect(missing.allRecords().isEmpty)
            #expect(throws: DatabaseError.self) { try missing.allRecordsOrThrow(db) }
        }
    }

    @Test
    func noDefaultDatabaseIsAClearError() throws {
        // Outside any scope (and with nothing pushed by this test), a throwing call says what to do.
        guard DefaultDatabase.current == nil else { return }
        #expect(throws: DatabaseError.self) { try Query<Hat>().allOrThrow() }
        #expect(Query<Hat>().all().isEmpty)
    }
}
