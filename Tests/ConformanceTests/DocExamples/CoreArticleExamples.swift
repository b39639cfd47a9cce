import DriverPostgres
import DriverSQLite
import Foundation
import Logging
import Testing
import Unity

// The code of the Unity catalog's articles, compiled and run on both backends. Every
// ```swift block of an article stands here line for line (DocumentationExamplesTests checks
// that), so an example that drifts from the API fails the build or a test.

// From "Getting started".
func openDatabase(_ location: String) throws -> Database {
    if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") {
        return try Database(driver: PostgresDriver(location, connections: 8))
    }
    return try Database(driver: SQLiteDriver(path: location))   // a file path, or ":memory:"
}

// From "Values on both backends": PostgreSQL through a transaction-mode pooler.
func openThroughAPooler(_ url: String) throws -> (Database, Database) {
    // In the URL (the driver takes the parameter out before libpq, which refuses unknown ones)…
    let db = try Database(driver: PostgresDriver(url + "?pooler=transaction"))
    // …or in the configuration (or PostgresDriver(url, poolerMode: .transaction)).
    let db2 = try Database(driver: PostgresDriver(url), configuration: DatabaseConfiguration(poolerMode: .transaction))
    return (db, db2)
}

@Suite("Documentation: the Unity catalog's examples")
struct CoreArticleExamples {
    @Test(arguments: Backend.allCases)
    func openingADatabase(_ backend: Backend) throws {
        let location = backend == .sqlite ? ":memory:" : try #require(postgresURL)
        let db = try openDatabase(location)
        defer { db.close() }
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT 1 + 1") } == 2)
    }

