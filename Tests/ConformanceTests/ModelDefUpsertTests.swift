import Foundation
import Testing
import Unity

/// `insertOrIgnore` / `insertOrUpdate` of the SQL-first flavor, on both backends, against the
/// `Gadget` table (primary key `id`, unique nullable `serverId`, `color` NOT NULL, `qty` CHECK ≥ 0).
@Suite
struct ModelDefUpsertTests {
    typealias Gadget = ModelDefDuplicateFixtures.Gadget
    typealias Part = ModelDefDuplicateFixtures.Part

    static func gadgets(_ db: Database) throws -> [Gadget] {
        try Gadget.allInstances(orderedBy: [.ascending("id")], in: db)
    }

    static func stored(_ id: Int, _ serverId: String?, _ name: String?, _ color: String, _ qty: Int) -> Gadget {
        Gadget(id: id, serverId: serverId, name: name, color: color, qty: qty, existsInDatabase: true)
    }

    static func seed(_ db: Database) throws {
        try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
        try Gadget(id: 2, serverId: "s2", name: "two", color: "red", qty: 2).save(in: db)
    }

    @Test(arguments: Backend.allCases)
    func batchOfWhichHalfConflictUpdatesAndInsertsInInputOrder(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Self.seed(db)
            let results = try Gadget.insertOrUpdate([
                Gadget(id: 2, serverId: "s2", name: "two'", color: "blue", qty: 20),
                Gadget(id: 3, serverId: "s3", name: "three", color: "green", qty: 3),
                Gadget(id: 1, serverId: "s1", name: "one'", color: "blue", qty: 10),
                Gadget(id: 4, serverId: nil, name: "four", color: "black", qty: 4),
            ], in: db)
            #expect(results.map(\.outcome) == [.updated, .inserted, .updated, .inserted])
            #expect(results.map(\.value) == [
                Self.stored(2, "s2", "two'", "blue", 20), Self.stored(3, "s3", "three", "green", 3),
                Self.stored(1, "s1", "one'", "blue", 10), Self.stored(4, nil, "four", "black", 4),
            ])
            #expect(try Self.gadgets(db) == [
                Self.stored(1, "s1", "one'", "blue", 10), Self.stored(2, "s2", "two'", "blue", 20),
                Self.stored(3, "s3", "three", "green", 3), Self.stored(4, nil, "four", "black", 4),
            ])

            // The same kind of batch, ignoring conflicts: the taken rows stay as they are and come back as stored.
            let ignored = try Gadget.insertOrIgnore([
                Gadget(id: 5, serverId: "s5", name: "five", color: "red", qty: 5),
                Gadget(id: 1, serverId: "s1", name: "lost", color: "white", qty: 99),
                Gadget(id: 6, serverId: nil, name: "six", color: "red", qty: 6),
                Gadget(id: 3, serverId: "s3", name: "lost", color: "white", qty: 99),
            ], in: db)
            #expect(ignored.map(\.outcome) == [.inserted, .unchanged, .inserted, .unchanged])
            #expect(ignored.map(\.value) == [
                Self.stored(5, "s5", "five", "red", 5), Self.stored(1, "s1", "one'", "blue", 10),
                Self.stored(6, nil, "six", "red", 6), Self.stored(3, "s3", "three", "green", 3),
            ])
            #expect(try Self.gadgets(db).map(\.id) == [1, 2, 3, 4, 5, 6])
            #expect(try Self.gadgets(db).filter { $0.name == "lost" }.isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func aKeyRepeatedInOneBatchMeansWhatOneByOneWould(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            let results = try Gadget.insertOrUpdate([
                Gadget(id: 7, serverId: "s7", name: "first", color: "red", qty: 1),
                Gadget(id: 8, serverId: "s8", name: "other", color: "red", qty: 1),
                Gadget(id: 7, serverId: "s7", name: "second", color: "blue", qty: 2),
            ], in: db)
            #expect(results.map(\.outcome) == [.inserted, .inserted, .updated])
            #expect(results[2].value == Self.stored(7, "s7", "second", "blue", 2))
            #expect(try Self.gadgets(db) == [Self.stored(7, "s7", "second", "blue", 2), Self.stored(8, "s8", "other", "red", 1)])
        }
    }

    @Test(arguments: Backend.allCases)
    func conflictOnTheSecondaryUniqueKeyKeepsTheRowsPrimaryKey(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Self.seed(db)
            let result = try Gadget(id: 90, serverId: "s2", name: "from server", color: "green", qty: 7)
                .insertOrUpdate(onConflict: ["serverId"], in: db)
            #expect(result == Upserted(Self.stored(2, "s2", "from server", "green", 7), outcome: .updated))
            // Only the named columns.
            let named = try Gadget(id: 91, serverId: "s1", name: "renamed", color: "white", qty: 0)
                .insertOrUpdate(onConflict: ["serverId"], updating: ["name"], in: db)
            #expect(named == Upserted(Self.stored(1, "s1", "renamed", "red", 1), outcome: .updated))
            #expect(try Self.gadgets(db) == [Self.stored(1, "s1", "renamed", "red", 1), Self.stored(2, "s2", "from server", "green", 7)])
        }
    }

    @Test(arguments: Backend.allCases)
    func aConditionOnTheExistingRowDeclinesTheUpdate(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Self.seed(db)
            // Update only rows whose stored qty is below 2: row 1 (qty 1) yes, row 2 (qty 2) no.
            let condition = SQLExpression.raw(#""Gadget"."qty" < ?"#, [.integer(2)])
            let results = try Gadget.insertOrUpdate([
                Gadget(id: 1, serverId: "s1", name: "one'", color: "blue", qty: 11),
                Gadget(id: 2, serverId: "s2", name: "two'", color: "blue", qty: 22),
            ], where: condition, in: db)
            #expect(results == [
                Upserted(Self.stored(1, "s1", "one'", "blue", 11), outcome: .updated),
                Upserted(Self.stored(2, "s2", "two", "red", 2), outcome: .unchanged),
            ])
            #expect(try Self.gadgets(db) == [Self.stored(1, "s1", "one'", "blue", 11), Self.stored(2, "s2", "two", "red", 2)])
            // The same through the AST: the existing row's column named with its table.
            let declined = try Gadget(id: 1, serverId: "s1", name: "no", color: "no", qty: 0)
                .insertOrUpdate(where: .binary(.column("Gadget", "name"), .equal, .value("nobody")), in: db)
            #expect(declined == Upserted(Self.stored(1, "s1", "one'", "blue", 11), outcome: .unchanged))
        }
    }

    @Test(arguments: Backend.allCases)
    func nullsInTheConflictColumnsAreDistinct(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            let key = ["serverId"]
            let updated = try Gadget.insertOrUpdate([
                Gadget(id: 1, serverId: nil, name: "a", color: "red", qty: 1),
                Gadget(id: 2, serverId: nil, name: "b", color: "red", qty: 2),
            ], onConflict: key, in: db)
            #expect(updated.map(\.outcome) == [.inserted, .inserted])
            #expect(updated.map(\.value) == [Self.stored(1, nil, "a", "red", 1), Self.stored(2, nil, "b", "red", 2)])
            let ignored = try Gadget(id: 3, serverId: nil, name: "c", color: "red", qty: 3).insertOrIgnore(onConflict: key, in: db)
            #expect(ignored == Upserted(Self.stored(3, nil, "c", "red", 3), outcome: .inserted))
            #expect(try Self.gadgets(db).map(\.id) == [1, 2, 3])
        }
    }

    @Test(arguments: Backend.allCases)
    func ignoringConflictsStillThrowsNotNullAndCheckFailuresAndWritesNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Self.seed(db)
            #expect(throws: DatabaseError.self) {
                try Gadget.insertOrIgnore([
                    Gadget(id: 3, serverId: "s3", name: "fine", color: "red", qty: 3),
                    Gadget(id: 4, serverId: "s4", name: "negative", color: "red", qty: -1),
                ], in: db)
            }
            do {
                try Gadget(id: 4, serverId: "s4", name: "negative", color: "red", qty: -1).insertOrIgnore(in: db)
                Issue.record("a CHECK failure was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .check)
            }
            do {
                try Part(id: 1, label: nil).insertOrIgnore(in: db)
                Issue.record("a NOT NULL failure was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .notNull)
            }
            #expect(try Self.gadgets(db) == [Self.stored(1, "s1", "one", "red", 1), Self.stored(2, "s2", "two", "red", 2)])
            #expect(try Part.count(in: db) == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func aConflictTargetThatIsNoUniqueKeyThrowsAndWritesNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Self.seed(db)
            #expect(throws: DatabaseError.self) {
                try Gadget.insertOrUpdate([
                    Gadget(id: 3, serverId: "s3", name: "three", color: "red", qty: 3),
                    Gadget(id: 1, serverId: "s1", name: "one", color: "white", qty: 9),
                ], onConflict: ["name"], in: db)
            }
            // Another unique key's conflict is not the target's: it throws too.
            do {
                try Gadget.insertOrUpdate([
                    Gadget(id: 3, serverId: "s3", name: "three", color: "red", qty: 3),
                    Gadget(id: 4, serverId: "s1", name: "taken server id", color: "red", qty: 3),
                ], in: db)
                Issue.record("a conflict on another unique key was swallowed")
            } catch DatabaseError.constraintViolation(let kind, _) {
                #expect(kind == .unique)
            }
            #expect(try Self.gadgets(db) == [Self.stored(1, "s1", "one", "red", 1), Self.stored(2, "s2", "two", "red", 2)])
        }
    }
}
