import DriverPostgres
import Foundation
import Testing

/// The server the PostgreSQL tests run against. A test that needs PostgreSQL and does not
/// find it fails (it never skips): CI must not pass without a database.
enum TestServer {
    static func url() throws -> String {
        try #require(
            ProcessInfo.processInfo.environment["UNITY_POSTGRES_URL"],
            "UNITY_POSTGRES_URL is not set: run the tests with scripts/test (or scripts/with-postgres swift test), which starts a throwaway PostgreSQL server"
        )
    }
}

/// A schema of its own for one test, dropped when the test ends, so tests can run in
/// parallel against one database.
final class TestSchema {
    let name: String
    let url: String
    let driver: PostgresDriver
    /// A connection outside the schema's search path, for setup and for killing others.
    let admin: any DriverConnection

    init() throws {
        url = try TestServer.url()
        name = "unity_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(20)
        admin = try PostgresDriver(url).connect(role: .writer)
        try admin.executeScript("CREATE SCHEMA \"\(name)\"")
        driver = PostgresDriver(url, connections: 4, searchPath: name)
    }

    func connect() throws -> any DriverConnection {
        try driver.connect(role: .writer)
    }

    func drop() {
        try? admin.executeScript("DROP SCHEMA IF EXISTS \"\(name)\" CASCADE")
        admin.close()
    }
}

/// Runs `body` with a fresh schema and a connection whose search path is that schema.
func withSchema(_ body: (TestSchema, any DriverConnection) throws -> Void) throws {
    let schema = try TestSchema()
    defer { schema.drop() }
    let connection = try schema.connect()
    defer { connection.close() }
    try body(schema, connection)
}

/// All result rows of one statement.
func rows(_ connection: any DriverConnection, _ sql: String, _ bindings: [DatabaseValue] = []) throws -> [Row] {
    var result = [Row]()
    try connection.execute(sql, bindings: bindings) { result.append($0) }
    return result
}

/// The single value of a one-row, one-column query.
func scalar(_ connection: any DriverConnection, _ sql: String, _ bindings: [DatabaseValue] = []) throws -> DatabaseValue {
    let result = try rows(connection, sql, bindings)
    try #require(result.count == 1, "expected one row from \(sql), got \(result.count)")
    return result[0][0]
}

/// The DatabaseError `body` throws, or nil (recording an issue) when it throws nothing or
/// something else.
func databaseError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> DatabaseError? {
    do {
        try body()
        Issue.record("expected a DatabaseError, but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as DatabaseError {
        return error
    } catch {
        Issue.record("expected a DatabaseError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
