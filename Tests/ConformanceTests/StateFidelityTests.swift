import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity
import UnityState

// This file imports the core, both drivers and UnityState together, as an application that
// keeps state and plain tables in one database does: the state flavor's protocols are spelled
// `StateDatabase` and `StateDatabaseValue` here (`Database` alone names two types).

/// What a store gives back is exactly what was written: the nil depth of nested optionals, on
/// every store (with and without a cache in front) and through synchronization.
@Suite struct StateFidelityTests {

    /// Nested optionals at each depth.
    @Model(id: 40)
    final class Depths {
        @Property(id: 1) var two: Int??
        @Property(id: 2) var three: Int???
        @Property(id: 3) var text: String??
        @Property(id: 4) var withDefault: Int?? = .some(.some(5))
    }

    static func modelMap(_ id: ModelKey) -> (any ModelProtocol.Type)? {
        id == 40 ? Depths.self : nil
    }

    /// A store, bare or behind a cache.
    enum Front: String, CaseIterable, Sendable {
        case bare, cached
    }

    static func front(_ db: any StateDatabase, _ front: Front) -> any StateDatabase {
        switch front {
        case .bare: return db
        case .cached: return CachedDatabase(wrapping: db, cache: MaximumCountCache(maxCount: 100))
        }
    }

    /// What `get` returns, spelled out (`Optional(nil)`: a stored nil).
    static func read<Value: StateDatabaseValue>(_ db: any StateDatabase, _ path: Path, as type: Value.Type) -> String {
        let found: Value? = db.get(path)
        return String(describing: found)
    }

    @Test(arguments: StateStore.allCases, Front.allCases)
    func nestedOptionalsReadBackAtTheirDepth(_ store: StateStore, _ front: Front) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = Self.front(fixture.database, front)
        let two = Path(model: 40, instance: 1, property: 1)
        let three = Path(model: 40, instance: 1, property: 2)
        let text = Path(model: 40, instance: 1, property: 3)
        #expect(Self.read(db, two, as: Int??.self) == "nil")   // nothing stored

        db.set(Int??.none, for: two)
        #expect(Self.read(db, two, as: Int??.self) == "Optional(nil)")
        db.set(Int??.some(nil), for: two)
        #expect(Self.read(db, two, as: Int??.self) == "Optional(Optional(nil))")
        db.set(Int??.some(.some(4)), for: two)
        #expect(Self.read(db, two, as: Int??.self) == "Optional(Optional(Optional(4)))")
        // An explicit nil written over a value.
        db.set(Int??.none, for: two)
        #expect(Self.read(db, two, as: Int??.self) == "Optional(nil)")

        db.set(Int???.some(nil), for: three)
        #expect(Self.read(db, three, as: Int???.self) == "Optional(Optional(nil))")
        db.set(Int???.some(.some(nil)), for: three)
        #expect(Self.read(db, three, as: Int???.self) == "Optional(Optional(Optional(nil)))")
        db.set(Int???.some(.some(.some(-3))), for: three)
        #expect(Self.read(db, three, as: Int???.self) == "Optional(Optional(Optional(Optional(-3))))")
        db.set(Int???.none, for: three)
        #expect(Self.read(db, three, as: Int???.self) == "Optional(nil)")

        db.set(String??.some(nil), for: text)
        #expect(Self.read(db, text, as: String??.self) == "Optional(Optional(nil))")
        db.set(String??.some("x"), for: text)
        #expect(Self.read(db, text, as: String??.self) == "Optional(Optional(Optional(\"x\")))")
        db.set(String??.none, for: text)
        #expect(Self.read(db, text, as: String??.self) == "Optional(nil)")

        // Through the model: a stored nil is not the default.
        let depths: Depths = db.create(id: 2)
        #expect(depths.withDefault == .some(.some(5)))
        depths.withDefault = nil
        #expect(String(describing: depths.withDefault) == "nil")
        depths.withDefault = .some(nil)
        #expect(String(describing: depths.withDefault) == "Optional(nil)")
        depths.three = .some(.some(nil))
        #expect(String(describing: depths.three) == "Optional(Optional(nil))")

