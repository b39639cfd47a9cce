import Foundation
import Observation
import Testing
import UnityState

/// Observation on Linux: models are `Observable`, and an `ObservableDatabase` tells the
/// objects it handed out about changes that arrive another way; every store.
@Suite struct StateObservationTests {
    typealias Person = StateFixtures.Person

    /// Counts `onChange` calls (they come on the writing thread).
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func increment() { lock.lock(); value += 1; lock.unlock() }
        var count: Int { lock.lock(); defer { lock.unlock() }; return value }
    }

    /// Tracks the reads `read` makes; the counter moves when one of them changes.
    static func track(_ counter: Counter, _ read: () -> Void) {
        withObservationTracking(read) { counter.increment() }
    }

    @Test(arguments: StateStore.allCases)
    func modelsAreObservablePropertyByProperty(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let person = try Person.create(in: fixture.database, id: 1, name: "Ann")
        let nameReads = Counter()
        Self.track(nameReads) { _ = person.name }
        person.age = 50                        // not read: no change reported
        #expect(nameReads.count == 0)
        person.name = "Anna"
        #expect(nameReads.count == 1)
        let statusReads = Counter()
        Self.track(statusReads) { _ = person.status }
        person.delete()
        #expect(statusReads.count == 1)
    }

    @Test(arguments: StateStore.allCases)
    func anObservableDatabaseTellsObjectsOfChangesFromElsewhere(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let observed = ObservableDatabase(wrapping: fixture.database)
        let shown = try Person.create(in: observed, id: 1, name: "Ann")
        let counter = Counter()

        // Another object of the same instance.
        Self.track(counter) { _ = shown.name }
        (observed.get(id: 1) as Person?)?.name = "From another object"
        #expect(counter.count == 1)
        #expect(shown.name == "From another object")

        // An editing context's commit.
        Self.track(counter) { _ = shown.age }
        let context = observed.createEditingContext()
        (context.get(id: 1) as Person?)?.age = 77
        #expect(counter.count == 1)            // not yet committed
        try context.commitChanges()
        #expect(counter.count == 2)
        #expect(shown.age == 77)

        // A sync applied to the observed database.
        Self.track(counter) { _ = shown.nickname }
        let server = InMemoryDatabase()
        try Person.create(in: server, id: 1, name: "Server", nickname: "S")
        let map: ModelMap = { $0 == 1 ? Person.self : nil }
        let processor = RequestProcessor(database: server, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let consumer = UpdateConsumer(database: observed, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        try consumer.apply(instanceUpdate: processor.process(instanceUpdateRequest: consumer.instanceUpdateRequest(for: 1, of: Person.self)))
        #expect(counter.count == 3)
        #expect(shown.nickname == "S" && shown.name == "Server")
    }

    @Test(arguments: StateStore.allCases)
    func changesArriveAsAnAsyncSequence(_ store: StateStore) async throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let observed = ObservableDatabase(wrapping: fixture.database)
        let stream = observed.changes(of: Person.self)
        let collector = Task { () -> [Path] in
            var seen: [Path] = []
            for await path in stream {
                seen.append(path)
                if seen.count == 3 { break }
            }
            return seen
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            collector.cancel()
        }
        let person: Person = observed.create(id: 5)
        _ = try StateFixtures.Pet.create(in: observed, id: 9, name: "not a person")
        person.name = "Five"
        person.age = 55
        let seen = await collector.value
        timeout.cancel()
        #expect(seen == [Path(model: 1, instance: 5), Path(model: 1, instance: 5, property: 1),
                         Path(model: 1, instance: 5, property: 2)])
    }

    /// Query results follow the data: on an observed database they are computed again after
    /// each change to the model's instances — a context commit, a sync, a plain write — once
    /// per transaction, never for another model's writes or for a transaction that threw; the
    /// change is seen through Observation and through `updates()`.
    @Test(arguments: StateStore.allCases)
    func queryResultsFollowChanges(_ store: StateStore) async throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let observed = ObservableDatabase(wrapping: fixture.database)
        try Person.create(in: observed, id: 1, name: "Ann", age: 30)
        let results = QueryResults(database: observed, descriptor: QueryDescriptor<Person>(where: \.age >= 30, sortBy: { $0.name }))
        #expect(results.items.map(\.name) == ["Ann"])
        let updates = results.updates()
        let collector = Task { () -> [[InstanceKey]] in
            var seen: [[InstanceKey]] = []
            for await ids in updates {
                seen.append(ids)
                if seen.count == 3 { break }
            }
            return seen
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            collector.cancel()
        }
        let observers = Counter()
        Self.track(observers) { _ = results.items }

        // An editing context's commit: one recomputation for its two writes.
        let context = observed.createEditingContext()
        let bob: Person = context.create(id: 2)
        bob.name = "Bob"
        bob.age = 40
        #expect(results.items.map(\.name) == ["Ann"])       // not committed yet
        try context.commitChanges()
        #expect(results.items.map(\.name) == ["Ann", "Bob"])
        #expect(observers.count == 1)

        // Another model's write and a transaction that threw change nothing.
        _ = try StateFixtures.Pet.create(in: observed, id: 9, name: "not a person")
        #expect(throws: Refused.self) {
            try observed.transaction {
                (observed.get(id: 1) as Person?)?.age = 10
                throw Refused()
            }
        }
        #expect(results.items.map(\.name) == ["Ann", "Bob"])

        // A sync applied to the observed database: Cid arrives with age 35.
        let server = InMemoryDatabase()
        try Person.create(in: server, id: 3, name: "Cid", age: 35)
        let map: ModelMap = { $0 == 1 ? Person.self : nil }
        let processor = RequestProcessor(database: server, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let consumer = UpdateConsumer(database: observed, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        try consumer.apply(instanceUpdate: processor.process(instanceUpdateRequest: consumer.instanceUpdateRequest(for: 3, of: Person.self)))
        #expect(results.items.map(\.name) == ["Ann", "Bob", "Cid"])

        // A plain write that takes Ann out of the filter.
        (observed.get(id: 1) as Person?)?.age = 20
        #expect(results.items.map(\.name) == ["Bob", "Cid"])

        let seen = await collector.value
        timeout.cancel()
        #expect(seen == [[1, 2], [1, 2, 3], [2, 3]])
    }
}

