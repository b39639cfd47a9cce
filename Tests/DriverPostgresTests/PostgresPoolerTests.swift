@testable import DriverPostgres
import Foundation
import Testing

/// Where PgBouncer listens, in transaction mode with a pool of two server connections for
/// the test database: set by scripts/with-postgres when PgBouncer is installed.
private let pgbouncerURL: String? = ProcessInfo.processInfo.environment["UNITY_PGBOUNCER_URL"]
/// Under CI a missing PgBouncer fails these tests instead of leaving them out.
private let underCI = ProcessInfo.processInfo.environment["CI"] == "true"

/// The PgBouncer URL, or a failure that says how to get one.
private func bouncerURL() throws -> String {
    try #require(
        pgbouncerURL,
        "UNITY_PGBOUNCER_URL is not set: install PgBouncer (scripts/install-deps --with-postgres-server) and run the tests with scripts/with-postgres")
}

/// What many concurrent reads through a pooler came to.
private struct ReadTally: Sendable {
    var correct = 0
    var wrong: [String] = []
    var errors: [String] = []
    /// Errors that are not the typed misuse naming the pooler setting.
    var untypedErrors: [String] = []
}

/// Two apps, each with its own `Database` (a pool of 4), read through the same pooler at
/// once, each with a statement of its own whose answer says which statement ran: app 1 adds
/// 1,000,000 to its number, app 2 adds 2,000,000. The two statements agree in parameters and
/// result columns, so a Bind that reached the other app's statement would run it and return
/// a number of the other range: a wrong answer, not an error.
private func runTwoApps(url: String, poolerMode: PoolerMode, workers: Int, readsPerWorker: Int) throws -> ReadTally {
    let configuration = DatabaseConfiguration(checkoutTimeout: 60, poolerMode: poolerMode)
    let apps = [
        try Database(driver: PostgresDriver(url, connections: 4), configuration: configuration),
        try Database(driver: PostgresDriver(url, connections: 4), configuration: configuration),
    ]
    defer { for app in apps { app.close() } }
    let offsets: [Int64] = [1_000_000, 2_000_000]
    let statements = ["SELECT CAST(? AS BIGINT) + 1000000 AS v", "SELECT CAST(? AS BIGINT) + 2000000 AS v"]
    let lock = NSLock()
    nonisolated(unsafe) var tally = ReadTally()
    DispatchQueue.concurrentPerform(iterations: workers) { worker in
        let app = worker % 2
        var local = ReadTally()
        for i in 0..<readsPerWorker {
            let n = Int64(worker * 10_000 + i)
            do {
                let value = try apps[app].read { conn in
                    try conn.fetchOne(sql: statements[app], [.integer(n)])?.decode(Int64.self, at: 0)
                }
                if value == n + offsets[app] {
                    local.correct += 1
                } else {
                    local.wrong.append("app \(app + 1) asked for \(n) + \(offsets[app]) and got \(value.map(String.init) ?? "nil")")
                }
            } catch {
                local.errors.append("\(error)")
                if case DatabaseError.misuse(let message) = error, message.contains("poolerMode = .transaction"),
                   message.contains("pooler=transaction") {
                    continue
                }
                local.untypedErrors.append("\(error)")
            }
        }
        lock.lock()
        tally.correct += local.correct
        tally.wrong += local.wrong
        tally.errors += local.errors
        tally.untypedErrors += local.untypedErrors
        lock.unlock()
    }
    return tally
}

@Suite("PostgreSQL through a transaction-mode pooler (PgBouncer)", .serialized)
struct PostgresPoolerTests {
    @Test("two apps reading through PgBouncer with the pooler setting: every answer right, no error",
          .enabled(if: pgbouncerURL != nil || underCI))
    func twoAppsWithPoolerMode() throws {
        let tally = try runTwoApps(url: try bouncerURL(), poolerMode: .transaction, workers: 16, readsPerWorker: 300)
        #expect(tally.wrong.isEmpty, "wrong answers: \(tally.wrong.count), e.g. \(tally.wrong.prefix(3))")
        #expect(tally.errors.isEmpty, "errors: \(tally.errors.count), e.g. \(tally.errors.prefix(3))")
        #expect(tally.correct == 4_800)
    }

