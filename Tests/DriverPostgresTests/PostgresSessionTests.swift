import DriverPostgres
import Foundation
import Testing

/// Unity pins the session settings its encoding and decoding rely on. A server, database,
/// role or client environment that says otherwise (here: non-UTC zones, one with a historical
/// offset in seconds) must not change what a value is stored or read back as — also after
/// the pool replaced a terminated connection.
@Suite("PostgreSQL session settings are pinned")
struct PostgresSessionTests {
    /// Where the foreign setting comes from.
    enum Source: String, CaseIterable, CustomTestStringConvertible {
        /// The startup `options` PGOPTIONS (and PGTZ, PGDATESTYLE) send.
        case startupOptions
        /// `ALTER DATABASE … SET`.
        case database
        /// `ALTER ROLE … SET`.
        case role
        var testDescription: String { rawValue }
    }

    static let zones = ["Asia/Kathmandu", "America/Sao_Paulo", "Africa/Monrovia"]

    /// Instants whose local time differs from UTC in every zone above (Monrovia was
    /// −00:44:30 until 1972), and midnights for the `date` column.
    static let instants: [Date] = [
        Date(timeIntervalSinceReferenceDate: 189_302_400),  // 2007-01-01 00:00:00Z
        Date(timeIntervalSinceReferenceDate: -14_197 * 86_400),  // 1962-02-18 00:00:00Z
        Date(timeIntervalSinceReferenceDate: -14_197 * 86_400 + 45_296.25),  // 1962-02-18 12:34:56.25Z
        Date(timeIntervalSinceReferenceDate: 1_130_000_000),  // 2036-10-22 16:53:20Z (Sao Paulo DST rules)
    ]
    static let storedText = ["2007-01-01 00:00:00", "1962-02-18 00:00:00", "1962-02-18 12:34:56.25", "2036-10-22 16:53:20"]

    static func url(_ base: String, options: String) -> String {
        let encoded = options.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? options
        return base + (base.contains("?") ? "&" : "?") + "options=" + encoded
    }

