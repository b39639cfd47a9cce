import Foundation
import Testing
@testable import Unity

/// The cancel plumbing of the async API, without a database: interrupts that land while no
/// statement runs must be repeated, and must stop once the work is over.
@Suite("Cancellation control")
struct CancellationControlTests {
    final class Counter: @unchecked Sendable {
        // @unchecked: guarded by `lock`.
        private let lock = NSLock()
        private var n = 0
        var value: Int { lock.lock(); defer { lock.unlock() }; return n }
        func bump() { lock.lock(); n += 1; lock.unlock() }
    }

    @Test func aCancelFiresTheInterrupterAndRepeatsItWhileTheWorkRuns() {
        let control = CancellationControl()
        let fired = Counter()
        control.setInterrupter { fired.bump() }
        #expect(fired.value == 0)
        control.cancel()
        #expect(control.isCancelled)
        #expect(fired.value == 1)
        Thread.sleep(forTimeInterval: CancellationControl.refireInterval * 4.5)
        #expect(fired.value >= 2)
        // Once the work is over, no interrupt may reach the connection (it serves others now).
        control.setInterrupter(nil)
        let afterRemoval = fired.value
        Thread.sleep(forTimeInterval: CancellationControl.refireInterval * 3)
        #expect(fired.value == afterRemoval)
    }

    @Test func anInterrupterInstalledAfterTheCancelFiresAtOnce() {
        let control = CancellationControl()
        control.cancel()
        let fired = Counter()
        control.setInterrupter { fired.bump() }
        #expect(fired.value == 1)
        control.setInterrupter(nil)
    }

    @Test func noCancelNoInterrupt() {
        let control = CancellationControl()
        let fired = Counter()
        control.setInterrupter { fired.bump() }
        control.setInterrupter(nil)
        #expect(fired.value == 0)
        #expect(!control.isCancelled)
    }
}