        // Read from the store itself, past any cache.
        #expect(Self.read(fixture.database, three, as: Int???.self) == "Optional(nil)")
        #expect(Self.read(fixture.database, Path(model: 40, instance: 2, property: 4), as: Int??.self) == "Optional(Optional(nil))")
    }

    /// Each depth travels through a sync unchanged, from every store to every kind of client.
    @Test(arguments: StateStore.allCases)
    func nestedOptionalsTravelExactly(_ store: StateStore) throws {
        let serverFixture = try store.make()
        defer { serverFixture.tearDown() }
        let clientStore: StateStore = store == .postgres ? .sqlite : .postgres
        let clientFixture = try clientStore.make()
        defer { clientFixture.tearDown() }
        let serverDB = serverFixture.database
        let clientDB = clientFixture.database
        let a = try Depths.create(in: serverDB, id: 1, two: nil, three: .some(.some(nil)), text: .some(nil), withDefault: nil)
        let b = try Depths.create(in: serverDB, id: 2, two: .some(nil), three: .some(nil), text: .some("t"), withDefault: .some(nil))
        // Explicit nils over values.
        a.two = .some(.some(1))
        a.two = nil
        b.withDefault = .some(.some(9))
        b.withDefault = .some(nil)
        // A client that already holds values: the nils must replace them.
        _ = try Depths.create(in: clientDB, id: 1, two: .some(.some(7)), three: .some(.some(.some(7))), text: .some("old"),
                              withDefault: .some(.some(7)))
        let server = RequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        Thread.sleep(forTimeInterval: 0.002)
        // The server's writes must be newer than the client's for a dated client to take them.
        a.two = nil
        a.three = .some(.some(nil))
        a.text = .some(nil)
        a.withDefault = nil
        try client.apply(modelUpdate: try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Depths.self)))
        let path = { (instance: InstanceKey, property: PropertyKey) in Path(model: 40, instance: instance, property: property) }
        #expect(Self.read(clientDB, path(1, 1), as: Int??.self) == "Optional(nil)")
        #expect(Self.read(clientDB, path(1, 2), as: Int???.self) == "Optional(Optional(Optional(nil)))")
        #expect(Self.read(clientDB, path(1, 3), as: String??.self) == "Optional(Optional(nil))")
        #expect(Self.read(clientDB, path(1, 4), as: Int??.self) == "Optional(nil)")
        #expect(Self.read(clientDB, path(2, 1), as: Int??.self) == "Optional(Optional(nil))")
        #expect(Self.read(clientDB, path(2, 2), as: Int???.self) == "Optional(Optional(nil))")
        #expect(Self.read(clientDB, path(2, 3), as: String??.self) == "Optional(Optional(Optional(\"t\")))")
        #expect(Self.read(clientDB, path(2, 4), as: Int??.self) == "Optional(Optional(nil))")
        let synced = try #require(clientDB.get(id: 1, of: Depths.self))
        #expect(String(describing: synced.withDefault) == "nil")
        #expect(String(describing: synced.three) == "Optional(Optional(nil))")
    }

    // MARK: Values at a status path

    /// A value that is not an `InstanceStatus` at property 0 is stored and read back as its
    /// own type, beside the instance's status, which it leaves as it is (SQLiteStateDB).
    @Test(arguments: StateStore.allCases)
    func aValueAtTheStatusPathIsStoredBesideTheStatus(_ store: StateStore) throws {
        typealias Person = StateFixtures.Person
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let path = Path(model: 1, instance: 1, property: PropertyKey.instanceId)
        #expect((db.get(path) as Int?) == nil)
        db.set(123, for: path)
        #expect((db.get(path) as Int?) == 123)
        #expect((db.get(path) as InstanceStatus?) == nil)   // no status: no instance
        #expect(db.all(of: Person.self).isEmpty)
        _ = try Person.create(in: db, id: 1, name: "A")
        #expect((db.get(path) as InstanceStatus?) == .created)
        #expect((db.get(path) as Int?) == 123)
        db.set("text", for: path)
        #expect((db.get(path) as String?) == "text")
        #expect((db.get(path) as Int?) == nil)          // written as another type
        #expect((db.get(path) as InstanceStatus?) == .created)
        #expect(db.all(of: Person.self).map(\.id) == [1])
        if let sql = db as? SQLDatabase { #expect(sql.lastError == nil) }

        // Through an editing context.
        let context = db.createEditingContext()
        context.set(7, for: path)
        #expect((context.get(path) as Int?) == 7)
        #expect((context.get(path) as InstanceStatus?) == .created)
        #expect((db.get(path) as String?) == "text")
        #expect(context.changedPaths == [path])
        try context.commitChanges()
        #expect((db.get(path) as Int?) == 7)
        #expect((db.get(path) as InstanceStatus?) == .created)
        #expect(db.all(of: Person.self).map(\.id) == [1])

        // The history keeps both apart.
        if let history = db as? any HistoryDatabase {
            let view = history.view(at: Date().addingTimeInterval(60))
            #expect((view.get(path) as Int?) == 7)
            #expect((view.get(path) as InstanceStatus?) == .created)
            #expect(view.all(of: Person.self).map(\.id) == [1])
            (db.get(id: 1) as Person?)?.delete()
            let later = history.view(at: Date().addingTimeInterval(60))
            #expect((later.get(path) as InstanceStatus?) == .deleted)
            #expect((later.get(path) as Int?) == 7)
        }
    }

    // MARK: Store errors while applying an update

    /// A constraint the database enforces fails while an update is applied: the error is the
    /// store's typed `DatabaseError`, and nothing of the update is applied.
    @Test(arguments: [StateStore.sqlite, .sqliteHistory, .postgres, .postgresHistory])
    func aStoreErrorWhileApplyingAnUpdateStaysTyped(_ store: StateStore) throws {
        typealias Person = StateFixtures.Person
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let clientDB = fixture.database
        let core = try #require(fixture.sql?.database)
        _ = try Person.create(in: clientDB, id: 5, name: "Kept", age: 50)
        // Every stored text unique: the test's own constraint, so that an update can break it.
        _ = try core.execute(sql: "CREATE UNIQUE INDEX state_test_unique_text ON unity_state_values (text_value)")
        let serverDB = InMemoryDatabase()
        _ = try Person.create(in: serverDB, id: 1, name: "Same", age: 1)
        _ = try Person.create(in: serverDB, id: 2, name: "Same", age: 2)
        _ = try Person.create(in: serverDB, id: 3, name: "Kept", age: 3)
        let map: ModelMap = { $0 == 1 ? Person.self : nil }
        let server = RequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)

        func expectUniqueViolation(_ apply: () throws -> Void) {
            let error = #expect(throws: StateError.self) { try apply() }
            guard case .store(.constraintViolation(let kind, _)) = error else {
                Issue.record("expected a typed constraint violation, got \(String(describing: error))")
                return
            }
            #expect(kind == .unique)
        }
        // A page with two instances of the same name.
        let page = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Person.self))
        expectUniqueViolation { try client.apply(modelUpdate: page) }
        // One instance whose name another instance of the client holds.
        let one = try server.process(instanceUpdateRequest: try client.instanceUpdateRequest(for: 3, of: Person.self))
        expectUniqueViolation { try client.apply(instanceUpdate: one) }

        // Nothing of either update was applied.
        #expect(clientDB.all(of: Person.self).map(\.id) == [5])
        #expect((clientDB.get(Path(model: 1, instance: 1)) as InstanceStatus?) == nil)
        #expect((clientDB.get(Path(model: 1, instance: 3, property: 2)) as Int?) == nil)
        let kept = try #require(clientDB.get(id: 5, of: Person.self))
        #expect(kept.name == "Kept" && kept.age == 50)
    }

    // MARK: Exact instants in the history

    /// A clock set by hand to exact instants.
    final class DateClock: @unchecked Sendable {
        private let lock = NSLock()
        private var now: Date
        init(_ now: Date) { self.now = now }
        func read() -> Date { lock.lock(); defer { lock.unlock() }; return now }
        func set(_ date: Date) { lock.lock(); now = date; lock.unlock() }
    }

    /// A view or a read at exactly a write's time shows that write; one tick before, it does
    /// not. The instant has digits below the microsecond, so that a store that kept fewer
    /// digits than a `Date` holds would miss it on one side.
    @Test(arguments: StateHistoryStore.allCases)
    func aViewAtExactlyAWritesTimeShowsIt(_ store: StateHistoryStore) throws {
        typealias Person = StateFixtures.Person
        let seconds = 800_000_000.123_456_7
        let instant = Date(timeIntervalSinceReferenceDate: seconds)
        let before = Date(timeIntervalSinceReferenceDate: seconds.nextDown)
        let clock = DateClock(instant)
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let db = try fixture.history
        let person = try Person.create(in: db, id: 1, name: "first")
        clock.set(Date(timeIntervalSinceReferenceDate: seconds + 10))
        person.name = "second"
        let name = Path(model: 1, instance: 1, property: 1)

        let atWrite: Timestamped<String>? = db.get(name, at: instant)
        #expect(atWrite == Timestamped(value: "first", date: instant))
        let earlier: Timestamped<String>? = db.get(name, at: before)
        #expect(earlier == nil)
        let status: Timestamped<InstanceStatus>? = db.get(Path(model: 1, instance: 1), at: instant)
        #expect(status == Timestamped(value: .created, date: instant))
        let current: Timestamped<String>? = db.get(name)
        #expect(current == Timestamped(value: "second", date: Date(timeIntervalSinceReferenceDate: seconds + 10)))

        let view = db.view(at: instant)
        #expect(view.all(of: Person.self).map(\.id) == [1])
        #expect(view.get(id: 1, of: Person.self)?.name == "first")
        view.moveView(to: before)
        #expect(view.all(of: Person.self).isEmpty)
        #expect(view.get(id: 1, of: Person.self) == nil)
        #expect(db.all(model: 1, at: before) { id, _, _ in id }.isEmpty)
        #expect(db.all(model: 1, at: instant) { id, status, date in date == instant && status == .created ? id : nil } == [1])
        // A write dated by the caller, read at exactly its date.
        let dated = Date(timeIntervalSinceReferenceDate: seconds + 5.000_000_3)
        db.set("dated", for: name, at: dated)
        view.moveView(to: dated)
        #expect(view.get(id: 1, of: Person.self)?.name == "dated")
        view.moveView(to: Date(timeIntervalSinceReferenceDate: (seconds + 5.000_000_3).nextDown))
        #expect(view.get(id: 1, of: Person.self)?.name == "first")
    }

    /// StateModel's "write in a history view", with the real clock, many times: a view taken
    /// right after a write shows it, and a later write does not change the view.
    @Test(arguments: StateHistoryStore.allCases)
    func aViewTakenRightAfterAWriteShowsIt(_ store: StateHistoryStore) throws {
        typealias Person = StateFixtures.Person
        let fixture = try store.make(clock: { Date() })
        defer { fixture.tearDown() }
        let db = try fixture.history
        let person = try Person.create(in: db, id: 1, name: "p")
        for round in 0..<25 {
            person.age = 42 + round
            let view = db.view(at: Date())
            person.age = 1337
            let seen = view.get(id: 1, of: Person.self)
            #expect(seen?.age == 42 + round, "round \(round)")
            seen?.age = 7              // ignored: a view is read-only
            #expect(seen?.age == 42 + round)
        }
        #expect(person.age == 1337)
    }

    // MARK: The core and the state flavor in one file

    /// The spelling the README gives for a file that imports the core, a driver and
    /// UnityState: `Unity.Database` for the core's database, `StateDatabase` for the state
    /// flavor's protocol.
    @Test func theCoreAndTheStateFlavorInOneFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("state-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) } }
        let core: Unity.Database = try Unity.Database(driver: SQLiteDriver(path: file))
        defer { core.close() }
        let state: any StateDatabase = try SQLDatabase(core)
        let value: StateDatabaseValue = 42
        state.set(value as? Int ?? 0, for: Path(model: 9, instance: 1, property: 1))
        #expect(state.get(model: 9, instance: 1, property: 1, of: Int.self) == 42)
        #expect(try core.fetchAll(sql: "SELECT int_value FROM unity_state_values").count == 1)
    }
}
