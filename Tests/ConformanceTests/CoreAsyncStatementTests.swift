import Foundation
import Testing
import Unity

/// `db.fetchOne` / `db.fetchAll` / `db.execute` exist for async code beside the closures.
@Suite("Core: async one-statement calls")
struct CoreAsyncStatementTests {
    @Test(arguments: Backend.allCases)
    func asyncOneStatementCallsReadAndWrite(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try await db.execute(.createTable(SQLCreateTable("t", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("name", .text),
            ])))
            #expect(try await db.execute(.insert(SQLInsert(into: "t", values: ["id": 1, "name": "one"]))) == 1)
            #expect(try await db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [2, "two"]) == 1)
            let one = try await db.fetchOne(.select(SQLSelect(from: "t").where(SQLExpression.column("id").equals(1))))
            #expect(try one?.decode(String.self, column: "name") == "one")
            let all = try await db.fetchAll(.select(SQLSelect(from: "t").orderBy(SQLExpression.column("id").asc)))
            #expect(try all.map { try $0.decode(String.self, column: "name") } == ["one", "two"])
            #expect(try await db.fetchOne(sql: "SELECT name FROM t WHERE id = ?", [2])?.decode(String.self, at: 0) == "two")
            #expect(try await db.fetchAll(sql: "SELECT id FROM t").count == 2)
            // A raw write through the read form is refused, as in `read { }`.
            await #expect(throws: DatabaseError.self) {
                _ = try await db.fetchAll(sql: "INSERT INTO t (id, name) VALUES (3, 'three') RETURNING id")
            }
            #expect(try await db.fetchAll(sql: "SELECT id FROM t").count == 2)
            // A failing write leaves nothing.
            await #expect(throws: DatabaseError.self) {
                try await db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", [1, "dup"])
            }
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }

    /// The async one-statement calls render their statement on the caller's thread, before
    /// the hand-off: one that cannot be rendered fails there with `.misuse`, and nothing runs.
    @Test(arguments: Backend.allCases)
    func aStatementThatCannotBeRenderedFailsBeforeAnythingRuns(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try await db.execute(.createTable(SQLCreateTable("t", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("name", .text),
            ])))
            func expectMisuse(_ what: String, _ call: () async throws -> Void) async {
                do {
                    try await call()
                    Issue.record("\(what) should be refused")
                } catch let DatabaseError.misuse(message) {
                    #expect(message.contains("empty"), "\(what): \(message)")
                } catch {
                    Issue.record("\(what): expected .misuse, got \(error)")
                }
            }
            await expectMisuse("fetchOne") { _ = try await db.fetchOne(.select(SQLSelect(from: "t").columns(.column("")))) }
            await expectMisuse("fetchAll") { _ = try await db.fetchAll(.select(SQLSelect(from: ""))) }
            await expectMisuse("execute") { _ = try await db.execute(.insert(SQLInsert(into: "t", values: ["": 1]))) }
            #expect(try await db.fetchAll(.select(SQLSelect(from: "t"))).isEmpty)
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }
}
