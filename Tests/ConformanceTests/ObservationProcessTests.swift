import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// Observation of another process's commits: `unity-observe-writer` commits to the test's
/// SQLite file or PostgreSQL schema while this process observes.
@Suite("Observation: commits of another process", .enabled(if: ObserveWriter.enabled, ObserveWriter.missingMessage))
struct ObservationProcessTests {
    /// Every commit of the writer is seen in commit order: the results are an in-order
    /// subsequence of 0, 1, …, N that ends in N (results are coalesced, so some may be skipped),
    /// and no rolled-back value ever shows.
    @Test(arguments: Backend.allCases)
    func everyCommitOfAnotherProcessIsSeenInOrderEndingInTheFinalState(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        try ObservedCounter.create(test.database)
        let observed = ObservedValues(ObservedCounter.observe(test.database))
        try await observed.wait("the first result") { $0 == [0] }
        let writer = try await ObserveWriter(test, commits: 200, rate: 1000, rollbacks: true)
        #expect(try await writer.waitForExit() == 0)
        let values = try await observed.wait("the final state", timeout: 60) { $0.last == 200 }
        #expect(values.first == 0)
        #expect(isIncreasing(values), "not in commit order: \(values)")
        #expect(values.allSatisfy { ($0 ?? -1) >= 0 }, "a rolled-back value was seen: \(values)")
        try await observed.cancel()
    }

    /// Lock-step: the writer waits for each delivery before its next commit, so every commit is
    /// seen, each exactly once.
    @Test(arguments: Backend.allCases)
    func inLockStepEveryCommitOfAnotherProcessIsSeen(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        try ObservedCounter.create(test.database)
        let observed = ObservedValues(ObservedCounter.observe(test.database))
        try await observed.wait("the first result") { $0 == [0] }
        let commits = 30
        let writer = try await ObserveWriter(test, commits: commits, lockstep: true, rollbacks: true)
        for i in 1...commits {
            writer.proceed()
            try await observed.wait("commit \(i)") { $0.count == i + 1 }
        }
        #expect(try await writer.waitForExit() == 0)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(observed.values.current == Array(0...commits).map { Optional($0) })
        try await observed.cancel()
    }
}

/// A PostgreSQL server stopped and started under a running observation. It uses the
/// restartable server of scripts/with-postgres (`UNITY_PG_CLUSTERS=1`), never the main one.
@Suite("Observation: a PostgreSQL restart", .serialized,
       .enabled(if: PostgresClusters.environment["UNITY_PG_RESTARTABLE_URL"] != nil || PostgresClusters.underCI,
                PostgresClusters.missingMessage))
struct ObservationRestartTests {
    @Test func aServerRestartMidwayLosesNoFinalState() async throws {
        let url = try PostgresClusters.require(PostgresClusters.environment["UNITY_PG_RESTARTABLE_URL"], "UNITY_PG_RESTARTABLE_URL")
        let data = try PostgresClusters.require(PostgresClusters.environment["UNITY_PG_RESTARTABLE_DATA"], "UNITY_PG_RESTARTABLE_DATA")
        let schema = try PostgresClusters.makeSchema(on: url)
        defer { PostgresClusters.dropSchema(schema, on: url) }
        // No liveness check of idle connections: the first refetch after the restart then
        // meets a connection the restart broke, and must try again rather than end.
        let db = try Database(driver: PostgresDriver(url, connections: 2, searchPath: schema),
                              configuration: DatabaseConfiguration(checkoutTimeout: 30, livenessCheckAfterIdle: 3600))
        defer { db.close() }
        try ObservedCounter.create(db)
        let observed = ObservedValues(ObservedCounter.observe(db))
        try await observed.wait("the first result") { $0 == [0] }
        for value in 1...3 {
            try ObservedCounter.set(db, value)
            try await observed.wait("commit \(value)") { $0.last == value }
        }
        try PostgresClusters.runHelper("stop", data)
        try PostgresClusters.runHelper("start", data)
        // Let the listener reconnect and every observation refetch before anything else uses
        // the pool: that refetch meets a broken connection.
        try await Task.sleep(nanoseconds: 1_500_000_000)
        #expect(observed.failure.current == nil, "the observation ended: \(String(describing: observed.failure.current))")
        // The first commits after the restart may meet connections the restart broke: each
        // is tried again until it commits (an UPDATE to a fixed value is idempotent).
        for value in 4...6 {
            let deadline = Date(timeIntervalSinceNow: 30)
            while true {
                do {
                    try ObservedCounter.set(db, value)
                    break
                } catch let error as DatabaseError {
                    guard Date() < deadline else { throw error }
                    try await Task.sleep(nanoseconds: 100_000_000)
                }
            }
        }
        let values = try await observed.wait("the final state after the restart", timeout: 60) { $0.last == 6 }
        #expect(isIncreasing(values), "\(values)")
        #expect(observed.failure.current == nil)
        try await observed.cancel()
    }
}

@Suite("Observation: the PostgreSQL listening connection")
struct ObservationListenerTests {
    /// A commit made while the listening connection is gone (its backend terminated in the
    /// same transaction) sends a notification no one hears: the refetch after the listener
    /// reconnects must still deliver it.
    @Test func aNotificationLostWhileTheListenerReconnectsIsMadeUpFor() async throws {
        let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
        let name = "obs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let listenURL = url + (url.contains("?") ? "&" : "?") + "application_name=\(name)"
        let test = try TestDatabase(.postgres, connections: 2, configuration: DatabaseConfiguration(notificationURL: listenURL))
        defer { test.tearDown() }
        let db = test.database
        try ObservedCounter.create(db)
        let observed = ObservedValues(ObservedCounter.observe(db))
        try await observed.wait("the first result") { $0 == [0] }
        for round in 1...3 {
            try ObservedCounter.execute(db, """
                WITH cut AS (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?)
                UPDATE counter SET value = ? WHERE id = 1 AND (SELECT count(*) FROM cut) >= 0
                """, [.text(name), .integer(Int64(round))])
            try await observed.wait("round \(round) after the listener was cut off", timeout: 60) { $0.last == round }
        }
        try await observed.cancel()
    }
}
