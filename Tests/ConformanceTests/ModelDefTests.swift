import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// The models of the SQL-first flavor's tests, in a namespace of their own so that they never
/// clash with other flavors' fixtures.
enum ModelDefFixtures {
    /// The seed's example, as written there (modulo `[any CodingKey]` and a default for
    /// `existsInDatabase`).
    struct Thing: ModelDef, Equatable {
        var tid: String
        var name: String?

        typealias ModelType = Thing
        static let tableName = "Thing"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
        var secondaryKeys: [any CodingKey] { [] }
        static let syncable = false
    }

    /// A composite primary key.
    struct Membership: ModelDef, Equatable {
        var groupId: Int
        var userId: Int
        var role: String

        static let tableName = "Membership"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.groupId, CodingKeys.userId] }
    }

    /// A secondary (unique) key next to the primary key.
    struct Account: ModelDef, Equatable {
        var id: Int
        var email: String
        var name: String?

        static let tableName = "Account"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.email] }
    }

    /// The same shape, but syncable: the incoming copy always wins.
    struct SyncedAccount: ModelDef, Equatable {
        var id: Int
        var email: String
        var name: String?

        static let tableName = "SyncedAccount"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.email] }
        static let syncable = true
    }

    /// A JSON column's value.
    struct Meta: Codable, Equatable, Sendable {
        var level: Int
        var label: String
    }

    /// Every kind of value of the value mapping.
    struct Sample: ModelDef, Equatable {
        var id: String
        var at: Date
        var ref: UUID
        var amount: Decimal
        var tags: [String]
        var meta: Meta?
        var note: String?
        var flag: Bool
        var score: Double
        var bytes: Data?
        var maybeDate: Date?
        var maybeRef: UUID?

        static let tableName = "Sample"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// The schema files, in each backend's SQL, named so that they sort in order.
    static func schemaFiles(_ backend: Backend) -> [(name: String, sql: String)] {
        let integer = backend == .sqlite ? "INTEGER" : "BIGINT"
        let date = backend == .sqlite ? "TEXT" : "TIMESTAMPTZ"
        let uuid = backend == .sqlite ? "BLOB" : "UUID"
        let decimal = backend == .sqlite ? "TEXT" : "NUMERIC"
        let json = backend == .sqlite ? "TEXT" : "JSONB"
        let bool = backend == .sqlite ? "INTEGER" : "BOOLEAN"
        let double = backend == .sqlite ? "REAL" : "DOUBLE PRECISION"
        let blob = backend == .sqlite ? "BLOB" : "BYTEA"
        return [
            // The seed's file, verbatim.
            ("001_thing.sql", """
            CREATE TABLE "Thing" (
              "tid" TEXT PRIMARY KEY,
              "name" TEXT
            );
            """),
            ("002_accounts.sql", """
            CREATE TABLE "Membership" (
              "groupId" \(integer) NOT NULL,
              "userId" \(integer) NOT NULL,
              "role" TEXT NOT NULL,
              PRIMARY KEY ("groupId", "userId")
            );
            CREATE TABLE "Account" ("id" \(integer) PRIMARY KEY, "email" TEXT NOT NULL UNIQUE, "name" TEXT);
            CREATE TABLE "SyncedAccount" ("id" \(integer) PRIMARY KEY, "email" TEXT NOT NULL UNIQUE, "name" TEXT);
            """),
            ("010_sample.sql", """
            CREATE TABLE "Sample" (
              "id" TEXT PRIMARY KEY NOT NULL,
              "at" \(date) NOT NULL,
              "ref" \(uuid) NOT NULL,
              "amount" \(decimal) NOT NULL,
              "tags" \(json) NOT NULL,
              "meta" \(json),
              "note" TEXT,
              "flag" \(bool) NOT NULL,
              "score" \(double) NOT NULL,
              "bytes" \(blob),
              "maybeDate" \(date),
              "maybeRef" \(uuid)
            );
            """),
        ]
    }

    /// Writes the schema files (and a file that is not SQL) into a fresh directory; returns it.
    static func writeSchemaDirectory(_ backend: Backend) throws -> String {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("unity-modeldef-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        // Written in reverse so that the listing order is not the sorted order by luck.
        for file in schemaFiles(backend).reversed() {
            try file.sql.write(to: dir.appendingPathComponent(file.name), atomically: true, encoding: .utf8)
        }
        try "not a schema file".write(to: dir.appendingPathComponent("README.txt"), atomically: true, encoding: .utf8)
        return dir.path
    }

    /// Runs the schema files on `db` without touching the default database.
    static func migrate(_ db: Database, _ backend: Backend) throws {
        let dir = try writeSchemaDirectory(backend)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        _ = try Migrator(sqlFilePaths: DBManager.getDBDefFiles(directory: dir)).migrate(db)
    }
}

/// The SQL-first flavor (`ModelDef`, `DBManager`) on every backend.
///
/// Serialized: several cases set process-wide state (the default database,
/// `DBManager.blindlyReplaceDuplicates`), which no other case may see half-way.
@Suite(.serialized)
struct ModelDefTests {
    typealias Thing = ModelDefFixtures.Thing
    typealias Membership = ModelDefFixtures.Membership
    typealias Account = ModelDefFixtures.Account
    typealias SyncedAccount = ModelDefFixtures.SyncedAccount
    typealias Sample = ModelDefFixtures.Sample

    @Test(arguments: Backend.allCases)
    func seedExampleEndToEnd(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let dir = try ModelDefFixtures.writeSchemaDirectory(backend)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            var paths = try DBManager.getDBDefFiles(directory: dir)
            #expect(paths.map { URL(fileURLWithPath: $0).lastPathComponent } == ["001_thing.sql", "002_accounts.sql", "010_sample.sql"])
            paths.sort()

            try DBManager.open(db, dbDefFilePaths: paths)
            defer { DBManager.defaultDatabase = nil }
            #expect(DBManager.defaultDatabase === db)
            // Opening again runs nothing twice.
            try DBManager.open(db, dbDefFilePaths: paths)

            let thing = Thing(tid: "tid1", name: "thing 1")
            #expect(thing.existsInDatabase == false)
            try thing.save()
            try Thing(tid: "tid2", name: "thing 2").save()
            try Thing(tid: "tid3", name: nil).save()

            let things = try Thing.allInstances()
            #expect(things.count == 3)
            #expect(things.allSatisfy { $0.existsInDatabase })

            let found = try Thing.firstInstanceWhere("tid = ?", "tid1")
            #expect(found == Thing(tid: "tid1", name: "thing 1", existsInDatabase: true))
            #expect(try Thing.firstInstanceWhere("tid = ?", "nope") == nil)

            let someThings = try Thing.instancesWhere("tid in (?, ?)", "tid1", "tid2")
            #expect(someThings.map(\.tid).sorted() == ["tid1", "tid2"])
            #expect(someThings.first { $0.tid == "tid2" }?.name == "thing 2")
            #expect(try Thing.firstInstanceWhere("tid = ?", "tid3")?.name == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func seedOpenCallsOfEachDriver(_ backend: Backend) throws {
        let dir = try ModelDefFixtures.writeSchemaDirectory(backend)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let paths = try DBManager.getDBDefFiles(directory: dir)
        // PostgreSQL: a schema of this test's own, dropped at the end.
        var dropSchema: () -> Void = {}
        defer { dropSchema() }
        defer { DBManager.close() }
        switch backend {
        case .sqlite:
            // The seed's own call: nil is an in-memory database.
            try DBManager.open(nil, dbDefFilePaths: paths)
        case .postgres:
            let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
            let schema = "md_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
            let admin = try Database(driver: PostgresDriver(url, connections: 1))
            _ = try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
            dropSchema = {
                _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(schema)\" CASCADE") }
                admin.close()
            }
            try DBManager.open(postgresURL: url, dbDefFilePaths: paths, connections: 2, searchPath: schema)
        }
        try Thing(tid: "tid1", name: "thing 1").save()
        #expect(try Thing.allInstances() == [Thing(tid: "tid1", name: "thing 1", existsInDatabase: true)])
        DBManager.close()
        #expect(DBManager.defaultDatabase == nil)
        #expect(throws: DatabaseError.self) { try Thing.allInstances() }
    }

    @Test(arguments: Backend.allCases)
    func saveInsertsThenUpdates(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            var saved = try Thing(tid: "a", name: "first").save(in: db)
            #expect(saved == Thing(tid: "a", name: "first", existsInDatabase: true))

            saved.name = "second"
            let updated = try saved.save(in: db)
            #expect(updated.name == "second")
            #expect(try Thing.count(in: db) == 1)
            #expect(try Thing.firstInstanceWhere("tid = ?", "a", in: db)?.name == "second")

            // A nil optional writes NULL rather than leaving the old value.
            var cleared = updated
            cleared.name = nil
            try cleared.save(in: db)
            #expect(try Thing.firstInstanceWhere("tid = ?", "a", in: db) == Thing(tid: "a", name: nil, existsInDatabase: true))

            // A model read from the database whose row is gone is inserted again.
            _ = try db.write { try $0.execute(sql: "DELETE FROM \"Thing\"") }
            try cleared.save(in: db)
            #expect(try Thing.count(in: db) == 1)
        }
    }

    /// Records saved inside `db.write { }` join its transaction (no second writer is needed,
    /// which SQLite does not have): they commit and roll back with it, and a duplicate inside
    /// it is still `ModelError.duplicate` with the transaction going on.
    @Test(arguments: Backend.allCases)
    func savesInsideATransactionJoinIt(_ backend: Backend) throws {
        try withTestDatabase(backend, readers: 1, connections: 1, configuration: DatabaseConfiguration(checkoutTimeout: 1)) { db in
            try ModelDefFixtures.migrate(db, backend)
            struct Boom: Error {}
            #expect(throws: Boom.self) {
                try db.write { _ in
                    try Thing(tid: "a", name: "A").save(in: db)
                    #expect(try Thing.count(in: db) == 1)
                    throw Boom()
                }
            }
            #expect(try Thing.count(in: db) == 0)

            try db.write { _ in
                try Thing(tid: "a", name: "A").save(in: db)
                // Not syncable: the row is updated, then the duplicate is thrown.
                #expect(throws: ModelError.duplicate(existing: Thing(tid: "a", name: "again", existsInDatabase: true))) {
                    try Thing(tid: "a", name: "again").save(in: db)
                }
                try Thing(tid: "b", name: "B").save(in: db)
                #expect(try Thing.firstInstanceWhere("tid = ?", "b", in: db)?.name == "B")
            }
            #expect(try Thing.allInstances(orderedBy: [.ascending("tid")], in: db).map(\.tid) == ["a", "b"])
        }
    }

    @Test(arguments: Backend.allCases)
    func deleteRemovesOnlyItsRow(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            let a = try Thing(tid: "a", name: "A").save(in: db)
            try Thing(tid: "b", name: "B").save(in: db)
            #expect(try a.delete(in: db) == true)
            #expect(try a.delete(in: db) == false)
            #expect(try Thing.allInstances(in: db).map(\.tid) == ["b"])
        }
    }

    @Test(arguments: Backend.allCases)
    func compositePrimaryKeys(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Membership(groupId: 1, userId: 1, role: "owner").save(in: db)
            try Membership(groupId: 1, userId: 2, role: "member").save(in: db)
            try Membership(groupId: 2, userId: 1, role: "member").save(in: db)

            var m = try #require(try Membership.firstInstanceWhere("\"groupId\" = ? AND \"userId\" = ?", 1, 2, in: db))
            m.role = "admin"
            try m.save(in: db)
            let all = try Membership.allInstances(orderedBy: [.ascending("groupId"), .ascending("userId")], in: db)
            #expect(all.map(\.role) == ["owner", "admin", "member"])

            try Membership(groupId: 1, userId: 1, role: "x").delete(in: db)
            let left = try Membership.allInstances(orderedBy: [.ascending("groupId"), .ascending("userId")], in: db)
            #expect(left.map { [$0.groupId, $0.userId] } == [[1, 2], [2, 1]])

            // Same primary key, new model: the row is updated, and the duplicate carries it.
            #expect(throws: ModelError.duplicate(existing: Membership(groupId: 2, userId: 1, role: "other", existsInDatabase: true))) {
                try Membership(groupId: 2, userId: 1, role: "other").save(in: db)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func duplicateThrowsTheExistingRow(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            #expect(DBManager.blindlyReplaceDuplicates == false)
            try Thing(tid: "tid1", name: "original").save(in: db)
            #expect(throws: ModelError.duplicate(existing: Thing(tid: "tid1", name: "impostor", existsInDatabase: true))) {
                try Thing(tid: "tid1", name: "impostor").save(in: db)
            }
            #expect(try Thing.firstInstanceWhere("tid = ?", "tid1", in: db)?.name == "impostor")

            // Conflict on the secondary key: found by it, updated, keeps its primary key.
            try Account(id: 1, email: "a@example.com", name: "Ann").save(in: db)
            var bob = try Account(id: 2, email: "b@example.com", name: "Bob").save(in: db)
            let ann = Account(id: 1, email: "a@example.com", name: "Eve", existsInDatabase: true)
            #expect(throws: ModelError.duplicate(existing: ann)) {
                try Account(id: 3, email: "a@example.com", name: "Eve").save(in: db)
            }
            // A model read from the database whose update takes another row's secondary key:
            // the other row, and nothing is written.
            bob.email = "a@example.com"
            #expect(throws: ModelError.duplicate(existing: ann)) { try bob.save(in: db) }
            #expect(try Account.allInstances(orderedBy: [.ascending("id")], in: db).map(\.email) == ["a@example.com", "b@example.com"])
            #expect(try Account.allInstances(orderedBy: [.ascending("id")], in: db).map(\.name) == ["Eve", "Bob"])

            // Other faults stay the database's errors.
            #expect(throws: DatabaseError.self) {
                try Thing.firstInstanceWhere("no_such_column = ?", 1, in: db)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func syncableKeepsTheRow(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try SyncedAccount(id: 1, email: "a@example.com", name: "old").save(in: db)
            let old = SyncedAccount(id: 1, email: "a@example.com", name: "old", existsInDatabase: true)
            // Same primary key, or same secondary key: the row stays, the duplicate carries it.
            #expect(throws: ModelError.duplicate(existing: old)) {
                try SyncedAccount(id: 1, email: "a@example.com", name: "new").save(in: db)
            }
            #expect(throws: ModelError.duplicate(existing: old)) {
                try SyncedAccount(id: 2, email: "a@example.com", name: "moved").save(in: db)
            }
            #expect(try SyncedAccount.allInstances(in: db) == [old])

            // The same through a batch, which does not throw.
            try DBManager.executeStatements([
                SyncedAccount(id: 3, email: "a@example.com", name: "batch").createSaveStatement(),
                SyncedAccount(id: 3, email: "c@example.com", name: "batch 2").createSaveStatement(),
                SyncedAccount(id: 3, email: "d@example.com", name: "batch 3").createSaveStatement(),
            ], in: db)
            #expect(try SyncedAccount.allInstances(orderedBy: [.ascending("id")], in: db) == [
                old, SyncedAccount(id: 3, email: "c@example.com", name: "batch 2", existsInDatabase: true),
            ])
        }
    }

    @Test(arguments: Backend.allCases)
    func blindlyReplaceDuplicatesReplaces(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Thing(tid: "tid1", name: "original").save(in: db)
            try Account(id: 1, email: "a@example.com", name: "Ann").save(in: db)

            DBManager.blindlyReplaceDuplicates = true
            defer { DBManager.blindlyReplaceDuplicates = false }
            try Thing(tid: "tid1", name: "replacement").save(in: db)
            #expect(try Thing.allInstances(in: db) == [Thing(tid: "tid1", name: "replacement", existsInDatabase: true)])
            try Account(id: 2, email: "a@example.com", name: "Eve").save(in: db)
            #expect(try Account.allInstances(in: db) == [Account(id: 2, email: "a@example.com", name: "Eve", existsInDatabase: true)])

            DBManager.blindlyReplaceDuplicates = false
            #expect(throws: ModelError<Thing>.self) { try Thing(tid: "tid1", name: "again").save(in: db) }
        }
    }

    @Test(arguments: Backend.allCases)
    func batchOfTenThousandSavesInOneTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            let statements = try (0..<10_000).map { i in
                try Thing(tid: "t\(i)", name: "thing \(i)").createSaveStatement()
            }
            try DBManager.executeStatements(statements, in: db)
            #expect(try Thing.count(in: db) == 10_000)
            #expect(try Thing.firstInstanceWhere("tid = ?", "t9999", in: db)?.name == "thing 9999")

            // Updates, deletes, raw statements and inserts of several tables, mixed, in order.
            var t5 = try #require(try Thing.firstInstanceWhere("tid = ?", "t5", in: db))
            t5.name = "five"
            try DBManager.executeStatements([
                t5.createSaveStatement(),
                Thing(tid: "t6").createDeleteStatement(),
                Account(id: 1, email: "a@example.com").createSaveStatement(),
                Thing(tid: "new", name: "n").createSaveStatement(),
                ModelStatement(sql: "UPDATE \"Thing\" SET name = ? WHERE tid = ?", "renamed", "new"),
                Membership(groupId: 1, userId: 1, role: "r").createSaveStatement(),
                Thing(tid: "t7").createDeleteStatement(),
            ], in: db)
            #expect(try Thing.count(in: db) == 9_999)
            #expect(try Thing.firstInstanceWhere("tid = ?", "t5", in: db)?.name == "five")
            #expect(try Thing.firstInstanceWhere("tid = ?", "new", in: db)?.name == "renamed")
            #expect(try Thing.countWhere("tid IN (?, ?)", "t6", "t7", in: db) == 0)
            #expect(try Account.count(in: db) == 1)
            #expect(try Membership.count(in: db) == 1)

            // A multi-row upsert of rows read from the database, one key twice: last one wins.
            var again = try Thing.instancesWhere("tid IN (?, ?)", "t1", "t2", orderedBy: [.ascending("tid")], in: db)
            again[0].name = "one"
            var twice = again[0]
            twice.name = "one, later"
            try DBManager.executeStatements(try [again[0], again[1], twice].map { try $0.createSaveStatement() }, in: db)
            #expect(try Thing.firstInstanceWhere("tid = ?", "t1", in: db)?.name == "one, later")
        }
    }

    @Test(arguments: Backend.allCases)
    func batchFailureRollsEverythingBack(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Thing(tid: "keep", name: "before").save(in: db)
            var statements = try (0..<100).map { try Thing(tid: "t\($0)").createSaveStatement() }
            // A statement that breaks another unique key (a raw one: saves handle duplicates).
            statements.insert(ModelStatement(sql: "INSERT INTO \"Thing\" (tid, name) VALUES (?, ?)", "t10", "x"), at: 50)
            #expect {
                try DBManager.executeStatements(statements, in: db)
            } throws: { error in
                guard case DatabaseError.constraintViolation(.unique, _) = error else { return false }
                return true
            }
            #expect(try Thing.allInstances(in: db).map(\.tid) == ["keep"])

            // A failing statement of another kind in the middle.
            var mixed = try (0..<20).map { try Thing(tid: "m\($0)").createSaveStatement() }
            mixed.insert(ModelStatement(sql: "INSERT INTO \"NoSuchTable\" VALUES (?)", 1), at: 10)
            mixed.append(try Thing(tid: "keep").createDeleteStatement())
            #expect(throws: DatabaseError.self) { try DBManager.executeStatements(mixed, in: db) }
            #expect(try Thing.allInstances(in: db).map(\.tid) == ["keep"])
        }
    }

    @Test(arguments: Backend.allCases)
    func orderingAndCounting(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            for (tid, name) in [("1", "pear"), ("2", "apple"), ("3", "fig"), ("4", "apricot"), ("5", "banana")] {
                try Thing(tid: tid, name: name).save(in: db)
            }
            #expect(try Thing.allInstances(orderedBy: [.descending("name")], in: db).map(\.name) == ["pear", "fig", "banana", "apricot", "apple"])
            #expect(try Thing.instancesWhere("name LIKE ?", "ap%", orderedBy: [.ascending("name")], in: db).map(\.tid) == ["2", "4"])
            #expect(try Thing.firstInstanceWhere("name <> ?", "pear", orderedBy: [.descending("tid")], in: db)?.name == "banana")
            #expect(try Thing.count(in: db) == 5)
            #expect(try Thing.countWhere("name LIKE ?", "ap%", in: db) == 2)
            #expect(try Thing.countWhere("name = ?", "kiwi", in: db) == 0)
            // A `?` inside a quoted string is text, not a placeholder.
            #expect(try Thing.countWhere("name <> '?' AND tid = ?", "3", in: db) == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func explicitDatabaseVersusDefault(_ backend: Backend) throws {
        try withTestDatabase(backend) { first in
            try withTestDatabase(backend) { second in
                try ModelDefFixtures.migrate(first, backend)
                try ModelDefFixtures.migrate(second, backend)
                DBManager.defaultDatabase = first
                defer { DBManager.defaultDatabase = nil }

                try Thing(tid: "default").save()
                try Thing(tid: "explicit").save(in: second)
                #expect(try Thing.allInstances().map(\.tid) == ["default"])
                #expect(try Thing.allInstances(in: second).map(\.tid) == ["explicit"])
                #expect(try Thing.count() == 1)
                try DBManager.executeStatements([Thing(tid: "batch").createSaveStatement()])
                #expect(try Thing.count(in: first) == 2)
                #expect(try Thing.count(in: second) == 1)

                DBManager.defaultDatabase = nil
                #expect {
                    try Thing.count()
                } throws: { error in
                    guard case DatabaseError.misuse(let message) = error else { return false }
                    return message.contains("DBManager.open")
                }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func valuesRoundTrip(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            let full = Sample(
                id: "full", at: Date(timeIntervalSince1970: 1_700_000_000.25), ref: UUID(),
                amount: try #require(Decimal(string: "12345.678901234567890123")),
                tags: ["a", "b c", "ünïcødé"], meta: ModelDefFixtures.Meta(level: 3, label: "x\"y"),
                note: "note", flag: true, score: -0.125, bytes: Data([0, 1, 2, 255]),
                maybeDate: Date(timeIntervalSince1970: -86_400.5), maybeRef: UUID())
            let empty = Sample(
                id: "empty", at: Date(timeIntervalSince1970: 0), ref: UUID(), amount: 0, tags: [],
                meta: nil, note: nil, flag: false, score: 0, bytes: nil, maybeDate: nil, maybeRef: nil)
            let savedFull = try full.save(in: db)
            try empty.save(in: db)

            var expectedFull = full
            expectedFull.existsInDatabase = true
            var expectedEmpty = empty
            expectedEmpty.existsInDatabase = true
            #expect(savedFull == expectedFull)
            #expect(try Sample.firstInstanceWhere("id = ?", "full", in: db) == expectedFull)
            #expect(try Sample.firstInstanceWhere("id = ?", "empty", in: db) == expectedEmpty)
            // Typed arguments bind with their own types.
            #expect(try Sample.countWhere("ref = ?", full.ref, in: db) == 1)
            #expect(try Sample.countWhere("at < ?", Date(timeIntervalSince1970: 1), in: db) == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func statementsDescribeTheirSQL(_ backend: Backend) throws {
        // No database is needed to build statements; the backend only picks the dialect.
        let dialect: SQLDialect = backend == .sqlite ? .sqlite : .postgres
        let insert = try Thing(tid: "a", name: "b").createSaveStatement().sqlStatements
        #expect(insert.count == 1)
        let rendered = try dialect.render(try #require(insert.first))
        #expect(rendered.sql.hasPrefix("INSERT INTO \"Thing\""))
        #expect(!rendered.sql.contains("existsInDatabase"))
        #expect(rendered.bindings == [.text("a"), .text("b")])

        let upsert = try Thing(tid: "a", name: "b", existsInDatabase: true).createSaveStatement().sqlStatements
        #expect(try dialect.render(try #require(upsert.first)).sql.contains("ON CONFLICT"))
        // A new model: INSERT … ON CONFLICT (primary key) DO UPDATE.
        #expect(try dialect.render(try #require(insert.first)).sql.contains("ON CONFLICT"))
        // With a secondary key the batch looks the keys up, then inserts: one statement.
        #expect(try SyncedAccount(id: 1, email: "e").createSaveStatement().sqlStatements.count == 1)
        // Replacing with a secondary key: delete the other holder of the key, then upsert.
        DBManager.blindlyReplaceDuplicates = true
        defer { DBManager.blindlyReplaceDuplicates = false }
        #expect(try SyncedAccount(id: 1, email: "e").createSaveStatement().sqlStatements.count == 2)
        let delete = try dialect.render(try #require(try Thing(tid: "a").createDeleteStatement().sqlStatements.first))
        #expect(delete.sql.hasPrefix("DELETE FROM \"Thing\""))
        #expect(delete.bindings == [.text("a")])
    }
}
