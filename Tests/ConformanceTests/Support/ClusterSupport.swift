import DriverPostgres
import Foundation
import Testing
import Unity
#if canImport(Glibc)
import Glibc
#endif

/// The servers scripts/with-postgres starts for the replica and failover suites when
/// `UNITY_PG_CLUSTERS=1` (scripts/test sets it).
enum PostgresClusters {
    static let environment = ProcessInfo.processInfo.environment
    /// Under CI, missing clusters fail these suites instead of leaving them out.
    static let underCI = environment["CI"] == "true"

    static var replicaPrimaryURL: String? { environment["UNITY_PG_REPLICA_PRIMARY_URL"] }
    static var replicaStandbyURL: String? { environment["UNITY_PG_REPLICA_STANDBY_URL"] }
    static var replicaStandbyData: String? { environment["UNITY_PG_REPLICA_STANDBY_DATA"] }
    static var failoverURL: String? { environment["UNITY_PG_FAILOVER_URL"] }
    static var failoverPrimaryData: String? { environment["UNITY_PG_FAILOVER_PRIMARY_DATA"] }
    static var failoverStandbyData: String? { environment["UNITY_PG_FAILOVER_STANDBY_DATA"] }
    static var helper: String? { environment["UNITY_PG_CTL_HELPER"] }

    /// True when the suites run: the clusters are there, or CI requires them (and the
    /// suites then fail on the missing variables).
    static var replicaSuiteEnabled: Bool { replicaPrimaryURL != nil || underCI }
    static var failoverSuiteEnabled: Bool { failoverURL != nil || underCI }

    static let missingMessage: Comment = "the replica and failover clusters are not running: run the tests with scripts/test, or with UNITY_PG_CLUSTERS=1 scripts/with-postgres swift test"

    /// The value of a cluster variable, or a failure naming it.
    static func require(_ value: String?, _ name: String) throws -> String {
        try #require(value, "\(name) is not set: run the tests with scripts/test, or UNITY_PG_CLUSTERS=1 scripts/with-postgres")
    }

    /// Runs scripts/pg-ctl-helper `action` on `dataDirectory` and waits for it (at most
    /// `timeout` seconds). Spawned with `posix_spawn` and every descriptor on /dev/null: a
    /// server it starts must not hold a pipe of this process.
    static func runHelper(_ action: String, _ dataDirectory: String, timeout: Double = 90) throws {
        let helper = try require(helper, "UNITY_PG_CTL_HELPER")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        let arguments = [helper, action, dataDirectory]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, helper, &actions, nil, argv, environ)
        guard spawned == 0 else { throw ClusterError.helperFailed("posix_spawn failed with \(spawned)") }
        let deadline = Date(timeIntervalSinceNow: timeout)
        var status: Int32 = 0
        while true {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { break }
            if done < 0 && errno != EINTR { throw ClusterError.helperFailed("waitpid failed (errno \(errno))") }
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw ClusterError.helperFailed("pg-ctl-helper \(action) did not finish within \(timeout) s")
            }
            usleep(20_000)
        }
        // WIFEXITED / WEXITSTATUS, spelled out (macros).
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw ClusterError.helperFailed("pg-ctl-helper \(action) \(dataDirectory) failed (status \(status))")
        }
    }

    /// Waits until `condition` holds, checking every 20 ms, for at most `timeout` seconds;
    /// returns whether it held.
    static func waitUntil(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    /// A fresh schema on the server at `url` (the primary), for one test.
    static func makeSchema(on url: String) throws -> String {
        let schema = "r_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        let admin = try Database(driver: PostgresDriver(url, connections: 1))
        defer { admin.close() }
        try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
        return schema
    }

    /// Drops a schema made by ``makeSchema(on:)``; failures are ignored (the cluster goes
    /// away with the test run).
    static func dropSchema(_ schema: String, on url: String) {
        guard let admin = try? Database(driver: PostgresDriver(url, connections: 1)) else { return }
        _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(schema)\" CASCADE") }
        admin.close()
    }
}

enum ClusterError: Error, CustomStringConvertible {
    case helperFailed(String)

    var description: String {
        switch self {
        case .helperFailed(let message): return message
        }
    }
}
