import Foundation
import Testing
import UnityState

/// Key-path filters (in SQL on the SQL stores) and query descriptors, on every store.
@Suite struct StateQueryTests {
    typealias Person = StateFixtures.Person

    static func people(_ db: any UnityState.Database) throws {
        try Person.create(in: db, id: 1, name: "Ann", age: 30, nickname: "A")
        try Person.create(in: db, id: 2, name: "Bob")                  // age: the default, 18, not stored
        try Person.create(in: db, id: 3, name: "Cid", age: 45)
        try Person.create(in: db, id: 4, name: "Dee", age: 18)        // the default, not stored
        try Person.create(in: db, id: 5, name: "Eve", age: 60).delete()
        try Person.create(in: db, id: 6, name: "Äda", age: 12)
    }

    @Test(arguments: StateStore.allCases)
    func keyPathFiltersSelectLikeSwiftWould(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        try Self.people(db)
        func ids(_ filter: StateFilter<Person>) throws -> [InstanceKey] {
            try db.all(Person.self, matching: filter).map(\.id).sorted()
        }
        #expect(try ids(\.age > 20) == [1, 3])                     // deleted 5 is left out
        #expect(try ids(\.age == 18) == [2, 4])                     // the default matches what is not stored
        #expect(try ids(\.age != 18) == [1, 3, 6])
        #expect(try ids(\.age <= 18) == [2, 4, 6])
        #expect(try ids(\.name == "Bob") == [2])
        #expect(try ids(\.name < "B") == [1])                        // byte order: "Ä" sorts after "E"
        #expect(try ids(\.name >= "D") == [4, 6])
        #expect(try ids(\.nickname == nil) == [2, 3, 4, 6])
        #expect(try ids(\.nickname == "A") == [1])
        #expect(try ids(\.mood == .calm) == [1, 2, 3, 4, 6])
        #expect(try ids(\.age >= 18 && \.name != "Bob") == [1, 3, 4])
        // A key path that is not one stored property is a typed error.
        #expect(throws: StateError.self) { try ids(\.greeting == "Hello, Ann") }
    }

    @Test(arguments: StateStore.allCases)
    func descriptorsFilterSortAndRecompute(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        try Self.people(db)
        let results = QueryResults(database: db, descriptor: QueryDescriptor<Person>(
            filter: { $0.age >= 18 }, sortBy: { $0.name }))
        #expect(results.items.map(\.name) == ["Ann", "Bob", "Cid", "Dee"])
        results.descriptor = QueryDescriptor(where: \.age < 40, sortBy: { $0.age }, ascending: false)
        #expect(results.items.map(\.name) == ["Ann", "Bob", "Dee", "Äda"] || results.items.map(\.name) == ["Ann", "Dee", "Bob", "Äda"])
        #expect(results.items.map(\.age) == [30, 18, 18, 12])
        try Person.create(in: db, id: 7, name: "Fay", age: 39)
        results.refresh()
        #expect(results.items.map(\.name).first == "Fay")
    }
}
