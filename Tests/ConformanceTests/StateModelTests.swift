import Foundation
import Testing
import UnityState

/// Models, instances and values of the state flavor, on every store.
@Suite struct StateModelTests {
    typealias Person = StateFixtures.Person
    typealias Pet = StateFixtures.Pet
    typealias Values = StateFixtures.Values
    typealias Package = StateFixtures.Package

    @Test(arguments: StateStore.allCases)
    func defaultsAndAssignments(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let alice: Person = db.create(id: 1)
        #expect(alice.name == "")
        #expect(alice.age == 18)
        #expect(alice.nickname == nil)
        #expect(alice.address == nil)
        #expect(alice.mood == .calm)
        #expect(alice.partner == nil)
        #expect(alice.friends.isEmpty)
        #expect(alice.greeting == "Hello, ")
        alice.name = "Alice"
        alice.age += 2
        alice.nickname = "Al"
        alice.address = StateFixtures.Address(street: "Main", zip: 12345)
        alice.mood = .busy
        #expect(alice.name == "Alice")
        #expect(alice.age == 20)
        // Another object for the same instance reads the same values: they live in the database.
        let again: Person? = db.get(id: 1)
        #expect(again?.name == "Alice")
        #expect(again?.address == StateFixtures.Address(street: "Main", zip: 12345))
        #expect(again?.mood == .busy)
        // The values are stored by path (model, instance, property).
        #expect(db.get(Path(model: 1, instance: 1, property: 1)) == "Alice")
        #expect(db.get(Path(model: 1, instance: 1, property: 2)) == 20)
        alice.nickname = nil
        #expect(alice.nickname == nil)
    }

    @Test(arguments: StateStore.allCases)
    func createStoresOnlyValuesThatDifferFromTheirDefault(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let bob = try Person.create(in: db, id: 7, name: "Bob", age: 18, nickname: nil, mood: .busy)
        #expect(bob.status == .created)
        #expect(bob.name == "Bob")
        #expect(bob.mood == .busy)
        let name: String? = db.get(Path(model: 1, instance: 7, property: 1))
        let age: Int? = db.get(Path(model: 1, instance: 7, property: 2))
        let nickname: String?? = db.get(Path(model: 1, instance: 7, property: 3))
        let mood: StateFixtures.Mood? = db.get(Path(model: 1, instance: 7, property: 5))
        #expect(name == "Bob")
        #expect(age == nil)          // 18 is the default: not stored
        #expect(nickname == nil)     // nil is the default: not stored
        #expect(mood == .busy)
        let friend = try Person.create(in: db, id: 8, name: "Carol", partner: bob, friends: [bob])
        #expect(friend.partner?.id == 7)
        #expect(friend.friends.map(\.id) == [7])
        let partnerId: InstanceKey?? = db.get(Path(model: 1, instance: 8, property: 6))
        #expect(partnerId == .some(.some(7)))
        let friendIds: [InstanceKey]? = db.get(Path(model: 1, instance: 8, property: 7))
        #expect(friendIds == [7])
    }

    @Test(arguments: StateStore.allCases)
    func instancesDeleteInsertAndClear(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        #expect(db.get(id: 5, of: Person.self) == nil)
        #expect(db.active(id: 5, of: Person.self) == nil)
        let created: Person = db.getOrCreate(id: 5)
        created.name = "Eve"
        #expect(db.all(of: Person.self).map(\.id) == [5])
        created.delete()
        #expect(created.status == .deleted)
        #expect(db.get(id: 5, of: Person.self)?.status == .deleted)   // get returns deleted too
        #expect(db.active(id: 5, of: Person.self) == nil)
        #expect(db.all(of: Person.self).isEmpty)
        #expect(created.name == "Eve")                                 // values kept
        created.insert()
        #expect(created.status == .created)
        #expect(created.name == "Eve")
        let again: Person = db.create(id: 5)                           // create again: values still there
        #expect(again.name == "Eve")
        try again.deleteAndClearProperties()
        #expect(again.status == .deleted)
        #expect(again.name == "")
        #expect(again.age == 18)
        let recreated: Person = db.create(id: 5)
        #expect(recreated.name == "")
        // getOrCreate returns a deleted instance as it is.
        recreated.delete()
        #expect((db.getOrCreate(id: 5) as Person).status == .deleted)
    }

