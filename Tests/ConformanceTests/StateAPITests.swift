import Foundation
import Testing
import UnityState

/// StateModel's APIs beside the core ones: the cached timestamped and history databases,
/// applying any update message, path conveniences, model identity, Float16.
@Suite struct StateAPITests {
    typealias Person = StateFixtures.Person

    /// A history database that counts the reads that reach it.
    final class CountingHistory: HistoryDatabase, @unchecked Sendable {
        let base: any HistoryDatabase
        private let lock = NSLock()
        private var count = 0
        init(_ base: any HistoryDatabase) { self.base = base }
        var reads: Int { lock.lock(); defer { lock.unlock() }; return count }
        private func counted() { lock.lock(); count += 1; lock.unlock() }

        func get<Value: DatabaseValue>(_ path: Path, at date: Date?) -> Timestamped<Value>? { counted(); return base.get(path, at: date) }
        func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>? { counted(); return base.get(path) }
        func get<Value: DatabaseValue>(_ path: Path) -> Value? { counted(); return base.get(path) }
        func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?) { base.set(value, for: path, at: date) }
        func set<Value: DatabaseValue>(_ value: Value, for path: Path) { base.set(value, for: path) }
        func all<T>(model: ModelKey, at date: Date?, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
            base.all(model: model, at: date, where: predicate)
        }
        func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
            base.all(model: model, where: predicate)
        }
        func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
            base.all(model: model, where: predicate)
        }
        func transaction<R>(_ body: () throws -> R) throws -> R { try base.transaction(body) }
    }

    struct Refused: Error {}

    static func at(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: 800_000_000 + seconds) }

    /// The same checks through both cached stores.
    static func checkCache(_ cached: any TimestampedDatabase, backing: any TimestampedDatabase,
                           clock: StateFidelityTests.DateClock) throws {
        let name = Path(model: 1, instance: 1, property: 1)
        clock.set(at(0.000_000_3))
        let person = try Person.create(in: cached, id: 1, name: "v1")
        let first: Timestamped<String>? = cached.get(name)
        #expect(first == Timestamped(value: "v1", date: at(0.000_000_3)))
        // A late write (a sync message dated earlier) changes neither the store nor the cache.
        cached.set("late", for: name, at: at(-5))
        #expect((cached.get(name) as Timestamped<String>?) == Timestamped(value: "v1", date: at(0.000_000_3)))
        #expect((backing.get(name) as Timestamped<String>?) == Timestamped(value: "v1", date: at(0.000_000_3)))
        #expect(person.name == "v1")
        // A newer dated write is the cached value at once.
        cached.set("new", for: name, at: at(5))
        #expect((cached.get(name) as Timestamped<String>?) == Timestamped(value: "new", date: at(5)))
        // A write at the same instant as the current value replaces it (the later write wins).
        cached.set("same instant", for: name, at: at(5))
        #expect((cached.get(name) as Timestamped<String>?) == Timestamped(value: "same instant", date: at(5)))
        #expect((backing.get(name) as Timestamped<String>?) == Timestamped(value: "same instant", date: at(5)))
        // A write without a date is dated by the store's clock, and read back with that date.
        clock.set(at(20))
        person.name = "now"
        #expect((cached.get(name) as Timestamped<String>?) == Timestamped(value: "now", date: at(20)))
        // A transaction that fails leaves the cache as the store: without its writes.
        #expect(throws: Refused.self) {
            try cached.transaction {
                person.name = "in a failed transaction"
                throw Refused()
            }
        }
        #expect(person.name == "now")
        #expect((backing.get(name) as String?) == "now")
        // Nothing stored: nil, also from the cache.
        #expect((cached.get(Path(model: 1, instance: 1, property: 3)) as String??) == nil)
        #expect((cached.get(Path(model: 1, instance: 1, property: 3)) as String??) == nil)
    }

    @Test(arguments: StateHistoryStore.allCases)
    func cachedTimestampedDatabase(_ store: StateHistoryStore) throws {
        let clock = StateFidelityTests.DateClock(Self.at(0))
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let backing = try fixture.history
        let cached = CachedTimestampedDatabase(wrapping: backing, cache: MaximumCountCache(maxCount: 100))
        try Self.checkCache(cached, backing: backing, clock: clock)
    }

    @Test(arguments: StateHistoryStore.allCases)
    func cachedHistoryDatabase(_ store: StateHistoryStore) throws {
        let clock = StateFidelityTests.DateClock(Self.at(0))
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let backing = CountingHistory(try fixture.history)
        let cached = CachedHistoryDatabase(wrapping: backing, cache: MaximumCountCache(maxCount: 100))
        try Self.checkCache(cached, backing: backing, clock: clock)

        // The past: the cached value answers from its write time on, the store before it.
        let name = Path(model: 1, instance: 1, property: 1)
        let current: Timestamped<String>? = cached.get(name)
        #expect(current == Timestamped(value: "now", date: Self.at(20)))
        let reads = backing.reads
        #expect((cached.get(name, at: Self.at(20)) as Timestamped<String>?) == Timestamped(value: "now", date: Self.at(20)))
        #expect((cached.get(name, at: Self.at(30)) as Timestamped<String>?) == Timestamped(value: "now", date: Self.at(20)))
        #expect(backing.reads == reads)
        #expect((cached.get(name, at: Self.at(19)) as Timestamped<String>?) == Timestamped(value: "same instant", date: Self.at(5)))
        #expect((cached.get(name, at: Self.at(5).addingTimeInterval(-0.001)) as Timestamped<String>?)
                == Timestamped(value: "v1", date: Self.at(0.000_000_3)))
        // The late write is in the history at its own date.
        #expect((cached.get(name, at: Self.at(0)) as Timestamped<String>?) == Timestamped(value: "late", date: Self.at(-5)))
        #expect((cached.get(name, at: Self.at(-6)) as Timestamped<String>?) == nil)
        #expect(backing.reads == reads + 4)
        let view = cached.view(at: Self.at(10))
        #expect(view.get(id: 1, of: Person.self)?.name == "same instant")
        #expect(cached.all(model: 1, at: Self.at(0)) { id, _, _ in id }.isEmpty)
        #expect(cached.get(model: 1, instance: 1, property: 1, at: Self.at(1)) == Timestamped(value: "v1", date: Self.at(0.000_000_3)))
        cached.set("by ids", model: 1, instance: 1, property: 1, at: Self.at(40))
        #expect(cached.get(model: 1, instance: 1, property: 1, of: String.self) == "by ids")
    }

    /// `apply(data:)` takes each kind of update message and refuses the rest.
    @Test(arguments: StateStore.allCases)
    func applyDataTakesEveryUpdateMessage(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let clientDB = fixture.database
        let serverDB = InMemoryDatabase()
        _ = try Person.create(in: serverDB, id: 1, name: "Ann", age: 30)
        _ = try Person.create(in: serverDB, id: 2, name: "Bob")
        let map: ModelMap = { $0 == 1 ? Person.self : nil }
        let server = RequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)

        let statuses = try server.process(instanceStatusRequest: try client.instanceStatusRequest(for: Person.self))
        #expect(try client.apply(data: statuses) == nil)
        #expect(clientDB.all(of: Person.self).map(\.id) == [1, 2])
        #expect(clientDB.get(id: 1, of: Person.self)?.name == "")
        let one = try server.process(instanceUpdateRequest: try client.instanceUpdateRequest(for: 1, of: Person.self))
        #expect(try client.apply(data: one) == nil)
        #expect(clientDB.get(id: 1, of: Person.self)?.name == "Ann")
        #expect(clientDB.get(id: 2, of: Person.self)?.name == "")
        let page = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Person.self, limit: 1))
        #expect(try client.apply(data: page) == 2)
        let rest = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Person.self, startingAt: 2))
        #expect(try client.apply(data: rest) == nil)
        #expect(clientDB.get(id: 2, of: Person.self)?.name == "Bob")
        #expect(clientDB.get(id: 1, of: Person.self)?.age == 30)

        for refused in [try client.instanceStatusRequest(for: Person.self), Data("not a message".utf8), Data()] {
            let error = #expect(throws: StateError.self) { try client.apply(data: refused) }
            guard case .invalidDataSupplied = error else { Issue.record("expected invalidDataSupplied, got \(String(describing: error))"); continue }
        }
        #expect(clientDB.all(of: Person.self).map(\.id) == [1, 2])
    }

    /// Reads and writes by the three ids or with an explicit type.
    @Test(arguments: StateStore.allCases)
    func pathConveniences(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        db.set(Int?.some(3), model: 5, instance: 6, property: 7)
        #expect(db.get(model: 5, instance: 6, property: 7, of: Int?.self) == .some(3))
        #expect(db.get(Path(model: 5, instance: 6, property: 7), of: Int?.self) == .some(3))
        #expect(db.get(Path(model: 5, instance: 6, property: 7), of: String.self) == nil)
        db.set(Int?.none, for: Path(model: 5, instance: 6, property: 7), of: Int?.self)
        #expect(String(describing: db.get(Path(model: 5, instance: 6, property: 7), of: Int?.self)) == "Optional(nil)")
    }

    /// Objects are equal and hash alike when their ids are equal.
    @Test func modelsAreEqualAndHashableById() throws {
        let db = InMemoryDatabase()
        let a = try Person.create(in: db, id: 1, name: "A")
        let again: Person = try #require(db.get(id: 1))
        let b = try Person.create(in: db, id: 2, name: "B")
        #expect(a == again)
        #expect(a !== again)
        #expect(a != b)
        #expect(Set([a, again, b]).count == 2)
        #expect(a.hashValue == again.hashValue)
        let other: Person = InMemoryDatabase().create(id: 1)
        #expect(other == a)   // by id, as StateModel
    }

    #if !((os(macOS) || targetEnvironment(macCatalyst)) && arch(x86_64))
    @Model(id: 41)
    final class Halves {
        @Property(id: 1) var half: Float16
        @Property(id: 2) var optionalHalf: Float16?
    }

    /// Float16 has a default and round-trips exactly on every store.
    @Test(arguments: StateStore.allCases)
    func float16(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        #expect(Float16.default == 0)
        let halves: Halves = fixture.database.create(id: 1)
        #expect(halves.half == 0)
        halves.half = 1.5
        #expect(halves.half == 1.5)
        halves.half = -Float16.greatestFiniteMagnitude
        #expect(halves.half == -65504)
        halves.half = Float16.leastNonzeroMagnitude
        #expect(halves.half == Float16(bitPattern: 1))
        halves.optionalHalf = 0.099975586
        #expect(halves.optionalHalf == Float16(0.1))
        halves.optionalHalf = nil
        #expect(halves.optionalHalf == nil)
    }
    #endif
}
