import Foundation
import Testing
import Unity
import UnityRowCoding

/// SQL-first records observed (`Thing.observe(…)`): the current models first, then new ones
/// after a commit made through another `Database` on the same SQLite file or PostgreSQL schema
/// (it stands for another process); never for a rollback or a write to a table the query does
/// not read; cancelling ends the sequence. Both backends.
@Suite struct ModelDefObservationTests {
    @RowCoded
    struct ObsNote: ModelDef, Equatable {
        var id: Int
        var title: String
        var prio: Int
        var existsInDatabase = false
        static let tableName = "obs_note"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// Decoded through `Codable` (no generated coding), to cover the other decoding path.
    struct ObsTag: ModelDef, Equatable {
        var id: Int
        var noteId: Int
        var label: String
        var existsInDatabase = false
        static let tableName = "obs_tag"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        enum CodingKeys: String, CodingKey {
            case id, label, existsInDatabase
            case noteId = "note_id"
        }
    }

    static func note(_ id: Int, _ title: String, _ rank: Int) -> ObsNote {
        ObsNote(id: id, title: title, prio: rank, existsInDatabase: true)
    }

    /// Notes 1 "alpha" (priority 2) and 2 "beta" (priority 1), tag 1 ("red", on note 1), and an
    /// unrelated table; every table with its change trigger.
    static func setUp(_ db: Database) throws {
        try installObservedTables(db, [
            SQLCreateTable("obs_note", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("title", .text, notNull: true),
                SQLColumnDefinition("prio", .int64, notNull: true),
            ]),
            SQLCreateTable("obs_tag", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("note_id", .int64, notNull: true),
                SQLColumnDefinition("label", .text, notNull: true),
            ]),
        ])
        try db.write { conn in
            try conn.execute(sql: "INSERT INTO obs_note (id, title, prio) VALUES (1, 'alpha', 2), (2, 'beta', 1)")
            try conn.execute(sql: "INSERT INTO obs_tag (id, note_id, label) VALUES (1, 1, 'red')")
        }
    }

    @Test(arguments: Backend.allCases)
    func aRawClauseFollowsCommitsOfAnotherDatabase(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try Self.setUp(db)
        let observation = try ObsNote.observe(where: "prio >= ?", 1, orderedBy: [.ascending("id")], in: db)
        let other = try test.openAgain()
        defer { other.close() }
        try await expectObservationFollowsCommits(of: db, through: other, { deliver in
            for try await notes in observation { deliver(notes) }
        }, first: [Self.note(1, "alpha", 2), Self.note(2, "beta", 1)], commits: [
            .sql("INSERT INTO obs_note (id, title, prio) VALUES (3, 'gamma', 5)", "UPDATE obs_note SET prio = 0 WHERE id = 2",
                 then: [Self.note(1, "alpha", 2), Self.note(3, "gamma", 5)]),
        ], rollBack: {
            try other.write { conn in
                try conn.execute(sql: "INSERT INTO obs_note (id, title, prio) VALUES (4, 'rolled back', 9)")
                throw ObservationRollback()
            }
        })
    }

    /// A SELECT with a subquery follows the subquery's table too: a tag added by another
    /// `Database` brings its note into the result.
    @Test(arguments: Backend.allCases)
    func aSubqueryTableIsFollowed(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try Self.setUp(db)
        let tagged = SQLSelect(from: "obs_tag").columns(.expression(.column("note_id"), alias: nil))
            .where(SQLExpression.column("label").equals(.bind(.text("red"))))
        let query = SQLSelect(from: "obs_note").where(.inSubquery(.column("id"), tagged, negated: false))
            .orderBy(SQLOrdering(.column("id")))
        let observation = try ObsNote.observe(query, in: db)
        let probe = FlavorObservationProbe<[ObsNote]> { deliver in
            for try await notes in observation { deliver(notes) }
        }
        #expect(try await probe.next() == [Self.note(1, "alpha", 2)])

        let other = try test.openAgain()
        defer { other.close() }
        try await other.write { conn in try conn.execute(sql: "INSERT INTO obs_tag (id, note_id, label) VALUES (2, 2, 'red')") }
        #expect(try await probe.next() == [Self.note(1, "alpha", 2), Self.note(2, "beta", 1)])

        // The tags themselves, decoded through Codable.
        let tags = try ObsTag.observeAll(orderedBy: [.ascending("id")], in: db)
        let tagProbe = FlavorObservationProbe<[ObsTag]> { deliver in
            for try await list in tags { deliver(list) }
        }
        #expect(try await tagProbe.next() == [ObsTag(id: 1, noteId: 1, label: "red", existsInDatabase: true),
                                              ObsTag(id: 2, noteId: 2, label: "red", existsInDatabase: true)])
        try await other.write { conn in try conn.execute(sql: "DELETE FROM obs_tag WHERE id = 1") }
        #expect(try await tagProbe.next() == [ObsTag(id: 2, noteId: 2, label: "red", existsInDatabase: true)])
        #expect(try await probe.next() == [Self.note(2, "beta", 1)])
        _ = try await tagProbe.cancel()
        _ = try await probe.cancel()
    }

    /// `#Predicate` and `SortDescriptor`, observed; a raw clause with a subquery of its own
    /// needs `tables:`, and says so when it has none.
    @Test(arguments: Backend.allCases)
    func aPredicateIsObservedAndARawSubqueryNeedsItsTables(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try Self.setUp(db)
        let ranked = try ObsNote.observe(matching: #Predicate<ObsNote> { $0.prio > 0 },
                                         orderBy: [SortDescriptor(\.prio, order: .reverse)], limit: 2, in: db)
        let probe = FlavorObservationProbe<[ObsNote]> { deliver in
            for try await notes in ranked { deliver(notes) }
        }
        #expect(try await probe.next() == [Self.note(1, "alpha", 2), Self.note(2, "beta", 1)])
        let other = try test.openAgain()
        defer { other.close() }
        try await other.write { conn in try conn.execute(sql: "UPDATE obs_note SET prio = 7 WHERE id = 2") }
        #expect(try await probe.next() == [Self.note(2, "beta", 7), Self.note(1, "alpha", 2)])
        _ = try await probe.cancel()

        let unnamed = try ObsNote.observe(where: "id IN (SELECT note_id FROM obs_tag)", in: db)
        await #expect(throws: ObservationError.self) {
            for try await _ in unnamed { break }
        }
        let named = try ObsNote.observe(where: "id IN (SELECT note_id FROM obs_tag)", orderedBy: [.ascending("id")],
                                        tables: ["obs_note", "obs_tag"], in: db)
        let namedProbe = FlavorObservationProbe<[ObsNote]> { deliver in
            for try await notes in named { deliver(notes) }
        }
        #expect(try await namedProbe.next() == [Self.note(1, "alpha", 2)])
        try await other.write { conn in try conn.execute(sql: "INSERT INTO obs_tag (id, note_id, label) VALUES (5, 2, 'blue')") }
        #expect(try await namedProbe.next() == [Self.note(1, "alpha", 2), Self.note(2, "beta", 7)])
        _ = try await namedProbe.cancel()
    }
}