    @Test(arguments: StateStore.allCases)
    func referencesAndListsToDeletedInstances(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let owner = try Person.create(in: db, id: 1, name: "Owner")
        let rex = try Pet.create(in: db, id: 10, name: "Rex")
        let tom = try Pet.create(in: db, id: 11, name: "Tom")
        let partner = try Person.create(in: db, id: 2, name: "Partner")
        owner.partner = partner
        owner.pet = rex
        owner.friends = [partner, owner]
        owner.petSet = [rex, tom]
        owner.petRow = [tom, rex]
        #expect(owner.pet.name == "Rex")
        #expect(owner.friends.map(\.name) == ["Partner", "Owner"])
        #expect(Set(owner.petSet.map(\.id)) == [10, 11])
        #expect(owner.petRow.map(\.id) == [11, 10])
        partner.delete()
        rex.delete()
        #expect(owner.partner?.status == .deleted)
        #expect(owner.friends.first?.status == .deleted)
        #expect(owner.pet.status == .deleted)
        #expect(owner.petRow.last?.status == .deleted)
        owner.partner = nil
        #expect(owner.partner == nil)
        // all(T.self) { filter } sees only active instances.
        #expect(db.all(Pet.self) { $0.name.hasPrefix("T") }.map(\.id) == [11])
        #expect(db.all(Pet.self) { $0.name.hasPrefix("R") }.isEmpty)
        let people: [Person] = db.all { $0.name == "Owner" }
        #expect(people.map(\.id) == [1])
    }

    @Test(arguments: StateStore.allCases)
    func everyValueTypeAtItsEdges(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let low = try Values.create(
            in: db, id: 1, int: .min, int8: .min, int16: .min, int32: .min, int64: .min, uint: 0, uint8: 0,
            uint16: 0, uint32: 0, uint64: 0, double: -.greatestFiniteMagnitude, float: -.greatestFiniteMagnitude,
            bool: false, string: "", data: Data(), date: Date(timeIntervalSince1970: -62_135_596_800),
            nested: .some(nil), list: [], dictionary: [:])
        let high = try Values.create(
            in: db, id: 2, int: .max, int8: .max, int16: .max, int32: .max, int64: .max, uint: .max, uint8: .max,
            uint16: .max, uint32: .max, uint64: .max, double: .pi, float: 1.1, bool: true,
            string: "é\u{0301} 🎉 \"quoted\"", data: Data([0, 1, 0xFF]), date: Date(timeIntervalSince1970: 1_700_000_000.123456),
            nested: .some(.some(-1)), list: ["a", ""], dictionary: ["k": 1],
            address: StateFixtures.Address(street: "S", zip: 9))
        #expect(low.int == Int.min && low.int8 == Int8.min && low.int16 == Int16.min)
        #expect(low.int32 == Int32.min && low.int64 == Int64.min)
        #expect(low.double == -Double.greatestFiniteMagnitude && low.float == -Float.greatestFiniteMagnitude)
        #expect(low.date == Date(timeIntervalSince1970: -62_135_596_800))
        #expect(low.nested == .some(nil))
        #expect(high.int == Int.max && high.int8 == Int8.max && high.int16 == Int16.max)
        #expect(high.int32 == Int32.max && high.int64 == Int64.max)
        #expect(high.uint == UInt.max && high.uint8 == UInt8.max && high.uint16 == UInt16.max)
        #expect(high.uint32 == UInt32.max && high.uint64 == UInt64.max && high.uint64 == 18_446_744_073_709_551_615)
        #expect(high.double == 3.141592653589793 && high.float == Float(1.1) && high.bool)
        #expect(high.string == "é\u{0301} 🎉 \"quoted\"")
        #expect(high.data == Data([0, 1, 0xFF]))
        #expect(high.date == Date(timeIntervalSince1970: 1_700_000_000.123456))
        #expect(high.nested == .some(.some(-1)))
        #expect(high.list == ["a", ""] && high.dictionary == ["k": 1])
        #expect(high.address == StateFixtures.Address(street: "S", zip: 9))
        let fresh: Values = db.create(id: 3)
        #expect(fresh.nested == nil)   // nothing stored: the default, nil
        // A value written as one type is not read as another.
        db.set("text", for: Path(model: 3, instance: 3, property: 1))
        #expect(fresh.int == 0)
    }

