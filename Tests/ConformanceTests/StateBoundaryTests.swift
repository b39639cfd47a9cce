import Foundation
import Testing
import UnityState

/// Boundaries the README states, each checked on both sides: every comparison of a key-path
/// filter at an equal value, "after a date" in sync requests at exactly the date, a history
/// context's conflict at exactly its date, the cache's eviction order and a failed
/// transaction behind a cache.
@Suite struct StateBoundaryTests {
    typealias Person = StateFixtures.Person

    /// Each operator at, below and above a stored value, for integers, strings and dates.
    @Test(arguments: StateStore.allCases)
    func everyComparisonAtItsBoundary(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        try Person.create(in: db, id: 1, name: "b", age: 29)
        try Person.create(in: db, id: 2, name: "c", age: 30)
        try Person.create(in: db, id: 3, name: "d", age: 31)
        func ids(_ filter: StateFilter<Person>) throws -> [InstanceKey] {
            try db.all(Person.self, matching: filter).map(\.id).sorted()
        }
        #expect(try ids(\.age < 30) == [1])
        #expect(try ids(\.age <= 30) == [1, 2])
        #expect(try ids(\.age > 30) == [3])
        #expect(try ids(\.age >= 30) == [2, 3])
        #expect(try ids(\.age == 30) == [2])
        #expect(try ids(\.age != 30) == [1, 3])
        #expect(try ids(\.name < "c") == [1])
        #expect(try ids(\.name <= "c") == [1, 2])
        #expect(try ids(\.name > "c") == [3])
        #expect(try ids(\.name >= "c") == [2, 3])
        #expect(try ids(\.name == "c") == [2])
        #expect(try ids(\.name != "c") == [1, 3])
    }

    static func modelMap(_ id: ModelKey) -> (any ModelProtocol.Type)? { id == 1 ? Person.self : nil }

