import Foundation
import Testing
import UnityState

// The code of UnityState's "Queries and observation", section "Commits made elsewhere",
// compiled and run on both SQL backends (with the Chore of that article).

enum StateFollowingDocs {
    /// The first result reported after a chore was committed through another `Database`.
    static func following(_ database: Unity.Database, commitElsewhere: () throws -> Void) async throws -> [InstanceKey] {
        try Chore.create(in: try SQLDatabase(database), id: 1, title: "Dishes")
        let store = try SQLDatabase(database, changeTriggers: true)     // PostgreSQL: the triggers, installed once
        let shared = ObservableDatabase(wrapping: store)
        let pending = QueryResults(database: shared, descriptor: QueryDescriptor<Chore>(where: \.done == false, sortBy: { $0.title }))
        let changes = pending.updates()

        try commitElsewhere()
        var reported: [InstanceKey] = []
        for await ids in changes {
            reported = ids                       // [1, 2]: the chore committed elsewhere is in the result
            break
        }
        #expect(pending.observationError == nil)
        return reported
    }
}

@Suite("Documentation: UnityState's commits made elsewhere")
struct StateObservationExamples {
    @Test(arguments: Backend.allCases)
    func commitsMadeElsewhere(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let reported = try await within(60, "the example to finish") {
            try await StateFollowingDocs.following(test.database) {
                let other = try test.openAgain()
                defer { other.close() }
                try Chore.create(in: try SQLDatabase(other), id: 2, title: "Laundry", minutes: 45)
            }
        }
        #expect(reported == [1, 2])
    }
}