extension StateObservationTests {
    struct Refused: Error {}

    /// Writes inside a transaction are announced when it succeeds, and not at all when it
    /// throws (the store then holds none of them): no observer hears of a change that was
    /// rolled back.
    @Test(arguments: StateStore.allCases)
    func aTransactionIsAnnouncedOnlyWhenItSucceeds(_ store: StateStore) async throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let observed = ObservableDatabase(wrapping: fixture.database)
        let person = try Person.create(in: observed, id: 3, name: "Ann", age: 30)
        let stream = observed.changes(of: Person.self)
        let collector = Task { () -> [Path] in
            var seen: [Path] = []
            for await path in stream {
                seen.append(path)
                if seen.count == 1 { break }
            }
            return seen
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            collector.cancel()
        }
        // Another object of the same instance hears of writes only through the wrapper (the
        // object written to tells its own observers as it writes).
        let shown = try #require(observed.get(id: 3) as Person?)
        let counter = Counter()
        Self.track(counter) { _ = shown.name; _ = shown.age }

        #expect(throws: Refused.self) {
            try observed.transaction {
                person.name = "Rolled back"
                throw Refused()
            }
        }
        #expect(counter.count == 0)
        #expect(shown.name == "Ann")

        // The tracking above has not fired, so it still watches both properties.
        try observed.transaction {
            person.age = 31
            #expect(counter.count == 0)        // not yet: the transaction is still running
        }
        #expect(counter.count == 1)
        #expect(shown.age == 31)

        let seen = await collector.value
        timeout.cancel()
        #expect(seen == [Path(model: 1, instance: 3, property: 2)])
    }
}

