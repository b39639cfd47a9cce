import Foundation
import Testing
import UnityState

/// Synchronization and commands between two stores: a server (`RequestProcessor`) and a
/// client (`UpdateConsumer`), with PostgreSQL → SQLite and the other way round among them.
@Suite struct StateSyncTests {
    typealias Person = StateFixtures.Person
    typealias Pet = StateFixtures.Pet
    typealias Package = StateFixtures.Package

    static func modelMap(_ id: ModelKey) -> (any ModelProtocol.Type)? {
        switch id {
        case 1: return Person.self
        case 2: return Pet.self
        case 4: return Package.self
        default: return nil
        }
    }

    static func seed(_ server: any UnityState.Database) throws {
        let bob = try Person.create(in: server, id: 2, name: "Bob", age: 41)
        let cid = try Person.create(in: server, id: 3, name: "Cid")
        let rex = try Pet.create(in: server, id: 10, name: "Rex")
        try Person.create(in: server, id: 1, name: "Ann", age: 30, nickname: "A",
                          address: StateFixtures.Address(street: "Main", zip: 1), partner: bob, friends: [bob, cid])
            .pet = rex
        cid.delete()
        for id in 20..<27 { try Person.create(in: server, id: id, name: "p\(id)", age: id) }
    }

    /// Everything the client should hold after a full sync, checked against literals.
    static func checkSynced(_ client: any UnityState.Database) throws {
        let ann = try #require(client.get(id: 1, of: Person.self))
        #expect(ann.name == "Ann" && ann.age == 30 && ann.nickname == "A")
        #expect(ann.address == StateFixtures.Address(street: "Main", zip: 1))
        #expect(ann.partner?.id == 2 && ann.partner?.name == "Bob")
        #expect(ann.friends.map(\.id) == [2, 3])
        #expect(ann.friends.last?.status == .deleted)
        #expect(client.get(id: 3, of: Person.self)?.status == .deleted)
        #expect(client.get(id: 3, of: Person.self)?.name == "Cid")
        #expect(client.all(of: Person.self).map(\.id).sorted() == [1, 2] + Array(20..<27))
        #expect((client.get(id: 24) as Person?)?.age == 24)
    }

    /// Pages of at most `limit` updates until the server says it is done.
    static func pagedSync(server: RequestProcessor, client: UpdateConsumer, limit: Int) throws -> Int {
        var next: InstanceKey?
        var pages = 0
        repeat {
            let request = try client.modelUpdateRequest(for: Person.self, limit: limit, startingAt: next)
            next = try client.apply(modelUpdate: try server.process(modelUpdateRequest: request))
            pages += 1
            if pages > 100 { Issue.record("paging does not end"); break }
        } while next != nil
        return pages
    }