    /// The database a URL names (`postgresql://user@host:port/db?…` → `db`): the tests work in
    /// whatever database `UNITY_POSTGRES_URL` names, never one of their own choosing.
    static func databaseName(of url: String) throws -> String {
        var rest = Substring(url)
        if let query = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<query] }
        guard let scheme = rest.range(of: "://") else {
            throw DatabaseError.misuse("UNITY_POSTGRES_URL must be a postgresql:// URL for these tests: \(url)")
        }
        rest = rest[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/"), rest.index(after: slash) < rest.endIndex else {
            throw DatabaseError.misuse("UNITY_POSTGRES_URL names no database: \(url)")
        }
        return String(rest[rest.index(after: slash)...]).removingPercentEncoding ?? String(rest[rest.index(after: slash)...])
    }

    /// `base` with another database and, when given, another user; its query is kept.
    static func replacingDatabase(_ base: String, user: String?, database: String) -> String {
        // postgresql://postgres@host:port/db[?…] → postgresql://user@host:port/database[?…]
        var url = base
        var query = ""
        if let start = url.firstIndex(of: "?") {
            query = String(url[start...])
            url = String(url[..<start])
        }
        if let slash = url.range(of: "/", options: .backwards), !url[..<slash.lowerBound].hasSuffix("/") {
            url = String(url[..<slash.lowerBound])
        }
        if let user, let at = url.firstIndex(of: "@"), let scheme = url.range(of: "://") {
            url = String(url[..<scheme.upperBound]) + user + String(url[at...])
        }
        return url + "/" + database + query
    }

    /// Every pinned setting reads as Unity set it.
    func expectPinned(_ conn: Connection) throws {
        let expected = [
            "TimeZone": "UTC", "DateStyle": "ISO, YMD", "IntervalStyle": "postgres", "client_encoding": "UTF8",
            "standard_conforming_strings": "on", "extra_float_digits": "3",
        ]
        for (name, value) in expected {
            #expect(try conn.fetchValue(String.self, sql: "SELECT current_setting('\(name)')") == value, "\(name)")
        }
    }

    /// Stores the instants through bound `Date`s into timestamp, timestamptz and date columns,
    /// and checks what the server holds and what both result formats read back.
    func expectDatesStable(_ db: Database, table: String) throws {
        try db.write { conn in
            try conn.execute(sql: "CREATE TABLE \(table) (id int, ts timestamp, tstz timestamptz, d date)")
            for (i, instant) in Self.instants.enumerated() {
                try conn.execute(sql: "INSERT INTO \(table) VALUES (?, ?, ?, ?)",
                                 [.integer(Int64(i)), .date(instant), .date(instant), .date(instant)])
            }
        }
        try checkDates(db, table: table)
    }

    func checkDates(_ db: Database, table: String) throws {
        let midnight: (Date) -> Date = { Date(timeIntervalSinceReferenceDate: ($0.timeIntervalSinceReferenceDate / 86_400).rounded(.down) * 86_400) }
        for suffix in ["", ", '1 day'::interval AS forces_text"] {
            let rows = try db.withConnection { try $0.fetchAll(sql: "SELECT id, ts, tstz, d, ts::text AS raw\(suffix) FROM \(table) ORDER BY id") }
            try #require(rows.count == Self.instants.count)
            for (i, row) in rows.enumerated() {
                #expect(try row.decode(Date.self, column: "ts") == Self.instants[i], "timestamp #\(i) \(suffix)")
                #expect(try row.decode(Date.self, column: "tstz") == Self.instants[i], "timestamptz #\(i) \(suffix)")
                #expect(try row.decode(Date.self, column: "d") == midnight(Self.instants[i]), "date #\(i) \(suffix)")
                #expect(try row.decode(String.self, column: "raw") == Self.storedText[i], "stored wall clock #\(i)")
            }
        }
    }

    @Test("timestamp, timestamptz and date keep their Date whatever zone the server, database, role or client asks for",
          arguments: Source.allCases, zones)
    func zoneMatrix(_ source: Source, _ zone: String) throws {
        let base = try TestServer.url()
        let token = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let admin = try Database(driver: PostgresDriver(base, connections: 1))
        defer { admin.close() }
        let url: String
        var cleanup: [String] = []
        switch source {
        case .startupOptions:
            url = Self.url(base, options: "-c TimeZone=\(zone) -c DateStyle=SQL,DMY -c IntervalStyle=sql_standard -c extra_float_digits=0")
        case .database:
            let name = "unity_tz_\(token)"
            try admin.withConnection { _ = try $0.execute(sql: "CREATE DATABASE \(name)") }
            cleanup.append("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            try admin.withConnection {
                _ = try $0.execute(sql: "ALTER DATABASE \(name) SET TimeZone TO '\(zone)'")
                _ = try $0.execute(sql: "ALTER DATABASE \(name) SET DateStyle TO 'German, DMY'")
            }
            url = Self.replacingDatabase(base, user: nil, database: name)
        case .role:
            let name = "unity_tz_\(token)"
            try admin.withConnection {
                _ = try $0.execute(sql: "CREATE ROLE \(name) LOGIN")
                _ = try $0.execute(sql: "ALTER ROLE \(name) SET TimeZone TO '\(zone)'")
                _ = try $0.execute(sql: "ALTER ROLE \(name) SET IntervalStyle TO 'iso_8601'")
                _ = try $0.execute(sql: "CREATE SCHEMA \(name) AUTHORIZATION \(name)")
            }
            cleanup.append("DROP SCHEMA IF EXISTS \(name) CASCADE")
            cleanup.append("DROP ROLE IF EXISTS \(name)")
            url = Self.replacingDatabase(base, user: name, database: try Self.databaseName(of: base))
        }
        defer {
            for sql in cleanup { _ = try? admin.withConnection { try $0.execute(sql: sql) } }
        }
        let schema = "unity_tz_s_\(token)"
        if source != .role {
            let setup = try Database(driver: PostgresDriver(url, connections: 1))
            try setup.withConnection { _ = try $0.execute(sql: "CREATE SCHEMA \(schema)") }
            setup.close()
        }
        let db = try Database(driver: PostgresDriver(url, connections: 1, searchPath: source == .role ? "unity_tz_\(token)" : schema))
        defer {
            db.close()
            if source == .startupOptions { _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA IF EXISTS \(schema) CASCADE") } }
        }
        // The foreign setting is there underneath: RESET would bring it back.
        #expect(try db.withConnection { try $0.fetchValue(String.self, sql: "SELECT reset_val FROM pg_settings WHERE name = 'TimeZone'") } == zone)
        try db.withConnection { try expectPinned($0) }
        try expectDatesStable(db, table: "dates")

        // A reconnect: the server ends the pool's only connection; the new one is pinned too.
        let pid = try #require(try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") })
        let killed = try admin.withConnection {
            try $0.fetchValue(Bool.self, sql: "SELECT pg_terminate_backend(CAST(? AS INTEGER), 30000)", [.integer(Int64(pid))])
        }
        #expect(killed == true)
        var newPid: Int?
        for _ in 0..<2 where newPid == nil {
            // At most the first call after the loss may fail with .connectionLost.
            do {
                newPid = try db.withConnection { try $0.fetchValue(Int.self, sql: "SELECT pg_backend_pid()") }
            } catch DatabaseError.connectionLost {
                continue
            }
        }
        #expect(newPid != nil && newPid != pid)
        try db.withConnection { try expectPinned($0) }
        try checkDates(db, table: "dates")
    }

    @Test("a search path schema name over 63 bytes is refused, never truncated by the server")
    func longSearchPath() throws {
        let url = try TestServer.url()
        do {
            _ = try PostgresDriver(url, searchPath: String(repeating: "s", count: 64)).connect(role: .writer)
            Issue.record("a 64-byte schema name was accepted")
        } catch let error as DatabaseError {
            guard case .misuse = error else {
                Issue.record("expected .misuse, got \(error)")
                return
            }
        }
    }
}
