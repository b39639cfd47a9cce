import Foundation
import Testing
import Unity
import DriverSQLite
import DriverPostgres
import UnityState

// The code of the UnityState catalog's articles, compiled and run on every state store (in
// memory, SQLite, PostgreSQL) where the article is about behaviour they share, and on both SQL
// backends where it is about the SQL stores. Every ```swift block of an article stands here line
// for line (DocumentationExamplesTests checks that).

// MARK: - From "Getting started"

@Model(id: 1)
final class Contact {

    @Property(id: 1)
    var name: String

    @Property(id: 2)
    var age: Int = 18

    @Property(id: 3)
    var email: String?
}

func openContacts(at location: String) throws -> SQLDatabase {
    let core: Unity.Database
    if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") {
        core = try Unity.Database(driver: PostgresDriver(location))
    } else {
        core = try Unity.Database(driver: SQLiteDriver(path: location))   // a file path, or ":memory:"
    }
    return try SQLDatabase(core)   // creates the store's tables the first time (a migration)
}

// MARK: - From "Models and properties"

struct Artwork: Codable, Equatable {
    var color: String
    var size: Int
}

@Model(id: 20)
final class Song {
    @Property(id: 1) var title: String
    @Property(id: 2) var seconds: Int
}

@Model(id: 21)
final class Playlist {
    @Property(id: 1)
    var name: String = "Untitled"       // an explicit default

    @Property(id: 2)
    var plays: Int                       // Defaultable: 0 until set

    @Property(id: 3)
    var note: String?                    // an optional: nil until set

    @Property(id: 4)
    var tags: Set<String>                // any Codable value

    @Property(id: 5)
    var cover: Artwork?

    @Reference(id: 6)
    var featured: Song?                  // a reference is always optional

    @ReferenceList(id: 7)
    var songs: [Song]                    // Array, Set, ContiguousArray, SequenceInitializable

    var duration: Int { songs.reduce(0) { $0 + $1.seconds } }   // computed: not stored
}

enum ModelId: ModelKey {
    case mixtape = 22
    case radioShow = 23
}

@Model(id: ModelId.mixtape.rawValue)
final class Mixtape {
    @Property(id: 1) var title: String
}

// MARK: - From "Stores"

@Model(id: 40)
final class Thermostat {
    @Property(id: 1) var room: String
    @Property(id: 2) var target: Double = 20
}

func readValue<V: StateDatabaseValue>(_ database: any StateDatabase, at path: Path) -> V? {
    database.get(path)
}

final class MinimalDatabase: StateDatabase {

    private var cache: [Path: Any] = [:]

    func get<Value: StateDatabaseValue>(_ path: Path) -> Value? {
        cache[path] as? Value
    }

    func set<Value: StateDatabaseValue>(_ value: Value, for path: Path) {
        cache[path] = value
    }

    func all<T>(model: ModelKey, where predicate: (_ instance: InstanceKey, _ status: InstanceStatus) -> T?) -> [T] {
        cache.compactMap { (path, value) -> T? in
            guard path.model == model,
                  path.property == PropertyKey.instanceId,
                  let status = value as? InstanceStatus else {
                return nil
            }
            return predicate(path.instance, status)
        }
    }
}

// MARK: - From "History and views at an instant"

@Model(id: 50)
final class Draft {
    @Property(id: 1) var title: String
    @Property(id: 2) var words: Int
}

// MARK: - From "Editing contexts"

@Model(id: 60)
final class Reservation {
    @Property(id: 1) var guest: String
    @Property(id: 2) var nights: Int = 1
}

// MARK: - From "Synchronization"

@Model(id: 70)
final class SystemPackage {
    @Property(id: 1)
    var name: String

    @Property(id: 2)
    var installed: String?

    @Command(id: 1)
    func install(version: String) {
        installed = version
    }
}

/// The model type of each model id, for both sides of a synchronization.
func packageModels(_ modelId: ModelKey) -> (any ModelProtocol.Type)? {
    switch modelId {
    case SystemPackage.modelId: return SystemPackage.self
    default: return nil
    }
}

// MARK: - From "Queries and observation"