    @Test(arguments: Backend.allCases)
    func gettingStarted(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in   // a transaction: commits on return, rolls back on throw
                try conn.execute(.createTable(SQLCreateTable("book", ifNotExists: true, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("title", .text, notNull: true, unique: true),
                    SQLColumnDefinition("year", .int64),
                ])))
                try conn.execute(.insert(SQLInsert(into: "book", columns: ["title", "year"], values: [
                    [.value("Dune"), .value(1965)], [.value("Emma"), .value(1815)], [.value("Neuromancer"), .value(1984)],
                ])))
            }

            let before1970 = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "book").columns(.column("title"))
                    .where(SQLExpression.column("year").lessThan(1970))
                    .orderBy(SQLExpression.column("title").asc)))
                    .map { try $0.decode(String.self, column: "title") }
            }
            #expect(before1970 == ["Dune", "Emma"])

            let count = try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM book WHERE year > ?", [1900]) }
            #expect(count == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func asyncCalls(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try await db.write { try $0.execute(sql: "CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT)") }
            try await db.write { conn in
                try conn.execute(sql: "INSERT INTO book (id, title) VALUES (?, ?)", [1, "Dune"])
            }
            let title = try await db.fetchOne(.select(SQLSelect(from: "book").where(.column("id").equals(1))))?
                .decode(String.self, column: "title")
            #expect(title == "Dune")
        }
    }

    @Test(arguments: Backend.allCases)
    func savepoints(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE book (title TEXT UNIQUE)") }
            try db.write { conn in
                try conn.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Emma"])
                do {
                    try conn.transaction { inner in   // a savepoint
                        try inner.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Persuasion"])
                        try inner.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Emma"])   // a duplicate
                    }
                } catch DatabaseError.constraintViolation(.unique, _) {
                    // Only the savepoint was rolled back ("Persuasion" too); the write goes on.
                }
            }
            #expect(try db.read { try $0.fetchAll(sql: "SELECT title FROM book").map { try $0.decode(String.self, at: 0) } } == ["Emma"])
        }
    }

    @Test(arguments: Backend.allCases)
    func anAbortedTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE book (title TEXT UNIQUE)") }
            do {
                try db.write { conn in
                    try conn.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Emma"])
                    _ = try? conn.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Emma"])   // caught
                    try conn.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Persuasion"])   // refused
                }
            } catch DatabaseError.transactionAborted(let context) {
                print(context.message)   // names the statement that failed; nothing was committed
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM book") } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func catchingErrors(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE book (title TEXT CONSTRAINT book_title_key UNIQUE)") }
            try db.write { try $0.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Dune"]) }
            do {
                try db.write { try $0.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Dune"]) }
            } catch DatabaseError.constraintViolation(let kind, let context) {
                // The same case on both backends; the context carries the engine's own words.
                print(kind, context.message, context.sql ?? "", context.code ?? "")
            }
            do {
                try db.write { try $0.execute(sql: "INSERT INTO book (title) VALUES (?)", ["Dune"]) }
                Issue.record("a duplicate was inserted")
            } catch DatabaseError.constraintViolation(let kind, let context) {
                #expect(kind == .unique)
                #expect(context.sql == (backend == .sqlite ? "INSERT INTO book (title) VALUES (?)" : "INSERT INTO book (title) VALUES ($1)"))
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM book") } == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func astStatements(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("author", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("name", .text, notNull: true),
                ])))
                try conn.execute(.createTable(SQLCreateTable("novel", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("title", .text, notNull: true, unique: true),
                    SQLColumnDefinition("price", .decimal),
                    SQLColumnDefinition("author_id", .int64, references: SQLForeignKeyReference("author", columns: ["id"])),
                ])))
                try conn.execute(.insert(SQLInsert(into: "author", values: ["id": 1, "name": "Frank Herbert"])))
            }

            let id = try db.write { conn in
                try conn.fetchOne(.insert(SQLInsert(into: "novel", values: ["title": "Dune", "price": .decimal(Decimal(string: "9.99")!), "author_id": 1])
                    .returning(.column("id"))))?.decode(Int.self, at: 0)
            }

            // Insert or update: the stored row afterwards, with the price it now has.
            let upsert = SQLInsert(into: "novel", values: ["title": "Dune", "price": .decimal(Decimal(string: "12.50")!), "author_id": 1])
                .onConflict(["title"], doUpdate: [SQLAssignment("price", .excluded("price"))])
                .returning(.column("price"))
            let price = try db.write { try $0.fetchOne(.insert(upsert))?.decode(Decimal.self, at: 0) }

            let query = SQLSelect(from: "novel", as: "n")
                .columns(.column("n", "title"), .column("a", "name"))
                .join(.inner, "author", as: "a", on: SQLExpression.column("a", "id").equals(.column("n", "author_id")))
                .where(SQLExpression.decimal(.column("n", "price")).greaterThanOrEquals(.value(10)))
                .orderBy(SQLExpression.column("n", "title").asc)
                .limit(10)
            let rows = try db.read { try $0.fetchAll(.select(query)) }

            #expect(id == 1)
            #expect(price == Decimal(string: "12.50"))
            #expect(try rows.map { try $0.decode(String.self, column: "name") } == ["Frank Herbert"])
        }
    }

    @Test(arguments: Backend.allCases)
    func configurationAndMigrations(_ backend: Backend) throws {
        let configuration = DatabaseConfiguration(checkoutTimeout: 5, echo: false, livenessCheckAfterIdle: 0.5)
        let logged = DatabaseConfiguration(echo: true, logger: Logger(label: "app.sql"))
        #expect(configuration.checkoutTimeout == 5 && logged.echo && logged.logger.label == "app.sql")
        try withTestDatabase(backend, configuration: configuration) { (db: Database) throws in
            let migrator = Migrator(migrations: [
                Migration("0001_author", sql: """
                    CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                    """),
                Migration("0002_author_name", statements: [
                    .createIndex(SQLCreateIndex("author_name", on: "author", columns: ["name"])),
                ]),
            ])
            let applied = try migrator.migrate(db)   // the names it applied now
            #expect(applied == ["0001_author", "0002_author_name"])
            #expect(try migrator.migrate(db) == [])
            #expect(try migrator.appliedMigrations(db).map(\.name) == ["0001_author", "0002_author_name"])
        }
    }

    /// Through the PgBouncer that scripts/with-postgres starts (required under CI).
    @Test func openingThroughAPooler() throws {
        guard let url = ProcessInfo.processInfo.environment["UNITY_PGBOUNCER_URL"] else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("UNITY_PGBOUNCER_URL is not set") }
            return
        }
        let (db, db2) = try openThroughAPooler(url)
        defer { db.close(); db2.close() }
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT 1 + 1") } == 2)
        #expect(try db2.write { try $0.fetchValue(Int.self, sql: "SELECT 2 + 2") } == 4)
    }
}
