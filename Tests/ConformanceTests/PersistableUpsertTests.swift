import Foundation
import Testing
import Unity
import UnityPersistable

/// `insertOrIgnore` / `insertOrUpdate` (and their `…All` batches) of the active-record flavor,
/// on both backends.
@Suite
struct PersistableUpsertTests {
    /// A record with a generated id, a unique nullable `sku`, a NOT NULL `name` and a CHECK on `qty`.
    struct Gizmo: Persistable, Equatable {
        var id: Int?
        var sku: String?
        var name: String?
        var qty: Int

        init(id: Int? = nil, sku: String?, name: String?, qty: Int) {
            self.id = id
            self.sku = sku
            self.name = name
            self.qty = qty
        }
        static var tableName: String { "gizmos" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            sku = try databaseRow.read("sku")
            name = try databaseRow.read("name")
            qty = try databaseRow.read("qty")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["sku": sku, "name": name, "qty": qty] }
    }

    static func withGizmos(_ backend: Backend, _ body: (Database) throws -> Void) throws {
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("gizmos", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("sku", .text, unique: true),
                    SQLColumnDefinition("name", .text, notNull: true),
                    SQLColumnDefinition("qty", .int64, notNull: true, check: .binary(.column("qty"), .greaterOrEqual, .literal(.integer(0)))),
                ])))
            }
            _ = try Gizmo.insertAll([Gizmo(id: 1, sku: "a", name: "one", qty: 1), Gizmo(id: 2, sku: "b", name: "two", qty: 2)], db)
            try DefaultDatabase.withDatabase(db) { try body(db) }
        }
    }

    static func stored() throws -> [Gizmo] { try Gizmo.query.order("id", .orderedAscending).allOrThrow() }

    @Test(arguments: Backend.allCases)
    func batchOfWhichHalfConflictUpdatesAndInsertsInInputOrder(_ backend: Backend) throws {
        try Self.withGizmos(backend) { _ in
            let results = try Gizmo.insertOrUpdateAll([
                Gizmo(id: 2, sku: "b", name: "two'", qty: 20),
                Gizmo(id: 3, sku: "c", name: "three", qty: 3),
                Gizmo(id: 1, sku: "a", name: "one'", qty: 10),
                Gizmo(id: 4, sku: nil, name: "four", qty: 4),
            ])
            #expect(results.map(\.outcome) == [.updated, .inserted, .updated, .inserted])
            #expect(results.map(\.value) == [
                Gizmo(id: 2, sku: "b", name: "two'", qty: 20), Gizmo(id: 3, sku: "c", name: "three", qty: 3),
                Gizmo(id: 1, sku: "a", name: "one'", qty: 10), Gizmo(id: 4, sku: nil, name: "four", qty: 4),
            ])
            #expect(try Self.stored() == [
                Gizmo(id: 1, sku: "a", name: "one'", qty: 10), Gizmo(id: 2, sku: "b", name: "two'", qty: 20),
                Gizmo(id: 3, sku: "c", name: "three", qty: 3), Gizmo(id: 4, sku: nil, name: "four", qty: 4),
            ])
            // Ignoring: records without an id are inserted with the next one (the sequence is
            // ahead of the explicit ids), the taken ones come back as stored.
            let ignored = try Gizmo.insertOrIgnoreAll([
                Gizmo(id: 1, sku: "a", name: "lost", qty: 99),
                Gizmo(sku: "e", name: "five", qty: 5),
                Gizmo(id: 3, sku: "c", name: "lost", qty: 99),
            ])
            #expect(ignored == [
                Upserted(Gizmo(id: 1, sku: "a", name: "one'", qty: 10), outcome: .unchanged),
                Upserted(Gizmo(id: 5, sku: "e", name: "five", qty: 5), outcome: .inserted),
                Upserted(Gizmo(id: 3, sku: "c", name: "three", qty: 3), outcome: .unchanged),
            ])
            #expect(try Self.stored().map(\.id) == [1, 2, 3, 4, 5])
        }
    }

    @Test(arguments: Backend.allCases)
    func conflictOnTheSecondaryUniqueKeyKeepsTheRowsId(_ backend: Backend) throws {
        try Self.withGizmos(backend) { _ in
            let result = try Gizmo(sku: "b", name: "from server", qty: 7).insertOrUpdate(onConflict: ["sku"])
            #expect(result == Upserted(Gizmo(id: 2, sku: "b", name: "from server", qty: 7), outcome: .updated))
            let named = try Gizmo(id: 77, sku: "a", name: "renamed", qty: 0).insertOrUpdate(onConflict: ["sku"], updating: ["name"])
            #expect(named == Upserted(Gizmo(id: 1, sku: "a", name: "renamed", qty: 1), outcome: .updated))
            #expect(try Self.stored() == [Gizmo(id: 1, sku: "a", name: "renamed", qty: 1), Gizmo(id: 2, sku: "b", name: "from server", qty: 7)])
        }
    }

    @Test(arguments: Backend.allCases)
    func aConditionOnTheExistingRowDeclinesTheUpdate(_ backend: Backend) throws {
        try Self.withGizmos(backend) { _ in
            // Only a stored row whose qty is below 2: row 1 yes, row 2 no.
            let results = try Gizmo.insertOrUpdateAll([
                Gizmo(id: 1, sku: "a", name: "one'", qty: 11),
                Gizmo(id: 2, sku: "b", name: "two'", qty: 22),
            ], where: Gizmo.query.filter("\"gizmos\".\"qty\" < ?", [2]))
            #expect(results == [
                Upserted(Gizmo(id: 1, sku: "a", name: "one'", qty: 11), outcome: .updated),
                Upserted(Gizmo(id: 2, sku: "b", name: "two", qty: 2), outcome: .unchanged),
            ])
            // A dictionary filter names the column with its table already.
            let declined = try Gizmo(id: 1, sku: "a", name: "no", qty: 0).insertOrUpdate(where: Gizmo.query.filter(["name": "nobody"]))
            #expect(declined == Upserted(Gizmo(id: 1, sku: "a", name: "one'", qty: 11), outcome: .unchanged))
            #expect(try Self.stored() == [Gizmo(id: 1, sku: "a", name: "one'", qty: 11), Gizmo(id: 2, sku: "b", name: "two", qty: 2)])
        }
    }

    @Test(arguments: Backend.allCases)
    func nullsInTheConflictColumnsAreDistinct(_ backend: Backend) throws {
        try Self.withGizmos(backend) { _ in
            let results = try Gizmo.insertOrUpdateAll([
                Gizmo(id: 10, sku: nil, name: "x", qty: 1),
                Gizmo(id: 11, sku: nil, name: "y", qty: 2),
            ], onConflict: ["sku"])
            #expect(results == [
                Upserted(Gizmo(id: 10, sku: nil, name: "x", qty: 1), outcome: .inserted),
                Upserted(Gizmo(id: 11, sku: nil, name: "y", qty: 2), outcome: .inserted),
            ])
            let ignored = try Gizmo(id: 12, sku: nil, name: "z", qty: 3).insertOrIgnore(onConflict: ["sku"])
            #expect(ignored.outcome == .inserted)
            #expect(try Self.stored().map(\.id) == [1, 2, 10, 11, 12])
        }
    }

    @Test(arguments: Backend.allCases)
    func ignoringConflictsStillThrowsNotNullAndCheckFailuresAndWritesNothing(_ backend: Backend) throws {
        try Self.withGizmos(backend) { _ in
            do {
                try Gizmo.insertOrIgnoreAll([Gizmo(id: 3, sku: "c", name: "fine", qty: 3), Gizmo(id: 4, sku: "d", name: "bad", qty: -1)])
                Issue.record("a CHECK failure was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .check)
            }
            do {
                try Gizmo(id: 5, sku: "e", name: nil, qty: 1).insertOrIgnore()
                Issue.record("a NOT NULL failure was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .notNull)
            }
            // A target that is no unique key: the database refuses it.
            #expect(throws: DatabaseError.self) {
                try Gizmo.insertOrUpdateAll([Gizmo(id: 6, sku: "f", name: "six", qty: 6)], onConflict: ["name"])
            }
            #expect(try Self.stored() == [Gizmo(id: 1, sku: "a", name: "one", qty: 1), Gizmo(id: 2, sku: "b", name: "two", qty: 2)])
        }
    }
}
