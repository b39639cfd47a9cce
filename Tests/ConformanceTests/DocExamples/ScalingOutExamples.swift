import DriverPostgres
import Foundation
import Testing
import Unity

// The code of the "Scaling out on PostgreSQL" article, compiled and run. Every ```swift block
// of the article stands here line for line (DocumentationExamplesTests checks that).

// Through a transaction-mode pooler.
func openThroughPgBouncer(host: String, port: Int, database: String) throws -> Database {
    let url = "postgresql://postgres@\(host):\(port)/\(database)?pooler=transaction"
    return try Database(driver: PostgresDriver(url, connections: 8))
}

// Read replicas.
func openWithReplicas(primary: String, replicas: [String]) throws -> Database {
    try Database(
        driver: PostgresDriver(primary: primary, replicas: replicas, connections: 8),
        configuration: DatabaseConfiguration(replicaCheckInterval: 0.1, maxReplicaLag: 5))
}

// Read-your-writes.
func saveThenRead(_ db: Database) throws -> (String?, Int?) {
    try db.write { try $0.execute(sql: "INSERT INTO book (id, title) VALUES (?, ?)", [1, "Dune"]) }
    // This database's own commit is seen: the primary answers until a replica has replayed it.
    let title = try db.read { try $0.fetchValue(String.self, sql: "SELECT title FROM book WHERE id = ?", [1]) }
    // Another client's commit, the moment it was made: ask the primary.
    let count = try db.read(.primary) { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM book") }
    return (title, count)
}

// What is retried.
func writeRetryingWhenSafe(_ db: Database, attempts: Int = 3, _ body: (Connection) throws -> Void) throws {
    var attempt = 1
    while true {
        do {
            return try db.write(body)
        } catch let error as DatabaseError where error.isRetryable && attempt < attempts {
            attempt += 1   // not committed, a busy server or a replica's conflict: run it again
        }
    }
}

@Suite("Documentation: the scaling-out article's examples")
struct ScalingOutExamples {
    @Test func throughPgBouncer() throws {
        let pooled = try #require(ProcessInfo.processInfo.environment["UNITY_PGBOUNCER_URL"] ?? (PostgresClusters.underCI ? nil : postgresURL),
                                  "UNITY_PGBOUNCER_URL is not set: run the tests with scripts/with-postgres")
        let components = try #require(URLComponents(string: pooled))
        let db = try openThroughPgBouncer(host: try #require(components.host), port: try #require(components.port),
                                          database: String(components.path.dropFirst()))
        defer { db.close() }
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT 40 + 2") } == 42)
    }

    /// On the replica pair when it runs; else with the main server as its own "replica"
    /// (a server not in recovery reports its own log position), which shows the calls work.
    @Test func replicasAndReadYourWrites() throws {
        let primary = try PostgresClusters.replicaPrimaryURL ?? #require(postgresURL)
        let replica = PostgresClusters.replicaStandbyURL ?? primary
        let schema = try PostgresClusters.makeSchema(on: primary)
        defer { PostgresClusters.dropSchema(schema, on: primary) }
        let setup = try Database(driver: PostgresDriver(primary, connections: 1, searchPath: schema))
        try setup.write { try $0.execute(sql: "CREATE TABLE book (id BIGINT PRIMARY KEY, title TEXT NOT NULL)") }
        setup.close()
        let routed = try openWithReplicas(primary: primary + "?options=-csearch_path%3D\(schema)",
                                          replicas: [replica + "?options=-csearch_path%3D\(schema)"])
        defer { routed.close() }
        let (title, count) = try saveThenRead(routed)
        #expect(title == "Dune")
        #expect(count == 1)
    }

    @Test(arguments: Backend.allCases)
    func retryingOnlyWhatIsSafe(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(sql: "CREATE TABLE counter (n INTEGER NOT NULL)") }
            var runs = 0
            // A failure that is not retryable is thrown at once.
            #expect(throws: DatabaseError.self) {
                try writeRetryingWhenSafe(db) { conn in
                    runs += 1
                    try conn.execute(sql: "INSERT INTO counter (n) VALUES (NULL)")
                }
            }
            #expect(runs == 1)
            // A retryable one (here thrown by the closure itself) runs again, up to the limit.
            runs = 0
            try writeRetryingWhenSafe(db) { conn in
                runs += 1
                try conn.execute(sql: "INSERT INTO counter (n) VALUES (?)", [.integer(Int64(runs))])
                if runs < 3 {
                    throw DatabaseError.connectionLost(DatabaseErrorContext(message: "lost", commitState: .notCommitted))
                }
            }
            #expect(runs == 3)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM counter") } == 1)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT n FROM counter") } == 3)
        }
    }
}