@Model(id: 30)
final class Chore {
    @Property(id: 1) var title: String
    @Property(id: 2) var done: Bool
    @Property(id: 3) var minutes: Int = 15
}

// MARK: - The examples, run

@Suite("Documentation: the UnityState catalog's examples")
struct StateArticleExamples {

    // MARK: Getting started

    /// The getting-started walk-through, on every store.
    static func gettingStarted(_ database: any StateDatabase) throws {
        let alice = try Contact.create(in: database, id: 123, name: "Alice")
        let bob: Contact = database.create(id: 124)
        bob.name = "Bob"
        bob.age = 42

        #expect(alice.age == 18 && alice.email == nil)
        #expect(bob.name == "Bob" && bob.age == 42)

        let found: Contact? = database.get(id: 123)
        let everyone = database.all(of: Contact.self)
        let adults = database.all(Contact.self) { $0.age >= 21 }                // a closure, run in Swift
        let bobs = try database.all(Contact.self, matching: \.name == "Bob")    // a key path: SQL on the SQL stores

        #expect(found?.name == "Alice")
        #expect(everyone.map(\.id).sorted() == [123, 124])
        #expect(adults.map(\.name) == ["Bob"])
        #expect(bobs.map(\.id) == [124])

        alice.email = "alice@example.com"
        alice.age += 1

        #expect(database.get(id: 123, of: Contact.self)?.email == "alice@example.com")
        #expect(database.get(id: 123, of: Contact.self)?.age == 19)

        bob.delete()                    // marked deleted; its values stay
        let stillThere = database.get(id: 124, of: Contact.self)      // found, with status .deleted
        let active = database.active(id: 124, of: Contact.self)       // nil: deleted
        bob.insert()                    // restored, with its values

        #expect(stillThere != nil && active == nil)
        #expect(bob.status == .created && bob.name == "Bob" && bob.age == 42)

        try bob.deleteAndClearProperties()   // deleted, and every property back to its default

        #expect(bob.status == .deleted && bob.name == "" && bob.age == 18)
        #expect(stillThere?.status == .deleted && stillThere?.name == "")
        #expect(database.all(of: Contact.self).map(\.id) == [123])
    }

