import Foundation
import Testing
import UnityORM

/// ORM queries observed (`QuerySet.observe()`): the current objects first, then new ones after
/// a commit made through another `Database` on the same SQLite file or PostgreSQL schema (it
/// stands for another process), a commit to a table joined for a filter across a foreign key
/// included; never for a rollback or a write to a table the query does not read; each result
/// is made of new objects; a session's uncommitted work is not seen; cancelling ends it.
@Suite struct ORMObservationTests {
    typealias Dog = AmigoSeed.Dog
    typealias Person = AmigoSeed.Person

    /// Dogs Lucy (1) and Rex (2); people Foo (1) → Lucy, Bar (2) → Rex; every table with its
    /// change trigger, and an unrelated table.
    static func makeAmigo(_ test: TestDatabase) throws -> Amigo {
        let (dog, person) = AmigoSeed.dogPerson()
        let amigo = try Amigo([dog, person], database: test.database)
        try amigo.createAll()
        try installObservedTables(test.database, [], existing: ["dog", "person"])
        let session = try amigo.session
        var dogs: [Dog] = []
        for label in ["Lucy", "Rex"] {
            let dog = Dog()
            dog.label = label
            dogs.append(dog)
        }
        try session.add(dogs)
        for (label, dog) in [("Foo", dogs[0]), ("Bar", dogs[1])] {
            let person = Person()
            person.label = label
            person.dog = dog
            try session.add(person)
        }
        try session.commit()
        return amigo
    }

    /// A person as plain text: id, label and the label of its dog when that was loaded.
    static func describe(_ p: Person) -> String {
        "\(p.id):\(p.label)" + (p.dog.map { "→\($0.label)" } ?? "")
    }

    @Test(arguments: Backend.allCases)
    func aQuerySetFollowsCommitsOfAnotherDatabase(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let amigo = try Self.makeAmigo(test)
        let other = try test.openAgain()
        defer { other.close() }
        // A filter across the foreign key joins the dog table; selectRelated loads the dogs.
        try await expectObservationFollowsCommits(of: test.database, through: other, { deliver in
            let query = amigo.query(Person.self).filter("dog.label = ?", "Lucy").selectRelated("dog").orderBy("label")
            for try await people in try query.observe() { deliver(people.map(Self.describe)) }
        }, first: ["1:Foo→Lucy"], commits: [
            .sql("INSERT INTO person (id, label, dog_id) VALUES (3, 'Baz', 1)", then: ["3:Baz→Lucy", "1:Foo→Lucy"]),
            // A commit to the joined table only: Rex becomes a Lucy, and Bar matches.
            .sql("UPDATE dog SET label = 'Lucy' WHERE id = 2", then: ["2:Bar→Lucy", "3:Baz→Lucy", "1:Foo→Lucy"]),
        ], rollBack: {
            try other.write { conn in
                try conn.execute(sql: "DELETE FROM person")
                throw ObservationRollback()
            }
        })
    }

    /// Each result is made of new objects (no identity map); a query made from a session sees
    /// the session's work only once it is committed.
    @Test(arguments: Backend.allCases)
    func resultsAreNewObjectsOfCommittedData(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let amigo = try Self.makeAmigo(test)
        let session = try amigo.session
        let observation = try session.query(Dog.self).orderBy("id").observe()
        let probe = FlavorObservationProbe<[String]> { deliver in
            // The last result's objects are held (not their identifiers): a freed object's
            // address may be given to a new one, which would look like the same object.
            var previous: [Dog] = []
            for try await dogs in observation {
                let shared = dogs.contains { dog in previous.contains { $0 === dog } }
                deliver(dogs.map { "\($0.id):\($0.label)" } + (shared ? ["an object of the last result came again"] : []))
                previous = dogs
            }
        }
        #expect(try await probe.next() == ["1:Lucy", "2:Rex"])

        let max = Dog()
        max.label = "Max"
        try session.add(max)
        #expect(try await probe.staysQuiet(), "a session's uncommitted work was delivered")
        try session.commit()
        #expect(try await probe.next() == ["1:Lucy", "2:Rex", "3:Max"])
        try await test.database.write { conn in try conn.execute(sql: "UPDATE dog SET label = 'Rex II' WHERE id = 2") }
        #expect(try await probe.next() == ["1:Lucy", "2:Rex II", "3:Max"])
        _ = try await probe.cancel()
    }

    /// A bad filter throws when the observation is made, before anything runs.
    @Test(arguments: Backend.allCases)
    func aBadFilterThrowsAtOnce(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let amigo = try Self.makeAmigo(test)
        #expect(throws: ORMError.self) { try amigo.query(Dog.self).filter("nope = 1").observe() }
        #expect(throws: ORMError.self) { try amigo.query(Dog.self).filter("label = = 1").observe() }
    }
}
