import Foundation
import Testing
import UnityState

/// Editing contexts on every store.
@Suite struct StateContextTests {
    typealias Person = StateFixtures.Person

    @Test(arguments: StateStore.allCases)
    func editsStayInTheContextUntilCommitted(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let existing = try Person.create(in: db, id: 1, name: "Ann", age: 30)
        let context = db.createEditingContext()
        let created: Person = context.create(id: 2)
        created.name = "New"
        let edited: Person? = context.get(id: 1)
        edited?.age = 31
        #expect(context.hasChanges)
        #expect(created.name == "New")
        #expect(edited?.age == 31)
        #expect(existing.age == 30)                          // the database does not see it yet
        #expect(db.get(id: 2, of: Person.self) == nil)
        #expect(context.all(of: Person.self).map(\.id) == [1, 2])
        #expect(db.all(of: Person.self).map(\.id) == [1])
        // A plain context sees later changes to paths it did not edit.
        existing.name = "Ann B."
        #expect(edited?.name == "Ann B.")
        try context.commitChanges()
        #expect(!context.hasChanges)
        #expect(existing.age == 31)
        #expect(db.get(id: 2, of: Person.self)?.name == "New")
        #expect(db.all(of: Person.self).map(\.id) == [1, 2])
    }

    @Test(arguments: StateStore.allCases)
    func discardDropsTheEdits(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let existing = try Person.create(in: db, id: 1, name: "Ann")
        let context = db.createEditingContext()
        (context.get(id: 1) as Person?)?.name = "Changed"
        _ = context.create(id: 9, of: Person.self)
        context.discardChanges()
        #expect((context.get(id: 1) as Person?)?.name == "Ann")
        #expect(context.get(id: 9, of: Person.self) == nil)
        try context.commitChanges()
        #expect(existing.name == "Ann")
        #expect(db.get(id: 9, of: Person.self) == nil)
    }

    /// A commit that fails on a SQL store (a value its encoder refuses) leaves the database as
    /// it was, and the context keeps its edits.
    @Test(arguments: [StateStore.sqlite, .sqliteHistory, .postgres, .postgresHistory])
    func aFailedCommitLeavesTheDatabaseAsItWas(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let person = try Person.create(in: db, id: 1, name: "Before")
        let context = db.createEditingContext()
        (context.get(id: 1) as Person?)?.name = "After"
        _ = context.create(id: 2, of: Person.self)
        context.set(Poison(), for: Path(model: 1, instance: 2, property: 99))
        #expect(throws: StateError.self) { try context.commitChanges() }
        #expect(person.name == "Before")
        #expect(db.get(id: 2, of: Person.self) == nil)
        #expect(context.hasChanges)
        let sql = try #require(db as? SQLDatabase)
        let last = sql.lastError
        guard case .valueCodingFailed(let path, _) = last else {
            Issue.record("expected valueCodingFailed, got \(String(describing: sql.lastError))")
            return
        }
        #expect(path == Path(model: 1, instance: 2, property: 99))
    }

    struct Refused: Error {}

    /// A nested transaction that throws, caught by the enclosing one, takes its writes and
    /// its failed writes with it; the enclosing transaction commits the rest. Checked with a
    /// read inside the nested one (its buffered writes reach the database first) and without.
    @Test(arguments: StateStore.allCases)
    func aCaughtNestedTransactionTakesOnlyItsOwnWrites(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let person = try Person.create(in: db, id: 1, name: "Ann", age: 30)
        try db.transaction {
            person.age = 31
            #expect(throws: Refused.self) {
                try db.transaction {
                    person.name = "read back, then rolled back"
                    #expect(person.name == "read back, then rolled back")
                    person.nickname = "never"
                    throw Refused()
                }
            }
            if db is SQLDatabase {   // the in-memory stores keep values without encoding them
                #expect(throws: StateError.self) {
                    try db.transaction {
                        person.nickname = "never either"
                        db.set(Poison(), for: Path(model: 1, instance: 1, property: 99))
                    }
                }
            }
            person.mood = .busy
        }
        let again = try #require(db.get(id: 1, of: Person.self))
        #expect(again.age == 31 && again.mood == .busy)
        #expect(again.name == "Ann" && again.nickname == nil)
    }

    @Test(arguments: StateHistoryStore.allCases)
    func aSnapshotContextIgnoresLaterWritesAndLosesToThem(_ store: StateHistoryStore) throws {
        let clock = StateHistoryAndCacheTests.ManualClock()
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let db = try fixture.history
        clock.set(1_000)
        let person = try Person.create(in: db, id: 1, name: "v1", age: 40)
        let context = HistoryEditingContext(database: db, date: Date(timeIntervalSince1970: 1_500))
        clock.set(2_000)
        person.name = "v2 (database)"
        let inContext: Person? = context.get(id: 1)
        #expect(inContext?.name == "v1")                     // the snapshot does not see it
        inContext?.name = "edited in the context"
        inContext?.age = 41
        let lost = try context.commitChanges()
        // The later database write wins; the context's edit stays in the history at its date.
        #expect(lost == [Path(model: 1, instance: 1, property: 1)])
        #expect(person.name == "v2 (database)")
        #expect(person.age == 41)
        let atContext: Timestamped<String>? = db.get(Path(model: 1, instance: 1, property: 1), at: Date(timeIntervalSince1970: 1_600))
        #expect(atContext == Timestamped(value: "edited in the context", date: Date(timeIntervalSince1970: 1_500)))
    }
}

/// A value every encoder refuses.
struct Poison: Codable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(0, EncodingError.Context(codingPath: [], debugDescription: "poison"))
    }
}
