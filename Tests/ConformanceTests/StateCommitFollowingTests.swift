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
        let other = try test.openAgain()
        defer { other.close() }
        let elsewhere = try SQLDatabase(other)
        // The results report changes only: nothing comes before the first commit. The
        // results keep following while they live, after the stream ends too.
        try await expectObservationFollowsCommits(of: test.database, through: other, { deliver in
            for await ids in updates { deliver(ids) }
        }, first: nil as [InstanceKey]?, commits: [
            ObservedCommit({ _ in try Person.create(in: elsewhere, id: 2, name: "Bob", age: 40) }, then: [1, 2],
                           afterwards: { #expect(results.items.map(\.name) == ["Ann", "Bob"]) }),
            // A value changed elsewhere takes Ann out of the filter.
            ObservedCommit({ _ in (elsewhere.get(id: 1) as Person?)?.age = 20 }, then: [2],
                           afterwards: { #expect(results.items.map(\.name) == ["Bob"]) }),
            // A write through the observed store itself: reported once.
            ObservedCommit({ _ in try Person.create(in: database, id: 4, name: "Dee", age: 60) }, then: [2, 4]),
        ], rollBack: {
            try elsewhere.transaction {
                try Person.create(in: elsewhere, id: 3, name: "Cid", age: 50)
                throw ObservationRollback()
            }
        }, quietWrites: [
            ("another model's write", { _ = try Pet.create(in: elsewhere, id: 9, name: "not a person") }),
        ], checksRelease: false)
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
