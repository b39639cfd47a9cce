import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// Reliability defects of issue 13 that touch the drivers' caches, the SQL text the drivers
/// are given and the SQLite driver: each case runs on both backends.
@Suite("Core: statement caches, SQL text and SQLite reliability")
struct CoreSQLiteReliabilityTests {
    /// "é" as one scalar (NFC) and as "e" + a combining acute accent (NFD): equal as Swift
    /// strings, two different names to both databases.
    static let nfc = "t_\u{E9}"
    static let nfd = "t_e\u{301}"

    struct NFCRow: ModelDef {
        static let tableName = CoreSQLiteReliabilityTests.nfc
        var id: Int
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    struct NFDRow: ModelDef {
        static let tableName = CoreSQLiteReliabilityTests.nfd
        var id: Int
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    func makeTwinTables(_ db: Database) throws {
        #expect(Self.nfc == Self.nfd)  // the premise: Swift says they are one name
        try db.write { conn in
            for name in [Self.nfc, Self.nfd] {
                try conn.execute(.createTable(SQLCreateTable(name, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                ])))
            }
        }
    }

    func ids(_ db: Database, _ table: String) throws -> [Int] {
        try db.read { conn in
            try conn.fetchAll(.select(SQLSelect(from: table).columns(.column("id")).orderBy(SQLExpression.column("id").asc)))
                .map { try $0.decode(Int.self, at: 0) }
        }
    }

    @Test(arguments: Backend.allCases)
    func canonicallyEquivalentTableNamesNeverShareAStatement(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTwinTables(db)
            // One at a time: each insert goes through the driver's prepared-statement cache.
            try db.write { conn in
                try conn.execute(.insert(SQLInsert(into: Self.nfc, values: ["id": .integer(1)])))
                try conn.execute(.insert(SQLInsert(into: Self.nfd, values: ["id": .integer(2)])))
            }
            // As a batch: neighbours with "the same" SQL are grouped into one prepared statement.
            try db.write { conn in
                try conn.executeBatch([
                    .insert(SQLInsert(into: Self.nfc, values: ["id": .integer(3)])),
                    .insert(SQLInsert(into: Self.nfd, values: ["id": .integer(4)])),
                ])
            }
            // Through ModelDef's batch runner, which merges inserts of one shape.
            try DBManager.executeStatements([
                try NFCRow(id: 5).createSaveStatement(),
                try NFDRow(id: 6).createSaveStatement(),
                try NFCRow(id: 7).createSaveStatement(),
            ], in: db)
            #expect(try ids(db, Self.nfc) == [1, 3, 5, 7])
            #expect(try ids(db, Self.nfd) == [2, 4, 6])
        }
    }

    @Test func sqlTextKeyComparesBytes() {
        #expect(SQLTextKey(Self.nfc) != SQLTextKey(Self.nfd))
        #expect(SQLTextKey(Self.nfc) == SQLTextKey("t_\u{E9}"))
        #expect(Set([SQLTextKey(Self.nfc), SQLTextKey(Self.nfd)]).count == 2)
        #expect(!SQLTextKey.sameBytes("abc", "abd"))
        #expect(SQLTextKey.sameBytes("", ""))
    }

