import Foundation
import Testing
import UnityORMFields

// The code of UnityORM's "Observing queries", compiled and run on both backends (with the
// Dog and Person of "Getting started").

enum AmigoObservationDocs {
    static func migrate(_ amigo: Amigo) throws {
        let migrator = Migrator(migrations: [amigo.createAllMigration, Migration.observeChanges(of: amigo.models.map(\.tableName))])
        try migrator.migrate(amigo.database)
    }

    /// The labels of Lucy's people, each result, until there are two.
    static func following(_ amigo: Amigo) async throws -> [[String]] {
        var seen: [[String]] = []
        let people = try amigo.query(Person.self).filter("dog.label = ?", "Lucy").selectRelated("dog").orderBy("label").observe()
        for try await lucysPeople in people {
            seen.append(lucysPeople.map { $0.label + "/" + ($0.dog?.label ?? "-") })   // ["Foo/Lucy"], then ["Bar/Lucy", "Foo/Lucy"]
            if lucysPeople.count == 2 { break }
        }
        return seen
    }
}

@Suite("Documentation: UnityORM's Observing queries")
struct ORMObservationExamples {
    @Test(arguments: Backend.allCases)
    func observingQueries(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let amigo = try Amigo(dogAndPersonModels(), database: test.database)
        try AmigoObservationDocs.migrate(amigo)
        let session = try amigo.session
        let lucy = Dog()
        lucy.label = "Lucy"
        let rex = Dog()
        rex.label = "Rex"
        try session.add(lucy, rex)
        for (label, dog) in [("Foo", lucy), ("Bar", rex)] {
            let person = Person()
            person.label = label
            person.dog = dog
            try session.add(person)
        }
        try session.commit()

        let following = Task { try await AmigoObservationDocs.following(amigo) }
        let other = try test.openAgain()
        defer { other.close() }
        let dogTable = amigo.models[0].tableName
        try await other.write { conn in try conn.execute(sql: "UPDATE \"\(dogTable)\" SET label = 'Lucy' WHERE label = 'Rex'") }
        let seen = try await within(60, "the example to finish") { try await following.value }
        #expect(seen.last == ["Bar/Lucy", "Foo/Lucy"])
        #expect(seen.count <= 2 && (seen.count == 1 || seen.first == ["Foo/Lucy"]))
    }
}
