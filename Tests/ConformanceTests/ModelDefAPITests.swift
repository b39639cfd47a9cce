import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// The rest of sModel 1.0.2's public API, on both backends.
extension ModelDefTests {
    @Test(arguments: Backend.allCases)
    func sModelQueryAndDeleteCalls(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            for (tid, name) in [("1", "pear"), ("2", "apple"), ("3", "fig"), ("4", "apricot"), ("5", "banana")] {
                try Thing(tid: tid, name: name).save(in: db)
            }
            let query = "SELECT * FROM \"Thing\" WHERE tid > ? AND name <> ? ORDER BY tid"
            #expect(try Thing.instances(query, "2", "fig", in: db).map(\.name) == ["apricot", "banana"])
            #expect(try Thing.instancesOrderedBy("name DESC", in: db).map(\.tid) == ["1", "3", "5", "4", "2"])
            #expect(try Thing.numberOfInstancesWhere(nil, in: db) == 5)
            #expect(try Thing.numberOfInstancesWhere("name LIKE ?", "ap%", in: db) == 2)

            let pear = Thing(tid: "1", name: "stale copy")
            #expect(try pear.readFromDB(in: db) == Thing(tid: "1", name: "pear", existsInDatabase: true))
            #expect(try Thing.deleteWhere("name LIKE ?", "ap%", in: db) == 2)
            #expect(try Thing.deleteWhere("tid = ?", "nope", in: db) == 0)
            #expect(try Thing(tid: "2").readFromDB(in: db) == nil)
            #expect(try Thing.deleteAllInstances(in: db) == 3)
            #expect(try Thing.count(in: db) == 0)

            let first = Thing.generateUUID()
            #expect(UUID(uuidString: first) != nil)
            #expect(first != Thing.generateUUID())
        }
    }

    @Test(arguments: Backend.allCases)
    func rawQueriesAndResultsOfABatch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Thing(tid: "a", name: "A").save(in: db)
            #expect(try DBManager.executeUpdateQuery("UPDATE \"Thing\" SET name = ? WHERE tid = ?", "A!", "a", in: db) == 1)
            try Thing(tid: "b", name: nil).save(in: db)
            let dictionaries = try DBManager.resultDictionariesFromQuery(
                "SELECT tid, name FROM \"Thing\" WHERE tid IN (?, ?) ORDER BY tid", "a", "b", in: db)
            #expect(dictionaries == [["tid": .text("a"), "name": .text("A!")], ["tid": .text("b"), "name": .null]])

            // One entry per statement: the rows of each query, nil for the others. A query
            // sees what the batch wrote before it.
            var seen: [[Row]?] = []
            try DBManager.executeStatements([
                Thing(tid: "c", name: "C").createSaveStatement(),
                ModelStatement(sql: "SELECT tid FROM \"Thing\" ORDER BY tid"),
                Thing(tid: "a").createDeleteStatement(),
                ModelStatement(.select(SQLSelect(from: "Thing").columns(.column("name")).where(.binary(.column("tid"), .equal, .bind(.text("c")))))),
                ModelStatement(sql: "UPDATE \"Thing\" SET name = ? WHERE tid = ?", "C!", "c"),
                ModelStatement(sql: "SELECT tid FROM \"Thing\" WHERE tid = ?", "zzz"),
            ], in: db) { results in seen = results }
            #expect(seen.count == 6)
            #expect(seen[0] == nil && seen[2] == nil && seen[4] == nil)
            #expect(seen[1]?.map { $0[0] } == [.text("a"), .text("b"), .text("c")])
            #expect(seen[3]?.map { $0[0] } == [.text("C")])
            #expect(seen[5]?.isEmpty == true)
            #expect(try Thing.allInstances(orderedBy: [.ascending("tid")], in: db).map(\.name) == [nil, "C!"])

            // One statement; a throw from the handler rolls the batch back.
            var rows: [Row]?
            try DBManager.executeStatement(ModelStatement(sql: "SELECT COUNT(*) FROM \"Thing\""), in: db) { rows = $0 }
            #expect(rows?.first?[0] == .integer(2))
            struct Refused: Error {}
            #expect(throws: Refused.self) {
                try DBManager.executeStatements([Thing(tid: "d").createSaveStatement()], in: db) { _ in throw Refused() }
            }
            #expect(try Thing.count(in: db) == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func truncateAllTablesKeepsExcludedAndMigrationTables(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Thing(tid: "a").save(in: db)
            try Account(id: 1, email: "a@example.com").save(in: db)
            try Membership(groupId: 1, userId: 1, role: "r").save(in: db)
            try DBManager.truncateAllTables(excludes: ["Account"], in: db)
            #expect(try Thing.count(in: db) == 0)
            #expect(try Membership.count(in: db) == 0)
            #expect(try Account.count(in: db) == 1)
            let applied = try db.fetchOne(sql: "SELECT COUNT(*) FROM \(Migrator.trackingTable)")
            #expect(applied?[0] == .integer(3))
        }
    }

    @Test(arguments: Backend.allCases)
    func pushPopAndCloseTheStackOfDatabases(_ backend: Backend) throws {
        let dir = try ModelDefFixtures.writeSchemaDirectory(backend)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let paths = try DBManager.getDBDefFiles(directory: dir)
        var cleanUp: [() -> Void] = []
        defer { for step in cleanUp.reversed() { step() } }
        defer { DBManager.close() }
        #expect(DBManager.defaultDatabase == nil)
        #expect(throws: DBManagerError.nothingToPushOnto) { try DBManager.push(nil, dbDefFilePaths: paths) }

        let pushedFile = FileManager.default.temporaryDirectory.appendingPathComponent("unity-push-\(UUID().uuidString).sqlite").path
        func pushSecond() throws {
            switch backend {
            case .sqlite:
                try DBManager.push(pushedFile, dbDefFilePaths: paths)
            case .postgres:
                let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
                try DBManager.push(postgresURL: url, dbDefFilePaths: paths, connections: 2, searchPath: try schema("second"))
            }
        }
        func schema(_ name: String) throws -> String {
            let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
            let schema = "md_\(name)_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
            let admin = try Database(driver: PostgresDriver(url, connections: 1))
            _ = try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
            cleanUp.append {
                _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(schema)\" CASCADE") }
                admin.close()
            }
            return schema
        }

        switch backend {
        case .sqlite:
            try DBManager.open(nil, dbDefFilePaths: paths)
        case .postgres:
            let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
            try DBManager.open(postgresURL: url, dbDefFilePaths: paths, connections: 2, searchPath: try schema("first"))
        }
        let first = try #require(DBManager.defaultDatabase)
        try Thing(tid: "in first").save()
        #expect(throws: DBManagerError.cannotPopLastDatabase) { try DBManager.pop(deleteDB: false) }

        try pushSecond()
        #expect(DBManager.defaultDatabase !== first)
        #expect(try Thing.count() == 0)          // the pushed database is the default
        try Thing(tid: "in second").save()
        #expect(try Thing.allInstances().map(\.tid) == ["in second"])
        if backend == .sqlite { #expect(FileManager.default.fileExists(atPath: pushedFile)) }

        try DBManager.pop(deleteDB: true)
        #expect(DBManager.defaultDatabase === first)
        #expect(try Thing.allInstances().map(\.tid) == ["in first"])
        if backend == .sqlite { #expect(!FileManager.default.fileExists(atPath: pushedFile)) }
        #expect(throws: DBManagerError.cannotPopLastDatabase) { try DBManager.pop(deleteDB: true) }
        #expect(DBManager.defaultDatabase === first)

        // close() closes the whole stack.
        try pushSecond()
        DBManager.close()
        #expect(DBManager.defaultDatabase == nil)
        #expect(DefaultDatabase.depth == 0)
        #expect(throws: DatabaseError.self) { try Thing.count() }
        if backend == .sqlite { try? FileManager.default.removeItem(atPath: pushedFile) }
    }

    @Test
    func getDBPathIsInTheDocumentsDirectory() throws {
        let path = try #require(DBManager.getDBPath("app"))
        #expect(path.hasSuffix("/app.sqlite3"))
        #expect(URL(fileURLWithPath: path).deletingLastPathComponent().lastPathComponent == "Documents")
    }
}