    @Test(arguments: StateStore.allCases)
    func gettingStartedOnEveryStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Self.gettingStarted(fixture.database)
    }

    @Test func gettingStartedInMemory() throws {
        let database = InMemoryDatabase()
        let alice = try Contact.create(in: database, id: 123, name: "Alice")
        #expect(alice.name == "Alice")
        #expect(database.get(id: 123, of: Contact.self)?.name == "Alice")
    }

    @Test(arguments: Backend.allCases)
    func openingAStore(_ backend: Backend) throws {
        // A SQLite file, or a PostgreSQL URL whose connections work in a schema of their own
        // (libpq's `options` parameter), dropped afterwards.
        let token = UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let location: String
        var schemaName = "main"
        var cleanUp: () -> Void
        switch backend {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("unity-doc-\(token).sqlite").path
            location = path
            cleanUp = { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        case .postgres:
            let url = try #require(postgresURL)
            let schema = "doc_\(token)"
            schemaName = schema
            let admin = try Unity.Database(driver: PostgresDriver(url, connections: 1))
            try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
            location = url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D" + schema
            cleanUp = {
                _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(schema)\" CASCADE") }
                admin.close()
            }
        }
        defer { cleanUp() }
        let store = try openContacts(at: location)
        defer { store.database.close() }
        let id = 125
        let carol = try Contact.create(in: store, id: id, name: "Carol", age: 33)
        #expect(carol.name == "Carol")
        // Read back through a second store on the same database: the values are in its tables.
        let again = try openContacts(at: location)
        defer { again.database.close() }
        let read = again.get(id: id, of: Contact.self)
        #expect(read?.name == "Carol" && read?.age == 33 && read?.email == nil)
        // The tables are in the test's own schema (or file), nowhere else.
        let tables = try store.database.read { conn in
            try conn.fetchValue(Int.self, sql: backend == .sqlite
                ? "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'unity_state_%'"
                : "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'unity_state_%'")
        }
        #expect(tables == 2)
        if backend == .postgres {
            #expect(try store.database.read { try $0.fetchValue(String.self, sql: "SELECT current_schema()") } == schemaName)
        }
    }

    // MARK: Models and properties

    static func modelsAndProperties(_ database: any StateDatabase) throws {
        let intro = try Song.create(in: database, id: 1, title: "Intro", seconds: 90)
        let outro = try Song.create(in: database, id: 2, title: "Outro", seconds: 150)
        let mix = try Playlist.create(in: database, id: 1, songs: [intro, outro])

        #expect(mix.name == "Untitled" && mix.plays == 0 && mix.note == nil && mix.tags.isEmpty)
        #expect(mix.songs.map(\.title) == ["Intro", "Outro"])

        mix.plays += 1
        mix.tags.insert("calm")
        mix.cover = Artwork(color: "teal", size: 600)
        mix.featured = outro

        #expect(mix.duration == 240)
        #expect(mix.plays == 1 && mix.tags == ["calm"])
        #expect(mix.cover == Artwork(color: "teal", size: 600))
        #expect(mix.featured?.title == "Outro")

        outro.delete()
        let featuredStatus = mix.featured?.status          // .deleted: the reference still points at it
        let statuses = mix.songs.map(\.status)             // [.created, .deleted]
        mix.songs.removeAll { $0.status == .deleted }
        mix.featured = nil

        #expect(featuredStatus == .deleted)
        #expect(statuses == [.created, .deleted])
        #expect(mix.songs.map(\.id) == [1] && mix.featured == nil)

        let playsPath = Path(model: Playlist.modelId, instance: mix.id, property: Playlist.PropertyId.plays)
        let plays: Int? = database.get(playsPath)                      // 1
        let songIds = database.get(mix.path(of: 7), of: [InstanceKey].self)   // [1]: a list stores ids

        #expect(plays == 1)
        #expect(songIds == [1])

        let mixtape = try Mixtape.create(in: database, id: 1, title: "Blue")
        #expect(Mixtape.modelId == 22)
        #expect(database.get(id: 1, of: Mixtape.self)?.title == mixtape.title)
    }

    @Test(arguments: StateStore.allCases)
    func modelsAndPropertiesOnEveryStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Self.modelsAndProperties(fixture.database)
        // Only values that differ from their default were stored by `create`.
        let name: String? = fixture.database.get(Path(model: 21, instance: 1, property: 1))
        #expect(name == nil)
    }

    // MARK: Stores

    static func sqlStores(_ core: Unity.Database) throws {
        let store = try SQLDatabase(core)
        let kitchen = try Thermostat.create(in: store, id: 1, room: "Kitchen")
        kitchen.target = 21.5

        store.onError = { error in print("a state write failed: \(error)") }
        try store.transaction {
            kitchen.target = 22
            kitchen.room = "Kitchen and dining"
        }

        #expect(kitchen.target == 22 && kitchen.room == "Kitchen and dining")

        let written: Timestamped<Double>? = store.get(kitchen.path(of: 2))
        // written?.value == 22, written?.date: when it was written

        #expect(written?.value == 22)
        #expect(written.map { $0.date.timeIntervalSinceNow < 60 } == true)

        core.close()
        kitchen.target = 18             // fails: reported to onError and kept in lastError
        let failure = store.lastError   // StateError.store(.misuse(…)): the database is closed

        guard case .store(.misuse) = failure else {
            Issue.record("expected a misuse error, got \(String(describing: failure))")
            return
        }
        // A transaction that cannot begin throws the core's error.
        #expect(throws: DatabaseError.self) { try store.transaction { kitchen.room = "Hall" } }
    }

    @Test(arguments: Backend.allCases)
    func sqlStoresOnBothBackends(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        try Self.sqlStores(test.database)
        // Nothing of the failed writes reached the tables.
        let again = try SQLDatabase(test.openAgain())
        defer { again.database.close() }
        let kitchen = again.get(id: 1, of: Thermostat.self)
        #expect(kitchen?.target == 22 && kitchen?.room == "Kitchen and dining")
    }

    static func transactions(_ database: any StateDatabase) throws {
        let hall = try Thermostat.create(in: database, id: 2, room: "Hall", target: 19)
        struct Cancelled: Error {}
        do {
            try database.transaction {
                hall.target = 25
                throw Cancelled()
            }
        } catch {
            // Nothing of the transaction was applied: hall.target is still 19.
        }
        #expect(hall.target == 19)

        let path = Path(model: Thermostat.modelId, instance: 2, property: 1)
        let room: String? = readValue(database, at: path)
        #expect(room == "Hall")
    }

    @Test(arguments: StateStore.allCases)
    func transactionsOnEveryStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Self.transactions(fixture.database)
    }

    @Test func inMemoryStores() throws {
        let memory = InMemoryDatabase()            // current values, in this process
        let history = InMemoryHistoryDatabase()    // every write, with its date
        let minimal = MinimalDatabase()
        for database in [memory, history, minimal] as [any StateDatabase] {
            let porch = try Thermostat.create(in: database, id: 4, room: "Porch", target: 12)
            porch.target -= 2
            #expect(database.get(id: 4, of: Thermostat.self)?.target == 10)
            #expect(database.all(of: Thermostat.self).map(\.room) == ["Porch"])
        }
    }

    static func caches(_ database: any StateDatabase) throws {
        let cached = CachedDatabase(wrapping: database, cache: MaximumCountCache(maxCount: 1000))
        let office = try Thermostat.create(in: cached, id: 3, room: "Office")
        _ = office.room                 // read from the store, then kept in the cache
        _ = office.room                 // answered by the cache
        #expect(office.room == "Office")
        #expect(database.get(id: 3, of: Thermostat.self)?.room == "Office")
    }

    @Test(arguments: StateStore.allCases)
    func cachesOnEveryStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Self.caches(fixture.database)
    }

    // MARK: History and views at an instant

    static func history(_ history: any HistoryDatabase) throws {
        let draft = try Draft.create(in: history, id: 1, title: "First words")
        let first: Timestamped<String>? = history.get(draft.path(of: 1))
        guard let firstWritten = first?.date else { return }
        draft.title = "Second thoughts"
        draft.words = 800

        let then = history.view(at: firstWritten)
        let old = then.get(id: 1, of: Draft.self)
        // old?.title == "First words", old?.words == 0; draft.title == "Second thoughts"

        #expect(old?.title == "First words" && old?.words == 0)
        #expect(draft.title == "Second thoughts" && draft.words == 800)

        then.moveView(to: Date.distantFuture)
        // old?.title == "Second thoughts": objects read from a view follow it

        #expect(old?.title == "Second thoughts")

        let titleThen: Timestamped<String>? = history.get(draft.path(of: 1), at: firstWritten)
        let before = history.view(at: .distantPast).all(of: Draft.self)   // []: not created yet

        #expect(titleThen?.value == "First words" && titleThen?.date == firstWritten)
        #expect(before.isEmpty)

        history.set("An old edit", for: draft.path(of: 1), at: .distantPast)
        // draft.title is still "Second thoughts": an older write never becomes current

        #expect(draft.title == "Second thoughts")
        let oldest: Timestamped<String>? = history.get(draft.path(of: 1), at: Date(timeIntervalSinceReferenceDate: -1e9))
        #expect(oldest?.value == "An old edit")
    }

    @Test(arguments: StateHistoryStore.allCases)
    func historyOnEveryHistoryStore(_ store: StateHistoryStore) throws {
        let clock = StepClock()
        let fixture = try store.make(clock: { clock.next() })
        defer { fixture.tearDown() }
        try Self.history(try fixture.history)
    }

    @Test(arguments: Backend.allCases)
    func sqlHistoryStore(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let core = test.database
        let history = try SQLHistoryDatabase(core)
        let draft = try Draft.create(in: history, id: 1, title: "Notes")
        #expect(history.get(id: 1, of: Draft.self)?.title == draft.title)
    }

    // MARK: Editing contexts

    static func editingContexts(_ database: any StateDatabase) throws {
        let context = database.createEditingContext()
        let booking: Reservation = context.create(id: 7)
        booking.guest = "Ada"
        booking.nights = 3

        let pending = context.hasChanges                        // true
        let outside = database.get(id: 7, of: Reservation.self)  // nil: not committed yet
        try context.commitChanges()                             // one transaction
        let saved = database.get(id: 7, of: Reservation.self)    // guest "Ada", 3 nights

        #expect(pending)
        #expect(outside == nil)
        #expect(saved?.guest == "Ada" && saved?.nights == 3)
        #expect(!context.hasChanges)

        let draft = database.createEditingContext()
        draft.get(id: 7, of: Reservation.self)?.nights = 10
        let changed = draft.changedPaths        // [Path(model: 60, instance: 7, property: 2)]
        draft.discardChanges()                  // nothing reaches the database

        #expect(changed == [Path(model: 60, instance: 7, property: 2)])
        #expect(database.get(id: 7, of: Reservation.self)?.nights == 3)

        let watching = database.createEditingContext()
        let seen = watching.get(id: 7, of: Reservation.self)
        saved?.guest = "Ada Lovelace"           // written to the database after the context was made
        // seen?.guest == "Ada Lovelace": a plain context sees later writes to paths it did not edit

        #expect(seen?.guest == "Ada Lovelace")
    }

    @Test(arguments: StateStore.allCases)
    func editingContextsOnEveryStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Self.editingContexts(fixture.database)
    }

    static func historyContexts(_ history: any HistoryDatabase) throws {
        try Reservation.create(in: history, id: 8, guest: "Grace", nights: 2)

        let snapshot = history.createEditingContextWithCurrentState()
        let mine = snapshot.get(id: 8, of: Reservation.self)
        history.get(id: 8, of: Reservation.self)?.guest = "Grace Hopper"   // a later write to the database
        // mine?.guest == "Grace": the snapshot does not see it
        mine?.guest = "G. Hopper"
        mine?.nights = 4
        let overtaken = try snapshot.commitChanges()   // [the guest path]: the later write wins there

        #expect(overtaken == [Path(model: 60, instance: 8, property: 1)])
        #expect(history.get(id: 8, of: Reservation.self)?.guest == "Grace Hopper")
        #expect(history.get(id: 8, of: Reservation.self)?.nights == 4)
    }

    @Test(arguments: StateHistoryStore.allCases)
    func historyContextsOnEveryHistoryStore(_ store: StateHistoryStore) throws {
        let fixture = try store.make(clock: { Date() })
        defer { fixture.tearDown() }
        try Self.historyContexts(try fixture.history)
    }

    // MARK: Synchronization

    static func synchronization(server serverDB: any StateDatabase, client clientDB: any StateDatabase) throws {
        try SystemPackage.create(in: serverDB, id: 1, name: "curl")
        try SystemPackage.create(in: serverDB, id: 2, name: "git", installed: "2.47")

        let server = RequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: packageModels)
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: packageModels)

        // Which instances exist (created or deleted), changed after a date (nil: all of them)
        let statusRequest = try client.instanceStatusRequest(for: SystemPackage.self, after: nil)
        try client.apply(instanceUpdates: try server.process(instanceStatusRequest: statusRequest))

        // Every property of every instance, a page at a time
        var next: InstanceKey? = nil
        repeat {
            let request = try client.modelUpdateRequest(for: SystemPackage.self, after: nil, limit: 500, startingAt: next)
            next = try client.apply(modelUpdate: try server.process(modelUpdateRequest: request))
        } while next != nil

        // One instance
        let one = try client.instanceUpdateRequest(for: 2, of: SystemPackage.self, after: nil)
        try client.apply(instanceUpdate: try server.process(instanceUpdateRequest: one))

        #expect(clientDB.all(of: SystemPackage.self).map(\.name).sorted() == ["curl", "git"])
        #expect(clientDB.get(id: 2, of: SystemPackage.self)?.installed == "2.47")

        // Any update message, whatever its kind (returns where the next page starts, for a page)
        let page = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: SystemPackage.self))
        let more = try client.apply(data: page)

        #expect(more == nil)

        do {
            try client.apply(data: Data("not a message".utf8))
        } catch {
            // error is a StateError (typed throws): .invalidDataSupplied, and nothing was applied
        }

        #expect(throws: StateError.self) { try client.apply(data: Data("not a message".utf8)) }

        #expect(clientDB.get(id: 1, of: SystemPackage.self) != nil)

        // A command: made on the client, run on the server's instance
        guard let curl = clientDB.get(id: 1, of: SystemPackage.self) else { return }
        let request = curl.installCommand(version: "8.11")
        let answer = server.process(command: try client.encode(command: request))   // on the server
        try client.decode(commandResponse: answer)                                  // throws the command's error

        #expect(serverDB.get(id: 1, of: SystemPackage.self)?.installed == "8.11")
        #expect(clientDB.get(id: 1, of: SystemPackage.self)?.installed == nil)

        let missing = server.process(command: try client.encode(command: CommandRequest(model: 70, instance: 99, command: 1, arguments: ["1.0"])))
        #expect(throws: StateError.self) { try client.decode(commandResponse: missing) }
    }

    @Test(arguments: StateStore.allCases)
    func synchronizationBetweenStores(_ store: StateStore) throws {
        let server = try store.make()
        defer { server.tearDown() }
        let client = try StateStore.inMemory.make()
        try Self.synchronization(server: server.database, client: client.database)
        // And the other way round: an in-memory server, this store as the client.
        let server2 = try StateStore.inMemory.make()
        let client2 = try store.make()
        defer { client2.tearDown() }
        try Self.synchronization(server: server2.database, client: client2.database)
    }

    static func unencodedSynchronization(server serverDB: any StateDatabase, client clientDB: any StateDatabase) throws {
        try SystemPackage.create(in: serverDB, id: 3, name: "zlib", installed: "1.3")

        let server = UnencodedRequestProcessor(database: serverDB, modelMap: packageModels)
        let client = UnencodedUpdateConsumer(database: clientDB, modelMap: packageModels)
        try client.apply(instanceUpdates: try server.instanceStatusUpdates(for: SystemPackage.self, after: nil))
        var next: InstanceKey? = nil
        repeat {
            next = try client.apply(modelUpdates: try server.allUpdates(for: SystemPackage.self, after: nil, limit: 500, startingAt: next))
        } while next != nil

        let update: InstanceUpdate = try server.updates(for: 3, of: SystemPackage.self, after: nil)
        let version = update.properties.first { $0.id == 2 }?.value(as: String?.self)   // "1.3" (a String?)
        if let zlib = clientDB.get(id: 3, of: SystemPackage.self) {
            try server.process(command: zlib.installCommand(version: "1.3.1"))   // runs on the server's instance
        }

        #expect(version == "1.3")
        #expect(clientDB.get(id: 3, of: SystemPackage.self)?.installed == "1.3")
        #expect(serverDB.get(id: 3, of: SystemPackage.self)?.installed == "1.3.1")
    }

    @Test(arguments: StateStore.allCases)
    func unencodedSynchronizationBetweenStores(_ store: StateStore) throws {
        let server = try store.make()
        defer { server.tearDown() }
        let client = try StateStore.inMemory.make()
        try Self.unencodedSynchronization(server: server.database, client: client.database)
    }

    @Test func exportAndImport() throws {
        let phone = InMemoryDatabase()
        try SystemPackage.create(in: phone, id: 4, name: "openssl", installed: "3.4")

        let exported = try phone.getEncodedHistory(until: .distantPast)   // Data: every write after the date
        let laptop = InMemoryDatabase()
        try laptop.insert(records: exported)                                // the later write of each path wins

        #expect(laptop.get(id: 4, of: SystemPackage.self)?.installed == "3.4")
        #expect(laptop.get(id: 4, of: SystemPackage.self)?.name == "openssl")

        let broken = InMemoryDatabase()
        #expect(throws: StateError.self) { try broken.insert(records: Data("[1,2".utf8)) }
        #expect(broken.all(of: SystemPackage.self).isEmpty)
    }

    // MARK: Queries and observation

    static func queries(_ database: any StateDatabase) throws {
        try Chore.create(in: database, id: 1, title: "Dishes", minutes: 20)
        try Chore.create(in: database, id: 2, title: "Laundry", done: true, minutes: 45)
        try Chore.create(in: database, id: 3, title: "Plants")

        let open = database.all(Chore.self) { !$0.done }                            // in Swift
        let long = try database.all(Chore.self, matching: \.minutes > 15 && \.done == false)  // in SQL on the SQL stores

        #expect(open.map(\.title).sorted() == ["Dishes", "Plants"])
        #expect(long.map(\.title) == ["Dishes"])

        let byLength = QueryDescriptor<Chore>(where: \.done == false, sortBy: { $0.minutes }, ascending: false)
        let ordered = try database.all(byLength)                 // Dishes (20), Plants (15)

        #expect(ordered.map(\.title) == ["Dishes", "Plants"])

        do {
            _ = try database.all(Chore.self, matching: \.title.count > 5)
        } catch StateError.invalidFilter(let reason) {
            print("not a stored property: \(reason)")   // rather than filter wrongly
        }
    }

    @Test(arguments: StateStore.allCases)
    func queriesOnEveryStore(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Self.queries(fixture.database)
        #expect(throws: StateError.self) { try fixture.database.all(Chore.self, matching: \.title.count > 5) }
    }

    static func observation(_ database: any StateDatabase) async throws -> [InstanceKey]? {
        let observed = ObservableDatabase(wrapping: database)
        let dishes = try Chore.create(in: observed, id: 1, title: "Dishes")
        try Chore.create(in: observed, id: 2, title: "Laundry", minutes: 45)

        let results = QueryResults(database: observed, descriptor: QueryDescriptor<Chore>(where: \.done == false, sortBy: { $0.title }))
        let before = results.items.map(\.title)               // ["Dishes", "Laundry"]
        var updates = results.updates().makeAsyncIterator()
        dishes.done = true                                    // recomputed after the write
        let after = results.items.map(\.title)                // ["Laundry"]
        let next = await updates.next()                       // [2]: the ids of the new result

        #expect(before == ["Dishes", "Laundry"])
        #expect(after == ["Laundry"])

        results.descriptor = QueryDescriptor<Chore>(where: \.minutes >= 30)
        let replaced = results.items.map(\.title)             // ["Laundry"]

        #expect(replaced == ["Laundry"])

        var written: [Path] = []
        let listener = observed.addListener { paths in written += paths }
        try observed.transaction {
            dishes.minutes = 5
            dishes.title = "Dishes and pans"
        }
        listener.cancel()
        // written == [(30, 1, 3), (30, 1, 1)]: once, when the transaction succeeded

        #expect(written == [Path(model: 30, instance: 1, property: 3), Path(model: 30, instance: 1, property: 1)])
        return next
    }

    @Test(arguments: StateStore.allCases)
    func observationOnEveryStore(_ store: StateStore) async throws {
        // The example awaits one update: a timeout cancels it (the stream then ends with nil).
        let run = Task {
            let fixture = try store.make()
            defer { fixture.tearDown() }
            return try await Self.observation(fixture.database)
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            run.cancel()
        }
        let next = try await run.value
        timeout.cancel()
        #expect(next == [2])
    }

    static func observationOfChanges(_ database: any StateDatabase) async throws -> [Path] {
        let observed = ObservableDatabase(wrapping: database)
        let changes = observed.changes(of: Chore.self)
        let plants = try Chore.create(in: observed, id: 3, title: "Plants")
        plants.done = true

        var seen: [Path] = []
        for await path in changes {
            seen.append(path)          // the status, then the title, then done
            if seen.count == 3 { break }
        }
        return seen
    }

    @Test(arguments: StateStore.allCases)
    func changesOnEveryStore(_ store: StateStore) async throws {
        let run = Task {
            let fixture = try store.make()
            defer { fixture.tearDown() }
            return try await Self.observationOfChanges(fixture.database)
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            run.cancel()
        }
        let seen = try await run.value
        timeout.cancel()
        #expect(seen == [Path(model: 30, instance: 3), Path(model: 30, instance: 3, property: 1),
                         Path(model: 30, instance: 3, property: 2)])
    }
}

/// A clock that moves one second forward at each call, so the history examples' dates are
/// exact and distinct on every store.
final class StepClock: @unchecked Sendable {
    // @unchecked: `now` is read and written only under `lock`.
    private let lock = NSLock()
    private var now = Date(timeIntervalSince1970: 1_767_225_600)   // 2026-01-01

    func next() -> Date {
        lock.lock()
        defer { lock.unlock() }
        now += 1
        return now
    }
}
