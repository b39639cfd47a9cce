import Foundation
import Testing
import Unity
import UnityState

// StateModel's README examples (the opening example, then "Usage" and "Editing contexts"),
// ported to UnityState by a reader who knows StateModel and read only UnityState's
// documentation. Each runs on the in-memory store, on SQLite and on PostgreSQL.

// The opening example: `@Model(id: 1) final class Person { @Property(id: 1) var name: String }`
@Model(id: 1)
final class RpPerson {

    @Property(id: 1)
    var name: String
}

// "Model definition" / "Object creation": `MyModel` with `@Property(id: 42) var value`, and the
// references of "References", "References to deleted objects" and the list of "main.innerList".
@Model(id: 2)
final class RpMyModel {

    @Property(id: 42)
    var value: Int

    @Reference(id: 3)
    var inner: RpOtherModel?

    @ReferenceList(id: 4)
    var innerList: [RpOtherModel]
}

@Model(id: 3)
final class RpOtherModel {

    @Property(id: 1)
    var value: Int
}

/// The stores the README's examples run on here.
enum RpStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// Runs `body` on a new, empty store of this kind (a SQL store on a fresh test database).
    func run(_ body: (any StateDatabase) throws -> Void) throws {
        switch self {
        case .inMemory:
            try body(InMemoryDatabase())
        case .sqlite:
            try withTestDatabase(.sqlite) { core in try body(try SQLDatabase(core)) }
        case .postgres:
            try withTestDatabase(.postgres) { core in try body(try SQLDatabase(core)) }
        }
    }
}

@Suite("Reader port: StateModel's README on UnityState")
struct ReaderPortStateTests {

    @Test("The opening example: Person.create(in:id:name:)", arguments: RpStore.allCases)
    func openingExample(_ store: RpStore) throws {
        try store.run { database in
            let alice = try RpPerson.create(in: database, id: 123, name: "Alice")
            #expect(alice.id == 123)
            #expect(alice.name == "Alice")
            let found: RpPerson? = database.get(id: 123)
            #expect(found?.name == "Alice")
            #expect(found?.status == .created)
            #expect(database.all(of: RpPerson.self).map(\.id) == [123])
            let stored: String? = database.get(Path(model: RpPerson.modelId, instance: 123, property: 1))
            #expect(stored == "Alice")
        }
    }

    @Test("Object creation: database.create(id:), database.get(id:), MyModel.create(in:id:value:)", arguments: RpStore.allCases)
    func objectCreation(_ store: RpStore) throws {
        try store.run { database in
            let model: RpMyModel = database.create(id: 123)
            #expect(model.value == 0)               // Defaultable: 0 until set
            let other: RpMyModel? = database.get(id: 123)
            #expect(other?.id == 123)
            #expect(other?.status == .created)
            let missing: RpMyModel? = database.get(id: 999)
            #expect(missing == nil)

            let made = try RpMyModel.create(in: database, id: 124, value: 42)
            #expect(made.value == 42)
            let again: RpMyModel? = database.get(id: 124)
            #expect(again?.value == 42)
        }
    }

    @Test("Properties: assignments and compound assignments write through", arguments: RpStore.allCases)
    func properties(_ store: RpStore) throws {
        try store.run { database in
            let model: RpMyModel = database.create(id: 1)
            let other: RpMyModel = database.create(id: 2)
            model.value = 2
            let a = model.value + 3
            model.value += a
            other.value = 2 * model.value
            #expect(a == 5)
            #expect(model.value == 7)
            #expect(other.value == 14)
            let reread: RpMyModel? = database.get(id: 2)
            #expect(reread?.value == 14)
        }
    }

    @Test("References: create(id:of:), set a reference, write through it", arguments: RpStore.allCases)
    func references(_ store: RpStore) throws {
        try store.run { database in
            let model: RpMyModel = database.create(id: 1)
            let other = database.create(id: 123, of: RpOtherModel.self)
            model.inner = other
            model.inner!.value = 32
            #expect(other.value == 32)
            #expect(model.inner?.id == 123)
            let reread: RpMyModel? = database.get(id: 1)
            #expect(reread?.inner?.value == 32)
        }
    }

    @Test("Model status: delete() marks deleted; references and lists see it", arguments: RpStore.allCases)
    func status(_ store: RpStore) throws {
        try store.run { database in
            let model: RpMyModel = database.create(id: 1)
            #expect(model.status == .created)
            #expect("\(model.status)" == "created")

            let nested: RpOtherModel = database.create(id: 10)
            let some: RpOtherModel = database.create(id: 11)
            model.inner = nested
            model.innerList = [some]
            nested.delete()
            some.delete()
            #expect(model.inner!.status == .deleted)
            #expect(model.innerList[0].status == .deleted)
            #expect(model.innerList.map(\.id) == [11])

            model.delete()
            #expect(model.status == .deleted)
            #expect("\(model.status)" == "deleted")
            #expect(database.all(of: RpMyModel.self).isEmpty)
        }
    }

    @Test("Restoring objects: insert() and create(id:) bring the values back", arguments: RpStore.allCases)
    func restoring(_ store: RpStore) throws {
        try store.run { database in
            let model: RpMyModel = database.create(id: 5)
            model.value = 12
            model.delete()
            #expect(model.status == .deleted)
            model.insert()
            #expect(model.status == .created)
            #expect(model.value == 12)

            model.value = 12
            model.delete()
            let newModel: RpMyModel = database.create(id: model.id)
            #expect(newModel.value == 12)
            #expect(newModel.status == .created)
        }
    }

    @Test("deleteAndClearProperties() resets every property before an id is reused", arguments: RpStore.allCases)
    func deleteAndClear(_ store: RpStore) throws {
        try store.run { database in
            let instance: RpMyModel = database.create(id: 6)
            instance.value = 12
            try instance.deleteAndClearProperties()
            #expect(instance.status == .deleted)
            #expect(instance.value == 0)
            let reused: RpMyModel = database.create(id: 6)
            #expect(reused.value == 0)
            #expect(reused.status == .created)
        }
    }

    @Test("Editing contexts: edits reach the database only on commitChanges()", arguments: RpStore.allCases)
    func editingContext(_ store: RpStore) throws {
        try store.run { database in
            let context = database.createEditingContext()
            let newItem: RpMyModel = context.create(id: 123)
            newItem.value = 42
            let before: RpMyModel? = database.get(id: 123)
            #expect(before == nil)

            try context.commitChanges()   // Saves the item to the database
            let after: RpMyModel? = database.get(id: 123)
            #expect(after?.value == 42)
            #expect(after?.status == .created)
        }
    }
}