    /// A wildcard or the escape character followed by a combining mark is one Swift
    /// `Character`, but the database sees the wildcard: it must be escaped all the same.
    @Test(arguments: Backend.allCases)
    func likeHelpersEscapeWildcardsFollowedByCombiningMarks(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let texts = ["%\u{301}abc", "xyz", "x_\u{301}q", "a\\\u{301}b", "plain"]
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("words", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("w", .text, notNull: true),
                ])))
                for (i, text) in texts.enumerated() {
                    try conn.execute(.insert(SQLInsert(into: "words", values: ["id": .integer(Int64(i + 1)), "w": .text(text)])))
                }
            }
            func ids(_ condition: SQLExpression) throws -> [Int] {
                try db.read { conn in
                    try conn.fetchAll(.select(SQLSelect(from: "words").columns(.column("id")).where(condition)
                        .orderBy(SQLExpression.column("id").asc))).map { try $0.decode(Int.self, at: 0) }
                }
            }
            let w = SQLExpression.column("w")
            for ci in [false, true] {
                #expect(try ids(w.beginsWith("%\u{301}", caseInsensitive: ci)) == [1])
                #expect(try ids(w.contains("_\u{301}", caseInsensitive: ci)) == [3])
                #expect(try ids(w.endsWith("\\\u{301}b", caseInsensitive: ci)) == [4])
                #expect(try ids(w.contains("\u{301}", caseInsensitive: ci)) == [1, 3, 4])
            }
            #expect(SQLExpression.escapeLikePattern("%\u{301}_\\") == "\\%\u{301}\\_\\\\")
        }
    }

    func tableExists(_ db: Database, _ table: String) throws -> Bool {
        do {
            _ = try db.fetchAll(.select(SQLSelect(from: table).columns(.column("x"))))
            return true
        } catch DatabaseError.undefinedTable {
            return false
        }
    }

    /// SQL with a NUL in it is refused before the engine sees it (the C APIs would stop at
    /// the NUL and run only what came before).
    @Test(arguments: Backend.allCases)
    func sqlWithNULIsRefusedBeforeAnythingRuns(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            func expectMisuse(_ body: () throws -> Void) {
                do {
                    try body()
                    Issue.record("SQL with a NUL was run")
                } catch DatabaseError.misuse(let message) {
                    #expect(message.contains("NUL"))
                } catch {
                    Issue.record("unexpected error \(error)")
                }
            }
            expectMisuse { try db.write { try $0.executeScript("CREATE TABLE a (x INTEGER);\u{0}CREATE TABLE b (x INTEGER)") } }
            expectMisuse { _ = try db.execute(sql: "CREATE TABLE a (x INTEGER)\u{0} -- rest") }
            expectMisuse { _ = try db.fetchAll(sql: "SELECT 1\u{0}") }
            expectMisuse { try db.write { _ = try $0.executeBatch("CREATE TABLE a (x INTEGER)\u{0}", bindingSets: [[], []]) } }
            #expect(try !tableExists(db, "a"))
            #expect(try !tableExists(db, "b"))
        }
    }

    /// A migration file with a NUL in it is refused with a typed error before anything runs,
    /// and is not recorded as applied.
    @Test(arguments: Backend.allCases)
    func migrationWithNULIsRefusedAndNotRecorded(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("unity-nul-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            try Data("CREATE TABLE a (x INTEGER);\n".utf8).write(to: dir.appendingPathComponent("0001_a.sql"))
            try Data("CREATE TABLE b (x INTEGER);\u{0}\nCREATE TABLE c (x INTEGER);\n".utf8)
                .write(to: dir.appendingPathComponent("0002_bc.sql"))
            let migrator = try Migrator.directory(dir.path)
            do {
                try migrator.migrate(db)
                Issue.record("a migration with a NUL ran")
            } catch MigrationError.nulCharacter(let name, let offset) {
                #expect(name == "0002_bc")
                #expect(offset == 27)
            }
            // Refused before anything ran: not even the clean first migration.
            #expect(try migrator.appliedMigrations(db).isEmpty)
            #expect(try !tableExists(db, "a"))
            #expect(try !tableExists(db, "b"))

            // AST and closure migrations whose SQL holds a NUL: refused / rolled back, not recorded.
            let ast = Migrator(migrations: [Migration("0001_raw", statements: [.raw(SQLFragment("CREATE TABLE d (x INTEGER)\u{0}", []))])])
            #expect(throws: MigrationError.self) { try ast.migrate(db) }
            let closure = Migrator(migrations: [Migration("0001_code", checksum: "1") { conn in
                try conn.executeScript("CREATE TABLE e (x INTEGER);\u{0}CREATE TABLE f (x INTEGER)")
            }])
            #expect(throws: MigrationError.self) { try closure.migrate(db) }
            #expect(try closure.appliedMigrations(db).isEmpty)
            #expect(try !tableExists(db, "d"))
            #expect(try !tableExists(db, "e"))
        }
    }

    /// A JSON column's value that JSON cannot hold (an infinite double).
    struct Reading: DatabaseJSONConvertible, Equatable {
        var value: Double
    }

    /// A model with a JSON column of each kind: a `DatabaseJSONConvertible` type and a plain
    /// `Codable` one.
    struct Sensor: ModelDef {
        static let tableName = "sensor"
        var id: Int
        var reading: Reading?
        var history: [Double]?
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// A JSON value that fails to encode throws; nothing is written (it used to be stored
    /// as NULL without a word).
    @Test(arguments: Backend.allCases)
    func jsonThatFailsToEncodeThrowsAndWritesNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("sensor", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("reading", .json),
                    SQLColumnDefinition("history", .json),
                ])))
            }
            func count() throws -> Int {
                try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM sensor") ?? -1 }
            }
            let bad = Reading(value: .infinity)
            #expect(throws: DatabaseError.self) { try bad.encodedDatabaseValue() }
            #expect(JSONCoding.encodingFailure(in: bad.databaseValue) != nil)
            #expect(JSONCoding.encodingFailure(in: Reading(value: 1.5).databaseValue) == nil)

            // Through ModelDef (the row encoder), both kinds of JSON column.
            #expect(throws: DatabaseError.self) { try Sensor(id: 1, reading: bad).save(in: db) }
            #expect(throws: DatabaseError.self) { try Sensor(id: 2, history: [1, .infinity]).save(in: db) }
            // Through the AST, as a bound value, alone and in a batch with a good row.
            #expect(throws: DatabaseError.self) {
                try db.write { _ = try $0.execute(.insert(SQLInsert(into: "sensor", values: ["id": .integer(3), "reading": bad.databaseValue]))) }
            }
            #expect(throws: DatabaseError.self) {
                try db.write { conn in
                    _ = try conn.executeBatch([
                        .insert(SQLInsert(into: "sensor", values: ["id": .integer(4), "reading": Reading(value: 2).databaseValue])),
                        .insert(SQLInsert(into: "sensor", columns: ["id", "reading"], values: [[.value(5), .value(bad)]])),
                    ])
                }
            }
            // Handed straight to the driver, past the renderer.
            #expect(throws: DatabaseError.self) {
                let sql = try db.dialect.renderUncached(.raw(SQLFragment("INSERT INTO sensor (id, reading) VALUES (?, ?)", [.integer(6), .null]))).sql
                try db.write { _ = try $0.executeBatch(sql, bindingSets: [[.integer(6), bad.databaseValue]]) }
            }
            #expect(try count() == 0)
            // A good value still goes in and reads back.
            try Sensor(id: 7, reading: Reading(value: 2.5), history: [1, 2]).save(in: db)
            #expect(try count() == 1)
        }
    }

    /// `":memory:"` and `""` give one database per `Database`: what a write committed is
    /// seen by `read`, by `fetchAll` and by a later write (each reader connection used to get
    /// an empty database of its own). SQLite only: PostgreSQL has no in-memory database.
    @Test(arguments: ["memory-path", "empty-path", "inMemory"])
    func inMemoryDatabaseIsOneDatabase(_ how: String) throws {
        let db: Database
        switch how {
        case "memory-path": db = try Database(driver: SQLiteDriver(path: ":memory:"))
        case "empty-path": db = try Database(driver: SQLiteDriver(path: "", readers: 3))
        default: db = try Database(driver: SQLiteDriver.inMemory())
        }
        defer { db.close() }
        try expectOneInMemoryDatabase(db)
    }

    /// Disk full has a case of its own on both backends: SQLite's SQLITE_FULL (here the
    /// database's page limit), PostgreSQL's SQLSTATE 53100 (here raised by the server).
    @Test(arguments: Backend.allCases)
    func diskFullIsItsOwnCase(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("blob", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("data", .blob),
                ])))
                try conn.execute(.insert(SQLInsert(into: "blob", values: ["id": .integer(1), "data": .blob(Data([1]))])))
            }
            do {
                try db.write { conn in
                    switch backend {
                    case .sqlite:
                        // The writer may not grow the file beyond its current size.
                        let pages = try conn.fetchValue(Int.self, sql: "PRAGMA page_count") ?? 0
                        _ = try conn.fetchAll(sql: "PRAGMA max_page_count = \(pages)")
                        try conn.execute(.insert(SQLInsert(into: "blob", values: [
                            "id": .integer(2), "data": .blob(Data(repeating: 7, count: 200_000)),
                        ])))
                    case .postgres:
                        try conn.executeScript("DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$")
                    }
                }
                Issue.record("no error")
            } catch DatabaseError.diskFull(let context) {
                #expect(context.code == (backend == .sqlite ? "13" : "53100"))
                #expect(DatabaseError.diskFull(context).description.contains("full"))
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM blob") } == 1)
        }
    }

    /// A SQLite file can be opened to read only: nothing is written to it (not even its
    /// journal mode), reads work, and writes fail with `.readOnly`.
    @Test func sqliteFileOpensReadOnly() throws {
        try withTestDatabaseHandle(.sqlite) { test in
            try test.database.write { conn in
                try conn.execute(.createTable(SQLCreateTable("kept", columns: [SQLColumnDefinition("x", .int64)])))
                try conn.execute(.insert(SQLInsert(into: "kept", values: ["x": .integer(5)])))
            }
            test.database.close()
            let before = try Data(contentsOf: URL(fileURLWithPath: test.location))
            let db = try Database(driver: SQLiteDriver(path: test.location, readers: 2, readOnly: true))
            defer { db.close() }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT x FROM kept") } == 5)
            #expect(try db.fetchAll(sql: "SELECT x FROM kept").count == 1)
            do {
                try db.write { _ = try $0.execute(.insert(SQLInsert(into: "kept", values: ["x": .integer(6)]))) }
                Issue.record("a write went through a read-only database")
            } catch DatabaseError.readOnly {}
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM kept") } == 1)
            db.close()
            #expect(try Data(contentsOf: URL(fileURLWithPath: test.location)) == before)
            // A file that does not exist is not created.
            let missing = test.location + "-missing.sqlite"
            #expect(throws: DatabaseError.self) {
                let db = try Database(driver: SQLiteDriver(path: missing, readOnly: true))
                defer { db.close() }
                _ = try db.fetchAll(sql: "SELECT 1")
            }
            #expect(!FileManager.default.fileExists(atPath: missing))
        }
    }

    /// Results handed from a thread to the test.
    final class Outcome: @unchecked Sendable {
        // @unchecked: `value` is only touched while `lock` is held.
        private let lock = NSLock()
        private var value: Result<[String], any Error>?
        let done = DispatchSemaphore(value: 0)
        func set(_ result: Result<[String], any Error>) {
            lock.lock(); value = result; lock.unlock()
            done.signal()
        }
        func get() -> Result<[String], any Error>? {
            lock.lock(); defer { lock.unlock() }
            return value
        }
    }

    /// A second migrator behind a long migration waits for the lock and then finds the
    /// migration applied; one that will not wait (SQLite) says that its migration never
    /// started, not that it "failed and was rolled back".
    @Test(arguments: Backend.allCases)
    func secondMigratorWaitsForTheLockOrSaysItNeverStarted(_ backend: Backend) throws {
        try withTestDatabaseHandle(backend) { test in
            let other = try test.openAgain(busyTimeout: 0.2)
            defer { other.close() }
            let started = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let long = Migration("0001_long", checksum: "1") { conn in
                try conn.execute(.createTable(SQLCreateTable("slow", columns: [SQLColumnDefinition("x", .int64)])))
                started.signal()
                _ = release.wait(timeout: .now() + 60)
            }
            let first = Outcome()
            let database = test.database
            Thread { first.set(Result { try Migrator(migrations: [long]).migrate(database) }) }.start()
            defer { release.signal() }
            try #require(started.wait(timeout: .now() + 60) == .success)

            if backend == .sqlite {
                var impatient = Migrator(migrations: [long])
                impatient.lockWaitTimeout = 0
                do {
                    try impatient.migrate(other)
                    Issue.record("the second migrator ran while the first held the lock")
                } catch let error as MigrationError {
                    guard case .notStarted(let name, let underlying) = error else {
                        Issue.record("expected notStarted, got \(error)")
                        return
                    }
                    #expect(name == "0001_long")
                    #expect(underlying == .busy(underlying.context ?? DatabaseErrorContext(message: "")))
                    #expect(!error.description.contains("rolled back"))
                    #expect(error.description.contains("never started"))
                }
            }

            let second = Outcome()
            Thread { second.set(Result { try Migrator(migrations: [long]).migrate(other) }) }.start()
            Thread.sleep(forTimeInterval: 0.5)  // let it start waiting (nothing asserts a time)
            release.signal()
            try #require(first.done.wait(timeout: .now() + 60) == .success)
            try #require(second.done.wait(timeout: .now() + 60) == .success)
            #expect(try first.get()?.get() == ["0001_long"])
            #expect(try second.get()?.get() == [])
            #expect(try Migrator(migrations: [long]).appliedMigrations(other).map(\.name) == ["0001_long"])
        }
    }
}

