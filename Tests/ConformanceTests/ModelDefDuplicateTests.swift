import Foundation
import Logging
import Testing
@testable import Unity

/// Models and tables for sModel's duplicate rules: a primary key, a nullable secondary key
/// (an id a server gave the row), columns with defaults and a CHECK.
enum ModelDefDuplicateFixtures {
    struct Gadget: ModelDef, Equatable {
        var id: Int
        var serverId: String?
        var name: String?
        var color: String?
        var qty: Int?

        static let tableName = "Gadget"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.serverId] }
    }

    /// The same table, read and written as a syncable type.
    struct SyncedGadget: ModelDef, Equatable {
        var id: Int
        var serverId: String?
        var name: String?
        var color: String?
        var qty: Int?

        static let tableName = "Gadget"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.serverId] }
        static let syncable = true
    }

    /// Reads `color` (TEXT, default 'grey') as a number: a save that leaves it nil stores
    /// the default, which cannot be read back.
    struct MisreadGadget: ModelDef {
        var id: Int
        var color: Int?

        static let tableName = "Gadget"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// A NOT NULL column without a default.
    struct Part: ModelDef, Equatable {
        var id: Int
        var label: String?

        static let tableName = "Part"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// `Part` read and written as a syncable type.
    struct SyncedPart: ModelDef, Equatable {
        var id: Int
        var label: String?

        static let tableName = "Part"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        static let syncable = true
    }

    /// The flavor's fixture tables, plus these.
    static func migrate(_ db: Database, _ backend: Backend) throws {
        try ModelDefFixtures.migrate(db, backend)
        let integer = backend == .sqlite ? "INTEGER" : "BIGINT"
        try db.write { conn in
            try conn.executeScript("""
            CREATE TABLE "Gadget" (
              "id" \(integer) PRIMARY KEY,
              "serverId" TEXT UNIQUE,
              "name" TEXT,
              "color" TEXT NOT NULL DEFAULT 'grey',
              "qty" \(integer) NOT NULL DEFAULT 0 CHECK ("qty" >= 0)
            );
            CREATE TABLE "Part" ("id" \(integer) PRIMARY KEY, "label" TEXT NOT NULL);
            """)
        }
    }
}

/// `save()` and batches with a key that is already taken, as sModel documents them
/// (ERRATA issue 7): the secondary key first, then the primary key; not syncable: update and
/// throw; syncable: leave and throw; `blindlyReplaceDuplicates`: replace.
extension ModelDefTests {
    typealias Gadget = ModelDefDuplicateFixtures.Gadget
    typealias SyncedGadget = ModelDefDuplicateFixtures.SyncedGadget

    static func gadgets(_ db: Database) throws -> [Gadget] {
        try Gadget.allInstances(orderedBy: [.ascending("id")], in: db)
    }

    @Test(arguments: Backend.allCases)
    func saveDuplicateOnPrimaryKeyUpdatesCommitsAndThrows(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Thing(tid: "tid1", name: "original").save(in: db)
            let updated = Thing(tid: "tid1", name: "second", existsInDatabase: true)
            #expect(throws: ModelError.duplicate(existing: updated)) {
                try Thing(tid: "tid1", name: "second").save(in: db)
            }
            // Committed: a new handle sees it.
            #expect(try Thing.allInstances(in: db) == [updated])
            // A nil value is written as NULL on update.
            #expect(throws: ModelError.duplicate(existing: Thing(tid: "tid1", name: nil, existsInDatabase: true))) {
                try Thing(tid: "tid1", name: nil).save(in: db)
            }
            #expect(try Thing.firstInstanceWhere("tid = ?", "tid1", in: db)?.name == nil)

            // No secondary value: matched on the primary key, the secondary key is updated too.
            try Gadget(id: 1, serverId: "s1", name: "a", color: "red", qty: 1).save(in: db)
            #expect(throws: ModelError.duplicate(existing: Gadget(id: 1, serverId: nil, name: "b", color: "blue", qty: 2, existsInDatabase: true))) {
                try Gadget(id: 1, serverId: nil, name: "b", color: "blue", qty: 2).save(in: db)
            }
            #expect(try Self.gadgets(db) == [Gadget(id: 1, serverId: nil, name: "b", color: "blue", qty: 2, existsInDatabase: true)])
        }
    }

    @Test(arguments: Backend.allCases)
    func saveDuplicateOnSecondaryKeyKeepsTheRowsPrimaryKey(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            try Gadget(id: 2, serverId: "s2", name: "two", color: "red", qty: 2).save(in: db)

            // Secondary key of row 1, a primary key nobody has: row 1 is updated, keeps id 1.
            let one = Gadget(id: 1, serverId: "s1", name: "from server", color: "green", qty: 5, existsInDatabase: true)
            #expect(throws: ModelError.duplicate(existing: one)) {
                try Gadget(id: 77, serverId: "s1", name: "from server", color: "green", qty: 5).save(in: db)
            }
            // Secondary key of row 1, primary key of row 2: row 1 is the duplicate; row 2 stays.
            let oneAgain = Gadget(id: 1, serverId: "s1", name: "again", color: "blue", qty: 6, existsInDatabase: true)
            #expect(throws: ModelError.duplicate(existing: oneAgain)) {
                try Gadget(id: 2, serverId: "s1", name: "again", color: "blue", qty: 6).save(in: db)
            }
            // Primary key of row 2, a new secondary key: row 2 is updated by its primary key,
            // secondary key included.
            let two = Gadget(id: 2, serverId: "s9", name: "moved", color: "red", qty: 0, existsInDatabase: true)
            #expect(throws: ModelError.duplicate(existing: two)) {
                try Gadget(id: 2, serverId: "s9", name: "moved", color: "red", qty: 0).save(in: db)
            }
            #expect(try Self.gadgets(db) == [oneAgain, two])
            // A new key of both kinds is a plain insert that returns the row as stored.
            let three = try Gadget(id: 3, serverId: "s3", name: nil, color: "c", qty: 3).save(in: db)
            #expect(three == Gadget(id: 3, serverId: "s3", name: nil, color: "c", qty: 3, existsInDatabase: true))
            // A nil value is written as NULL (sModel left it out, so the default applied):
            // here the NOT NULL column refuses it, and nothing is written.
            #expect(throws: DatabaseError.self) { try Gadget(id: 4, serverId: "s4", color: nil, qty: 1).save(in: db) }
            #expect(try Gadget.count(in: db) == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func saveDuplicateOfSyncableTypeLeavesTheRow(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try SyncedGadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            try SyncedGadget(id: 2, serverId: "s2", name: "two", color: "red", qty: 2).save(in: db)
            let one = SyncedGadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1, existsInDatabase: true)
            let two = SyncedGadget(id: 2, serverId: "s2", name: "two", color: "red", qty: 2, existsInDatabase: true)
            #expect(throws: ModelError.duplicate(existing: one)) {
                try SyncedGadget(id: 9, serverId: "s1", name: "x", color: "c", qty: 1).save(in: db)
            }
            #expect(throws: ModelError.duplicate(existing: one)) {
                try SyncedGadget(id: 2, serverId: "s1", name: "x", color: "c", qty: 1).save(in: db)
            }
            #expect(throws: ModelError.duplicate(existing: two)) {
                try SyncedGadget(id: 2, serverId: "s7", name: "x", color: "c", qty: 1).save(in: db)
            }
            #expect(throws: ModelError.duplicate(existing: two)) {
                try SyncedGadget(id: 2, serverId: nil, name: "x", color: "c", qty: 1).save(in: db)
            }
            #expect(try SyncedGadget.allInstances(orderedBy: [.ascending("id")], in: db) == [one, two])
            // A model read from the database still updates its own row.
            var edited = one
            edited.name = "edited"
            #expect(try edited.save(in: db) == edited)
        }
    }

    @Test(arguments: Backend.allCases)
    func blindlyReplaceDuplicatesReplacesWithDefaults(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            try Gadget(id: 2, serverId: "s2", name: "two", color: "red", qty: 2).save(in: db)
            DBManager.blindlyReplaceDuplicates = true
            defer { DBManager.blindlyReplaceDuplicates = false }
            // Same primary key: the row becomes the model; nil columns take their defaults.
            let replaced = try Gadget(id: 1, serverId: "s1", name: nil, color: nil, qty: nil).save(in: db)
            #expect(replaced == Gadget(id: 1, serverId: "s1", name: nil, color: "grey", qty: 0, existsInDatabase: true))
            // Secondary key of row 2 under a new primary key: row 2 makes way. A syncable
            // type is replaced too.
            try SyncedGadget(id: 5, serverId: "s2", name: "five", color: "blue", qty: 5).save(in: db)
            #expect(try Self.gadgets(db) == [
                Gadget(id: 1, serverId: "s1", name: nil, color: "grey", qty: 0, existsInDatabase: true),
                Gadget(id: 5, serverId: "s2", name: "five", color: "blue", qty: 5, existsInDatabase: true),
            ])
            // The same in a batch.
            try DBManager.executeStatements([
                Gadget(id: 1, serverId: "s1", name: "batch", color: "pink", qty: 3).createSaveStatement(),
                Gadget(id: 6, serverId: "s2", name: nil, color: nil, qty: nil).createSaveStatement(),
            ], in: db)
            #expect(try Self.gadgets(db) == [
                Gadget(id: 1, serverId: "s1", name: "batch", color: "pink", qty: 3, existsInDatabase: true),
                Gadget(id: 6, serverId: "s2", name: nil, color: "grey", qty: 0, existsInDatabase: true),
            ])
        }
    }

    /// Any error but a duplicate leaves nothing behind, even when it comes from reading the
    /// saved row back.
    @Test(arguments: Backend.allCases)
    func failedSaveLeavesNothingCommitted(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            // Replacing, the row is inserted with the default 'grey', which is not an Int: the
            // read-back fails inside the save's transaction.
            DBManager.blindlyReplaceDuplicates = true
            #expect(throws: DatabaseError.self) {
                try ModelDefDuplicateFixtures.MisreadGadget(id: 2, color: nil).save(in: db)
            }
            DBManager.blindlyReplaceDuplicates = false
            // CHECK on insert, CHECK and NOT NULL on the update of a duplicate.
            #expect(throws: DatabaseError.self) { try Gadget(id: 3, serverId: "s3", qty: -1).save(in: db) }
            #expect(throws: DatabaseError.self) { try Gadget(id: 1, serverId: "s1", name: "x", color: "c", qty: -1).save(in: db) }
            #expect(throws: DatabaseError.self) { try Gadget(id: 9, serverId: "s1", name: "x", color: nil, qty: 1).save(in: db) }
            #expect(throws: DatabaseError.self) { try ModelDefDuplicateFixtures.Part(id: 1, label: nil).save(in: db) }
            #expect(try Self.gadgets(db) == [Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1, existsInDatabase: true)])
            #expect(try ModelDefDuplicateFixtures.Part.count(in: db) == 0)
        }
    }

    /// A batch applies the same rules without throwing; a duplicate may be a row saved
    /// earlier in the same batch.
    @Test(arguments: Backend.allCases)
    func batchHandlesDuplicatesWithoutThrowing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Thing(tid: "a", name: "A").save(in: db)
            try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            try Gadget(id: 2, serverId: "s2", name: "two", color: "red", qty: 2).save(in: db)
            try Gadget(id: 3, serverId: "s3", name: "three", color: "red", qty: 3).save(in: db)
            try DBManager.executeStatements([
                Thing(tid: "a", name: "A2").createSaveStatement(),       // existing: updated
                Thing(tid: "b", name: "B").createSaveStatement(),
                Thing(tid: "b", name: "B2").createSaveStatement(),       // earlier in the batch
                Thing(tid: "b", name: "B3").createSaveStatement(),
                Gadget(id: 50, serverId: "s1", name: "one*", color: "c1", qty: 11).createSaveStatement(), // row 1 by secondary
                Gadget(id: 3, serverId: "s2", name: "two*", color: "c2", qty: 12).createSaveStatement(),  // row 2 by secondary, not row 3
                Gadget(id: 3, serverId: "s9", name: "three*", color: "c3", qty: 13).createSaveStatement(), // row 3 by primary
                Gadget(id: 4, serverId: "s4", name: "four", color: "c", qty: 0).createSaveStatement(),
                Gadget(id: 5, serverId: "s4", name: "four*", color: "c4", qty: 14).createSaveStatement(), // row 4 by secondary
                Gadget(id: 4, serverId: nil, name: "four**", color: "c5", qty: 15).createSaveStatement(), // row 4 by primary
            ], in: db)
            #expect(try Thing.allInstances(orderedBy: [.ascending("tid")], in: db).map(\.name) == ["A2", "B3"])
            #expect(try Self.gadgets(db) == [
                Gadget(id: 1, serverId: "s1", name: "one*", color: "c1", qty: 11, existsInDatabase: true),
                Gadget(id: 2, serverId: "s2", name: "two*", color: "c2", qty: 12, existsInDatabase: true),
                Gadget(id: 3, serverId: "s9", name: "three*", color: "c3", qty: 13, existsInDatabase: true),
                Gadget(id: 4, serverId: nil, name: "four**", color: "c5", qty: 15, existsInDatabase: true),
            ])

            // A row's primary key matches while another model of the run takes its old
            // secondary key afterwards (the order decides): as if saved one at a time.
            try DBManager.executeStatements([
                Gadget(id: 1, serverId: "t1", name: "p", color: "x", qty: 1).createSaveStatement(), // row 1 by primary: s1 -> t1
                Gadget(id: 60, serverId: "s1", name: "q", color: "y", qty: 2).createSaveStatement(), // s1 is free now: inserted
                Gadget(id: 61, serverId: "s2", name: "r", color: "z", qty: 3).createSaveStatement(), // row 2 by secondary
                Gadget(id: 2, serverId: "t2", name: "s", color: "w", qty: 4).createSaveStatement(), // row 2 by primary: s2 -> t2
            ], in: db)
            #expect(try Self.gadgets(db) == [
                Gadget(id: 1, serverId: "t1", name: "p", color: "x", qty: 1, existsInDatabase: true),
                Gadget(id: 2, serverId: "t2", name: "s", color: "w", qty: 4, existsInDatabase: true),
                Gadget(id: 3, serverId: "s9", name: "three*", color: "c3", qty: 13, existsInDatabase: true),
                Gadget(id: 4, serverId: nil, name: "four**", color: "c5", qty: 15, existsInDatabase: true),
                Gadget(id: 60, serverId: "s1", name: "q", color: "y", qty: 2, existsInDatabase: true),
            ])

            // Syncable: duplicates stay as they are, new rows go in.
            let before = try Self.gadgets(db)
            try DBManager.executeStatements([
                SyncedGadget(id: 1, serverId: "zz", name: "no", color: "c", qty: 1).createSaveStatement(),
                SyncedGadget(id: 99, serverId: "s9", name: "no", color: "c", qty: 1).createSaveStatement(),
                SyncedGadget(id: 70, serverId: "n1", name: "new", color: "c", qty: 1).createSaveStatement(),
                SyncedGadget(id: 70, serverId: "n2", name: "no", color: "c", qty: 1).createSaveStatement(),
                SyncedGadget(id: 71, serverId: nil, name: "new 2", color: "c", qty: 1).createSaveStatement(),
                SyncedGadget(id: 71, serverId: nil, name: "no", color: "c", qty: 1).createSaveStatement(),
            ], in: db)
            #expect(try Self.gadgets(db) == before + [
                Gadget(id: 70, serverId: "n1", name: "new", color: "c", qty: 1, existsInDatabase: true),
                Gadget(id: 71, serverId: nil, name: "new 2", color: "c", qty: 1, existsInDatabase: true),
            ])
        }
    }

    /// A syncable duplicate that leaves a NOT NULL column nil is still a duplicate: the row
    /// stays, `save` throws `duplicate` with it (not the NOT NULL error), a batch leaves it and
    /// inserts the rest; a new row with that nil is the NOT NULL error, and rolls back.
    @Test(arguments: Backend.allCases)
    func syncableDuplicateWithNilInANotNullColumnLeavesTheRow(_ backend: Backend) throws {
        typealias Part = ModelDefDuplicateFixtures.Part
        typealias SyncedPart = ModelDefDuplicateFixtures.SyncedPart
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Part(id: 1, label: "one").save(in: db)
            let stored = SyncedPart(id: 1, label: "one", existsInDatabase: true)
            do {
                try SyncedPart(id: 1, label: nil).save(in: db)
                Issue.record("expected duplicate")
            } catch ModelError<SyncedPart>.duplicate(let existing) {
                #expect(existing == stored)
            }
            #expect(try SyncedPart.allInstances(orderedBy: [.ascending("id")], in: db) == [stored])

            try DBManager.executeStatements([
                SyncedPart(id: 2, label: "two").createSaveStatement(),
                SyncedPart(id: 1, label: nil).createSaveStatement(),
                SyncedPart(id: 3, label: "three").createSaveStatement(),
            ], in: db)
            #expect(try SyncedPart.allInstances(orderedBy: [.ascending("id")], in: db).map(\.label)
                    == ["one", "two", "three"])

            // Not a duplicate: the NOT NULL error, and the batch leaves nothing.
            #expect(throws: DatabaseError.self) { try SyncedPart(id: 4, label: nil).save(in: db) }
            #expect(throws: DatabaseError.self) {
                try DBManager.executeStatements([
                    SyncedPart(id: 5, label: "five").createSaveStatement(),
                    SyncedPart(id: 1, label: nil).createSaveStatement(),
                    SyncedPart(id: 4, label: nil).createSaveStatement(),
                ], in: db)
            }
            #expect(try SyncedPart.allInstances(orderedBy: [.ascending("id")], in: db).map(\.id) == [1, 2, 3])
            // Not syncable: the duplicate's update sets the NOT NULL column to NULL, which fails
            // and leaves the row.
            #expect(throws: DatabaseError.self) { try Part(id: 1, label: nil).save(in: db) }
            #expect(try SyncedPart.allInstances(orderedBy: [.ascending("id")], in: db).first == stored)
        }
    }

    /// A real error anywhere in a batch (NOT NULL, CHECK, on an insert or on the update of a
    /// duplicate) rolls all of it back.
    @Test(arguments: Backend.allCases)
    func batchErrorRollsBackDuplicatesToo(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 1, serverId: "s1", name: "one", color: "red", qty: 1).save(in: db)
            let before = try Self.gadgets(db)
            let good = try (10..<30).map { try Gadget(id: $0, serverId: "g\($0)", name: "g", color: "c", qty: 0).createSaveStatement() }
            let update = try Gadget(id: 7, serverId: "s1", name: "changed", color: "c", qty: 1).createSaveStatement()
            let failures: [ModelStatement] = [
                try ModelDefDuplicateFixtures.Part(id: 1, label: nil).createSaveStatement(),      // NOT NULL
                try Gadget(id: 40, serverId: "x", color: "c", qty: -1).createSaveStatement(),     // CHECK on insert
                try Gadget(id: 41, color: "c", qty: -1).createSaveStatement(),                    // CHECK, primary-key path
                try Gadget(id: 42, serverId: "y", color: nil, qty: 1).createSaveStatement(),      // NOT NULL on insert
                try Gadget(id: 8, serverId: "s1", name: "n", color: nil, qty: 1).createSaveStatement(), // NOT NULL on the update
            ]
            for failure in failures {
                #expect(throws: DatabaseError.self) {
                    try DBManager.executeStatements([update] + good[..<10] + [failure] + good[10...], in: db)
                }
                #expect(try Self.gadgets(db) == before)
                #expect(try ModelDefDuplicateFixtures.Part.count(in: db) == 0)
            }
        }
    }

    /// A batch first tries plain INSERTs in a savepoint and, when a key is taken, runs again
    /// with the duplicate rules: inside a transaction of the caller's, that transaction goes on
    /// (on PostgreSQL a failed statement would otherwise abort it), and a duplicate found only
    /// at the end of the batch still leaves the whole batch applied once.
    @Test(arguments: Backend.allCases)
    func batchRetryWithDuplicatesInsideACallersTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Thing(tid: "t99", name: "old").save(in: db)
            try db.write { conn in
                try Thing(tid: "before", name: "b").save(in: db)
                var statements = try (0..<100).map { try Thing(tid: "t\($0)", name: "new").createSaveStatement() }
                statements.append(ModelStatement(sql: "UPDATE \"Thing\" SET name = name || ? WHERE tid = ?", "+", "before"))
                try DBManager.executeStatements(statements, on: conn)
                try Thing(tid: "after", name: "a").save(in: db)
            }
            #expect(try Thing.count(in: db) == 102)
            #expect(try Thing.countWhere("name = ?", "new", in: db) == 100)
            #expect(try Thing.firstInstanceWhere("tid = ?", "before", in: db)?.name == "b+")
            #expect(try Thing.firstInstanceWhere("tid = ?", "after", in: db)?.name == "a")
        }
    }

    /// Thousands of saves with secondary keys, half of them duplicates, some of them twice.
    @Test(arguments: Backend.allCases)
    func largeBatchOfSecondaryKeyDuplicates(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try DBManager.executeStatements(try (0..<1_000).map {
                try Gadget(id: $0, serverId: "s\($0)", name: "old", color: "c", qty: 0).createSaveStatement()
            }, in: db)
            // New primary keys for the server ids 500..<1500: the first 500 match by secondary key.
            var statements = try (500..<1_500).map {
                try Gadget(id: 10_000 + $0, serverId: "s\($0)", name: "new", color: "c", qty: 1).createSaveStatement()
            }
            statements += try (0..<10).map { _ in try Gadget(id: 10_500, serverId: "s500", name: "last", color: "c", qty: 2).createSaveStatement() }
            try DBManager.executeStatements(statements, in: db)
            #expect(try Gadget.count(in: db) == 1_500)
            #expect(try Gadget.countWhere("name = ?", "old", in: db) == 500)
            #expect(try Gadget.firstInstanceWhere("\"serverId\" = ?", "s700", in: db)?.id == 700)
            #expect(try Gadget.firstInstanceWhere("\"serverId\" = ?", "s1200", in: db)?.id == 11_200)
            #expect(try Gadget.firstInstanceWhere("\"serverId\" = ?", "s500", in: db) ==
                Gadget(id: 500, serverId: "s500", name: "last", color: "c", qty: 2, existsInDatabase: true))
        }
    }

    /// A big batch whose only duplicate is its last save: what runs before it runs once, as
    /// plain INSERTs, and only the end of the batch runs again with the duplicate rules (one
    /// multi-row INSERT … ON CONFLICT). SQLite undoes the refused INSERT alone, with no
    /// savepoint; PostgreSQL first tries the whole batch as one COPY (rolled back), then rolls
    /// back only the last savepoint of ``ModelBatchRunner/statementsPerAttempt`` statements.
    @Test(arguments: Backend.allCases)
    func aLateDuplicateRedoesOnlyTheEndOfTheBatch(_ backend: Backend) throws {
        let captured = Mutexed<[String]>([])
        var logger = Logger(label: "unity.test.batch") { _ in CapturingLogHandler(captured) }
        logger.logLevel = .info
        try withTestDatabase(backend, configuration: DatabaseConfiguration(echo: true, logger: logger)) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 7, serverId: nil, name: "old", color: "red", qty: 1).save(in: db)
            let segment = ModelBatchRunner.statementsPerAttempt
            let fresh = 3 * segment + 4
            var statements = try (0..<fresh).map {
                try Gadget(id: 100 + $0, serverId: nil, name: "n\($0)", color: "c", qty: $0 % 5).createSaveStatement()
            }
            statements.append(try Gadget(id: 7, serverId: nil, name: "new", color: "blue", qty: 2).createSaveStatement())
            captured.mutate { $0.removeAll() }
            try DBManager.executeStatements(statements, in: db)

            let lines = captured.value
            let onConflict = lines.filter { $0.contains("ON CONFLICT") }
            #expect(onConflict.count == 1)
            switch backend {
            case .sqlite:
                #expect(!lines.contains { $0.contains("SAVEPOINT") })
                // The rules ran for the refused INSERT's rows only: the last chunk.
                let chunk = ModelBatchRunner(dialect: .sqlite).maxRowsPerInsert
                #expect(onConflict.first.map { $0.components(separatedBy: "(?").count - 1 } == (fresh + 1) % chunk)
            case .postgres:
                // The whole batch's COPY rolled back; then three attempts kept (a COPY each)
                // and the fourth (five INSERTs) rolled back; every savepoint released, after
                // its rollback too.
                #expect(lines.filter { $0.hasPrefix("COPY") }.count == 1 + 3)
                #expect(lines.filter { $0.hasPrefix("RELEASE") }.count == 1 + 4)
                #expect(lines.filter { $0.hasPrefix("ROLLBACK") }.count == 2)
            }
            #expect(try Gadget.count(in: db) == fresh + 1)
            #expect(try Gadget.firstInstanceWhere("id = ?", 7, in: db) ==
                Gadget(id: 7, serverId: nil, name: "new", color: "blue", qty: 2, existsInDatabase: true))
            #expect(try Gadget.firstInstanceWhere("id = ?", 100 + 2 * segment + 1, in: db) ==
                Gadget(id: 100 + 2 * segment + 1, serverId: nil, name: "n\(2 * segment + 1)", color: "c",
                       qty: (2 * segment + 1) % 5, existsInDatabase: true))
            #expect(try Gadget.countWhere("qty = ?", 4, in: db) == fresh / 5)
        }
    }

    /// A big batch of new models with no taken key: one COPY in one savepoint on PostgreSQL
    /// (not one per ``ModelBatchRunner/statementsPerAttempt`` statements), the rows as given.
    @Test(arguments: Backend.allCases)
    func aBigBatchOfNewModelsIsOneLoad(_ backend: Backend) throws {
        let captured = Mutexed<[String]>([])
        var logger = Logger(label: "unity.test.batch") { _ in CapturingLogHandler(captured) }
        logger.logLevel = .info
        try withTestDatabase(backend, configuration: DatabaseConfiguration(echo: true, logger: logger)) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            let fresh = 2 * ModelBatchRunner.statementsPerAttempt + 3
            let statements = try (0..<fresh).map {
                try Gadget(id: 100 + $0, serverId: nil, name: $0 % 4 == 0 ? nil : "n\($0)", color: "c", qty: $0 % 5).createSaveStatement()
            }
            captured.mutate { $0.removeAll() }
            try DBManager.executeStatements(statements, in: db)

            let lines = captured.value
            #expect(!lines.contains { $0.contains("ON CONFLICT") })
            switch backend {
            case .sqlite:
                #expect(!lines.contains { $0.contains("SAVEPOINT") || $0.hasPrefix("COPY") })
            case .postgres:
                #expect(lines.filter { $0.hasPrefix("COPY") }.count == 1)
                #expect(lines.filter { $0.hasPrefix("SAVEPOINT") }.count == 1)
                #expect(lines.filter { $0.hasPrefix("ROLLBACK") }.count == 0)
            }
            #expect(try Gadget.count(in: db) == fresh)
            #expect(try Gadget.firstInstanceWhere("id = ?", 100, in: db) ==
                Gadget(id: 100, serverId: nil, name: nil, color: "c", qty: 0, existsInDatabase: true))
            #expect(try Gadget.firstInstanceWhere("id = ?", 100 + fresh - 1, in: db) ==
                Gadget(id: 100 + fresh - 1, serverId: nil, name: "n\(fresh - 1)", color: "c", qty: (fresh - 1) % 5,
                       existsInDatabase: true))
            #expect(try Gadget.countWhere("qty = ?", 4, in: db) == fresh / 5)
        }
    }

    /// A batch with queries between saves, one of them a duplicate: the queries see the rows
    /// saved before them, each once, whether the batch tried the duplicate plainly first or
    /// not.
    @Test(arguments: Backend.allCases)
    func queriesBetweenDuplicatesSeeEachSaveOnce(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefDuplicateFixtures.migrate(db, backend)
            try Gadget(id: 1, serverId: nil, name: "old", color: "red", qty: 1).save(in: db)
            let count = ModelStatement(sql: "SELECT COUNT(*) AS n, MAX(qty) AS q FROM \"Gadget\"")
            var seen: [[Int]] = []
            var nils = 0
            try DBManager.executeStatements([
                try Gadget(id: 2, serverId: nil, name: "a", color: "c", qty: 2).createSaveStatement(),
                count,
                try Gadget(id: 1, serverId: nil, name: "again", color: "c", qty: 9).createSaveStatement(),
                count,
                try Gadget(id: 3, serverId: nil, name: "b", color: "c", qty: 3).createSaveStatement(),
                count,
            ], in: db) { results in
                #expect(results.count == 6)
                for result in results {
                    guard let rows = result else { nils += 1; continue }
                    seen.append(try rows.map { try $0.decode(Int.self, column: "n") } + rows.map { try $0.decode(Int.self, column: "q") })
                }
            }
            #expect(nils == 3)
            #expect(seen == [[2, 2], [2, 9], [3, 9]])
            #expect(try Self.gadgets(db).map(\.name) == ["again", "a", "b"])
        }
    }
}
