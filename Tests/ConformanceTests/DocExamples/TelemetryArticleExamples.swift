import DriverPostgres
import Foundation
import Testing
import Tracing
import Unity
import UnityTelemetry

// The code of the "Metrics and tracing" article, compiled and run. Every ```swift block of
// the article stands here line for line (DocumentationExamplesTests checks that).

func openWithTelemetry(url: String) throws -> Database {
    let telemetry = TelemetryInstrumentation(databaseName: "app")
    return try Database(driver: PostgresDriver(url, connections: 8),
                        configuration: DatabaseConfiguration(instrumentation: telemetry))
}

func loadTitles(_ db: Database) async throws -> [String] {
    try await withSpan("load titles") { _ in
        try await db.read { conn in
            try conn.fetchAll(sql: "SELECT title FROM book ORDER BY title").map { try $0.decode(String.self, at: 0) }
        }
    }
}

@Suite("Documentation: the metrics and tracing article's examples")
struct TelemetryArticleExamples {
    @Test func openWithTelemetryRunsStatements() throws {
        let db = try openWithTelemetry(url: try #require(postgresURL))
        defer { db.close() }
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT 40 + 2") } == 42)
    }

    @Test(arguments: Backend.allCases)
    func loadTitlesReadsInASpan(_ backend: Backend) async throws {
        let configuration = DatabaseConfiguration(instrumentation: TelemetryInstrumentation(databaseName: "app"))
        try await withTestDatabase(backend, configuration: configuration) { (db: Database) async throws in
            try await db.execute(sql: "CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT)")
            try await db.write { conn in
                for (id, title) in [(1, "Dune"), (2, "Andor"), (3, "Solaris")] {
                    try conn.execute(sql: "INSERT INTO book (id, title) VALUES (?, ?)", [.integer(Int64(id)), .text(title)])
                }
            }
            #expect(try await loadTitles(db) == ["Andor", "Dune", "Solaris"])
        }
    }
}
