import Foundation

/// Where a read runs on a database given read replicas (``DatabaseDriver/replicas``).
///
/// Without replicas both are the one server.
public enum ReadSource: Sendable, Hashable {
    /// A healthy replica that has replayed this database's last commit, else the primary:
    /// what `read { }` and the one-statement reads of an AST `SELECT` do.
    case replica
    /// The primary, always: for a read that must see every commit, this database's or
    /// another's, the moment it was made.
    case primary
}

/// The read replicas of one ``Database``: a pool of connections for each, a health check
/// that asks each one how far it has replayed the primary's log, and the choice of the one
/// that serves a read.
///
/// Read-your-writes: every commit of this database on the primary reports its log position
/// (in the COMMIT's round trip), and a replica serves a read only once a check has seen its
/// replay position reach the highest of them; until then the primary does. A replica whose
/// check fails (it is down) or that has not replayed a commit of this database made more
/// than ``DatabaseConfiguration/maxReplicaLag`` seconds ago is left out until a check sees
/// it back and caught up.
final class ReplicaSet: @unchecked Sendable {
    // @unchecked: the mutable state of the set and of its members is guarded by `condition`.

    /// One replica: its driver, its pool, and what the last check saw.
    final class Member: @unchecked Sendable {
        let driver: any DatabaseDriver
        let pool: ConnectionSubpool
        /// Index in the set, for messages and tests.
        let index: Int
        // Guarded by the set's `condition`.
        fileprivate var available = false
        fileprivate var replayed: UInt64 = 0
        /// The health check's own connection (used by the checking thread only).
        fileprivate var checker: (any DriverConnection)?

        init(driver: any DatabaseDriver, pool: ConnectionSubpool, index: Int) {
            self.driver = driver
            self.pool = pool
            self.index = index
        }
    }

    let members: [Member]
    private let condition = NSCondition()
    /// The highest commit position of this database seen so far.
    private var required: UInt64 = 0
    /// `required` as each check round found it, oldest first, over the last
    /// ``DatabaseConfiguration/maxReplicaLag`` seconds and a little more: a replica that has
    /// replayed a sample's position had every commit made before that sample's time.
    private var samples: [(time: UInt64, position: UInt64)] = []
    private var nextMember = 0
    private var stopping = false
    private var rounds = 0
    private let configuration: DatabaseConfiguration
    private let intervalNanoseconds: UInt64
    private let maxLagNanoseconds: UInt64

    init(drivers: [any DatabaseDriver], configuration: DatabaseConfiguration) {
        self.configuration = configuration
        members = drivers.enumerated().map { index, driver in
            let capacity: Int
            switch driver.poolShape {
            case .uniform(let count): capacity = count
            case .singleWriter(let readers): capacity = max(1, readers)
            }
            let pool = ConnectionSubpool(driver: driver, role: .reader, name: "replica-\(index)", capacity: capacity, overflow: max(1, capacity),
                                         livenessCheckAfterIdle: configuration.livenessCheckAfterIdle, configuration: configuration)
            return Member(driver: driver, pool: pool, index: index)
        }
        intervalNanoseconds = Self.nanoseconds(configuration.replicaCheckInterval, minimum: 1_000_000)
        maxLagNanoseconds = Self.nanoseconds(configuration.maxReplicaLag, minimum: 0)
        let thread = Thread { [self] in self.checkLoop() }
        thread.name = "unity.replicas"
        thread.start()
    }

    private static func nanoseconds(_ seconds: Double, minimum: UInt64) -> UInt64 {
        let value = seconds * 1e9
        guard value.isFinite, value > 0 else { return minimum }
        return max(minimum, UInt64(min(value, 1e15)))
    }

    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Records the log position of a commit of this database.
    func noteCommit(_ position: UInt64) {
        condition.lock()
        if position > required { required = position }
        condition.unlock()
    }

    /// The replica that serves the next read: one that is up, within the lag bound and has
    /// replayed this database's last commit, taken in turn; nil when none may (the primary
    /// serves).
    func pick() -> Member? {
        condition.lock()
        defer { condition.unlock() }
        let count = members.count
        for step in 0..<count {
            let member = members[(nextMember + step) % count]
            if member.available && member.replayed >= required {
                nextMember = (member.index + 1) % count
                return member
            }
        }
        return nil
    }

    /// Leaves `member` out until its next check succeeds: a read met its loss.
    func markDown(_ member: Member) {
        condition.lock()
        member.available = false
        condition.unlock()
    }

    /// Stops the checks and closes every replica connection.
    func close() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        for member in members { member.pool.close() }
    }

    /// Whether replica `index` serves reads now (for tests and monitoring).
    func isAvailable(_ index: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return members.indices.contains(index) && members[index].available
    }

    /// Check rounds completed so far (for tests: a round after a change has seen it).
    var completedRounds: Int {
        condition.lock()
        defer { condition.unlock() }
        return rounds
    }

    // MARK: Health checks

    private func checkLoop() {
        while true {
            condition.lock()
            if stopping {
                condition.unlock()
                break
            }
            let now = Self.now()
            samples.append((now, required))
            // Keep the samples of the lag window, plus the newest one older than it.
            let horizon = now > maxLagNanoseconds + 2 * intervalNanoseconds ? now - maxLagNanoseconds - 2 * intervalNanoseconds : 0
            while samples.count > 1 && samples[1].time < horizon { samples.removeFirst() }
            condition.unlock()
            for member in members { check(member) }
            condition.lock()
            rounds += 1
            if !stopping {
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(intervalNanoseconds) / 1e9))
            }
            let stop = stopping
            condition.unlock()
            if stop { break }
        }
        for member in members {
            member.checker?.close()
            member.checker = nil
        }
    }

    /// Asks one replica how far it has replayed, on its own connection (opened again when
    /// lost), and decides whether it serves reads.
    private func check(_ member: Member) {
        var position: UInt64?
        do {
            if member.checker == nil || !(member.checker?.isUsable ?? false) {
                member.checker?.close()
                member.checker = try member.driver.connect(role: .reader, configuration: configuration)
            }
            position = try member.checker?.replicationPosition()
        } catch {
            member.checker?.close()
            member.checker = nil
            position = nil
        }
        condition.lock()
        defer { condition.unlock() }
        guard let position else {
            member.available = false
            return
        }
        member.replayed = position
        member.available = lagNanoseconds(replayed: position, now: Self.now()) <= maxLagNanoseconds
    }

    /// How long ago this database made the oldest commit that a replica at `replayed` has
    /// not replayed (0 when it has replayed them all). Called with the lock held.
    private func lagNanoseconds(replayed: UInt64, now: UInt64) -> UInt64 {
        if replayed >= required { return 0 }
        // The newest sample it has reached: every commit before that sample's time is in.
        if let reached = samples.last(where: { $0.position <= replayed }) {
            return now > reached.time ? now - reached.time : 0
        }
        guard let oldest = samples.first else { return 0 }
        return now > oldest.time ? now - oldest.time : 0
    }
}
