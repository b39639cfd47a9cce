import BookmarksApp
import Foundation
import HummingbirdTesting
import InMemoryLogging
import Logging
import Testing

@Suite("Telemetry")
struct TelemetryTests {
    @Test("requests and statements report metrics and spans; a statement's span is its request's child, without values",
          arguments: Backend.allCases)
    func metricsAndSpans(_ backend: Backend) async throws {
        var spans = InMemoryLogHandler()
        spans.logLevel = .debug
        let reports = InMemoryLogHandler()
        let telemetry = ServiceTelemetry(
            tracer: LoggingTracer(logger: Logger(label: "trace") { _ in spans }),
            reportInterval: .seconds(3_600), logger: Logger(label: "metrics") { _ in reports })
        try await withService(backend, telemetry: telemetry) { client, _ in
            let folder = try await client.createFolder("Secret Folder Name")
            let missing = try await client.send(.post, "/bookmarks",
                                                json: #"{"folderId": "nope", "url": "https://a.example/", "title": "A"}"#)
            #expect(missing.status == .badRequest)
            _ = try await client.createBookmark(folder: folder, url: "https://swift.org/", title: "Swift")
            #expect(try await client.send(.get, "/bookmarks?q=swift").status == .ok)
        }
        let system = backend == .sqlite ? "sqlite" : "postgresql"
        let metrics = telemetry.metrics

        // The requests, by route and status.
        func requests(_ method: String, _ route: String, _ status: String) -> Int? {
            metrics.value("http.server.request.duration", [
                ("http.request.method", method), ("http.route", route), ("http.response.status_code", status),
            ])?.count
        }
        #expect(requests("POST", "/folders", "201") == 1)
        #expect(requests("POST", "/bookmarks", "201") == 1)
        #expect(requests("POST", "/bookmarks", "400") == 1)
        #expect(requests("GET", "/bookmarks", "200") == 1)

        // The database's: the failed insert is an error of its kind.
        let entries = metrics.snapshot()
        let errors = entries.filter { $0.key.label == "unity.db.client.errors" }
        #expect(errors.map(\.key.dimensions).contains { $0.contains("error.type=foreign_key_violation") && $0.contains("db.operation.name=INSERT") })
        #expect(errors.filter { $0.key.dimensions.contains("error.type=foreign_key_violation") }.map(\.value.last) == [1])
        let inserts = entries.filter { $0.key.label == "unity.db.client.statements" && $0.key.dimensions.contains("db.operation.name=INSERT") }
        // The migration's record in unity_migrations, a folder, the one that failed, a bookmark.
        #expect(inserts.map(\.value.last) == [4])
        #expect(inserts.allSatisfy { $0.key.dimensions.contains("db.system.name=\(system)") })

        // The final report (after the pool closed) went to the log.
        let lines = reports.entries.map { "\($0.message)" }
        #expect(lines.contains { $0.hasPrefix("metric unity.db.client.statements{") })

        // Spans: each INSERT is a child of its request's span, and its text has placeholders only.
        let logged = spans.entries
        let requestSpan = try #require(logged.first { "\($0.message)" == "span POST /folders" })
        let traceID = try #require(requestSpan.metadata["trace_id"]).description
        let spanID = try #require(requestSpan.metadata["span_id"]).description
        let insert = try #require(logged.first { "\($0.message)" == "span INSERT" && $0.metadata["trace_id"]?.description == traceID })
        #expect(insert.metadata["parent_id"]?.description == spanID)
        #expect(insert.metadata["db.system.name"]?.description == system)
        let text = try #require(insert.metadata["db.query.text"]?.description)
        #expect(text.hasPrefix(#"INSERT INTO "folders""#))
        #expect(!text.contains("Secret Folder Name"))
        // The failed insert's span carries its error.
        let failed = try #require(logged.first { "\($0.message)" == "span INSERT" && $0.metadata["error.type"] != nil })
        #expect(failed.metadata["error.type"]?.description == "foreign_key_violation")
        #expect(failed.metadata["status"]?.description == "error")
    }
}