    /// One test body for any pair of stores.
    static func roundTrip(server serverDB: any UnityState.Database, client clientDB: any UnityState.Database) throws {
        try seed(serverDB)
        let server = RequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: modelMap)
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: modelMap)
        // Statuses first, then every property page by page (3 updates a page: whole instances).
        try client.apply(instanceUpdates: try server.process(instanceStatusRequest: try client.instanceStatusRequest(for: Person.self)))
        #expect(clientDB.all(of: Person.self).count == 9)
        let pages = try pagedSync(server: server, client: client, limit: 3)
        #expect(pages >= 4)
        try client.apply(instanceUpdate: try server.process(instanceUpdateRequest: try client.instanceUpdateRequest(for: 10, of: Pet.self)))
        try checkSynced(clientDB)
        #expect((clientDB.get(id: 1, of: Person.self))?.pet?.name == "Rex")

        // A message applied twice changes nothing.
        let page = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Person.self, limit: 1000))
        try client.apply(modelUpdate: page)
        try client.apply(modelUpdate: page)
        try checkSynced(clientDB)

        // A late message does not revert a newer value on a store that keeps dates.
        let old = try server.process(instanceUpdateRequest: try client.instanceUpdateRequest(for: 2, of: Person.self))
        Thread.sleep(forTimeInterval: 0.002)
        (serverDB.get(id: 2) as Person?)?.name = "Bob 2"
        try client.apply(instanceUpdate: try server.process(instanceUpdateRequest: try client.instanceUpdateRequest(for: 2, of: Person.self)))
        try client.apply(instanceUpdate: old)
        // (It needs dated messages: a server that keeps no dates sends none.)
        if clientDB is any TimestampedDatabase, serverDB is any TimestampedDatabase {
            #expect((clientDB.get(id: 2) as Person?)?.name == "Bob 2")
        }

        // Errors are typed and apply nothing.
        let stranger = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: { _ in nil })
        #expect(throws: StateError.self) { try stranger.apply(modelUpdate: page) }
        #expect(throws: StateError.self) { try client.apply(instanceUpdates: page) }      // wrong kind
        #expect(throws: StateError.self) { try client.apply(modelUpdate: Data("not a message".utf8)) }
        #expect(throws: StateError.self) {
            try server.process(instanceUpdateRequest: try client.instanceUpdateRequest(for: 999, of: Person.self))
        }
    }

    @Test(arguments: StateStore.allCases)
    func postgresServerToEveryClient(_ store: StateStore) throws {
        let server = try StateStore.postgresHistory.make()
        defer { server.tearDown() }
        let client = try store.make()
        defer { client.tearDown() }
        try Self.roundTrip(server: server.database, client: client.database)
    }

    @Test(arguments: [StateStore.inMemory, .sqlite, .sqliteHistory, .inMemoryHistory])
    func everyServerToPostgres(_ store: StateStore) throws {
        let server = try store.make()
        defer { server.tearDown() }
        let client = try StateStore.postgres.make()
        defer { client.tearDown() }
        try Self.roundTrip(server: server.database, client: client.database)
    }

    /// Every value type at its edges arrives exactly through a model update page (strings,
    /// integers, doubles and booleans travel in the page's own columns, the rest encoded),
    /// from each store to PostgreSQL and from PostgreSQL to each store; a page whose columns do
    /// not add up is refused with a typed error and applies nothing.
    @Test(arguments: StateStore.allCases)
    func everyValueTypeTravelsExactly(_ store: StateStore) throws {
        typealias Values = StateFixtures.Values
        let map: ModelMap = { $0 == 3 ? Values.self : nil }
        let first = try store.make()
        defer { first.tearDown() }
        let second = try (store == .postgres ? StateStore.sqlite : StateStore.postgres).make()
        defer { second.tearDown() }
        let date = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345)
        try Values.create(in: first.database, id: 1, int: .min, int8: .max, int16: .min, int32: .max, int64: .min, uint: .max,
                          uint8: .max, uint16: .max, uint32: .max, uint64: .max, double: 0.1 + 0.2, float: 1.1, bool: true,
                          string: "héllo 🌍 'quoted'", data: Data([0, 1, 255]), date: date, nested: .some(nil),
                          list: ["a", ""], dictionary: ["k": -1], address: StateFixtures.Address(street: "Main", zip: 7))
        try Values.create(in: first.database, id: 2, double: -.greatestFiniteMagnitude, bool: false, string: "")
        for (serverDB, clientDB) in [(first.database, second.database), (second.database, InMemoryDatabase())] {
            let server = RequestProcessor(database: serverDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
            let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
            let page = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Values.self, limit: 1_000))
            #expect(try client.apply(modelUpdate: page) == nil)
            let v = try #require(clientDB.get(id: 1, of: Values.self))
            #expect(v.int == .min && v.int8 == .max && v.int16 == .min && v.int32 == .max && v.int64 == .min)
            #expect(v.uint == .max && v.uint8 == .max && v.uint16 == .max && v.uint32 == .max && v.uint64 == .max)
            #expect(v.double == 0.30000000000000004 && v.float == 1.1 && v.bool == true)
            #expect(v.string == "héllo 🌍 'quoted'" && v.data == Data([0, 1, 255]) && v.date == date)
            #expect(v.nested == .some(nil) && v.list == ["a", ""] && v.dictionary == ["k": -1])
            #expect(v.address == StateFixtures.Address(street: "Main", zip: 7))
            let w = try #require(clientDB.get(id: 2, of: Values.self))
            #expect(w.double == -.greatestFiniteMagnitude && w.bool == false && w.string == "" && w.int == 0)
        }

        // A page with a text missing from its column.
        let server = RequestProcessor(database: first.database, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let emptyDB = InMemoryDatabase()
        let client = UpdateConsumer(database: emptyDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: map)
        let page = try server.process(modelUpdateRequest: try client.modelUpdateRequest(for: Values.self, limit: 1_000))
        /// `page` with its payload changed by `change`, applied: refused with `decodingFailed`.
        func expectRefused(_ what: String, _ change: (inout [String: Any]) -> Void) throws {
            guard var json = try JSONSerialization.jsonObject(with: page) as? [String: Any],
                  var payload = json["payload"] as? [String: Any] else {
                Issue.record("\(what): the page is not a JSON object with a payload")
                return
            }
            change(&payload)
            json["payload"] = payload
            let broken = try JSONSerialization.data(withJSONObject: json)
            let error = #expect(throws: StateError.self) { try client.apply(modelUpdate: broken) }
            if case .decodingFailed = error {} else { Issue.record("\(what): expected decodingFailed, got \(String(describing: error))") }
        }
        let payload = try #require((try JSONSerialization.jsonObject(with: page) as? [String: Any])?["payload"] as? [String: Any])
        try expectRefused("no texts") { $0["texts"] = [] }
        #expect(emptyDB.all(of: Values.self).isEmpty)

        // Integer columns travel as one string of numbers each; one that is not is refused.
        #expect(payload["integers"] is String)
        for bad in ["1,,2", "1,x", "99999999999999999999", "1,"] {
            try expectRefused(bad) { $0["properties"] = bad }
        }
        #expect(emptyDB.all(of: Values.self).isEmpty)

        // A page whose dates refer to no date (a store that keeps dates sends them).
        if first.database is any TimestampedDatabase {
            // The SQL stores date the writes of a transaction alike: two creates, two dates.
            let dates = (payload["dateValues"] as? [Any])?.count ?? 0
            #expect(first.database is SQLDatabase ? dates == 2 : dates > 0)
            try expectRefused("no dates") { $0["dateValues"] = [] }
            #expect(emptyDB.all(of: Values.self).isEmpty)
        }
    }

    /// Statuses "after a date" on a store that keeps dates.
    @Test(arguments: [StateStore.inMemoryHistory, .sqlite, .postgresHistory])
    func statusRequestsAfterADate(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        try Person.create(in: fixture.database, id: 1, name: "early")
        Thread.sleep(forTimeInterval: 0.01)
        let cut = Date()
        Thread.sleep(forTimeInterval: 0.01)
        try Person.create(in: fixture.database, id: 2, name: "late")
        let server = RequestProcessor(database: fixture.database, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        let clientDB = InMemoryDatabase()
        let client = UpdateConsumer(database: clientDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        try client.apply(instanceUpdates: try server.process(instanceStatusRequest: try client.instanceStatusRequest(for: Person.self, after: cut)))
        #expect(clientDB.all(of: Person.self).map(\.id) == [2])
    }

    @Test(arguments: StateStore.allCases)
    func commandsRunOnTheRemoteInstance(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let remote = try Package.create(in: fixture.database, id: 1, name: "swift")
        let server = RequestProcessor(database: fixture.database, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)
        let localDB = InMemoryDatabase()
        let local = try Package.create(in: localDB, id: 1, name: "swift")
        let client = UpdateConsumer(database: localDB, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: Self.modelMap)

        try client.decode(commandResponse: server.process(command: try client.encode(command: local.installCommand(version: "6.3"))))
        try client.decode(commandResponse: server.process(command: try local.configureCommand("jobs", value: 4, flags: [true]).encoded(using: JSONEncoder())))
        #expect(remote.installed == "6.3")
        #expect(remote.log == ["install 6.3", "jobs=4 [true]"])
        #expect(local.installed == nil)

        func failure(_ request: CommandRequest) -> StateError? {
            do {
                try client.decode(commandResponse: server.process(command: try client.encode(command: request)))
                return nil
            } catch {
                return error
            }
        }
        let failed = failure(local.configureCommand("jobs", value: -1, flags: []))
        guard case .commandFailed(let id, _) = failed else { Issue.record("expected commandFailed, got \(String(describing: failed))"); return }
        #expect(id == 2)
        let unknown = failure(CommandRequest(model: 4, instance: 1, command: 77, arguments: []))
        guard case .unknownCommand(let command) = unknown else { Issue.record("expected unknownCommand"); return }
        #expect(command == 77)
        let missing = failure(CommandRequest(model: 4, instance: 404, command: 1, arguments: ["x"]))
        guard case .missingInstance(_, let instance) = missing else { Issue.record("expected missingInstance"); return }
        #expect(instance == 404)
        let model = failure(CommandRequest(model: 99, instance: 1, command: 1, arguments: []))
        guard case .unknownModel(let modelId) = model else { Issue.record("expected unknownModel"); return }
        #expect(modelId == 99)
        let badArgument = failure(CommandRequest(model: 4, instance: 1, command: 1, arguments: [42]))
        guard case .argumentDecodingFailed(let index, _) = badArgument else { Issue.record("expected argumentDecodingFailed"); return }
        #expect(index == 0)
        #expect(remote.log.count == 2)
        #expect(throws: StateError.self) { try client.decode(commandResponse: Data("garbage".utf8)) }
    }
}
