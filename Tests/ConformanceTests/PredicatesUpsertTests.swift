import Foundation
import Testing
import Unity
import UnityPredicates

/// A model keyed by its own `id`, with a unique nullable `sku`, over a table with a NOT NULL
/// `name` and a CHECK on `qty`.
struct UGizmo: ManagedObjectConvertible, Equatable {
    var id: Int64 = 0
    var sku: String?
    var name: String?
    var qty = 0
    static let entityName = "ugizmo"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<UGizmo>> = [
        Attribute(\.id, "id"), Attribute(\.sku, "sku", unique: true), Attribute(\.name, "name"), Attribute(\.qty, "qty"),
    ]
}

/// `insertOrIgnore` / `insertOrUpdate` of a `perform`'s context, on both backends.
@Suite struct PredicatesUpsertTests {
    func withGizmos(_ backend: Backend, _ body: (PersistentContainer, Database) throws -> Void) throws {
        try withTestDatabase(backend) { db in
            try db.execute(sql: "CREATE TABLE ugizmo (id BIGINT PRIMARY KEY, sku TEXT UNIQUE, name TEXT NOT NULL, "
                + "qty BIGINT NOT NULL CHECK (qty >= 0))")
            try db.execute(sql: "INSERT INTO ugizmo (id, sku, name, qty) VALUES (1, 'a', 'one', 1), (2, 'b', 'two', 2)")
            try body(PersistentContainer(database: db, models: [UGizmo.self], createsSchema: false), db)
        }
    }

    static func stored(_ c: PersistentContainer) throws -> [UGizmo] {
        try c.perform { ctx in try ctx.fetch(UGizmo.all.sort(\.id)).map { try $0.decode() } }
    }

    static func results(_ r: [Upserted<ManagedObject<UGizmo>>]) throws -> [Upserted<UGizmo>] {
        try r.map { Upserted(try $0.value.decode(), outcome: $0.outcome) }
    }