    @Test(arguments: StateStore.allCases)
    func generatedCommandsRunWithTheirArguments(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let package = try Package.create(in: db, id: 1, name: "swift")
        let request = package.installCommand(version: "6.3")
        #expect(request.model == 4 && request.instance == 1 && request.command == 1)
        try package.execute(command: JSONCommandArguments(request))
        #expect(package.installed == "6.3")
        try package.execute(command: JSONCommandArguments(package.configureCommand("jobs", value: 2, flags: [true, false])))
        #expect(package.log == ["install 6.3", "jobs=2 [true, false]"])
        #expect(throws: StateError.self) {
            try package.execute(command: JSONCommandArguments(package.configureCommand("jobs", value: -1, flags: [])))
        }
        // (Each failure is matched on the returned error: a `catch` pattern on a typed
        // `throws(StateError)` call crashes the Swift 6.3 compiler.)
        let unknown = #expect(throws: StateError.self) {
            try package.execute(command: JSONCommandArguments(commandId: 99, arguments: []))
        }
        guard case .unknownCommand(let id) = unknown else { Issue.record("expected unknownCommand, got \(String(describing: unknown))"); return }
        #expect(id == 99)
        let missing = #expect(throws: StateError.self) {
            try package.execute(command: JSONCommandArguments(commandId: 1, arguments: []))
        }
        guard case .missingArgument(let index) = missing else { Issue.record("expected missingArgument"); return }
        #expect(index == 0)
        let undecodable = #expect(throws: StateError.self) {
            try package.execute(command: JSONCommandArguments(commandId: 1, arguments: [Data("12".utf8)]))
        }
        guard case .argumentDecodingFailed(let badIndex, _) = undecodable else { Issue.record("expected argumentDecodingFailed"); return }
        #expect(badIndex == 0)
        let failed = #expect(throws: StateError.self) {
            try package.execute(command: JSONCommandArguments(package.configureCommand("jobs", value: -1, flags: [])))
        }
        guard case .commandFailed(let failedId, let message) = failed else { Issue.record("expected commandFailed"); return }
        #expect(failedId == 2 && message.contains("negative"))
        #expect(package.log.count == 2)   // nothing ran for the failed ones
    }

    @Test func propertyIdsAndVisitor() {
        #expect(Person.PropertyId.allCases.map(\.rawValue) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        #expect(Person.PropertyId.name.rawValue == 1)
        #expect(Person.modelId == 1 && Pet.modelId == 2)
        struct Recorder: PropertyVisitor {
            var seen: [(PropertyKey, String)] = []
            mutating func visit<Value: DatabaseValue>(property: PropertyKey, as type: Value.Type) {
                seen.append((property, String(describing: type)))
            }
        }
        var recorder = Recorder()
        Person.visitProperties(with: &recorder)
        #expect(recorder.seen.map(\.0) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        #expect(recorder.seen.map(\.1) == [
            "String", "Int", "Optional<String>", "Optional<Address>", "Mood", "Optional<Int>", "Array<Int>",
            "Optional<Int>", "Array<Int>", "Array<Int>",
        ])
    }

    /// Inside a transaction the SQL stores buffer writes and send them as multi-row
    /// statements: a read inside still sees them, a path written twice keeps the last value,
    /// and thousands of instances go in at once.
    @Test(arguments: StateStore.allCases)
    func writesInATransactionAreReadBackAndBatched(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        try db.transaction {
            let person: Person = db.create(id: 1)
            person.name = "first"
            #expect(person.name == "first")
            person.name = "second"
            person.age = 33
            #expect(db.all(of: Person.self).map(\.id) == [1])
            for id in 100..<2_600 {
                let other: Person = db.create(id: id)
                other.name = "p\(id)"
                other.age = id
            }
        }
        #expect((db.get(id: 1) as Person?)?.name == "second")
        #expect((db.get(id: 1) as Person?)?.age == 33)
        #expect(db.all(of: Person.self).count == 2_501)
        #expect((db.get(id: 2_599) as Person?)?.name == "p2599")
        #expect(try db.all(Person.self, matching: \.age >= 2_500).count == 100)
    }

    @Test(arguments: StateStore.allCases)
    func aFailedTransactionLeavesNothing(_ store: StateStore) throws {
        struct Stop: Error {}
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        let person = try Person.create(in: db, id: 1, name: "Before")
        #expect(throws: Stop.self) {
            try db.transaction {
                person.name = "During"
                _ = db.create(id: 2, of: Person.self)
                throw Stop()
            }
        }
        #expect(person.name == "Before")
        #expect(db.get(id: 2, of: Person.self) == nil)
    }
}