extension StateObservationTests {
    final class PathLog: @unchecked Sendable {
        private let lock = NSLock()
        private var batches: [[Path]] = []
        func append(_ paths: [Path]) { lock.lock(); batches.append(paths); lock.unlock() }
        var all: [[Path]] { lock.lock(); defer { lock.unlock() }; return batches }
    }

    /// A transaction holds back only the writes of its own thread: another thread's write
    /// made meanwhile is announced at once, and still announced when the transaction throws.
    /// (On the in-memory stores, where a second writer does not wait for the first; their
    /// rollback restores the whole store, as documented, so only announcements are checked.)
    @Test(arguments: [StateStore.inMemory, .inMemoryHistory])
    func anotherThreadsWriteIsNotHeldByATransaction(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let observed = ObservableDatabase(wrapping: fixture.database)
        try Person.create(in: observed, id: 1, name: "Ann")
        let log = PathLog()
        let token = observed.addListener { log.append($0) }
        defer { token.cancel() }
        let written = DispatchSemaphore(value: 0)
        #expect(throws: Refused.self) {
            try observed.transaction {
                (observed.get(id: 1) as Person?)?.name = "held back, then dropped"
                Thread {
                    (observed.get(id: 1) as Person?)?.age = 5
                    written.signal()
                }.start()
                #expect(written.wait(timeout: .now() + 10) == .success)
                #expect(log.all == [[Path(model: 1, instance: 1, property: 2)]])
                throw Refused()
            }
        }
        #expect(log.all == [[Path(model: 1, instance: 1, property: 2)]])

        // When the transaction succeeds, its own write follows, in a batch of its own.
        try observed.transaction {
            (observed.get(id: 1) as Person?)?.name = "Ann 2"
            Thread {
                (observed.get(id: 1) as Person?)?.age = 6
                written.signal()
            }.start()
            #expect(written.wait(timeout: .now() + 10) == .success)
        }
        #expect(log.all == [[Path(model: 1, instance: 1, property: 2)], [Path(model: 1, instance: 1, property: 2)],
                            [Path(model: 1, instance: 1, property: 1)]])
        #expect((observed.get(id: 1) as Person?)?.name == "Ann 2")
    }
}

extension StateObservationTests {
    /// A sync through an `ObservableDatabase` keeps the server's write dates when the wrapped
    /// store keeps dates: a late message does not revert a newer value, and every applied
    /// write is announced.
    @Test(arguments: [StateStore.inMemoryHistory, .sqlite, .sqliteHistory, .postgres, .postgresHistory])
    func syncThroughAnObservableDatabaseKeepsTheDates(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let observed = ObservableDatabase(wrapping: fixture.database)
        let server = InMemoryHistoryDatabase()
        let ann = try Person.create(in: server, id: 1, name: "Ann")
        let map: ModelMap = { $0 == 1 ? Person.self : nil }
        let processor = RequestProcessor(database: server, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let consumer = UpdateConsumer(database: observed, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let log = PathLog()
        let token = observed.addListener { log.append($0) }
        defer { token.cancel() }

        let old = try processor.process(instanceUpdateRequest: try consumer.instanceUpdateRequest(for: 1, of: Person.self))
        Thread.sleep(forTimeInterval: 0.002)
        ann.name = "Ann 2"
        let written: Timestamped<String>? = server.get(Path(model: 1, instance: 1, property: 1))
        try consumer.apply(instanceUpdate: try processor.process(instanceUpdateRequest: try consumer.instanceUpdateRequest(for: 1, of: Person.self)))
        try consumer.apply(instanceUpdate: old)
        let stored: Timestamped<String>? = try #require(fixture.database as? any TimestampedDatabase).get(Path(model: 1, instance: 1, property: 1))
        #expect(stored?.value == "Ann 2")
        #expect(stored?.date == written?.date)
        #expect(log.all.count == 2)          // two applies, one batch each
        #expect(log.all.first?.contains(Path(model: 1, instance: 1, property: 1)) == true)
    }
}