    @Test("the URL parameter pooler=transaction turns the setting on as the configuration does",
          .enabled(if: pgbouncerURL != nil || underCI))
    func twoAppsWithURLParameter() throws {
        let url = try bouncerURL() + "?pooler=transaction"
        let tally = try runTwoApps(url: url, poolerMode: .none, workers: 8, readsPerWorker: 100)
        #expect(tally.wrong.isEmpty, "wrong answers: \(tally.wrong.count), e.g. \(tally.wrong.prefix(3))")
        #expect(tally.errors.isEmpty, "errors: \(tally.errors.count), e.g. \(tally.errors.prefix(3))")
        #expect(tally.correct == 800)
    }

    @Test("without the setting, through PgBouncer: never a wrong answer, and every failure is the typed error naming the setting",
          .enabled(if: pgbouncerURL != nil || underCI))
    func twoAppsWithoutPoolerMode() throws {
        let tally = try runTwoApps(url: try bouncerURL(), poolerMode: .none, workers: 16, readsPerWorker: 100)
        #expect(tally.wrong.isEmpty, "wrong answers: \(tally.wrong.count), e.g. \(tally.wrong.prefix(3))")
        #expect(tally.untypedErrors.isEmpty, "untyped errors: \(tally.untypedErrors.count), e.g. \(tally.untypedErrors.prefix(3))")
        // Eight client connections share two server connections: statements prepared on one
        // are missed on the other, so the typed error does show up.
        #expect(!tally.errors.isEmpty)
        #expect(tally.correct + tally.errors.count == 1_600)
    }

    @Test("settings pinned by one client never reach another through the shared server connections",
          .enabled(if: pgbouncerURL != nil || underCI))
    func settingsDoNotLeak() throws {
        let url = try bouncerURL()
        let schema = "unity_pooler_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let admin = try Database(driver: PostgresDriver(url, connections: 1), configuration: DatabaseConfiguration(poolerMode: .transaction))
        defer {
            _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE") }
            admin.close()
        }
        try admin.withConnection { _ = try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
        let configuration = DatabaseConfiguration(checkoutTimeout: 60, poolerMode: .transaction)
        let pinned = try Database(driver: PostgresDriver(url, connections: 4, searchPath: schema), configuration: configuration)
        let plain = try Database(driver: PostgresDriver(url, connections: 4), configuration: configuration)
        defer {
            pinned.close()
            plain.close()
        }
        try pinned.write { _ = try $0.execute(sql: "CREATE TABLE marker (v TEXT)") }
        try pinned.write { _ = try $0.execute(sql: "INSERT INTO marker VALUES (?)", [.text("in the schema")]) }
        let lock = NSLock()
        nonisolated(unsafe) var seen: [String] = []
        nonisolated(unsafe) var failures: [String] = []
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var local: [String] = []
            var localFailures: [String] = []
            for _ in 0..<50 {
                do {
                    if worker % 2 == 0 {
                        // One-statement calls and transactions alike see their own schema.
                        let marker = try pinned.withConnection { try $0.fetchValue(String.self, sql: "SELECT v FROM marker") }
                        let inRead = try pinned.read { try $0.fetchValue(String.self, sql: "SELECT v FROM marker") }
                        if marker != "in the schema" || inRead != "in the schema" {
                            local.append("pinned client read \(marker ?? "nil") / \(inRead ?? "nil")")
                        }
                    } else {
                        let row = try plain.withConnection {
                            try $0.fetchOne(sql: "SELECT current_setting('search_path'), current_setting('IntervalStyle'), current_setting('TimeZone')")
                        }
                        let path = try row?.decode(String.self, at: 0)
                        if path != "\"$user\", public" { local.append("plain client saw search_path \(path ?? "nil")") }
                        if try row?.decode(String.self, at: 1) != "postgres" { local.append("plain client saw another IntervalStyle") }
                        if try row?.decode(String.self, at: 2) != "UTC" { local.append("plain client saw another TimeZone") }
                    }
                } catch {
                    localFailures.append("\(error)")
                }
            }
            lock.lock()
            seen += local
            failures += localFailures
            lock.unlock()
        }
        #expect(seen.isEmpty, "\(seen.count) leaked or unpinned settings, e.g. \(seen.prefix(3))")
        #expect(failures.isEmpty, "\(failures.count) errors, e.g. \(failures.prefix(3))")
    }

