import Foundation
import Testing
import Unity
import UnityRowCoding

// The code of the Unity catalog's "Observing SQL-first records", compiled and run on both
// backends, with the default database set for the task (`DefaultDatabase.withDatabase`).

enum SQLFirstObservationDocs {
    @RowCoded
    struct Thing: ModelDef, Equatable {
        var tid: String
        var name: String?
        static let tableName = "Thing"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
    }

    static func migrate(_ database: Database) throws {
        let migrator = Migrator(migrations: [
            Migration("things and tags", statements: [
                .createTable(SQLCreateTable("Thing", columns: [
                    SQLColumnDefinition("tid", .text, primaryKey: .plain), SQLColumnDefinition("name", .text)])),
                .createTable(SQLCreateTable("tag", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("thing_tid", .text, notNull: true)])),
            ]),
            Migration.observeChanges(of: ["Thing", "tag"]),
        ])
        try migrator.migrate(database)
    }

    /// The tids of the named things, each result, until there are two.
    static func following() async throws -> [[String]] {
        var seen: [[String]] = []
        let named = try Thing.observe(where: "name IS NOT NULL", orderedBy: [.ascending("tid")])
        for try await things in named {
            seen.append(things.map(\.tid))           // ["tid1"] now; ["tid1", "tid2"] once tid2 has a name
            if things.count == 2 { break }
        }
        return seen
    }

    /// The first result of a predicate and of a raw subquery with its tables.
    static func firstResults() async throws -> (busy: [Thing]?, tagged: [Thing]?) {
        let busy = try Thing.observe(matching: #Predicate<Thing> { $0.name != nil }, orderBy: [SortDescriptor(\.tid)], limit: 10)
        let tagged = try Thing.observe(where: "tid IN (SELECT thing_tid FROM tag)", tables: ["Thing", "tag"])
        var busyIterator = busy.makeAsyncIterator()
        var taggedIterator = tagged.makeAsyncIterator()
        return (try await busyIterator.next(), try await taggedIterator.next())
    }
}

@Suite("Documentation: Observing SQL-first records")
struct SQLFirstObservationExamples {
    typealias Thing = SQLFirstObservationDocs.Thing

    @Test(arguments: Backend.allCases)
    func observingRecords(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try SQLFirstObservationDocs.migrate(db)
        try await db.write { conn in
            try conn.execute(sql: "INSERT INTO \"Thing\" (tid, name) VALUES ('tid1', 'one'), ('tid2', NULL)")
            try conn.execute(sql: "INSERT INTO tag (id, thing_tid) VALUES (1, 'tid2')")
        }
        try await DefaultDatabase.withDatabase(db) {
            let following = Task { try await SQLFirstObservationDocs.following() }
            let other = try test.openAgain()
            defer { other.close() }
            try await other.write { conn in try conn.execute(sql: "UPDATE \"Thing\" SET name = 'two' WHERE tid = 'tid2'") }
            let seen = try await within(60, "the example to finish") { try await following.value }
            #expect(seen.last == ["tid1", "tid2"])
            #expect(seen.count <= 2 && (seen.count == 1 || seen.first == ["tid1"]))

            let first = try await within(60, "the example to finish") {
                let results = try await SQLFirstObservationDocs.firstResults()
                return [results.busy?.map(\.tid), results.tagged?.map(\.tid)]
            }
            #expect(first == [["tid1", "tid2"], ["tid2"]])
        }
    }
}
