import Foundation
import Testing
import Unity
import UnityPersistable

private typealias Hat = PersistableFixtures.Hat

/// Behaviours the README states that no other case pins down.
@Suite("Persistable stated behaviours")
struct PersistableBehaviourTests {
    @Test(arguments: Backend.allCases)
    func orderedSameKeepsAscendingOrder(_ backend: Backend) throws {
        try PersistableFixtures.withWorld(backend) { _ in
            try PersistableQueryTests.seedHats()
            #expect(try Query<Hat>().order("brim_size", .orderedSame).order("id", .orderedAscending).allOrThrow()
                .compactMap(\.id) == [5, 1, 2, 3, 4, 6])
            #expect(try Query<Hat>().order("brim_size", .orderedAscending).order("id", .orderedDescending).allOrThrow()
                .compactMap(\.id) == [5, 1, 3, 2, 4, 6])
        }
    }
}
