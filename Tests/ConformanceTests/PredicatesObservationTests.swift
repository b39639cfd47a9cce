import Foundation
import Testing
import Unity
import UnityPredicates

/// Requests observed (`container.observe(request)`): the current values first, then new ones
/// after a commit made through another container on another `Database` on the same SQLite file
/// or PostgreSQL schema (it stands for another process), a commit to a related table only
/// included; never for a rollback or a write to a table the request does not read; cancelling
/// ends the sequence. Key-path conditions, `#Predicate` and `SortDescriptor`.
@Suite struct PredicatesObservationTests {
    /// The tables the requests below read: the authors, the books and the link table of
    /// `PAuthor.books` / `PBook.author`.
    static let tables = ["PAuthor", "PBook", "PAuthor_books_PBook_author"]

    /// Ann (ann@example.com) with book A-1, Bob (no email) with B-1.
    static func makeContainer(_ test: TestDatabase) throws -> PersistentContainer {
        let container = PersistentContainer(database: test.database, models: predicateModels)
        try container.createSchema()
        try installObservedTables(test.database, [], existing: tables)
        try container.perform { ctx in
            let ann = try ctx.insert(PAuthor(name: "Ann", email: "ann@example.com"))
            let bob = try ctx.insert(PAuthor(name: "Bob"))
            try ann.books.add(try ctx.insert(PBook(title: "A-1")))
            try bob.books.add(try ctx.insert(PBook(title: "B-1")))
        }
        return container
    }

    @Test(arguments: Backend.allCases)
    func aRequestFollowsCommitsOfAnotherDatabase(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let container = try Self.makeContainer(test)
        let observation = try container.observe(PAuthor.all.where(\PAuthor.name != "Anon").sort(\.name))
        let other = try test.openAgain()
        defer { other.close() }
        let elsewhere = PersistentContainer(database: other, models: predicateModels, createsSchema: false)
        try await expectObservationFollowsCommits(of: test.database, through: other, { deliver in
            for try await authors in observation { deliver(authors) }
        }, first: [PAuthor(name: "Ann", email: "ann@example.com"), PAuthor(name: "Bob")], commits: [
            ObservedCommit({ _ in
                try elsewhere.perform { ctx in
                    _ = try ctx.insert(PAuthor(name: "Anon"))
                    _ = try ctx.insert(PAuthor(name: "Cid", email: "cid@example.com"))
                }
            }, then: [PAuthor(name: "Ann", email: "ann@example.com"), PAuthor(name: "Bob"),
                      PAuthor(name: "Cid", email: "cid@example.com")]),
        ], rollBack: {
            try elsewhere.perform { ctx in
                _ = try ctx.insert(PAuthor(name: "Dee"))
                throw ObservationRollback()
            }
        })
    }

    /// A condition on a relation follows the related table and the link table: a book added
    /// to Ann elsewhere (the books and the link table change), then a title changed (the books
    /// only), change which authors match.
    @Test(arguments: Backend.allCases)
    func aRelationsTablesAreFollowed(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let container = try Self.makeContainer(test)
        let observation = try container.observe(PAuthor.all.where(Query.any(PAuthor.self, \.books, \PBook.title == "B-1")).sort(\.name))
        let probe = FlavorObservationProbe<[String]> { deliver in
            for try await authors in observation { deliver(authors.map(\.name)) }
        }
        #expect(try await probe.next() == ["Bob"])

        let other = try test.openAgain()
        defer { other.close() }
        let elsewhere = PersistentContainer(database: other, models: predicateModels, createsSchema: false)
        try elsewhere.perform { ctx in
            guard let ann = try ctx.fetchOne(PAuthor.all.where(\PAuthor.name == "Ann")) else { return }
            try ann.books.add(try ctx.insert(PBook(title: "B-1")))
        }
        #expect(try await probe.next() == ["Ann", "Bob"])
        try await other.write { conn in try conn.execute(sql: "UPDATE \"PBook\" SET title = 'B-2' WHERE title = 'B-1'") }
        #expect(try await probe.next() == [])
        _ = try await probe.cancel()
    }

    /// `#Predicate` and `SortDescriptor` in an observed request.
    @Test(arguments: Backend.allCases)
    func aFoundationPredicateIsObserved(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let container = try Self.makeContainer(test)
        let request = PAuthor.all.where(#Predicate<PAuthor> { $0.email != nil }).sort(SortDescriptor(\PAuthor.name, order: .reverse))
        let observation = try container.observe(request)
        let probe = FlavorObservationProbe<[PAuthor]> { deliver in
            for try await authors in observation { deliver(authors) }
        }
        #expect(try await probe.next() == [PAuthor(name: "Ann", email: "ann@example.com")])
        let other = try test.openAgain()
        defer { other.close() }
        try await other.write { conn in try conn.execute(sql: "UPDATE \"PAuthor\" SET email = 'bob@example.com' WHERE name = 'Bob'") }
        #expect(try await probe.next() == [PAuthor(name: "Bob", email: "bob@example.com"),
                                           PAuthor(name: "Ann", email: "ann@example.com")])
        _ = try await probe.cancel()
    }
}
