import Foundation
import Testing
import Unity

/// Values of the SQL-first flavor as sModel apps declare them: raw-value enums with no
/// conformance of their own, and NULL read into a non-optional property.
@Suite
struct ModelDefValueTests {
    enum Status: Int, Codable, Sendable {
        case active = 1
        case archived = 2
    }

    enum Kind: String, Codable, Sendable {
        case tool
        case toy = "TOY"
    }

    struct Ticket: ModelDef, Equatable {
        var id: Int
        var status: Status
        var kind: Kind
        var previous: Status?
        var count: Int

        static let tableName = "Ticket"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    static func migrate(_ db: Database, _ backend: Backend) throws {
        let integer = backend == .sqlite ? "INTEGER" : "BIGINT"
        try db.write { conn in
            try conn.executeScript("""
            CREATE TABLE "Ticket" ("id" \(integer) PRIMARY KEY, "status" \(integer), "kind" TEXT,
                                   "previous" \(integer), "count" \(integer));
            """)
        }
    }

    @Test(arguments: Backend.allCases)
    func rawValueEnumsAreStoredAsTheirRawValues(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.migrate(db, backend)
            let first = try Ticket(id: 1, status: .archived, kind: .toy, previous: .active, count: 3).save(in: db)
            #expect(first == Ticket(id: 1, status: .archived, kind: .toy, previous: .active, count: 3, existsInDatabase: true))
            try Ticket(id: 2, status: .active, kind: .tool, previous: nil, count: 0).save(in: db)

            // The columns hold the raw values, not JSON.
            let row = try #require(try db.fetchOne(sql: "SELECT status, kind, previous FROM \"Ticket\" WHERE id = 1"))
            #expect(row.values == [.integer(2), .text("TOY"), .integer(1)])
            let second = try #require(try db.fetchOne(sql: "SELECT previous FROM \"Ticket\" WHERE id = 2"))
            #expect(second.values == [.null])

            // Raw values bind in raw WHERE clauses, and batches store them the same way.
            #expect(try Ticket.instancesWhere("status = ?", Status.active.rawValue, in: db).map(\.id) == [2])
            #expect(try Ticket.countWhere("kind = ?", Kind.toy.rawValue, in: db) == 1)
            try DBManager.executeStatements([Ticket(id: 3, status: .archived, kind: .tool, previous: nil, count: 1).createSaveStatement()], in: db)
            #expect(try Ticket.firstInstanceWhere("id = ?", 3, in: db)?.status == .archived)
            #expect(try db.fetchOne(sql: "SELECT status FROM \"Ticket\" WHERE id = 3")?.values == [.integer(2)])
        }
    }

    @Test(arguments: Backend.allCases)
    func unknownRawValueAndNullIntoNonOptionalNameTheColumn(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.migrate(db, backend)
            _ = try db.execute(sql: "INSERT INTO \"Ticket\" (id, status, kind, previous, count) VALUES (1, 9, 'tool', NULL, 0)")
            #expect {
                try Ticket.allInstances(in: db)
            } throws: { error in
                guard case DatabaseError.typeConversion(let failure) = error else { return false }
                return failure.column == "status" && failure.expectedType.contains("Status")
            }
            _ = try db.execute(sql: "UPDATE \"Ticket\" SET status = 1, count = NULL")
            // sModel read 0 here; Unity throws a typed error that names the column.
            #expect {
                try Ticket.firstInstanceWhere("id = ?", 1, in: db)
            } throws: { error in
                guard case DatabaseError.typeConversion(let failure) = error else { return false }
                return failure.column == "count"
            }
            _ = try db.execute(sql: "UPDATE \"Ticket\" SET count = 0, kind = NULL")
            #expect {
                try Ticket.allInstances(in: db)
            } throws: { error in
                guard case DatabaseError.typeConversion(let failure) = error else { return false }
                return failure.column == "kind"
            }
        }
    }
}