    /// "After a date" means strictly after: a value or status written at exactly the date is
    /// not sent again; one tick earlier, it is.
    @Test(arguments: StateHistoryStore.allCases)
    func afterADateIsStrictlyAfter(_ store: StateHistoryStore) throws {
        let clock = StateFidelityTests.DateClock(Date(timeIntervalSinceReferenceDate: 800_000_000.5))
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let db = fixture.database
        let cut = Date(timeIntervalSinceReferenceDate: 800_000_010.000_000_3)
        try Person.create(in: db, id: 1, name: "early")
        clock.set(cut)
        try Person.create(in: db, id: 2, name: "at the cut")
        let server = RequestProcessor(database: db, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        func sync(after date: Date) throws -> InMemoryDatabase {
            let clientDB = InMemoryDatabase()
            let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
            try client.apply(instanceUpdates: try server.process(instanceStatusRequest: try client.instanceStatusRequest(for: Person.self, after: date)))
            _ = try Person.create(in: clientDB, id: 1)
            try client.apply(modelUpdate: try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Person.self, after: date)))
            return clientDB
        }
        let atCut = try sync(after: cut)
        #expect(atCut.all(of: Person.self).map(\.id) == [1])   // 1 made by the client
        #expect(atCut.get(id: 1, of: Person.self)?.name == "")
        #expect(atCut.get(id: 2, of: Person.self) == nil)
        #expect((atCut.get(Path(model: 1, instance: 2, property: 1)) as String?) == nil)
        let before = try sync(after: Date(timeIntervalSinceReferenceDate: cut.timeIntervalSinceReferenceDate.nextDown))
        #expect(before.all(of: Person.self).map(\.id) == [1, 2])
        #expect(before.get(id: 2, of: Person.self)?.name == "at the cut")
        #expect(before.get(id: 1, of: Person.self)?.name == "")
    }

    /// A history context loses a path only to a write made after its date; a write at exactly
    /// its date is overwritten by the commit (the later write wins on a tie).
    @Test(arguments: StateHistoryStore.allCases)
    func aHistoryContextLosesOnlyToALaterWrite(_ store: StateHistoryStore) throws {
        let start = Date(timeIntervalSinceReferenceDate: 800_000_000.25)
        let clock = StateFidelityTests.DateClock(start)
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let db = try fixture.history
        let person = try Person.create(in: db, id: 1, name: "v1", age: 1)
        let contextDate = Date(timeIntervalSinceReferenceDate: 800_000_005.000_000_7)
        let context = HistoryEditingContext(database: db, date: contextDate)
        let edited: Person = try #require(context.get(id: 1))
        edited.name = "context"
        edited.age = 2
        db.set("at the same instant", for: Path(model: 1, instance: 1, property: 1), at: contextDate)
        db.set(3, for: Path(model: 1, instance: 1, property: 2),
               at: Date(timeIntervalSinceReferenceDate: contextDate.timeIntervalSinceReferenceDate.nextUp))
        let lost = try context.commitChanges()
        #expect(lost == [Path(model: 1, instance: 1, property: 2)])
        #expect(person.name == "context")
        #expect(person.age == 3)
    }

    /// When full, the cache evicts the least recently used values first.
    @Test func theCacheEvictsTheLeastRecentlyUsed() {
        let cache = MaximumCountCache(maxCount: 4, evictionFraction: 0.5)
        let paths = (1...5).map { Path(model: 1, instance: $0, property: 1) }
        for path in paths.prefix(4) { cache.store(path.instance, at: path) }
        #expect((cache.value(at: paths[0]) as Int??) == .some(1))     // used: now the most recent
        cache.store(5, at: paths[4])                                   // full: two evicted
        #expect(cache.count == 3)
        #expect((cache.value(at: paths[0]) as Int??) == .some(1))
        #expect((cache.value(at: paths[1]) as Int??) == nil)
        #expect((cache.value(at: paths[2]) as Int??) == nil)
        #expect((cache.value(at: paths[3]) as Int??) == .some(4))
        #expect((cache.value(at: paths[4]) as Int??) == .some(5))
        cache.removeValue(at: paths[3])
        #expect((cache.value(at: paths[3]) as Int??) == nil)
        #expect(cache.count == 2)
    }

    struct Refused: Error {}

    /// A transaction that throws behind a `CachedDatabase` leaves the cache without its writes.
    @Test(arguments: StateStore.allCases)
    func aFailedTransactionLeavesTheCacheAsTheStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let cached = CachedDatabase(wrapping: fixture.database, cache: MaximumCountCache(maxCount: 100))
        let person = try Person.create(in: cached, id: 1, name: "kept")
        #expect(person.name == "kept")
        #expect(throws: Refused.self) {
            try cached.transaction {
                person.name = "rolled back"
                throw Refused()
            }
        }
        #expect(person.name == "kept")
        #expect((fixture.database.get(Path(model: 1, instance: 1, property: 1)) as String?) == "kept")
    }

    /// A path written twice in one transaction (both writes share its date) keeps the later
    /// write, as two writes one after the other would.
    @Test(arguments: StateStore.allCases)
    func theLaterOfTwoWritesInATransactionWins(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let person = try Person.create(in: db, id: 1, name: "v0")
        try db.transaction {
            person.name = "first"
            person.age = 5
            person.name = "second"
            person.nickname = "n"
            person.nickname = nil
        }
        #expect(person.name == "second")
        #expect(person.age == 5)
        #expect(String(describing: db.get(Path(model: 1, instance: 1, property: 3), of: String?.self)) == "Optional(nil)")
    }

    /// Statuses and values keep their exact write dates through a sync (the client's own
    /// clock, stopped at the reference date, would date anything sent without one).
    @Test(arguments: StateHistoryStore.allCases)
    func syncKeepsExactDates(_ store: StateHistoryStore) throws {
        let instant = Date(timeIntervalSinceReferenceDate: 800_000_000.000_000_9)
        let clock = StateFidelityTests.DateClock(instant)
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        try Person.create(in: fixture.database, id: 1, name: "dated")
        let server = RequestProcessor(database: fixture.database, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        let clientDB = InMemoryHistoryDatabase(clock: { Date(timeIntervalSinceReferenceDate: 0) })
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        try client.apply(instanceUpdates: try server.process(instanceStatusRequest: try client.instanceStatusRequest(for: Person.self)))
        #expect((clientDB.get(Path(model: 1, instance: 1)) as Timestamped<InstanceStatus>?) == Timestamped(value: .created, date: instant))
        try client.apply(modelUpdate: try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Person.self)))
        #expect((clientDB.get(Path(model: 1, instance: 1)) as Timestamped<InstanceStatus>?) == Timestamped(value: .created, date: instant))
        #expect((clientDB.get(Path(model: 1, instance: 1, property: 1)) as Timestamped<String>?) == Timestamped(value: "dated", date: instant))

        // A model update alone brings each instance with its status and that status's date.
        let deletedAt = Date(timeIntervalSinceReferenceDate: 800_000_001.000_000_7)
        clock.set(deletedAt)
        try Person.create(in: fixture.database, id: 2, name: "gone").delete()
        let freshDB = InMemoryHistoryDatabase(clock: { Date(timeIntervalSinceReferenceDate: 0) })
        let fresh = UpdateConsumer(database: freshDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        try fresh.apply(modelUpdate: try server.process(modelUpdateRequest: try fresh.modelUpdateRequest(for: Person.self)))
        #expect((freshDB.get(Path(model: 1, instance: 1)) as Timestamped<InstanceStatus>?) == Timestamped(value: .created, date: instant))
        #expect((freshDB.get(Path(model: 1, instance: 2)) as Timestamped<InstanceStatus>?) == Timestamped(value: .deleted, date: deletedAt))
        #expect(freshDB.all(of: Person.self).map(\.id) == [1])
    }
}