    @Test("through PgBouncer: a cursor outside a transaction, batched reads, a script, a batch and a rolled-back write",
          .enabled(if: pgbouncerURL != nil || underCI))
    func everyPathThroughThePooler() throws {
        let url = try bouncerURL()
        let schema = "unity_pooler_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let configuration = DatabaseConfiguration(checkoutTimeout: 60, poolerMode: .transaction)
        let admin = try Database(driver: PostgresDriver(url, connections: 1), configuration: configuration)
        defer {
            _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE") }
            admin.close()
        }
        try admin.withConnection { _ = try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
        let db = try Database(driver: PostgresDriver(url, connections: 2, searchPath: schema), configuration: configuration)
        defer { db.close() }
        // A script outside a transaction runs in the schema, in a transaction of its own.
        try db.withConnection { (conn: Connection) throws in
            try conn.executeScript("CREATE TABLE pooled_item (id BIGINT PRIMARY KEY, name TEXT NOT NULL); CREATE INDEX pooled_item_name ON pooled_item (name)")
            #expect(!conn.isInTransaction)
        }
        // A batch: one transaction, pinned.
        try db.withConnection { (conn: Connection) throws in
            _ = try conn.executeBatch("INSERT INTO pooled_item (id, name) VALUES ($1, $2)",
                                      bindingSets: (1...500).map { [.integer(Int64($0)), .text("item \($0)")] })
        }
        #expect(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM pooled_item") } == 500)
        // A cursor opened outside a transaction streams in one of its own, ended with it.
        try db.withConnection { (conn: Connection) throws in
            let cursor = try conn.cursor(sql: "SELECT id FROM pooled_item ORDER BY id")
            var ids: [Int64] = []
            while let row = try cursor.next() { ids.append(try row.decode(Int64.self, at: 0)) }
            #expect(ids == Array(1...500))
            #expect(!conn.isInTransaction)
            // Closed early: its transaction ends too, and the connection works on.
            let early = try conn.cursor(sql: "SELECT id FROM pooled_item ORDER BY id")
            #expect(try early.next()?.decode(Int64.self, at: 0) == 1)
            early.close()
            #expect(!conn.isInTransaction)
            #expect(try conn.fetchValue(Int.self, sql: "SELECT max(id) FROM pooled_item") == 500)
        }
        // A server-side cursor read in batches inside a read.
        var batched: [Int64] = []
        try db.read { conn in
            try conn.forEachRowInBatches(SQLSelect(from: "pooled_item").columns(.column("id")).orderBy(SQLExpression.column("id").asc),
                                         batchSize: 50) { batched.append(try $0.decode(Int64.self, at: 0)) }
        }
        #expect(batched == Array(1...500))
        // A write that fails rolls back whole: nothing of it stays.
        #expect(throws: DatabaseError.self) {
            try db.write { conn in
                _ = try conn.execute(sql: "INSERT INTO pooled_item (id, name) VALUES (?, ?)", [.integer(501), .text("item 501")])
                _ = try conn.execute(sql: "INSERT INTO pooled_item (id, name) VALUES (?, ?)", [.integer(1), .text("duplicate")])
            }
        }
        #expect(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM pooled_item") } == 500)
        // No named statement of these calls was left on any server connection (the server
        // connections are shared with other tests' clients, whose statements may be there).
        for _ in 0..<4 {
            #expect(try db.withConnection {
                try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%pooled_item%'")
            } == 0)
        }
    }
}

