import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

// The code of the "Observing queries" article, compiled and run. Every ```swift block of the
// article stands here line for line (DocumentationExamplesTests checks that). The functions the
// article's loops call (`showOpenTitles`, `showTodos`, `invalidateCaches`) are a user's own;
// here they record what they were given.

/// What the examples' "user functions" were called with.
final class ObservationExampleLog: Sendable {
    let openTitles = Locked<[[String]]>([])
    let todoCounts = Locked<[Int]>([])
    let invalidated = Locked<[Set<String>]>([])
}

// The first result, then one per commit.
func followOpenTitles(_ db: Database, _ log: ObservationExampleLog) async throws {
    func showOpenTitles(_ titles: [String]) { log.openTitles.withLock { $0.append(titles) } }
    let openTodos = SQLSelect(from: "todos").columns(.column("title")).where(.column("done").equals(false))
    for try await rows in db.observe(.select(openTodos)) {
        let titles = try rows.map { try $0.decode(String.self, column: "title") }
        showOpenTitles(titles)
    }
}

// Decoded results.
func followTodos(_ db: Database, _ log: ObservationExampleLog) async throws {
    func showTodos<T>(_ todos: [T]) { log.todoCounts.withLock { $0.append(todos.count) } }
    struct Todo: Decodable, Sendable {
        var id: Int
        var title: String
        var done: Bool
    }
    for try await todos in db.observe(.select(SQLSelect(from: "todos")), as: Todo.self) {
        showTodos(todos)
    }
}

// Raw SQL names its tables.
func countDone(_ db: Database) -> DatabaseObservation<[Row]> {
    let counts = db.observe(.raw(SQLFragment("SELECT count(*) FROM todos WHERE done")), tables: ["todos"])
    return counts
}

// The lowest level.
func invalidateWhileTodosChange(_ db: Database, _ log: ObservationExampleLog, during body: () throws -> Void) throws {
    @Sendable func invalidateCaches(of tables: Set<String>) { log.invalidated.withLock { $0.append(tables) } }
    let observer = try db.observeChanges(to: ["todos"]) { tables in
        invalidateCaches(of: tables)
    }
    defer { observer.cancel() }
    try body()
}

// The migration helper.
func migrateTodos(_ db: Database) throws {
    try Migrator(migrations: [
        Migration("0001_todos", sql: "CREATE TABLE todos (id INTEGER PRIMARY KEY, title TEXT NOT NULL, done BOOLEAN NOT NULL)"),
        Migration.observeChanges(of: ["todos"]),
    ]).migrate(db)
}

func todosTriggerSQL() throws -> String? {
    let postgresSQL = try Migration.observeChanges(of: ["todos"]).script(for: .postgres)
    return postgresSQL
}

// Behind a pooler.
// pooledURL: "postgresql://app@pgbouncer:6432/app?pooler=transaction"
// primaryURL: "postgresql://app@db-primary:5432/app"
func openBehindPgBouncer(pooledURL: String, primaryURL: String) throws -> Database {
    try Database(driver: PostgresDriver(pooledURL), configuration: DatabaseConfiguration(notificationURL: primaryURL))
}

@Suite("Documentation: the observing-queries article's examples")
struct ObservationExamples {
    static func addTodo(_ db: Database, _ id: Int, _ title: String, done: Bool = false) throws {
        try db.execute(sql: "INSERT INTO todos (id, title, done) VALUES (?, ?, ?)", [.integer(Int64(id)), .text(title), .bool(done)])
    }

    static func waitFor(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = Date(timeIntervalSinceNow: 60)
        while !condition() {
            if Date() > deadline { throw WaitTimedOut(what: what, seconds: 60) }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    @Test(arguments: Backend.allCases)
    func observedResultsFollowTheCommits(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try migrateTodos(db)
            try Self.addTodo(db, 1, "milk")
            let log = ObservationExampleLog()
            let titles = Task { try await followOpenTitles(db, log) }
            let todos = Task { try await followTodos(db, log) }
            defer { titles.cancel(); todos.cancel() }
            try await Self.waitFor("the first results") { log.openTitles.current == [["milk"]] && log.todoCounts.current == [1] }
            try Self.addTodo(db, 2, "eggs")
            try await Self.waitFor("the new todo") { log.openTitles.current.last == ["milk", "eggs"] && log.todoCounts.current.last == 2 }
            try ObservedCounter.execute(db, "UPDATE todos SET done = ? WHERE id = 1", [.bool(true)])
            try await Self.waitFor("the done todo") { log.openTitles.current.last == ["eggs"] }
            #expect(log.openTitles.current == [["milk"], ["milk", "eggs"], ["eggs"]])
            // Marking a todo done changes the rows too (count stays 2).
            try await Self.waitFor("the done todo's row") { log.todoCounts.current.count == 3 }
            #expect(log.todoCounts.current == [1, 2, 2])

            var iterator = countDone(db).makeAsyncIterator()
            let counted = try await iterator.next()
            #expect(counted?.first?[0] == .integer(1))

            try invalidateWhileTodosChange(db, log) {
                try Self.addTodo(db, 3, "bread")
                // The call comes on a thread of Unity's: wait for it before the observer goes.
                let deadline = Date(timeIntervalSinceNow: 60)
                while log.invalidated.current.isEmpty && Date() < deadline { usleep(5_000) }
            }
            #expect(log.invalidated.current == [["todos"]])
        }
    }

    @Test func theTriggerSQLIsThereToTake() throws {
        let sql = try #require(try todosTriggerSQL())
        #expect(sql.contains("CREATE TRIGGER unity_observe_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \"todos\""))
    }

    /// Through PgBouncer in transaction mode, with the listening connection on the server.
    @Test func observationBehindAPooler() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let pooled = environment["UNITY_PGBOUNCER_POOLED_URL"], let direct = postgresURL else {
            #expect(!PostgresClusters.underCI, "UNITY_PGBOUNCER_POOLED_URL is not set: run the tests with scripts/with-postgres")
            return
        }
        let admin = try Database(driver: PostgresDriver(direct, connections: 1))
        defer { admin.close() }
        let schema = "obs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try ObservedCounter.execute(admin, "CREATE SCHEMA \"\(schema)\"")
        defer { try? ObservedCounter.execute(admin, "DROP SCHEMA \"\(schema)\" CASCADE") }
        let db = try Database(driver: PostgresDriver(pooled, connections: 2, searchPath: schema),
                              configuration: DatabaseConfiguration(poolerMode: .transaction, notificationURL: direct))
        defer { db.close() }
        #expect(try await db.read { _ in true })
        let viaHelper = try openBehindPgBouncer(pooledURL: pooled, primaryURL: direct)
        viaHelper.close()
        try migrateTodos(db)
        let log = ObservationExampleLog()
        let titles = Task { try await followOpenTitles(db, log) }
        defer { titles.cancel() }
        try await Self.waitFor("the first result") { log.openTitles.current == [[]] }
        try Self.addTodo(db, 1, "tea")
        try await Self.waitFor("the commit through the pooler") { log.openTitles.current.last == ["tea"] }
    }
}