/// What an in-memory database opened any way must do: one database per `Database`, so what a
/// write committed is seen by `read`, by `fetchAll` and by a later write.
func expectOneInMemoryDatabase(_ db: Database) throws {
    try db.write { conn in
        try conn.execute(.createTable(SQLCreateTable("note", columns: [SQLColumnDefinition("x", .int64)])))
        try conn.execute(.insert(SQLInsert(into: "note", values: ["x": .integer(42)])))
    }
    let select = SQLSelect(from: "note").columns(.column("x"))
    for _ in 0..<6 {  // more times than the pool has connections
        #expect(try db.read { try $0.fetchValue(Int.self, .select(select)) } == 42)
        #expect(try db.fetchAll(.select(select)).map { try $0.decode(Int.self, at: 0) } == [42])
    }
    // Two databases opened the same way are two databases.
    let other = try Database(driver: SQLiteDriver(path: ":memory:"))
    defer { other.close() }
    #expect(throws: DatabaseError.self) { try other.fetchAll(.select(select)) }
}

/// The same through `DBManager.open(nil)` and `DBManager.open(":memory:")`, which set the
/// process-wide default database: part of the serialized suite that owns it.
extension ModelDefTests {
    @Test(arguments: [nil, ":memory:"] as [String?])
    func dbManagerInMemoryDatabaseIsOneDatabase(_ path: String?) throws {
        let db = try DBManager.open(path, dbDefFilePaths: [])
        defer { DBManager.close() }
        #expect(DBManager.defaultDatabase === db)
        try expectOneInMemoryDatabase(db)
    }
}
