import Foundation
import Testing
import Unity
import UnityPersistable

// The code of UnityPersistable's "Observing queries", compiled and run on both backends.

enum TailorObservationDocs {
    struct Store: Persistable {
        var id: Int?
        var name: String
        static var tableName: String { "stores" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
    }

    struct Hat: Persistable {
        var id: Int?
        var color: String
        var brimSize: Int
        var storeId: Int
        static var tableName: String { "hats" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            color = try databaseRow.read("color")
            brimSize = try databaseRow.read("brim_size")
            storeId = try databaseRow.read("store_id")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
            ["color": color, "brim_size": brimSize, "store_id": storeId]
        }
    }

    static let createStoresAndHats: [SQLStatement] = [
        .createTable(SQLCreateTable("stores", columns: [
            SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("name", .text, notNull: true)])),
        .createTable(SQLCreateTable("hats", columns: [
            SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement), SQLColumnDefinition("color", .text, notNull: true),
            SQLColumnDefinition("brim_size", .int64, notNull: true), SQLColumnDefinition("store_id", .int64, notNull: true)])),
    ]

    static func migrate(_ database: Database) throws {
        let migrator = Migrator(migrations: [
            Migration("create stores and hats", statements: createStoresAndHats),
            Migration.observeChanges(of: ["stores", "hats"]),
        ])
        try migrator.migrate(database)
    }

    /// The brim sizes of the red hats, each result, until there are three.
    static func following(_ database: Database) async throws -> [[Int]] {
        var seen: [[Int]] = []
        let redHats = try Query<Hat>().filter(["color": "red"]).order("brim_size", .orderedAscending).observe(database)
        for try await hats in redHats {
            seen.append(hats.map(\.brimSize))    // [8, 11] now; [8, 11, 14] once a red hat of 14 is committed
            if hats.count == 3 { break }
        }
        return seen
    }

    /// The ids of the hats at Main St, each result, until there is none.
    static func rawJoin(_ database: Database) async throws -> [[Int]] {
        var seen: [[Int]] = []
        let atMain = Query<Hat>().join("JOIN stores ON stores.id = hats.store_id").filter("stores.name = ?", ["Main St"])
        let observed = try atMain.observe(tables: ["hats", "stores"], database)
        for try await hats in observed {
            seen.append(hats.compactMap(\.id).sorted())
            if hats.isEmpty { break }
        }
        return seen
    }
}

@Suite("Documentation: UnityPersistable's Observing queries")
struct PersistableObservationExamples {
    @Test(arguments: Backend.allCases)
    func observingQueries(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try TailorObservationDocs.migrate(db)
        try await db.write { conn in
            try conn.execute(sql: "INSERT INTO stores (name) VALUES ('Main St'), ('Harbour')")
            try conn.execute(sql: "INSERT INTO hats (color, brim_size, store_id) VALUES ('red', 11, 1), ('blue', 9, 1), ('red', 8, 2)")
        }
        let following = Task { try await TailorObservationDocs.following(db) }
        let other = try test.openAgain()
        defer { other.close() }
        try await other.write { conn in try conn.execute(sql: "INSERT INTO hats (color, brim_size, store_id) VALUES ('red', 14, 2)") }
        let seen = try await within(60, "the example to finish") { try await following.value }
        #expect(seen.last == [8, 11, 14])
        #expect(seen.count <= 2 && (seen.count == 1 || seen.first == [8, 11]))

        let joined = Task { try await TailorObservationDocs.rawJoin(db) }
        // Main St is renamed elsewhere: a commit to the joined table alone empties the result.
        try await other.write { conn in try conn.execute(sql: "UPDATE stores SET name = 'High St' WHERE id = 1") }
        let results = try await within(60, "the example to finish") { try await joined.value }
        #expect(results.last == [])
        #expect(results.count <= 2 && (results.count == 1 || results.first == [1, 2]))
    }
}
