import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// The backends every conformance case runs on. A case takes a `Backend` argument and is
/// declared `@Test(arguments: Backend.allCases)`, so it runs once on each.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// Where the test PostgreSQL server is: set by scripts/test (scripts/with-postgres).
let postgresURL: String? = ProcessInfo.processInfo.environment["UNITY_POSTGRES_URL"]

/// A database of its own for one test: a fresh SQLite file, or a fresh schema on the test
/// PostgreSQL server, so that tests running in parallel never see each other's rows.
final class TestDatabase: Sendable {
    let backend: Backend
    let database: Database
    /// The schema (PostgreSQL) or file (SQLite) that holds this test's data.
    let location: String
    private let adminURL: String?

    init(_ backend: Backend, readers: Int = 4, connections: Int = 8, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws {
        self.backend = backend
        let token = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        switch backend {
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("unity-tests", isDirectory: true)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            location = dir.appendingPathComponent("t_\(token).sqlite").path
            adminURL = nil
            database = try Database(driver: SQLiteDriver(path: location, readers: readers), configuration: configuration)
        case .postgres:
            guard let url = postgresURL else {
                throw TestSetupError.postgresMissing
            }
            let schema = "t_\(token)"
            location = schema
            adminURL = url
            let admin = try Database(driver: PostgresDriver(url, connections: 1))
            try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
            admin.close()
            database = try Database(driver: PostgresDriver(url, connections: connections, searchPath: location), configuration: configuration)
        }
    }

    /// Another `Database` on the same file or schema, as a second process would open it.
    func openAgain(busyTimeout: Double = 5, configuration: DatabaseConfiguration = DatabaseConfiguration()) throws -> Database {
        switch backend {
        case .sqlite:
            return try Database(driver: SQLiteDriver(path: location, readers: 2, busyTimeout: busyTimeout), configuration: configuration)
        case .postgres:
            guard let url = adminURL else { throw TestSetupError.postgresMissing }
            return try Database(driver: PostgresDriver(url, connections: 2, searchPath: location), configuration: configuration)
        }
    }

    /// Drops everything the test made.
    func tearDown() {
        database.close()
        switch backend {
        case .sqlite:
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: location + suffix)
            }
        case .postgres:
            if let url = adminURL, let admin = try? Database(driver: PostgresDriver(url, connections: 1)) {
                _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(location)\" CASCADE") }
                admin.close()
            }
        }
    }
}

enum TestSetupError: Error, CustomStringConvertible {
    case postgresMissing
    case notAHistoryStore

    var description: String {
        switch self {
        case .postgresMissing:
            return "UNITY_POSTGRES_URL is not set: the conformance suite runs every case on PostgreSQL too. "
                + "Run the tests with scripts/test, which starts a throwaway PostgreSQL server."
        case .notAHistoryStore:
            return "the state store under test keeps no history"
        }
    }
}

/// Runs `body` with a fresh test database (whose ``TestDatabase/openAgain(busyTimeout:configuration:)``
/// opens a second handle) and removes it afterwards.
func withTestDatabaseHandle<T>(_ backend: Backend, _ body: (TestDatabase) throws -> T) throws -> T {
    let test = try TestDatabase(backend)
    defer { test.tearDown() }
    return try body(test)
}

/// Runs `body` with a fresh database on `backend` and removes it afterwards, whatever happens.
func withTestDatabase<T>(_ backend: Backend, readers: Int = 4, connections: Int = 8,
                         configuration: DatabaseConfiguration = DatabaseConfiguration(),
                         _ body: (Database) throws -> T) throws -> T {
    let test = try TestDatabase(backend, readers: readers, connections: connections, configuration: configuration)
    defer { test.tearDown() }
    return try body(test.database)
}

/// The async form of ``withTestDatabase(_:readers:connections:configuration:_:)``.
func withTestDatabase<T>(_ backend: Backend, readers: Int = 4, connections: Int = 8,
                         configuration: DatabaseConfiguration = DatabaseConfiguration(),
                         _ body: (Database) async throws -> T) async throws -> T {
    let test = try TestDatabase(backend, readers: readers, connections: connections, configuration: configuration)
    defer { test.tearDown() }
    return try await body(test.database)
}