@Suite("PostgreSQL statement names and the pooler setting")
struct PostgresStatementNameTests {
    @Test("statement names carry a random prefix per connection")
    func randomPrefix() throws {
        let url = try TestServer.url()
        var prefixes: [String] = []
        for _ in 0..<2 {
            let db = try Database(driver: PostgresDriver(url, connections: 1))
            defer { db.close() }
            let names = try db.withConnection { (conn: Connection) throws in
                _ = try conn.fetchOne(sql: "SELECT 1")
                return try conn.fetchAll(sql: "SELECT name FROM pg_prepared_statements ORDER BY name").map { try $0.decode(String.self, at: 0) }
            }
            try #require(!names.isEmpty)
            for name in names {
                let parts = name.split(separator: "_")
                #expect(parts.count == 2 && parts[0].count == 13 && parts[0].first == "u"
                        && parts[0].dropFirst().allSatisfy(\.isHexDigit) && Int(parts[1]) != nil, "\(name)")
            }
            prefixes.append(String(names[0].prefix(14)))
        }
        #expect(prefixes[0] != prefixes[1])
    }

    @Test("a statement the server no longer holds inside a transaction is a typed error naming the pooler setting")
    func lostStatementIsTyped() throws {
        let url = try TestServer.url()
        let schema = "unity_lost_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let db = try Database(driver: PostgresDriver(url, connections: 1))
        defer {
            _ = try? db.withConnection { try $0.execute(sql: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE") }
            db.close()
        }
        try db.withConnection { _ = try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
        try db.withConnection { _ = try $0.execute(sql: "CREATE TABLE \"\(schema)\".t (v BIGINT)") }
        // Prepared once on this connection, then dropped on the server behind the driver's back.
        _ = try db.withConnection { try $0.fetchOne(sql: "SELECT count(*) FROM \"\(schema)\".t") }
        do {
            try db.write { conn in
                _ = try conn.execute(sql: "INSERT INTO \"\(schema)\".t VALUES (?)", [.integer(7)])
                _ = try conn.execute(sql: "DO $$ BEGIN EXECUTE 'DEALLOCATE ALL'; END $$")
                _ = try conn.fetchOne(sql: "SELECT count(*) FROM \"\(schema)\".t")
            }
            Issue.record("the lost statement was not reported")
        } catch DatabaseError.misuse(let message) {
            #expect(message.contains("26000"))
            #expect(message.contains("DatabaseConfiguration.poolerMode = .transaction"))
            #expect(message.contains("pooler=transaction"))
        }
        // The failed write left nothing.
        #expect(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM \"\(schema)\".t") } == 0)
    }

    @Test("pooler mode straight to the server: no named statement, settings pinned in each transaction, nothing set on the session")
    func poolerModeLeavesNothing() throws {
        let url = try TestServer.url()
        let schema = "unity_pm_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let admin = try Database(driver: PostgresDriver(url, connections: 1))
        defer {
            _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE") }
            admin.close()
        }
        try admin.withConnection { _ = try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
        let db = try Database(driver: PostgresDriver(url + "?pooler=transaction", connections: 1, searchPath: schema))
        defer { db.close() }
        try db.write { _ = try $0.execute(sql: "CREATE TABLE t (v BIGINT)") }
        try db.write { _ = try $0.execute(sql: "INSERT INTO t VALUES (?)", [.integer(42)]) }
        try db.withConnection { (conn: Connection) throws in
            #expect(try conn.fetchValue(Int.self, sql: "SELECT v FROM t") == 42)
            #expect(try conn.fetchValue(String.self, sql: "SELECT current_setting('search_path')") == "\"\(schema)\"")
            #expect(try conn.fetchValue(String.self, sql: "SELECT current_setting('IntervalStyle')") == "postgres")
            #expect(try conn.fetchValue(Int.self, sql: "SELECT count(*) FROM pg_prepared_statements") == 0)
            // The session's own value (what a SET would have changed) is the server's.
            #expect(try conn.fetchValue(String.self, sql: "SELECT reset_val FROM pg_settings WHERE name = 'search_path'") == "\"$user\", public")
        }
        // A read's COMMIT is sent and answered at once, never held back for the next read.
        let raw = try PostgresDriver(url, poolerMode: .transaction).connect(role: .writer)
        defer { raw.close() }
        #expect(raw.beginWithNextStatement("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))
        _ = try raw.execute("SELECT 1", bindings: [], onRow: nil)
        #expect(raw.transactionStatus == .active)
        #expect(raw.commitWithoutWaiting("COMMIT") == false)
        #expect(!raw.holdsWork)
        // A statement that refuses transactions runs by itself, without the pinned search path.
        try db.withConnection { _ = try $0.execute(sql: "VACUUM \"\(schema)\".t") }
    }

    @Test("the pooler URL parameter is taken out of the URL before libpq sees it")
    func urlParameter() throws {
        let driver = PostgresDriver("postgresql://app@127.0.0.1:6432/app?sslmode=disable&pooler=transaction&connect_timeout=5")
        #expect(driver.poolerMode == .transaction)
        #expect(driver.libpqConnectionString == "postgresql://app@127.0.0.1:6432/app?sslmode=disable&connect_timeout=5")
        let only = PostgresDriver("postgres://app@127.0.0.1/app?pooler=transaction")
        #expect(only.libpqConnectionString == "postgres://app@127.0.0.1/app")
        #expect(only.poolerMode == .transaction)
        let none = PostgresDriver("postgresql://app@127.0.0.1/app?pooler=none")
        #expect(none.poolerMode == .none)
        let plain = PostgresDriver("host=127.0.0.1 dbname=app")
        #expect(plain.libpqConnectionString == "host=127.0.0.1 dbname=app")
        #expect(plain.poolerMode == .none)
        // A value that names no mode fails the connection with a message, before libpq runs.
        do {
            _ = try PostgresDriver("postgresql://app@127.0.0.1/app?pooler=statement").connect(role: .writer)
            Issue.record("pooler=statement was accepted")
        } catch DatabaseError.connectionFailed(let context) {
            #expect(context.message.contains("pooler=statement"))
        }
    }
}
