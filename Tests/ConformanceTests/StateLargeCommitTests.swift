import Foundation
import Testing
import Unity
import UnityState

/// A transaction whose writes are many (at and above `Connection.copyThreshold`: on
/// PostgreSQL the statuses and values go through a staging table and the history by COPY,
/// elsewhere as multi-row statements): the same stored state on every store.
@Suite("State: a large commit")
struct StateLargeCommitTests {
    static let count = max(Connection.copyThreshold, 500) + 100
    static let model = 7

    static func value(_ instance: Int) -> Path { Path(model: model, instance: instance, property: 1) }

    /// Statuses and values of `count` instances in one transaction, one of whose values was
    /// stored before (it is replaced), and a second transaction over the same paths.
    @Test(arguments: StateStore.allCases)
    func aLargeTransactionStoresEveryWrite(_ store: StateStore) throws {
        let fixture = try store.make()
        defer { fixture.tearDown() }
        let db = fixture.database
        db.set(-1, for: Self.value(10))
        try db.transaction {
            for instance in 1...Self.count {
                db.set(InstanceStatus.created, for: Path(model: Self.model, instance: instance))
                db.set(instance * 3, for: Self.value(instance))
            }
        }
        #expect((db.get(Self.value(1)) as Int?) == 3)
        #expect((db.get(Self.value(10)) as Int?) == 30)
        #expect((db.get(Self.value(Self.count)) as Int?) == Self.count * 3)
        #expect((db.get(Self.value(Self.count + 1)) as Int?) == nil)
        #expect((db.get(Path(model: Self.model, instance: Self.count)) as InstanceStatus?) == .created)
        try db.transaction {
            for instance in 1...Self.count where instance % 2 == 0 {
                db.set(InstanceStatus.deleted, for: Path(model: Self.model, instance: instance))
                db.set("even \(instance)", for: Self.value(instance))
            }
            for instance in 1...Self.count where instance % 2 == 1 {
                db.set(instance * 5, for: Self.value(instance))
            }
        }
        #expect((db.get(Self.value(2)) as String?) == "even 2")
        #expect((db.get(Self.value(3)) as Int?) == 15)
        #expect((db.get(Path(model: Self.model, instance: 2)) as InstanceStatus?) == .deleted)
        #expect((db.get(Path(model: Self.model, instance: 3)) as InstanceStatus?) == .created)
    }

    /// A large transaction dated before a value stored later keeps that value (the newer
    /// write wins) and stores the rest; the history holds every write, readable at its date.
    @Test(arguments: StateHistoryStore.allCases)
    func aLargeTransactionKeepsANewerStoredValueAndItsHistory(_ store: StateHistoryStore) throws {
        let clock = StateHistoryAndCacheTests.ManualClock()
        let fixture = try store.make(clock: { clock.read() })
        defer { fixture.tearDown() }
        let db = try fixture.history
        clock.set(3_000)
        db.set(999, for: Self.value(10), at: nil)
        let early = Date(timeIntervalSince1970: 1_000)
        try db.transaction {
            for instance in 1...Self.count {
                db.set(instance * 3, for: Self.value(instance), at: early)
            }
        }
        #expect((db.get(Self.value(10)) as Timestamped<Int>?)?.value == 999)
        #expect((db.get(Self.value(11)) as Timestamped<Int>?)?.value == 33)
        #expect((db.get(Self.value(Self.count)) as Timestamped<Int>?)?.date == early)
        // The history has the early write of the kept path too.
        let atTwoThousand = Date(timeIntervalSince1970: 2_000)
        #expect((db.get(Self.value(10), at: atTwoThousand) as Timestamped<Int>?)?.value == 30)
        #expect((db.get(Self.value(Self.count), at: atTwoThousand) as Timestamped<Int>?)?.value == Self.count * 3)
        #expect((db.get(Self.value(10), at: Date(timeIntervalSince1970: 500)) as Timestamped<Int>?) == nil)
    }
}
