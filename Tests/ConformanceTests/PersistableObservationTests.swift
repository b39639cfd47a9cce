import Foundation
import Testing
import Unity
import UnityPersistable

/// Active-record queries observed (`Query<T>.observe()`): the current records first, then new
/// ones after a commit made through another `Database` on the same SQLite file or PostgreSQL
/// schema (it stands for another process), including a commit to a joined table only; never
/// for a rollback or a write to a table the query does not read; cancelling ends the sequence.
@Suite struct PersistableObservationTests {
    struct ObsShelf: Persistable, Equatable {
        var id: Int?
        var name: String
        static var tableName: String { "obs_shelf" }
        init(id: Int?, name: String) {
            self.id = id
            self.name = name
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
    }

    struct ObsBook: Persistable, Equatable {
        var id: Int?
        var title: String
        var shelfId: Int
        static var tableName: String { "obs_book" }
        init(id: Int?, title: String, shelfId: Int) {
            self.id = id
            self.title = title
            self.shelfId = shelfId
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            title = try databaseRow.read("title")
            shelfId = try databaseRow.read("shelf_id")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["title": title, "shelf_id": shelfId] }
    }

    /// Shelves 1 "fiction" and 2 "poetry"; books 1 "Emma" and 2 "Dracula" on fiction, 3 "Odes"
    /// on poetry; every table with its change trigger.
    static func setUp(_ db: Database) throws {
        try installObservedTables(db, [
            SQLCreateTable("obs_shelf", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("name", .text),
            ]),
            SQLCreateTable("obs_book", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("title", .text, notNull: true),
                SQLColumnDefinition("shelf_id", .int64, notNull: true),
            ]),
        ])
        try db.write { conn in
            try conn.execute(sql: "INSERT INTO obs_shelf (id, name) VALUES (1, 'fiction'), (2, 'poetry')")
            try conn.execute(sql: "INSERT INTO obs_book (id, title, shelf_id) VALUES (1, 'Emma', 1), (2, 'Dracula', 1), (3, 'Odes', 2)")
        }
    }

    static func book(_ id: Int, _ title: String, _ shelf: Int) -> ObsBook { ObsBook(id: id, title: title, shelfId: shelf) }

    @Test(arguments: Backend.allCases)
    func aQueryFollowsCommitsOfAnotherDatabase(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try Self.setUp(db)
        let observation = try Query<ObsBook>().filter(["shelf_id": 1]).order("title", .orderedAscending).observe(db)
        let other = try test.openAgain()
        defer { other.close() }
        try await expectObservationFollowsCommits(of: db, through: other, { deliver in
            for try await books in observation { deliver(books) }
        }, first: [Self.book(2, "Dracula", 1), Self.book(1, "Emma", 1)], commits: [
            .sql("INSERT INTO obs_book (id, title, shelf_id) VALUES (4, 'Beloved', 1)",
                 "UPDATE obs_book SET title = 'Emma (annotated)' WHERE id = 1",
                 then: [Self.book(4, "Beloved", 1), Self.book(2, "Dracula", 1), Self.book(1, "Emma (annotated)", 1)]),
        ], rollBack: {
            try other.write { conn in
                try conn.execute(sql: "DELETE FROM obs_book")
                throw ObservationRollback()
            }
        })
    }

    /// A typed join is followed: renaming a shelf (a commit to the joined table only) changes
    /// which books match. A raw join must name its tables, and says so when it does not.
    @Test(arguments: Backend.allCases)
    func aJoinedTableIsFollowed(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try Self.setUp(db)
        let onFiction = Query<ObsBook>().join(ObsShelf.self, fromColumn: "id", toColumn: "shelf_id")
            .filter(SQLExpression.column("obs_shelf", "name").equals(.bind(.text("fiction"))))
            .order("id", .orderedAscending)
        let observation = try onFiction.observe(db)
        let probe = FlavorObservationProbe<[ObsBook]> { deliver in
            for try await books in observation { deliver(books) }
        }
        #expect(try await probe.next() == [Self.book(1, "Emma", 1), Self.book(2, "Dracula", 1)])
        let other = try test.openAgain()
        defer { other.close() }
        try await other.write { conn in
            try conn.execute(sql: "UPDATE obs_shelf SET name = 'fiction' WHERE id = 2")
            try conn.execute(sql: "UPDATE obs_shelf SET name = 'novels' WHERE id = 1")
        }
        #expect(try await probe.next() == [Self.book(3, "Odes", 2)])
        _ = try await probe.cancel()

        let raw = Query<ObsBook>().join("JOIN obs_shelf ON obs_shelf.id = obs_book.shelf_id")
            .filter("obs_shelf.name = ?", ["novels"]).order("id", .orderedAscending)
        let unnamed = try raw.observe(db)
        await #expect(throws: ObservationError.self) {
            for try await _ in unnamed { break }
        }
        let named = try raw.observe(tables: ["obs_book", "obs_shelf"], db)
        let namedProbe = FlavorObservationProbe<[ObsBook]> { deliver in
            for try await books in named { deliver(books) }
        }
        #expect(try await namedProbe.next() == [Self.book(1, "Emma", 1), Self.book(2, "Dracula", 1)])
        try await other.write { conn in try conn.execute(sql: "UPDATE obs_book SET shelf_id = 2 WHERE id = 2") }
        #expect(try await namedProbe.next() == [Self.book(1, "Emma", 1)])
        _ = try await namedProbe.cancel()
    }

    /// A row that `init(databaseRow:)` rejects ends the sequence with its error, as
    /// `allOrThrow` throws it.
    @Test(arguments: Backend.allCases)
    func aRowTheRecordRejectsEndsTheSequence(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let db = test.database
        try Self.setUp(db)
        // A shelf's name may be NULL in the table, not in the record.
        let observation = try Query<ObsShelf>().order("id", .orderedAscending).observe(db)
        let probe = FlavorObservationProbe<[ObsShelf]> { deliver in
            for try await shelves in observation { deliver(shelves) }
        }
        #expect(try await probe.next() == [ObsShelf(id: 1, name: "fiction"), ObsShelf(id: 2, name: "poetry")])
        let other = try test.openAgain()
        defer { other.close() }
        try await other.write { conn in try conn.execute(sql: "UPDATE obs_shelf SET name = NULL WHERE id = 2") }
        let ending = try await probe.ended()
        guard case .failed(let message)? = ending else {
            Issue.record("a row init(databaseRow:) rejects did not end the sequence: \(String(describing: ending))")
            return
        }
        #expect(message.contains("name"))
    }
}
