import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// The run-once migrator on both backends: sModel's "each `sql` file runs once and only once",
/// plus checksums, rollback of a failing migration, per-backend variants, AST and closure
/// migrations, and concurrent migrators.
@Suite struct MigrationTests {
    // MARK: Fixtures

    /// A temporary directory of migration files, removed when the test ends.
    final class MigrationFiles {
        let directory: String

        init(_ files: [String: String] = [:]) throws {
            let url = FileManager.default.temporaryDirectory
                .appendingPathComponent("unity-migrations-\(UUID().uuidString)", isDirectory: true)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            directory = url.path
            for (name, text) in files { try write(name, text) }
        }

        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: path(name), atomically: true, encoding: .utf8)
        }

        func path(_ name: String) -> String {
            URL(fileURLWithPath: directory).appendingPathComponent(name).path
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    static let things = """
        CREATE TABLE things (
          tid TEXT PRIMARY KEY,
          name TEXT
        );
        """
    static let thingsIndex = "CREATE INDEX things_name ON things (name);"
    static let seed = "INSERT INTO things (tid, name) VALUES ('tid1', 'thing 1');\nINSERT INTO things (tid, name) VALUES ('tid2', 'thing 2');"

    /// True when `table` exists (a query on it does not fail with "no such table").
    func tableExists(_ db: Database, _ table: String) throws -> Bool {
        do {
            _ = try db.fetchAll(sql: "SELECT * FROM \"\(table)\" WHERE 1 = 0")
            return true
        } catch DatabaseError.undefinedTable {
            return false
        }
    }

    func count(_ db: Database, _ table: String) throws -> Int64 {
        try #require(try db.read { try $0.fetchValue(Int64.self, sql: "SELECT COUNT(*) FROM \"\(table)\"") })
    }

    func dialect(_ backend: Backend) -> SQLDialect {
        backend == .sqlite ? .sqlite : .postgres
    }

    // MARK: Checksums

    @Test(arguments: Backend.allCases)
    func checksumsAreSHA256OfWhatRuns(_ backend: Backend) throws {
        let d = dialect(backend)
        // FIPS 180-4 test vectors, through the public checksum.
        #expect(try Migration("a", sql: "").checksum(for: d) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(try Migration("a", sql: "abc").checksum(for: d) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try Migration("a", sql: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").checksum(for: d)
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(try Migration("a", sql: String(repeating: "a", count: 1_000_000)).checksum(for: d)
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // CRLF line endings are not an edit.
        #expect(try Migration("a", sql: "A;\r\nB;").checksum(for: d) == Migration("a", sql: "A;\nB;").checksum(for: d))
        // A closure's checksum is that of its explicit checksum string.
        #expect(try Migration("a", checksum: "abc") { _ in }.checksum(for: d)
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // A per-backend migration's checksum is that of the variant that runs here.
        let variants = Migration("v", sql: ["sqlite": "S", "postgres": "P"])
        #expect(try variants.checksum(for: d) == Migration("v", sql: backend == .sqlite ? "S" : "P").checksum(for: d))
        // An AST migration's checksum depends on the SQL rendered for the backend.
        let ast = Migration("t", statements: [.createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("x", .int64)]))])
        #expect(try ast.checksum(for: .sqlite) != ast.checksum(for: .postgres))
        #expect(try ast.checksum(for: d).count == 64)
    }

    // MARK: Files

    @Test(arguments: Backend.allCases)
    func sortedFilesAreAppliedOnceInOrderAndRecorded(_ backend: Backend) throws {
        let files = try MigrationFiles([
            "0003_seed.sql": Self.seed,
            "0001_things.sql": Self.things,
            "0002_index.sql": Self.thingsIndex,
            "README.txt": "not a migration",
        ])
        let migrator = try Migrator.directory(files.directory)
        #expect(migrator.migrations.map(\.name) == ["0001_things", "0002_index", "0003_seed"])

        // The same files given out of order make the same migrator.
        let fromPaths = try Migrator(sqlFilePaths: [files.path("0003_seed.sql"), files.path("0001_things.sql"), files.path("0002_index.sql")])
        #expect(fromPaths.migrations.map(\.name) == ["0001_things", "0002_index", "0003_seed"])

        try withTestDatabase(backend) { db throws in
            #expect(try migrator.appliedMigrations(db).isEmpty)
            #expect(try migrator.pendingMigrations(db) == ["0001_things", "0002_index", "0003_seed"])

            let before = Date()
            let appliedNow = try migrator.migrate(db)
            #expect(appliedNow == ["0001_things", "0002_index", "0003_seed"])

            let applied = try migrator.appliedMigrations(db)
            #expect(Set(applied.map(\.name)) == ["0001_things", "0002_index", "0003_seed"])
            for record in applied {
                let migration = try #require(migrator.migrations.first { $0.name == record.name })
                #expect(record.checksum == (try migration.checksum(for: db.dialect)))
                #expect(record.appliedAt >= before.addingTimeInterval(-1) && record.appliedAt <= Date().addingTimeInterval(1))
            }
            #expect(try migrator.pendingMigrations(db).isEmpty)
            #expect(try count(db, "things") == 2)
            #expect(try count(db, Migrator.trackingTable) == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func migratingAgainIsANoOp(_ backend: Backend) throws {
        let files = try MigrationFiles(["0001_things.sql": Self.things, "0002_seed.sql": Self.seed])
        let migrator = try Migrator.directory(files.directory)
        try withTestDatabase(backend) { db throws in
            #expect(try migrator.migrate(db) == ["0001_things", "0002_seed"])
            let first = try migrator.appliedMigrations(db)
            // The seed would fail on its primary key if it ran twice.
            #expect(try migrator.migrate(db) == [])
            #expect(try Migrator.directory(files.directory).migrate(db) == [])
            #expect(try migrator.appliedMigrations(db) == first)
            #expect(try count(db, "things") == 2)

            // A new file runs alone.
            try files.write("0003_more.sql", "INSERT INTO things (tid, name) VALUES ('tid3', 'thing 3');")
            #expect(try Migrator.directory(files.directory).migrate(db) == ["0003_more"])
            #expect(try count(db, "things") == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func anEditedAppliedFileIsRefusedAndNothingRuns(_ backend: Backend) throws {
        let files = try MigrationFiles(["0001_things.sql": Self.things, "0002_seed.sql": Self.seed])
        try withTestDatabase(backend) { db throws in
            try Migrator.directory(files.directory).migrate(db)
            let original = try Migration("0001_things", sql: Self.things).checksum(for: db.dialect)

            try files.write("0001_things.sql", Self.things.replacingOccurrences(of: "name TEXT", with: "name TEXT NOT NULL"))
            try files.write("0003_later.sql", "CREATE TABLE later (id INTEGER);")
            let edited = try Migrator.directory(files.directory)

            let error = #expect(throws: MigrationError.self) { try edited.migrate(db) }
            guard case .checksumMismatch(let name, let applied, let current) = error else {
                Issue.record("expected checksumMismatch, got \(String(describing: error))")
                return
            }
            #expect(name == "0001_things")
            #expect(applied == original)
            #expect(current == (try Migration("0001_things", sql: try String(contentsOfFile: files.path("0001_things.sql"), encoding: .utf8)).checksum(for: db.dialect)))
            #expect(String(describing: error!).contains("0001_things"))

            #expect(try !tableExists(db, "later"))
            #expect(try edited.pendingMigrations(db) == ["0003_later"])
            #expect(try edited.appliedMigrations(db).map(\.name).sorted() == ["0001_things", "0002_seed"])
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailingMigrationRollsBackEntirelyAndTheRunResumesAfterTheFix(_ backend: Backend) throws {
        let files = try MigrationFiles([
            "0001_things.sql": Self.things,
            // The first statement succeeds, the second fails at run time: the first must go too.
            "0002_broken.sql": "CREATE TABLE partial (id INTEGER);\nINSERT INTO no_such_table (id) VALUES (1);",
            "0003_after.sql": "CREATE TABLE after_broken (id INTEGER);",
        ])
        try withTestDatabase(backend) { db throws in
            let error = #expect(throws: MigrationError.self) { try Migrator.directory(files.directory).migrate(db) }
            guard case .failed(let name, let underlying) = error else {
                Issue.record("expected failed, got \(String(describing: error))")
                return
            }
            #expect(name == "0002_broken")
            guard case .undefinedTable = underlying else {
                Issue.record("expected undefinedTable, got \(underlying)")
                return
            }

            #expect(try !tableExists(db, "partial"))
            #expect(try !tableExists(db, "after_broken"))
            #expect(try tableExists(db, "things"))
            let migrator = try Migrator.directory(files.directory)
            #expect(try migrator.appliedMigrations(db).map(\.name) == ["0001_things"])
            #expect(try migrator.pendingMigrations(db) == ["0002_broken", "0003_after"])

            try files.write("0002_broken.sql", "CREATE TABLE partial (id INTEGER);\nINSERT INTO partial (id) VALUES (1);")
            #expect(try Migrator.directory(files.directory).migrate(db) == ["0002_broken", "0003_after"])
            #expect(try count(db, "partial") == 1)
            #expect(try tableExists(db, "after_broken"))
        }
    }

    @Test(arguments: Backend.allCases)
    func perBackendVariantsPickTheFileForTheBackend(_ backend: Backend) throws {
        let sqliteFlavor = "CREATE TABLE flavor_sqlite (id INTEGER);"
        let postgresFlavor = "CREATE TABLE flavor_postgres (id BIGINT);"
        let files = try MigrationFiles([
            "0001_things.sql": Self.things,
            // Variants instead of a shared file.
            "0002_flavor.sqlite.sql": sqliteFlavor,
            "0002_flavor.postgres.sql": postgresFlavor,
            // A variant beside a shared file: PostgreSQL takes its own, SQLite the shared one.
            "0003_note.sql": "CREATE TABLE note_shared (id INTEGER);",
            "0003_note.postgres.sql": "CREATE TABLE note_postgres (id BIGINT);",
        ])
        let migrator = try Migrator.directory(files.directory)
        #expect(migrator.migrations.map(\.name) == ["0001_things", "0002_flavor", "0003_note"])

        try withTestDatabase(backend) { db throws in
            #expect(try migrator.migrate(db) == ["0001_things", "0002_flavor", "0003_note"])
            let onSQLite = backend == .sqlite
            #expect(try tableExists(db, "flavor_sqlite") == onSQLite)
            #expect(try tableExists(db, "flavor_postgres") == !onSQLite)
            #expect(try tableExists(db, "note_shared") == onSQLite)
            #expect(try tableExists(db, "note_postgres") == !onSQLite)

            let recorded = try migrator.appliedMigrations(db).first { $0.name == "0002_flavor" }
            let expected = try Migration("x", sql: onSQLite ? sqliteFlavor : postgresFlavor).checksum(for: db.dialect)
            #expect(recorded?.checksum == expected)
        }
    }

    @Test(arguments: Backend.allCases)
    func aMissingVariantIsRefusedBeforeAnythingRuns(_ backend: Backend) throws {
        let other = backend == .sqlite ? "postgres" : "sqlite"
        let files = try MigrationFiles([
            "0001_things.sql": Self.things,
            "0002_elsewhere.\(other).sql": "CREATE TABLE elsewhere (id INTEGER);",
        ])
        try withTestDatabase(backend) { db throws in
            let error = #expect(throws: MigrationError.self) { try Migrator.directory(files.directory).migrate(db) }
            guard case .missingVariant(let name, let missing) = error else {
                Issue.record("expected missingVariant, got \(String(describing: error))")
                return
            }
            #expect(name == "0002_elsewhere")
            #expect(missing == backend.rawValue)
            #expect(try !tableExists(db, "things"))

            // A per-backend migration naming an unknown backend is refused too.
            let typo = Migrator(migrations: [Migration("0001_t", sql: ["postgresql": "SELECT 1"], shared: "SELECT 1")])
            let typoError = #expect(throws: MigrationError.self) { try typo.migrate(db) }
            guard case .unknownBackend(name: "0001_t", backend: "postgresql") = typoError else {
                Issue.record("expected unknownBackend, got \(String(describing: typoError))")
                return
            }
        }
    }

    /// `BEGIN; … COMMIT;` in a migration file would end the migrator's transaction half-way:
    /// refused by name before anything runs. Trigger and function bodies are not mistaken
    /// for it, and run.
    @Test(arguments: Backend.allCases)
    func transactionControlInAScriptIsRefusedBeforeAnythingRuns(_ backend: Backend) throws {
        let files = try MigrationFiles([
            "0001_things.sql": Self.things,
            "0002_wrapped.sql": "BEGIN;\nCREATE TABLE wrapped (id INTEGER);\nCOMMIT;\n",
        ])
        try withTestDatabase(backend) { db throws in
            let error = #expect(throws: MigrationError.self) { try Migrator.directory(files.directory).migrate(db) }
            guard case .transactionControl(let name, let statement) = error else {
                Issue.record("expected transactionControl, got \(String(describing: error))")
                return
            }
            #expect(name == "0002_wrapped")
            #expect(statement == "BEGIN")
            #expect(try !tableExists(db, "things"))
            #expect(try !tableExists(db, "wrapped"))

            // Without the wrapper it runs; a trigger body with its own BEGIN … END runs too.
            try files.write("0002_wrapped.sql", "CREATE TABLE wrapped (id INTEGER);\n")
            try files.write("0003_counter.sqlite.sql", """
                CREATE TABLE counter (n INTEGER);
                INSERT INTO counter VALUES (0);
                CREATE TRIGGER count_things AFTER INSERT ON things BEGIN
                  UPDATE counter SET n = n + CASE WHEN new.name IS NULL THEN 0 ELSE 1 END;
                END;
                """)
            try files.write("0003_counter.postgres.sql", """
                CREATE TABLE counter (n INTEGER);
                INSERT INTO counter VALUES (0);
                CREATE FUNCTION count_things() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  UPDATE counter SET n = n + CASE WHEN NEW.name IS NULL THEN 0 ELSE 1 END;
                  RETURN NEW;
                END;
                $$;
                CREATE TRIGGER count_things AFTER INSERT ON things FOR EACH ROW EXECUTE FUNCTION count_things();
                """)
            #expect(try Migrator.directory(files.directory).migrate(db) == ["0001_things", "0002_wrapped", "0003_counter"])
            try db.execute(sql: "INSERT INTO things (tid, name) VALUES (?, ?)", ["t1", "one"])
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT n FROM counter") } == 1)
        }
    }

    // MARK: AST and closures

    @Test(arguments: Backend.allCases)
    func astMigrationsRenderForEachBackend(_ backend: Backend) throws {
        let books = Migration("0001_books", statements: [
            .createTable(SQLCreateTable("books", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                SQLColumnDefinition("title", .text, notNull: true),
                SQLColumnDefinition("in_print", .bool, notNull: true, default: .literal(.bool(true))),
            ])),
            .createIndex(SQLCreateIndex("books_title", on: "books", columns: ["title"], unique: true)),
            .insert(SQLInsert(into: "books", values: ["title": .text("Dune")])),
        ])
        let migrator = Migrator(migrations: [books])
        try withTestDatabase(backend) { db throws in
            #expect(try migrator.migrate(db) == ["0001_books"])
            let row = try #require(try db.fetchOne(sql: "SELECT id, title, in_print FROM books"))
            #expect(try row.decode(Int64.self, column: "id") == 1)
            #expect(try row.decode(String.self, column: "title") == "Dune")
            #expect(try row.decode(Bool.self, column: "in_print") == true)
            // The unique index exists.
            #expect(throws: DatabaseError.self) { try db.execute(sql: "INSERT INTO books (title) VALUES (?)", ["Dune"]) }
            #expect(try migrator.appliedMigrations(db).first?.checksum == (try books.checksum(for: db.dialect)))
            #expect(try migrator.migrate(db) == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func closureMigrationsRunInTheirTransaction(_ backend: Backend) throws {
        struct BackfillFailed: Error {}
        let table = Migration("0001_counters", sql: "CREATE TABLE counters (n INTEGER NOT NULL);")
        let backfill = Migration("0002_backfill", checksum: "backfill 1...3") { conn in
            for n in 1...3 {
                try conn.execute(sql: "INSERT INTO counters (n) VALUES (?)", [.integer(Int64(n))])
            }
        }
        let failing = Migration("0003_fails", checksum: "fails") { conn in
            try conn.execute(sql: "INSERT INTO counters (n) VALUES (?)", [.integer(99)])
            throw BackfillFailed()
        }
        try withTestDatabase(backend) { db throws in
            let error = #expect(throws: MigrationError.self) { try Migrator(migrations: [table, backfill, failing]).migrate(db) }
            guard case .closureFailed(let name, let underlying) = error else {
                Issue.record("expected closureFailed, got \(String(describing: error))")
                return
            }
            #expect(name == "0003_fails")
            #expect(underlying is BackfillFailed)

            // The backfill stayed; the failing closure's insert was rolled back.
            let values = try db.fetchAll(sql: "SELECT n FROM counters ORDER BY n").map { try $0.decode(Int64.self, at: 0) }
            #expect(values == [1, 2, 3])
            let applied = try Migrator(migrations: [table, backfill]).appliedMigrations(db)
            #expect(applied.map(\.name).sorted() == ["0001_counters", "0002_backfill"])
            #expect(applied.first { $0.name == "0002_backfill" }?.checksum
                == (try Migration("x", sql: "backfill 1...3").checksum(for: db.dialect)))

            // Changing an applied closure's checksum string is an edit.
            let edited = Migration("0002_backfill", checksum: "backfill 1...4") { _ in }
            let mismatch = #expect(throws: MigrationError.self) { try Migrator(migrations: [table, edited]).migrate(db) }
            guard case .checksumMismatch(name: "0002_backfill", _, _) = mismatch else {
                Issue.record("expected checksumMismatch, got \(String(describing: mismatch))")
                return
            }
        }
    }

    // MARK: Refusals

    @Test(arguments: Backend.allCases)
    func unknownAppliedMigrationsAndDuplicateNamesAreRefused(_ backend: Backend) throws {
        let a = Migration("0001_a", sql: "CREATE TABLE a (id INTEGER);")
        let b = Migration("0002_b", sql: "CREATE TABLE b (id INTEGER);")
        let c = Migration("0003_c", sql: "CREATE TABLE c (id INTEGER);")
        try withTestDatabase(backend) { db throws in
            let duplicate = #expect(throws: MigrationError.self) { try Migrator(migrations: [a, b, a]).migrate(db) }
            guard case .duplicateName("0001_a") = duplicate else {
                Issue.record("expected duplicateName, got \(String(describing: duplicate))")
                return
            }
            #expect(try !tableExists(db, "a"))

            #expect(try Migrator(migrations: [a, b]).migrate(db) == ["0001_a", "0002_b"])
            // Older code that knows only 0001_a must not run against this database.
            let older = #expect(throws: MigrationError.self) { try Migrator(migrations: [a, c]).migrate(db) }
            guard case .unknownAppliedMigration(name: "0002_b") = older else {
                Issue.record("expected unknownAppliedMigration, got \(String(describing: older))")
                return
            }
            #expect(try !tableExists(db, "c"))
        }
    }

    // MARK: Concurrency

    /// Collects results from several threads.
    final class Results: @unchecked Sendable {
        // @unchecked: guarded by `lock`.
        private let lock = NSLock()
        private var names: [String] = []
        private var errors: [String] = []

        func add(_ applied: [String]) { lock.lock(); names += applied; lock.unlock() }
        func fail(_ error: any Error) { lock.lock(); errors.append("\(error)"); lock.unlock() }
        var snapshot: (names: [String], errors: [String]) { lock.lock(); defer { lock.unlock() }; return (names, errors) }
    }

    @Test(arguments: Backend.allCases)
    func concurrentMigratorsApplyEachMigrationOnce(_ backend: Backend) throws {
        // Every migration fails if it runs twice: CREATE TABLE without IF NOT EXISTS, and an
        // insert into a primary key.
        var files: [String: String] = ["0001_runs.sql": "CREATE TABLE runs (name TEXT PRIMARY KEY);"]
        for i in 2...8 {
            let name = String(format: "%04d_t%d", i, i)
            files[name + ".sql"] = "CREATE TABLE t\(i) (id INTEGER);\nINSERT INTO runs (name) VALUES ('\(name)');"
        }
        let migrationFiles = try MigrationFiles(files)
        // A slow first migration holds its transaction long enough for every other migrator
        // to read the applied list and then wait for the lock: they must re-check inside.
        let slow = Migration("0000_slow", checksum: "slow") { conn in
            try conn.execute(sql: "CREATE TABLE slow (id INTEGER)")
            Thread.sleep(forTimeInterval: 0.2)
        }
        let migrator = Migrator(migrations: [slow] + (try Migrator.directory(migrationFiles.directory).migrations))
        let expected = migrator.migrations.map(\.name)

        for round in 0..<3 {
            let test = try TestDatabase(backend)
            defer { test.tearDown() }
            if round > 0 {
                // With the tracking table already there, every migrator reads "nothing
                // applied" at once and they all contend for the first migration. Round 0
                // races on creating the table too.
                #expect(try Migrator(migrations: []).migrate(test.database) == [])
            }
            var databases = [test.database]
            for _ in 1..<4 {
                switch backend {
                case .sqlite:
                    databases.append(try Database(driver: SQLiteDriver(path: test.location, readers: 1)))
                case .postgres:
                    let url = try #require(postgresURL)
                    databases.append(try Database(driver: PostgresDriver(url, connections: 2, searchPath: test.location)))
                }
            }
            defer { for d in databases.dropFirst() { d.close() } }

            // Real threads, not concurrentPerform, which may run the iterations one after
            // another on a busy machine.
            let results = Results()
            let finished = DispatchSemaphore(value: 0)
            for database in databases {
                Thread {
                    do {
                        results.add(try migrator.migrate(database))
                    } catch {
                        results.fail(error)
                    }
                    finished.signal()
                }.start()
            }
            for _ in databases { finished.wait() }
            let (names, errors) = results.snapshot
            #expect(errors.isEmpty, "\(errors)")
            #expect(names.sorted() == expected)
            #expect(try migrator.appliedMigrations(test.database).map(\.name).sorted() == expected)
            #expect(try count(test.database, Migrator.trackingTable) == Int64(expected.count))
            #expect(try count(test.database, "runs") == Int64(expected.count - 2))
        }
    }
}
