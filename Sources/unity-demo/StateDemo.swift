import Foundation
import Unity
import UnityState

// MARK: - The state-path flavor (StateModel): models stored by (model, instance, property)

@Model(id: 1)
final class DemoPerson {
    @Property(id: 1) var name: String
    @Property(id: 2) var age: Int = 18
    @Property(id: 3) var nickname: String?
    @Reference(id: 4) var partner: DemoPerson?
    @ReferenceList(id: 5) var friends: [DemoPerson]

    @Command(id: 1)
    func rename(to name: String) { self.name = name }
}

enum StateDemo {
    static func modelMap(_ id: ModelKey) -> (any ModelProtocol.Type)? {
        id == DemoPerson.modelId ? DemoPerson.self : nil
    }

    /// The seed's examples on a history store in `db`, then a sync into a second store and a
    /// command sent back.
    static func run(_ db: Unity.Database) throws {
        section("State paths (UnityState)")
        let database = try SQLHistoryDatabase(db)
        let alice = try DemoPerson.create(in: database, id: 123, name: "Alice", age: 34)
        let bob: DemoPerson = database.create(id: 124)
        bob.name = "Bob"
        alice.partner = bob
        alice.friends = [bob]
        print("\(alice.name), \(alice.age), partner \(alice.partner?.name ?? "-"), nickname \(alice.nickname ?? "nil")")
        let stored: String? = database.get(Path(model: 1, instance: 123, property: 1))
        print("stored at path 1.123.1: \(stored ?? "nothing")")

        let beforeDelete = Date()
        Thread.sleep(forTimeInterval: 0.01)
        bob.delete()
        print("bob.delete(): alice.partner?.status = \(alice.partner?.status.description ?? "-"), values kept: \(bob.name)")
        print("as it was before: \(database.view(at: beforeDelete).all(of: DemoPerson.self).map(\.name).sorted())")
        bob.insert()

        let context = database.createEditingContext()
        let carol: DemoPerson = context.create(id: 125)
        carol.name = "Carol"
        print("in a context: \(context.all(of: DemoPerson.self).count) people, in the database: \(database.all(of: DemoPerson.self).count)")
        try context.commitChanges()
        print("after commitChanges(): \(database.all(of: DemoPerson.self).count) people")

        let adults = try database.all(DemoPerson.self, matching: \.age > 30).map(\.name)
        print("key-path filter \\.age > 30 (runs in SQL): \(adults)")

        // Synchronize into an in-memory client, and send a command back.
        let client = InMemoryDatabase()
        let consumer = UpdateConsumer(database: client, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: modelMap)
        let processor = RequestProcessor(database: database, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: modelMap)
        var next: InstanceKey?
        var pages = 0
        repeat {
            let request = try consumer.modelUpdateRequest(for: DemoPerson.self, limit: 4, startingAt: next)
            next = try consumer.apply(modelUpdate: processor.process(modelUpdateRequest: request))
            pages += 1
        } while next != nil
        let synced = client.all(of: DemoPerson.self).map(\.name).sorted()
        print("synced in \(pages) pages: \(synced)")
        let local: DemoPerson? = client.get(id: 123)
        if let local {
            try consumer.decode(commandResponse: processor.process(command: consumer.encode(command: local.renameCommand(to: "Alice B."))))
        }
        print("command renamed the remote instance: \(alice.name)")
    }
}
