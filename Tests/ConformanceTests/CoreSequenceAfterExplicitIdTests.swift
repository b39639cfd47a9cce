import Foundation
import Testing
import Unity
import UnityORM

/// Rows inserted with explicit ids, then a row whose id the database generates: the generated
/// id comes after the explicit ones on both backends (SQLite's AUTOINCREMENT does it itself;
/// on PostgreSQL the driver moves the identity sequence).
@Suite struct CoreSequenceAfterExplicitIdTests {
    static func createTable(_ db: Database) throws {
        try db.write { _ = try $0.execute(sql: "CREATE TABLE seq_item (id \(db.dialect.autoIncrementPrimaryKey), name TEXT NOT NULL)") }
    }

    static func insertExplicit(_ conn: Connection, _ id: Int64) throws {
        _ = try conn.execute(.insert(SQLInsert(into: "seq_item", values: ["id": .integer(id), "name": .text("explicit \(id)")])))
    }

    /// Inserts a row without an id and returns the id it got.
    static func insertGenerated(_ db: Database, _ name: String) throws -> Int64? {
        try db.write { conn in
            _ = try conn.execute(.insert(SQLInsert(into: "seq_item", values: ["name": .text(name)])))
            return try conn.fetchValue(Int64.self, sql: "SELECT id FROM seq_item WHERE name = ?", [.text(name)])
        }
    }

    @Test(arguments: Backend.allCases)
    func generatedIdFollowsExplicitIds(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            try db.write { conn in
                for id in Int64(1)...5 { try Self.insertExplicit(conn, id) }
            }
            #expect(try Self.insertGenerated(db, "generated") == 6)
        }
    }

    @Test(arguments: Backend.allCases)
    func theFirstIdGivenExplicitly(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            // The sequence has not given a value yet: its next one is 1, which is taken.
            try db.write { try Self.insertExplicit($0, 1) }
            #expect(try Self.insertGenerated(db, "generated") == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func explicitIdsOutsideATransactionAndInOneMultiRowInsert(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            // One statement of its own (no transaction around it), then one multi-row INSERT.
            try db.withConnection { try Self.insertExplicit($0, 1) }
            try db.write { conn in
                _ = try conn.execute(.insert(SQLInsert(into: "seq_item", columns: ["id", "name"], values: [
                    [.bind(.integer(2)), .bind(.text("two"))], [.bind(.integer(9)), .bind(.text("nine"))],
                ])))
            }
            #expect(try Self.insertGenerated(db, "generated") == 10)
        }
    }

    @Test(arguments: Backend.allCases)
    func aSequenceAheadOfTheExplicitIdsStaysWhereItIs(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            #expect(try Self.insertGenerated(db, "g1") == 1)
            #expect(try Self.insertGenerated(db, "g2") == 2)
            #expect(try Self.insertGenerated(db, "g3") == 3)
            try db.write { try Self.insertExplicit($0, 10) }
            #expect(try Self.insertGenerated(db, "g4") == 11)
            // An explicit id below the sequence does not move it back.
            try db.write { try Self.insertExplicit($0, 7) }
            #expect(try Self.insertGenerated(db, "g5") == 12)
            let ids = try db.withConnection { try $0.fetchAll(sql: "SELECT id FROM seq_item ORDER BY id").map { try $0.decode(Int64.self, at: 0) } }
            #expect(ids == [1, 2, 3, 7, 10, 11, 12])
        }
    }

    @Test(arguments: Backend.allCases)
    func explicitIdsInABatch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createTable(db)
            try db.write { conn in
                _ = try conn.executeBatch((1...5).map { id in
                    SQLStatement.insert(SQLInsert(into: "seq_item", values: ["id": .integer(Int64(id)), "name": .text("batch \(id)")]))
                })
            }
            #expect(try Self.insertGenerated(db, "generated") == 6)
        }
    }

    @Test(arguments: Backend.allCases)
    func ormAddAfterObjectsSavedWithExplicitKeys(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            let session = try amigo.session
            for id in 1...5 {
                let saved = AmigoSeed.Dog()
                saved.id = id
                saved.label = "explicit \(id)"
                try session.add(saved, upsert: true)
            }
            try session.commit()
            let added = AmigoSeed.Dog()
            added.label = "generated"
            let next = try amigo.session
            try next.add(added)
            try next.commit()
            #expect(added.id == 6)
            let rows = try test.database.fetchAll(sql: "SELECT id, label FROM dog ORDER BY id")
            #expect(rows.map { $0["id"] } == (1...6).map { DatabaseValue.integer(Int64($0)) })
            #expect(rows.last?["label"] == .text("generated"))
        }
    }
}