    @Test(arguments: Backend.allCases)
    func batchOfWhichHalfConflictUpdatesAndInsertsInInputOrder(_ backend: Backend) throws {
        try withGizmos(backend) { c, _ in
            let results = try c.perform { ctx in
                try Self.results(ctx.insertOrUpdate([
                    UGizmo(id: 2, sku: "b", name: "two'", qty: 20), UGizmo(id: 3, sku: "c", name: "three", qty: 3),
                    UGizmo(id: 1, sku: "a", name: "one'", qty: 10), UGizmo(id: 4, sku: nil, name: "four", qty: 4),
                ]))
            }
            #expect(results == [
                Upserted(UGizmo(id: 2, sku: "b", name: "two'", qty: 20), outcome: .updated),
                Upserted(UGizmo(id: 3, sku: "c", name: "three", qty: 3), outcome: .inserted),
                Upserted(UGizmo(id: 1, sku: "a", name: "one'", qty: 10), outcome: .updated),
                Upserted(UGizmo(id: 4, sku: nil, name: "four", qty: 4), outcome: .inserted),
            ])
            #expect(try Self.stored(c) == [
                UGizmo(id: 1, sku: "a", name: "one'", qty: 10), UGizmo(id: 2, sku: "b", name: "two'", qty: 20),
                UGizmo(id: 3, sku: "c", name: "three", qty: 3), UGizmo(id: 4, sku: nil, name: "four", qty: 4),
            ])
            // Ignoring, after a pending insert of the same perform (written first, so its key is taken).
            let ignored = try c.perform { ctx in
                try ctx.insert(UGizmo(id: 5, sku: "e", name: "five", qty: 5))
                return try Self.results(ctx.insertOrIgnore([
                    UGizmo(id: 5, sku: "e", name: "lost", qty: 99), UGizmo(id: 6, sku: "f", name: "six", qty: 6),
                    UGizmo(id: 3, sku: "c", name: "lost", qty: 99),
                ]))
            }
            #expect(ignored == [
                Upserted(UGizmo(id: 5, sku: "e", name: "five", qty: 5), outcome: .unchanged),
                Upserted(UGizmo(id: 6, sku: "f", name: "six", qty: 6), outcome: .inserted),
                Upserted(UGizmo(id: 3, sku: "c", name: "three", qty: 3), outcome: .unchanged),
            ])
            #expect(try Self.stored(c).map(\.id) == [1, 2, 3, 4, 5, 6])
        }
    }

    @Test(arguments: Backend.allCases)
    func conflictOnTheSecondaryUniqueKeyKeepsTheRowsKey(_ backend: Backend) throws {
        try withGizmos(backend) { c, _ in
            let results = try c.perform { ctx in
                try [try ctx.insertOrUpdate(UGizmo(id: 90, sku: "b", name: "from server", qty: 7), onConflict: [\UGizmo.sku]),
                 try ctx.insertOrUpdate(UGizmo(id: 91, sku: "a", name: "renamed", qty: 0), onConflict: [\UGizmo.sku],
                                        updating: [\UGizmo.name])].map { Upserted(try $0.value.decode(), outcome: $0.outcome) }
            }
            #expect(results == [
                Upserted(UGizmo(id: 2, sku: "b", name: "from server", qty: 7), outcome: .updated),
                Upserted(UGizmo(id: 1, sku: "a", name: "renamed", qty: 1), outcome: .updated),
            ])
            #expect(try Self.stored(c) == [UGizmo(id: 1, sku: "a", name: "renamed", qty: 1), UGizmo(id: 2, sku: "b", name: "from server", qty: 7)])
        }
    }

    @Test(arguments: Backend.allCases)
    func aConditionOnTheExistingRowDeclinesTheUpdate(_ backend: Backend) throws {
        try withGizmos(backend) { c, _ in
            let results = try c.perform { ctx in
                try Self.results(ctx.insertOrUpdate([UGizmo(id: 1, sku: "a", name: "one'", qty: 11), UGizmo(id: 2, sku: "b", name: "two'", qty: 22)],
                                                    where: \UGizmo.qty < 2))
            }
            #expect(results == [
                Upserted(UGizmo(id: 1, sku: "a", name: "one'", qty: 11), outcome: .updated),
                Upserted(UGizmo(id: 2, sku: "b", name: "two", qty: 2), outcome: .unchanged),
            ])
            let declined = try c.perform { ctx in
                let r = try ctx.insertOrUpdate(UGizmo(id: 1, sku: "a", name: "no", qty: 0), where: \UGizmo.name == "nobody")
                return Upserted(try r.value.decode(), outcome: r.outcome)
            }
            #expect(declined == Upserted(UGizmo(id: 1, sku: "a", name: "one'", qty: 11), outcome: .unchanged))
            #expect(try Self.stored(c) == [UGizmo(id: 1, sku: "a", name: "one'", qty: 11), UGizmo(id: 2, sku: "b", name: "two", qty: 2)])
        }
    }

    @Test(arguments: Backend.allCases)
    func nullsInTheConflictColumnsAreDistinct(_ backend: Backend) throws {
        try withGizmos(backend) { c, _ in
            let outcomes = try c.perform { ctx in
                try ctx.insertOrUpdate([UGizmo(id: 10, sku: nil, name: "x", qty: 1), UGizmo(id: 11, sku: nil, name: "y", qty: 2)],
                                       onConflict: [\UGizmo.sku]).map(\.outcome)
                    + [try ctx.insertOrIgnore(UGizmo(id: 12, sku: nil, name: "z", qty: 3), onConflict: [\UGizmo.sku]).outcome]
            }
            #expect(outcomes == [.inserted, .inserted, .inserted])
            #expect(try Self.stored(c).map(\.id) == [1, 2, 10, 11, 12])
        }
    }

    @Test(arguments: Backend.allCases)
    func ignoringConflictsStillThrowsNotNullAndCheckFailuresAndWritesNothing(_ backend: Backend) throws {
        try withGizmos(backend) { c, _ in
            do {
                try c.perform { ctx in
                    try ctx.insertOrIgnore([UGizmo(id: 3, sku: "c", name: "fine", qty: 3), UGizmo(id: 4, sku: "d", name: "bad", qty: -1)])
                }
                Issue.record("a CHECK failure was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .check)
            }
            do {
                try c.perform { ctx in try ctx.insertOrIgnore(UGizmo(id: 5, sku: "e", name: nil, qty: 1)) }
                Issue.record("a NOT NULL failure was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .notNull)
            }
            #expect(throws: DatabaseError.self) {
                try c.perform { ctx in try ctx.insertOrUpdate(UGizmo(id: 6, sku: "f", name: "six", qty: 6), onConflict: [\UGizmo.name]) }
            }
            // Inside a perform that goes on: the failed call is undone alone.
            let after = try c.perform { ctx in
                _ = try? ctx.insertOrIgnore([UGizmo(id: 7, sku: "g", name: "seven", qty: 7), UGizmo(id: 8, sku: "h", name: "bad", qty: -8)])
                return try ctx.insertOrIgnore(UGizmo(id: 9, sku: "i", name: "nine", qty: 9)).outcome
            }
            #expect(after == .inserted)
            #expect(try Self.stored(c) == [UGizmo(id: 1, sku: "a", name: "one", qty: 1), UGizmo(id: 2, sku: "b", name: "two", qty: 2),
                                           UGizmo(id: 9, sku: "i", name: "nine", qty: 9)])
        }
    }
}
