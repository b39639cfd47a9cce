import Foundation
import Testing
import UnityState

/// `InMemoryDatabase.getEncodedHistory(until:)` and `insert(records:)`: what one in-memory
/// store exports, another holds after the import, value for value.
@Suite struct StateInMemoryTransferTests {
    typealias Person = StateFixtures.Person
    typealias Pet = StateFixtures.Pet
    typealias Values = StateFixtures.Values
    typealias DateClock = StateFidelityTests.DateClock

    /// Everything `fill` wrote, checked against literals.
    static func checkFilled(_ db: InMemoryDatabase) throws {
        let ann = try #require(db.get(id: 1, of: Person.self))
        #expect(ann.name == "Ann" && ann.age == 30 && ann.nickname == "A" && ann.mood == .busy)
        #expect(ann.address == StateFixtures.Address(street: "Main", zip: 1))
        #expect(ann.partner?.id == 2 && ann.partner?.name == "Bob")
        #expect(ann.friends.map(\.id) == [2, 3] && ann.pet?.name == "Rex")
        #expect(db.get(id: 3, of: Person.self)?.status == .deleted)
        #expect(db.get(id: 3, of: Person.self)?.name == "Cid")
        #expect(db.all(of: Person.self).map(\.id) == [1, 2])
        #expect((db.get(Path(model: 1, instance: 1, property: 2)) as Int64?) == nil)   // written as an Int

        let v = try #require(db.get(id: 1, of: Values.self))
        #expect(v.int == .min && v.int8 == .min && v.int64 == .max && v.uint == .max && v.uint64 == .max)
        #expect(v.double.isNaN && v.float == -.infinity && v.bool)
        #expect(v.string == "é\u{0}'\"" && v.data == Data([0, 255]))
        #expect(v.date == Date(timeIntervalSinceReferenceDate: 800_000_000.123_456_7))
        #expect(v.list == ["a", ""] && v.dictionary == ["k": -1])
        // Nested optionals, each depth as written; and nothing stored stays apart from a nil.
        #expect((db.get(Path(model: 3, instance: 1, property: 17)) as Int???) == .some(.some(nil)))
        #expect((db.get(Path(model: 3, instance: 2, property: 17)) as Int???) == .some(.none))
        #expect((db.get(Path(model: 3, instance: 3, property: 17)) as Int???) == .some(.some(.some(7))))
        #expect((db.get(Path(model: 3, instance: 4, property: 17)) as Int???) == .none)
        #expect((db.get(Path(model: 3, instance: 1, property: 99)) as String????) == .some(.some(.some(nil))))
        // A value beside the status at property 0.
        #expect((db.get(Path(model: 2, instance: 10)) as Int?) == 123)
        #expect((db.get(Path(model: 2, instance: 10)) as InstanceStatus?) == .created)
    }

    static func fill(_ db: InMemoryDatabase) throws {
        let bob = try Person.create(in: db, id: 2, name: "Bob", age: 41)
        let cid = try Person.create(in: db, id: 3, name: "Cid")
        let rex = try Pet.create(in: db, id: 10, name: "Rex")
        let ann = try Person.create(in: db, id: 1, name: "Ann", age: 30, nickname: "A",
                                    address: StateFixtures.Address(street: "Main", zip: 1), partner: bob, friends: [bob, cid])
        ann.pet = rex
        ann.mood = .busy
        cid.delete()
        db.set(123, for: Path(model: 2, instance: 10))
        let v: Values = db.create(id: 1)
        v.int = .min; v.int8 = .min; v.int64 = .max; v.uint = .max; v.uint64 = .max
        v.double = .nan; v.float = -.infinity; v.bool = true
        v.string = "é\u{0}'\""; v.data = Data([0, 255])
        v.date = Date(timeIntervalSinceReferenceDate: 800_000_000.123_456_7)
        v.list = ["a", ""]; v.dictionary = ["k": -1]
        v.nested = .some(nil)
        db.set(Int??.none, for: Path(model: 3, instance: 2, property: 17))
        db.set(Int??.some(.some(7)), for: Path(model: 3, instance: 3, property: 17))
        db.set(String???.some(.some(nil)), for: Path(model: 3, instance: 1, property: 99))
    }

    /// Everything, exported and inserted into an empty store, and from there into another.
    @Test func aFreshStoreHoldsWhatWasExported() throws {
        let first = InMemoryDatabase()
        try Self.fill(first)
        try Self.checkFilled(first)

        let second = InMemoryDatabase()
        try second.insert(records: try first.getEncodedHistory())
        try Self.checkFilled(second)

        // Values not yet read since the import go on as they came.
        let third = InMemoryDatabase()
        try third.insert(records: try InMemoryDatabase().getEncodedHistory())   // nothing: changes nothing
        let untouched = InMemoryDatabase()
        try untouched.insert(records: try first.getEncodedHistory())
        try third.insert(records: try untouched.getEncodedHistory())
        try Self.checkFilled(third)
    }

