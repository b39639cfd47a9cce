import Foundation
import Testing
@testable import Unity

/// The collector that ModelDef's Codable fetch loop appends to (instead of `Array.append`,
/// which looks up the array type's metadata per call in unspecialized code).
@Suite("Core: the unspecialized collector")
struct UnspecializedCollectorTests {
    final class Tracked {
        static let lock = NSLock()
        nonisolated(unsafe) static var alive = 0
        let value: Int
        init(_ value: Int) {
            self.value = value
            Self.lock.withLock { Self.alive += 1 }
        }
        deinit { Self.lock.withLock { Self.alive -= 1 } }
    }

    @Test func itKeepsOrderAcrossGrowthAndHandsOverOnce() {
        let collector = UnspecializedCollector<String>(capacity: 2)
        for i in 0..<1_000 { collector.append("row \(i)") }
        let array = collector.takeArray()
        #expect(array.count == 1_000)
        #expect(array.first == "row 0")
        #expect(array[511] == "row 511")
        #expect(array.last == "row 999")
        #expect(collector.takeArray().isEmpty)
        #expect(UnspecializedCollector<Int>().takeArray() == [])
    }

    @Test func itReleasesWhatItHoldsWhenDroppedBeforeHandingOver() {
        let before = Tracked.lock.withLock { Tracked.alive }
        do {
            let collector = UnspecializedCollector<Tracked>(capacity: 1)
            for i in 0..<100 { collector.append(Tracked(i)) }
            #expect(Tracked.lock.withLock { Tracked.alive } == before + 100)
            // Dropped here without takeArray(), as when a row fails to decode mid-fetch.
        }
        #expect(Tracked.lock.withLock { Tracked.alive } == before)
        let kept: [Tracked]
        do {
            let collector = UnspecializedCollector<Tracked>()
            for i in 0..<10 { collector.append(Tracked(i)) }
            kept = collector.takeArray()
        }
        #expect(kept.map(\.value) == Array(0..<10))
        #expect(Tracked.lock.withLock { Tracked.alive } == before + 10)
    }
}
