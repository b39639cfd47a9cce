import Foundation
import Testing
import Unity

/// How many bind parameters one statement may carry (`SQLDialect.maxBindParameters`): as many
/// as the dialect says work on both backends; on PostgreSQL one more is a typed error that
/// leaves the connection and its transaction usable (libpq used to drop the connection at 7,499).
@Suite("Core: bind parameter limit")
struct CoreBindLimitTests {
    /// `SELECT 1 WHERE 0 NOT IN (?, …)` with `count` values 1…count: one row when it runs.
    func notInQuery(_ count: Int) -> (String, [DatabaseValue]) {
        let placeholders = Array(repeating: "?", count: count).joined(separator: ", ")
        return ("SELECT 1 AS one WHERE 0 NOT IN (\(placeholders))", (1...count).map { .integer(Int64($0)) })
    }

    @Test(arguments: Backend.allCases)
    func theDialectsLimitWorksAndOneMoreIsATypedError(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let limit = db.dialect.maxBindParameters
            #expect(limit == (backend == .postgres ? 7_498 : 32_766))
            let (sql, values) = notInQuery(limit)
            #expect(try db.fetchOne(sql: sql, values)?.decode(Int.self, at: 0) == 1)

            // SQLite's own limit is a compile-time setting (Debian's build takes 250,000), so
            // one more than the dialect's number may run there; PostgreSQL must refuse it.
            guard backend == .postgres else { return }
            try db.write { conn in
                try conn.execute(sql: "CREATE TABLE bind_limit (n INTEGER)")
                try conn.execute(sql: "INSERT INTO bind_limit (n) VALUES (?)", [.integer(1)])
                let (tooMany, tooManyValues) = notInQuery(limit + 1)
                do {
                    _ = try conn.fetchAll(sql: tooMany, tooManyValues)
                    Issue.record("a statement with \(limit + 1) parameters ran")
                } catch DatabaseError.misuse(let message) {
                    #expect(message.contains("7498"))
                }
            }
            // The connection survived, and the refused statement never reached the server, so
            // the transaction was not aborted and committed its row.
            #expect(try db.fetchOne(sql: "SELECT COUNT(*) FROM bind_limit")?.decode(Int.self, at: 0) == 1)
            #expect(try db.fetchOne(sql: sql, values)?.decode(Int.self, at: 0) == 1)
        }
    }
}