/// History views and the cache.
@Suite struct StateHistoryAndCacheTests {
    typealias Person = StateFixtures.Person

    /// A clock the test moves by hand.
    final class ManualClock: @unchecked Sendable {
        private let lock = NSLock()
        private var now = Date(timeIntervalSince1970: 1_000)
        func read() -> Date { lock.lock(); defer { lock.unlock() }; return now }
        func set(_ seconds: Double) { lock.lock(); now = Date(timeIntervalSince1970: seconds); lock.unlock() }
    }

    @Test(arguments: StateHistoryStore.allCases)
    func viewsShowThePast(_ store: StateHistoryStore) throws {
        let clock = ManualClock()
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let db = try fixture.history
        clock.set(1_000)
        let person = try Person.create(in: db, id: 1, name: "v1")
        clock.set(2_000)
        person.name = "v2"
        clock.set(3_000)
        person.delete()
        let then = db.view(at: Date(timeIntervalSince1970: 1_500))
        let past: Person? = then.get(id: 1)
        #expect(past?.name == "v1")
        #expect(past?.status == .created)
        #expect(then.all(of: Person.self).map(\.id) == [1])
        // Writes to a view are ignored.
        past?.name = "changed in the past"
        #expect(past?.name == "v1")
        #expect(person.name == "v2")
        then.moveView(to: Date(timeIntervalSince1970: 2_500))
        #expect(past?.name == "v2")
        then.moveView(to: Date(timeIntervalSince1970: 3_500))
        #expect(past?.status == .deleted)
        #expect(then.all(of: Person.self).isEmpty)
        then.moveView(to: Date(timeIntervalSince1970: 500))
        #expect(then.get(id: 1, of: Person.self) == nil)
        // Every write is in the history with its date.
        let first: Timestamped<String>? = db.get(Path(model: 1, instance: 1, property: 1), at: Date(timeIntervalSince1970: 1_999))
        #expect(first == Timestamped(value: "v1", date: Date(timeIntervalSince1970: 1_000)))
        // A late write with an earlier date does not become the current value.
        db.set("late", for: Path(model: 1, instance: 1, property: 1), at: Date(timeIntervalSince1970: 1_500))
        #expect(person.name == "v2")
        let atLate: Timestamped<String>? = db.get(Path(model: 1, instance: 1, property: 1), at: Date(timeIntervalSince1970: 1_600))
        #expect(atLate?.value == "late")
    }

    @Test func cacheAnswersRepeatedReadsAndEvictsWhenFull() throws {
        let backing = InMemoryDatabase()
        let cache = MaximumCountCache(maxCount: 10, evictionFraction: 0.5)
        let db = CachedDatabase(wrapping: backing, cache: cache)
        let person = try Person.create(in: db, id: 1, name: "cached")
        #expect(person.name == "cached")
        // A write behind the cache's back is not seen: the cache answers.
        backing.set("behind", for: Path(model: 1, instance: 1, property: 1))
        #expect(person.name == "cached")
        for id in 2...20 { _ = try Person.create(in: db, id: id, name: "p\(id)") }
        #expect(cache.count <= 10)
        #expect(cache.count >= 5)
        // Evicted values are read from the database again.
        #expect(db.all(of: Person.self).count == 20)
        for id in 2...20 { #expect((db.get(id: id) as Person?)?.name == "p\(id)") }
    }
}