    /// Only writes after the date are exported, each with its exact date; on import, the
    /// later write of a path wins.
    @Test func datesSelectAndDecide() throws {
        let t10 = Date(timeIntervalSinceReferenceDate: 10.000_000_1)
        let t20 = Date(timeIntervalSinceReferenceDate: 20.000_000_1)
        let clock = DateClock(t10)
        let source = InMemoryDatabase(clock: { clock.read() })
        source.set("early", for: Path(model: 1, instance: 1, property: 1))
        source.set(InstanceStatus.created, for: Path(model: 1, instance: 1))
        clock.set(t20)
        source.set("late", for: Path(model: 1, instance: 2, property: 1))

        // After t10 (exactly its write date): only the write at t20.
        let later = InMemoryDatabase()
        try later.insert(records: try source.getEncodedHistory(until: t10))
        #expect((later.get(Path(model: 1, instance: 1, property: 1)) as String?) == nil)
        #expect((later.get(Path(model: 1, instance: 1)) as InstanceStatus?) == nil)
        #expect((later.get(Path(model: 1, instance: 2, property: 1)) as String?) == "late")
        // One tick before t10: both; the dates travelled exactly.
        let all = InMemoryDatabase()
        try all.insert(records: try source.getEncodedHistory(until: t10.addingTimeInterval(-1e-6)))
        #expect((all.get(Path(model: 1, instance: 1, property: 1)) as String?) == "early")
        #expect((all.get(Path(model: 1, instance: 1)) as InstanceStatus?) == .created)
        let reexported = InMemoryDatabase()
        try reexported.insert(records: try all.getEncodedHistory(until: t10))
        #expect((reexported.get(Path(model: 1, instance: 1, property: 1)) as String?) == nil)
        #expect((reexported.get(Path(model: 1, instance: 2, property: 1)) as String?) == "late")

        // A store with a later write of a path keeps it; an earlier one is replaced.
        let t15 = Date(timeIntervalSinceReferenceDate: 15)
        let t25 = Date(timeIntervalSinceReferenceDate: 25)
        let targetClock = DateClock(t25)
        let target = InMemoryDatabase(clock: { targetClock.read() })
        target.set("newer", for: Path(model: 1, instance: 2, property: 1))
        targetClock.set(t15)
        target.set("older", for: Path(model: 1, instance: 1, property: 1))
        target.set(InstanceStatus.deleted, for: Path(model: 1, instance: 1))
        try target.insert(records: try source.getEncodedHistory())
        #expect((target.get(Path(model: 1, instance: 2, property: 1)) as String?) == "newer")
        #expect((target.get(Path(model: 1, instance: 1, property: 1)) as String?) == "older")
        #expect((target.get(Path(model: 1, instance: 1)) as InstanceStatus?) == .deleted)
        // At the same date the record wins (as StateModel).
        let same = InMemoryDatabase(clock: { t20 })
        same.set("mine", for: Path(model: 1, instance: 2, property: 1))
        try same.insert(records: try source.getEncodedHistory())
        #expect((same.get(Path(model: 1, instance: 2, property: 1)) as String?) == "late")
    }

    /// Data that is not an export throws a typed error and changes nothing.
    @Test func dataThatIsNotAnExportChangesNothing() throws {
        let db = InMemoryDatabase()
        _ = try Person.create(in: db, id: 5, name: "Kept", age: 50)

        func expectError(_ data: Data, _ check: (StateError) -> Bool) {
            let error = #expect(throws: StateError.self) { try db.insert(records: data) }
            if let error, !check(error) { Issue.record("unexpected error \(error)") }
        }
        expectError(Data("not json".utf8)) { if case .invalidDataSupplied = $0 { true } else { false } }
        // A sync message is not an export.
        let consumer = UpdateConsumer(database: db, encoder: JSONEncoder(), decoder: JSONDecoder(), modelMap: { _ in Person.self })
        expectError(try consumer.instanceStatusRequest(for: Person.self)) { if case .invalidDataSupplied = $0 { true } else { false } }
        // An export whose second record is broken: the first is not applied either.
        var export = try #require(try JSONSerialization.jsonObject(with: try {
            let source = InMemoryDatabase()
            source.set("Other", for: Path(model: 1, instance: 5, property: 1))
            source.set(1, for: Path(model: 1, instance: 5, property: 2))
            return try source.getEncodedHistory()
        }()) as? [String: Any])
        var records = try #require(export["payload"] as? [[String: Any]])
        #expect(records.count == 2)
        records[1]["written"] = "yesterday"
        export["payload"] = records
        expectError(try JSONSerialization.data(withJSONObject: export)) { if case .decodingFailed = $0 { true } else { false } }
        // A record with both a status and a value.
        records = try #require((try JSONSerialization.jsonObject(with: try {
            let source = InMemoryDatabase()
            source.set(InstanceStatus.deleted, for: Path(model: 1, instance: 5))
            return try source.getEncodedHistory()
        }()) as? [String: Any])?["payload"] as? [[String: Any]])
        records[0]["value"] = ["property": 0, "integer": 1]
        export["payload"] = records
        expectError(try JSONSerialization.data(withJSONObject: export)) { if case .decodingFailed = $0 { true } else { false } }

        let kept = try #require(db.get(id: 5, of: Person.self))
        #expect(kept.name == "Kept" && kept.age == 50 && kept.status == .created)
        #expect(db.all(of: Person.self).map(\.id) == [5])
    }
}
