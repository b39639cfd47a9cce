import Foundation
import Testing
import UnityState

/// Synchronization between two databases of one process with Swift values instead of `Data`:
/// `UnencodedRequestProcessor` (server) and `UnencodedUpdateConsumer` (client), on every store.
@Suite struct StateUnencodedSyncTests {
    typealias Person = StateFixtures.Person
    typealias Pet = StateFixtures.Pet
    typealias Values = StateFixtures.Values
    typealias Package = StateFixtures.Package

    static func modelMap(_ id: ModelKey) -> (any ModelProtocol.Type)? {
        switch id {
        case 1: return Person.self
        case 2: return Pet.self
        case 3: return Values.self
        case 4: return Package.self
        default: return nil
        }
    }

    /// The other store of a pair: a SQL store talks to PostgreSQL, PostgreSQL to SQLite.
    static func counterpart(of store: StateStore) -> StateStore {
        switch store {
        case .postgres, .postgresHistory: return .sqliteHistory
        default: return .postgres
        }
    }

    /// The server's data reaches the client: statuses, pages, one instance; as literals.
    @Test(arguments: StateStore.allCases)
    func everyUpdateKindArrives(_ store: StateStore) throws {
        let serverFixture = try store.make()
        defer { serverFixture.tearDown() }
        let clientFixture = try Self.counterpart(of: store).make()
        defer { clientFixture.tearDown() }
        let serverDB = serverFixture.database, clientDB = clientFixture.database
        try StateSyncTests.seed(serverDB)
        let server = UnencodedRequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        let client = UnencodedUpdateConsumer(database: clientDB, decoder: JSONDecoder(), encoder: JSONEncoder(), modelMap: Self.modelMap)
        let dated = serverDB is any TimestampedDatabase

        // Statuses: every instance, the deleted one too, each dated where the server keeps dates.
        let statuses = try server.instanceStatusUpdates(for: client.instanceStatusRequest(for: Person.self, after: nil))
        #expect(statuses.model == 1)
        #expect(statuses.updates.map(\.instance) == [1, 2, 3] + Array(20..<27))
        #expect(statuses.updates.map(\.status) == [.created, .created, .deleted] + Array(repeating: .created, count: 7))
        #expect(statuses.updates.allSatisfy { ($0.date != nil) == dated })
        try client.apply(instanceUpdates: statuses)
        #expect(clientDB.all(of: Person.self).map(\.id).sorted() == [1, 2] + Array(20..<27))
        #expect((clientDB.get(Path(model: 1, instance: 3)) as InstanceStatus?) == .deleted)

        // One instance: its status first (property 0), then its stored properties, as themselves.
        let ann = try server.updates(for: 1, of: Person.self, after: nil)
        #expect(ann.model == 1 && ann.instance == 1 && ann.failedProperties.isEmpty)
        #expect(ann.properties.map(\.id) == [0, 1, 2, 3, 4, 6, 7, 8])
        #expect(ann.properties[0].value(as: InstanceStatus.self) == .created)
        #expect(ann.properties[1].value(as: String.self) == "Ann")
        #expect(ann.properties[2].value(as: Int.self) == 30)
        #expect(ann.properties[3].value(as: String?.self) == .some("A"))
        #expect(ann.properties[4].value(as: StateFixtures.Address?.self) == StateFixtures.Address(street: "Main", zip: 1))
        #expect(ann.properties[2].value(as: Int64.self) == nil)   // exactly its own type
        #expect(ann.properties.allSatisfy { ($0.date != nil) == dated })

        // Pages of at most 3 updates, never splitting an instance: Ann (8 updates) alone.
        var next: InstanceKey?
        var starts: [InstanceKey?] = []
        repeat {
            starts.append(next)
            let page = try server.allUpdates(for: client.modelUpdateRequest(for: Person.self, after: nil, limit: 3, startingAt: next))
            if starts.count == 1 { #expect(page.updates.map(\.instance) == [1]) }
            next = try client.apply(modelUpdates: page)
            if starts.count > 20 { Issue.record("paging does not end"); break }
        } while next != nil
        #expect(starts.prefix(3) == [nil, 2, 3])
        try client.apply(instanceUpdate: server.process(instanceUpdateRequest: client.instanceUpdateRequest(for: 10, of: Pet.self, after: nil)))
        try StateSyncTests.checkSynced(clientDB)
        #expect(clientDB.get(id: 1, of: Person.self)?.pet?.name == "Rex")

        // Applied twice, nothing changes.
        try client.apply(modelUpdates: server.allUpdates(for: Person.self, after: nil, limit: 1000))
        try StateSyncTests.checkSynced(clientDB)
    }

    /// Every value type, nested optionals at each depth included, arrives exactly.
    @Test(arguments: StateStore.allCases)
    func valuesArriveAsTheyWere(_ store: StateStore) throws {
        let serverFixture = try store.make()
        defer { serverFixture.tearDown() }
        let clientFixture = try Self.counterpart(of: store).make()
        defer { clientFixture.tearDown() }
        let serverDB = serverFixture.database, clientDB = clientFixture.database
        let edges: Values = serverDB.create(id: 1)
        edges.int = .min; edges.int8 = .min; edges.int16 = .max; edges.int32 = .min; edges.int64 = .max
        edges.uint = .max; edges.uint8 = .max; edges.uint16 = .max; edges.uint32 = .max; edges.uint64 = .max
        edges.double = -0.1; edges.float = .greatestFiniteMagnitude; edges.bool = true
        edges.string = "é'\""; edges.data = Data([0, 255]); edges.date = Date(timeIntervalSinceReferenceDate: 1.000_000_1)
        edges.nested = .some(nil)
        edges.list = ["a", ""]; edges.dictionary = ["k": -1]; edges.address = StateFixtures.Address(street: "S", zip: 9)
        let empty: Values = serverDB.create(id: 2)
        empty.nested = .none
        let full: Values = serverDB.create(id: 3)
        full.nested = .some(.some(7))

        let server = UnencodedRequestProcessor(database: serverDB, modelMap: Self.modelMap)
        let client = UnencodedUpdateConsumer(database: clientDB, modelMap: Self.modelMap)
        #expect(try client.apply(modelUpdates: server.allUpdates(for: Values.self, after: nil, limit: 1000)) == nil)

        let got = try #require(clientDB.get(id: 1, of: Values.self))
        #expect(got.int == .min && got.int8 == .min && got.int16 == .max && got.int32 == .min && got.int64 == .max)
        #expect(got.uint == .max && got.uint8 == .max && got.uint16 == .max && got.uint32 == .max && got.uint64 == .max)
        #expect(got.double == -0.1 && got.float == .greatestFiniteMagnitude && got.bool)
        #expect(got.string == "é'\"" && got.data == Data([0, 255]))
        #expect(got.date == Date(timeIntervalSinceReferenceDate: 1.000_000_1))
        #expect(got.list == ["a", ""] && got.dictionary == ["k": -1] && got.address == StateFixtures.Address(street: "S", zip: 9))
        let path = Path(model: 3, instance: 1, property: 17)
        #expect((clientDB.get(path) as Int???) == .some(.some(nil)))
        #expect((clientDB.get(Path(model: 3, instance: 2, property: 17)) as Int???) == .some(.none))
        #expect((clientDB.get(Path(model: 3, instance: 3, property: 17)) as Int???) == .some(.some(.some(7))))
        #expect(clientDB.get(id: 3, of: Values.self)?.nested == .some(.some(7)))
    }

    /// A value of another type than its property, or a status that is not an
    /// `InstanceStatus`, fails the whole update: nothing of it is written.
    @Test(arguments: StateStore.allCases)
    func aWrongValueTypeAppliesNothing(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let clientDB = fixture.database
        _ = try Person.create(in: clientDB, id: 5, name: "Kept", age: 50)
        let client = UnencodedUpdateConsumer(database: clientDB, modelMap: Self.modelMap)

        let wrongAge = InstanceUpdate(model: 1, instance: 7, properties: [
            PropertyUpdate(id: PropertyKey.instanceId, value: InstanceStatus.created, date: nil),
            PropertyUpdate(id: 1, value: "New", date: nil),
            PropertyUpdate(id: 2, value: Int64(40), date: nil),    // the property is an Int
        ])
        let error = #expect(throws: StateError.self) { try client.apply(instanceUpdate: wrongAge) }
        guard case .propertyDecodingFailed(let path, let message) = error else {
            Issue.record("expected propertyDecodingFailed, got \(String(describing: error))")
            return
        }
        #expect(path == Path(model: 1, instance: 7, property: 2))
        #expect(message.contains("Int64"))

        // The same values for an existing instance, in a page: nothing of the page either.
        let page = ModelUpdate(model: 1, updates: [
            ModelInstanceUpdate(instance: 6, properties: [PropertyUpdate(id: 0, value: InstanceStatus.created, date: nil),
                                                          PropertyUpdate(id: 1, value: "Six", date: nil)]),
            ModelInstanceUpdate(instance: 5, properties: [PropertyUpdate(id: 1, value: "Changed", date: nil),
                                                          PropertyUpdate(id: 2, value: "fifty", date: nil)]),
        ], hasMoreUpdatesAtInstance: nil)
        #expect(throws: StateError.self) { try client.apply(modelUpdates: page) }

        let badStatus = InstanceUpdate(model: 1, instance: 5, properties: [PropertyUpdate(id: 0, value: 1, date: nil),
                                                                           PropertyUpdate(id: 1, value: "Renamed", date: nil)])
        let statusError = #expect(throws: StateError.self) { try client.apply(instanceUpdate: badStatus) }
        guard case .propertyDecodingFailed(let statusPath, _) = statusError else {
            Issue.record("expected propertyDecodingFailed, got \(String(describing: statusError))")
            return
        }
        #expect(statusPath == Path(model: 1, instance: 5))

        let unknown = InstanceUpdate(model: 99, instance: 1, properties: [PropertyUpdate(id: 1, value: "x", date: nil)])
        let unknownError = #expect(throws: StateError.self) { try client.apply(instanceUpdate: unknown) }
        guard case .unknownModel(let id) = unknownError else {
            Issue.record("expected unknownModel, got \(String(describing: unknownError))")
            return
        }
        #expect(id == 99)

        // The database is as it was.
        #expect(clientDB.all(of: Person.self).map(\.id) == [5])
        #expect((clientDB.get(Path(model: 1, instance: 7)) as InstanceStatus?) == nil)
        #expect((clientDB.get(Path(model: 1, instance: 7, property: 1)) as String?) == nil)
        #expect((clientDB.get(Path(model: 1, instance: 6)) as InstanceStatus?) == nil)
        #expect((clientDB.get(Path(model: 1, instance: 6, property: 1)) as String?) == nil)
        let kept = try #require(clientDB.get(id: 5, of: Person.self))
        #expect(kept.name == "Kept" && kept.age == 50 && kept.status == .created)
    }

    /// A constraint the database enforces fails while an update is applied: the core's typed
    /// error, and nothing of the update applied.
    @Test(arguments: [StateStore.sqlite, .sqliteHistory, .postgres, .postgresHistory])
    func aStoreErrorStaysTypedAndAppliesNothing(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let clientDB = fixture.database
        let core = try #require(fixture.sql?.database)
        _ = try Person.create(in: clientDB, id: 5, name: "Kept", age: 50)
        _ = try core.execute(sql: "CREATE UNIQUE INDEX state_test_unique_text ON unity_state_values (text_value)")
        let serverDB = InMemoryDatabase()
        _ = try Person.create(in: serverDB, id: 1, name: "Same", age: 1)
        _ = try Person.create(in: serverDB, id: 2, name: "Same", age: 2)
        let server = UnencodedRequestProcessor(database: serverDB, modelMap: Self.modelMap)
        let client = UnencodedUpdateConsumer(database: clientDB, modelMap: Self.modelMap)

        let page = try server.allUpdates(for: Person.self, after: nil, limit: 1000)
        #expect(page.updates.map(\.instance) == [1, 2])
        let error = #expect(throws: StateError.self) { try client.apply(modelUpdates: page) }
        guard case .store(.constraintViolation(let kind, _)) = error else {
            Issue.record("expected a typed constraint violation, got \(String(describing: error))")
            return
        }
        #expect(kind == .unique)
        #expect(clientDB.all(of: Person.self).map(\.id) == [5])
        #expect((clientDB.get(Path(model: 1, instance: 1, property: 2)) as Int?) == nil)
        #expect(clientDB.get(id: 5, of: Person.self)?.name == "Kept")
    }

    /// Updates after a date: only what was written later, on the stores that keep dates.
    @Test(arguments: [StateStore.inMemoryHistory, .sqlite, .sqliteHistory, .postgres, .postgresHistory])
    func onlyLaterWritesAfterADate(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let serverDB = fixture.database
        let ann = try Person.create(in: serverDB, id: 1, name: "Ann", age: 30)
        _ = try Person.create(in: serverDB, id: 2, name: "Bob")
        let timestamped = try #require(serverDB as? any TimestampedDatabase)
        // Bob's creation is the last write before the mark (its name is written last; a store
        // outside a SQL transaction dates each write on its own).
        let mark = try #require((timestamped.get(Path(model: 1, instance: 2, property: 1)) as Timestamped<String>?)?.date)
        Thread.sleep(forTimeInterval: 0.01)
        ann.age = 31
        let server = UnencodedRequestProcessor(database: serverDB, modelMap: Self.modelMap)

        let update = try server.updates(for: 1, of: Person.self, after: mark)
        #expect(update.properties.map(\.id) == [2])
        #expect(update.properties.first?.value(as: Int.self) == 31)
        #expect(try server.instanceStatusUpdates(for: Person.self, after: mark).updates.isEmpty)
        let page = try server.allUpdates(for: Person.self, after: mark, limit: 10)
        #expect(page.updates.map(\.instance) == [1])
        #expect(page.hasMoreUpdatesAtInstance == nil)

        let missing = #expect(throws: StateError.self) { try server.updates(for: 9, of: Person.self, after: nil) }
        guard case .missingInstance(let model, let id) = missing else {
            Issue.record("expected missingInstance, got \(String(describing: missing))")
            return
        }
        #expect(model == 1 && id == 9)
    }

    /// A command runs on the server's instance, its arguments passed through the coders.
    @Test(arguments: StateStore.allCases)
    func commandsRun(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let serverDB = fixture.database
        let package = try Package.create(in: serverDB, id: 1, name: "p")
        let server = UnencodedRequestProcessor(database: serverDB, modelMap: Self.modelMap)
        try server.process(command: package.installCommand(version: "1.2"))
        #expect(serverDB.get(id: 1, of: Package.self)?.installed == "1.2")
        let failed = #expect(throws: StateError.self) { try server.process(command: package.configureCommand("k", value: -1, flags: [])) }
        guard case .commandFailed(let id, _) = failed else {
            Issue.record("expected commandFailed, got \(String(describing: failed))")
            return
        }
        #expect(id == 2)
        #expect(serverDB.get(id: 1, of: Package.self)?.log == ["install 1.2"])
    }

    /// The README's example of the unencoded sync and of export / import, as written there
    /// (with the fixtures' models).
    @Test func readmeExample() throws {
        let serverDB = InMemoryHistoryDatabase(), clientDB = InMemoryDatabase()
        let modelMap = Self.modelMap
        try StateSyncTests.seed(serverDB)
        let lastSync = Date.distantPast
        let package = try Package.create(in: serverDB, id: 1, name: "p")
        // --- as in README.md ---
        let server = UnencodedRequestProcessor(database: serverDB, modelMap: modelMap)
        let client = UnencodedUpdateConsumer(database: clientDB, modelMap: modelMap)
        try client.apply(instanceUpdates: try server.instanceStatusUpdates(for: Person.self, after: nil))
        var next: InstanceKey? = nil
        repeat {
            next = try client.apply(modelUpdates: try server.allUpdates(for: Person.self, after: nil, limit: 500, startingAt: next))
        } while next != nil
        let one: InstanceUpdate = try server.updates(for: 1, of: Person.self, after: lastSync)
        try server.process(command: package.installCommand(version: "2"))
        // --- end ---
        try StateSyncTests.checkSynced(clientDB)
        #expect(one.properties.first(where: { $0.id == 1 })?.value(as: String.self) == "Ann")
        #expect(serverDB.get(id: 1, of: Package.self)?.installed == "2")

        // --- as in README.md ---
        let exported = try clientDB.getEncodedHistory(until: .distantPast)
        let other = InMemoryDatabase()
        try other.insert(records: exported)
        // --- end ---
        try StateSyncTests.checkSynced(other)
    }
}
