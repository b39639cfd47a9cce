import Foundation
import Testing
import UnityState

/// `QueryResults` on the SQL stores follow commits made elsewhere: another `Database` on the
/// same SQLite file or PostgreSQL schema (it stands for another process) writing through a
/// store of its own. A commit that changes the result is reported once; a rollback, another
/// model's write or a write to another table is not; a write made through the observed store
/// is still reported once, not twice; cancelling the consumer ends its stream. On PostgreSQL
/// without the store's change triggers the results say why they cannot follow.
@Suite struct StateCommitFollowingTests {
    typealias Person = StateFixtures.Person
    typealias Pet = StateFixtures.Pet

    /// The SQL backends, each store observed (`ObservableDatabase`) or bare.
    enum Layout: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqliteObserved, sqliteBare, postgresObserved, postgresBare
        var backend: Backend { rawValue.hasPrefix("sqlite") ? .sqlite : .postgres }
        var observed: Bool { rawValue.hasSuffix("Observed") }
        var testDescription: String { rawValue }
    }

    @Test(arguments: Layout.allCases)
    func queryResultsFollowCommitsOfAnotherDatabase(_ layout: Layout) async throws {
        let test = try TestDatabase(layout.backend)
        defer { test.tearDown() }
        let store = try SQLDatabase(test.database, changeTriggers: true)
        try installObservedTables(test.database, [])
        let database: any UnityState.Database = layout.observed ? ObservableDatabase(wrapping: store) : store
        try Person.create(in: database, id: 1, name: "Ann", age: 30)

        let results = QueryResults(database: database, descriptor: QueryDescriptor<Person>(where: \.age >= 30, sortBy: { $0.name }))
        #expect(results.observationError == nil)
        #expect(results.items.map(\.name) == ["Ann"])
        let updates = results.updates()
        let probe = FlavorObservationProbe<[InstanceKey]> { deliver in
            for await ids in updates { deliver(ids) }
        }

        let other = try test.openAgain()
        defer { other.close() }
        let elsewhere = try SQLDatabase(other)
        try Person.create(in: elsewhere, id: 2, name: "Bob", age: 40)
        #expect(try await probe.next() == [1, 2])
        #expect(results.items.map(\.name) == ["Ann", "Bob"])

        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try elsewhere.transaction {
                try Person.create(in: elsewhere, id: 3, name: "Cid", age: 50)
                throw Refused()
            }
        }
        #expect(try await probe.staysQuiet(), "a rolled-back transaction was reported")
        _ = try Pet.create(in: elsewhere, id: 9, name: "not a person")
        #expect(try await probe.staysQuiet(), "another model's write was reported")
        try await other.write { conn in try conn.execute(sql: "INSERT INTO obs_unrelated (id, v) VALUES (1, 'x')") }
        #expect(try await probe.staysQuiet(), "a write to another table was reported")

        // A value changed elsewhere takes Ann out of the filter.
        (elsewhere.get(id: 1) as Person?)?.age = 20
        #expect(try await probe.next() == [2])
        #expect(results.items.map(\.name) == ["Bob"])

        // A write through the observed store itself: reported once.
        try Person.create(in: database, id: 4, name: "Dee", age: 60)
        #expect(try await probe.next() == [2, 4])
        #expect(try await probe.staysQuiet(), "a write through the store was reported twice")

        let ending = try await probe.cancel()
        #expect(ending?.isFinished == true, "cancelling the consumer did not end the stream: \(String(describing: ending))")
    }

    /// Without the store's change triggers, PostgreSQL cannot tell the results about other
    /// clients' commits, and the results say so; SQLite needs none. The in-memory stores have
    /// nothing to follow.
    @Test(arguments: StateStore.allCases)
    func resultsSayWhyTheyCannotFollow(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let results = QueryResults(database: ObservableDatabase(wrapping: fixture.database), descriptor: QueryDescriptor<Person>())
        switch store {
        case .postgres, .postgresHistory:
            guard case .missingChangeTrigger(let table)? = results.observationError as? ObservationError else {
                Issue.record("expected a missing change trigger, got \(String(describing: results.observationError))")
                return
            }
            #expect(["unity_state_instances", "unity_state_values"].contains { table.hasSuffix($0) })
        case .inMemory, .inMemoryHistory, .sqlite, .sqliteHistory:
            #expect(results.observationError == nil)
        }
    }
}
