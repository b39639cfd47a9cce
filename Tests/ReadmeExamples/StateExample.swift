import Foundation
import Testing
import Unity
import UnityState

// From the state flavor's example. `Unity` and `UnityState` both declare a `Database`, so
// this file says `Unity.Database` for the core's.
@Model(id: 1)
final class Player {
    @Property(id: 1) var name: String
    @Property(id: 2) var score: Int = 0
    @Reference(id: 3) var rival: Player?
}

func leaders(in core: Unity.Database) throws -> [String] {
    let store = try SQLDatabase(core)      // or InMemoryDatabase(), or SQLHistoryDatabase(core)
    let ann = try Player.create(in: store, id: 1, name: "Ann")
    let bo = try Player.create(in: store, id: 2, name: "Bo")
    ann.score = 42
    bo.rival = ann
    return try store.all(Player.self, matching: \.score > 10).map(\.name)
}

@Suite("README: the state flavor's example")
struct ReadmeStateExampleTests {
    @Test(arguments: Backend.allCases)
    func state(_ backend: Backend) throws {
        #expect(try withTestDatabase(backend) { try leaders(in: $0) } == ["Ann"])
        let names = try withTestDatabase(backend) { (core: Unity.Database) throws -> [String?] in
            _ = try leaders(in: core)
            let store = try SQLDatabase(core)
            let bo: Player? = store.get(id: 2)
            return [bo?.rival?.name, bo.map { String($0.score) }]
        }
        #expect(names == ["Ann", "0"])
    }
}
