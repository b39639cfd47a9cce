import Foundation
import Testing
import Unity
import UnityPredicates

// The code of UnityPredicates' "Observing requests", compiled and run on both backends.

enum SwormObservationDocs {
    struct Author: ManagedObjectConvertible, Equatable {
        var name = ""
        var email: String?
        static let entityName = "Author"
        static let attributes: Set<Attribute<Author>> = [Attribute(\.name, "name"), Attribute(\.email, "email")]
    }

    static func setUp(_ container: PersistentContainer, _ database: Database) throws {
        try container.createSchema()
        var migrator = Migrator(migrations: [Migration.observeChanges(of: ["Author"])])
        migrator.ignoresOtherAppliedMigrations = true
        try migrator.migrate(database)
    }

    /// The names of the authors, each result, until there are three.
    static func following(_ container: PersistentContainer) async throws -> [[String]] {
        var seen: [[String]] = []
        let authors = try container.observe(Author.all.where(\Author.name != "Anon").sort(\.name))
        for try await list in authors {
            seen.append(list.map(\.name))         // ["Ann", "Bob"] now; ["Ann", "Bob", "Cid"] once Cid is committed
            if list.count == 3 { break }
        }
        return seen
    }

    /// The first result of the authors with an email.
    static func foundation(_ container: PersistentContainer) async throws -> [Author]? {
        let withEmail = try container.observe(Author.all.where(#Predicate<Author> { $0.email != nil }).sort(SortDescriptor(\Author.name)))
        for try await list in withEmail { return list }
        return nil
    }
}

@Suite("Documentation: UnityPredicates' Observing requests")
struct PredicatesObservationExamples {
    typealias Author = SwormObservationDocs.Author

    @Test(arguments: Backend.allCases)
    func observingRequests(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let database = test.database
        let container = PersistentContainer(database: database, models: [Author.self])
        try SwormObservationDocs.setUp(container, database)
        try container.perform { ctx in
            _ = try ctx.insert(Author(name: "Bob"))
            _ = try ctx.insert(Author(name: "Ann", email: "ann@example.com"))
            _ = try ctx.insert(Author(name: "Anon"))
        }
        let following = Task { try await SwormObservationDocs.following(container) }
        let other = try test.openAgain()
        defer { other.close() }
        let elsewhere = PersistentContainer(database: other, models: [Author.self], createsSchema: false)
        try elsewhere.perform { ctx in _ = try ctx.insert(Author(name: "Cid")) }
        let seen = try await within(60, "the example to finish") { try await following.value }
        #expect(seen.last == ["Ann", "Bob", "Cid"])
        #expect(seen.count <= 2 && (seen.count == 1 || seen.first == ["Ann", "Bob"]))
        let withEmail = try await within(60, "the example to finish") { try await SwormObservationDocs.foundation(container) }
        #expect(withEmail == [Author(name: "Ann", email: "ann@example.com")])
    }
}
