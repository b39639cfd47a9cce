import BookmarksApp
import DriverPostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import Unity

/// The backends every API test runs on.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres
    var testDescription: String { rawValue }
}

enum TestEnvironment {
    static let values = ProcessInfo.processInfo.environment
    static let underCI = values["CI"] == "true"
    /// The main test server (scripts/with-postgres).
    static let postgresURL = values["UNITY_POSTGRES_URL"]
}

enum TestSetupError: Error, CustomStringConvertible {
    case missing(String)
    var description: String {
        switch self {
        case .missing(let name):
            return "\(name) is not set: run the example's tests with scripts/with-postgres Examples/Bookmarks/scripts/test"
        }
    }
}

/// A database of the test's own: a fresh SQLite file, or a fresh schema on a PostgreSQL server.
struct TestLocation: Sendable {
    let backend: Backend
    let configuration: AppConfiguration
    private let adminURL: String?

    init(_ backend: Backend, postgresURL: String? = TestEnvironment.postgresURL) throws {
        self.backend = backend
        let token = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        switch backend {
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("bookmarks-tests", isDirectory: true)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            configuration = AppConfiguration(databaseURL: dir.appendingPathComponent("b_\(token).sqlite").path,
                                             host: "127.0.0.1", port: 0, connections: 4)
            adminURL = nil
        case .postgres:
            guard let url = postgresURL else { throw TestSetupError.missing("UNITY_POSTGRES_URL") }
            let schema = "b_\(token)"
            let admin = try Database(driver: PostgresDriver(url, connections: 1))
            defer { admin.close() }
            try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
            configuration = AppConfiguration(databaseURL: url, host: "127.0.0.1", port: 0, connections: 4,
                                             postgresSchema: schema)
            adminURL = url
        }
    }

    /// A second handle on the same database, for checking what the service left behind.
    func openInspector() throws -> Database {
        var inspector = configuration
        inspector.connections = 1
        return try openDatabase(inspector, logger: Logger(label: "inspector"))
    }

    func remove() {
        switch backend {
        case .sqlite:
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: configuration.databaseURL + suffix) }
        case .postgres:
            guard let adminURL, let schema = configuration.postgresSchema,
                  let admin = try? Database(driver: PostgresDriver(adminURL, connections: 1)) else { return }
            _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(schema)\" CASCADE") }
            admin.close()
        }
    }
}

var testLogger: Logger {
    var logger = Logger(label: "bookmarks-test")
    logger.logLevel = TestEnvironment.values["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .warning
    return logger
}

/// Starts the service on a database of its own, runs `body` with HummingbirdTesting's live
/// client (a real HTTP connection on loopback) and an inspector handle on the same database,
/// then shuts the service down gracefully and checks that its pool was closed.
func withService(
    _ backend: Backend, postgresURL: String? = TestEnvironment.postgresURL, telemetry: ServiceTelemetry? = nil,
    _ body: @Sendable (any TestClientProtocol, Database) async throws -> Void
) async throws {
    let location = try TestLocation(backend, postgresURL: postgresURL)
    defer { location.remove() }
    let database = try openDatabase(location.configuration, logger: testLogger, telemetry: telemetry)
    let app = try buildApplication(configuration: location.configuration, database: database, logger: testLogger,
                                   telemetry: telemetry)
    let inspector = try location.openInspector()
    defer { inspector.close() }
    try await app.test(.live) { client in try await body(client, inspector) }
    // The live test ends with a graceful shutdown: the server stops, then the pool closes.
    #expect(database.openConnectionCount == 0)
}

// MARK: Requests

extension TestClientProtocol {
    /// Sends `json` (if any) and returns the response.
    func send(_ method: HTTPRequest.Method, _ uri: String, json: String? = nil) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if json != nil { headers[.contentType] = "application/json" }
        return try await executeRequest(uri: uri, method: method, headers: headers,
                                        body: json.map { ByteBuffer(string: $0) })
    }

    /// Creates a folder and returns its id.
    func createFolder(_ name: String) async throws -> String {
        let response = try await send(.post, "/folders", json: #"{"name": "\#(name)"}"#)
        try #require(response.status == .created, "creating folder \(name): \(response.text)")
        return try response.decode(FolderBody.self).id
    }

    /// Creates a bookmark and returns it.
    func createBookmark(folder: String, url: String, title: String, notes: String? = nil) async throws -> BookmarkBody {
        let notesField = notes.map { #", "notes": "\#($0)""# } ?? ""
        let response = try await send(.post, "/bookmarks",
                                      json: #"{"folderId": "\#(folder)", "url": "\#(url)", "title": "\#(title)"\#(notesField)}"#)
        try #require(response.status == .created, "creating \(url): \(response.text)")
        return try response.decode(BookmarkBody.self)
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
    }

    /// The body as a JSON object, for checking fields by name.
    func object() throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(body.readableBytesView))
        return try #require(value as? [String: Any], "not a JSON object: \(text)")
    }
}

/// The API's bookmark, as a client reads it (dates left as text).
struct BookmarkBody: Decodable, Equatable {
    var id: String
    var folderId: String
    var url: String
    var title: String
    var notes: String?
    var createdAt: String
    var updatedAt: String
}

struct FolderBody: Decodable, Equatable {
    var id: String
    var name: String
    var bookmarkCount: Int
}

struct PageBody: Decodable, Equatable {
    var items: [BookmarkBody]
    var total: Int
    var limit: Int
    var offset: Int
}

struct ErrorBody: Decodable, Equatable {
    var error: String
    var message: String
    var fields: [String: String]?
    var constraint: String?
    var existingBookmark: BookmarkBody?
}

/// The rows of `bookmarks` as (folder_id, url, title), sorted, read straight from the table.
func bookmarkRows(_ db: Database) async throws -> [[String]] {
    try await db.read { conn in
        try conn.fetchAll(sql: "SELECT folder_id, url, title FROM bookmarks ORDER BY folder_id, url").map { row in
            [try row.decode(String.self, column: "folder_id"), try row.decode(String.self, column: "url"),
             try row.decode(String.self, column: "title")]
        }
    }
}

/// Waits until `condition` holds, checking every 50 ms, for at most `timeout`; returns whether it held.
func waitUntil(timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while clock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
