@testable import DriverPostgres
import Foundation
import Testing
@testable import Unity
#if canImport(Glibc)
import Glibc
#endif

/// A replica that never answers (a black hole: a socket that listens and never accepts, so the
/// kernel completes the handshake and the startup packet then waits forever) fails to connect
/// within the replica's connect timeout, and the replicas' health check goes on around it.
@Suite("PostgreSQL: a replica's connect timeout")
struct PostgresReplicaConnectTimeoutTests {
    /// A listening socket on 127.0.0.1 that never accepts. Closing it resets the connections
    /// still queued on it.
    final class BlackHole: @unchecked Sendable {
        // @unchecked: `descriptor` is set in init and closed once, by the test.
        let descriptor: Int32
        let port: UInt16

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw POSIXError(.EMFILE) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, listen(fd, 16) == 0 else {
                Glibc.close(fd)
                throw POSIXError(.EADDRINUSE)
            }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            descriptor = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        var url: String { "postgresql://postgres@127.0.0.1:\(port)/unity_test?sslmode=disable" }

        func close() { Glibc.close(descriptor) }
    }

    /// Connects through `driver` on a thread of its own; returns what the connect ended with
    /// and how long it took, or nil when it had not ended after `bound` seconds.
    static func connect(_ driver: PostgresDriver, bound: Double) -> (error: DatabaseError?, seconds: Double)? {
        let outcome = Locked<(DatabaseError?, Double)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let start = Date()
        let thread = Thread {
            do {
                let connection = try driver.connect(role: .reader)
                connection.close()
                outcome.withLock { $0 = (nil, Date().timeIntervalSince(start)) }
            } catch {
                outcome.withLock { $0 = ((error as? DatabaseError) ?? .misuse("\(error)"), Date().timeIntervalSince(start)) }
            }
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + bound) == .success else { return nil }
        return outcome.withLock { $0 }.map { (error: $0.0, seconds: $0.1) }
    }

    @Test func aReplicaThatNeverAnswersFailsWithinItsConnectTimeout() throws {
        let hole = try BlackHole()
        defer { hole.close() }
        let driver = PostgresDriver(primary: "postgresql://postgres@127.0.0.1:1/unity_test", replicas: [hole.url],
                                    replicaConnectTimeout: 2)
        let replica = try #require(driver.replicas.first as? PostgresDriver)
        #expect(replica.connectTimeout == 2)
        #expect(driver.connectTimeout == nil)
        let result = try #require(Self.connect(replica, bound: 20), "the connect to a black hole did not end within 20 s")
        guard case .connectionFailed(let context)? = result.error else {
            Issue.record("expected connectionFailed, got \(String(describing: result.error))")
            return
        }
        #expect(context.message.contains("timeout"), "\(context.message)")
        #expect(result.seconds >= 1.5 && result.seconds < 10, "took \(result.seconds) s")
    }

    @Test func theDefaultBoundsAReplicasConnectAndTheStringsOwnTimeoutWins() throws {
        #expect(PostgresDriver(primary: "postgresql://app@primary/app", replicas: ["postgresql://app@r1/app"]).replicaConnectTimeout == 3)
        let hole = try BlackHole()
        defer { hole.close() }
        // The replica's own connect_timeout (2 s) wins over the driver's (60 s).
        let driver = PostgresDriver(primary: "postgresql://postgres@127.0.0.1:1/unity_test",
                                    replicas: [hole.url + "&connect_timeout=2"], replicaConnectTimeout: 60)
        let replica = try #require(driver.replicas.first as? PostgresDriver)
        let result = try #require(Self.connect(replica, bound: 20), "the string's connect_timeout was not used")
        #expect(result.error != nil)
        #expect(result.seconds < 10, "took \(result.seconds) s")
    }

    /// The health check asks each replica in turn: a black-holed one is marked down after its
    /// connect timeout, and the checks keep running.
    @Test func theHealthCheckGoesOnPastABlackHoledReplica() async throws {
        let hole = try BlackHole()
        defer { hole.close() }
        let url = try TestServer.url()
        let db = try Database(driver: PostgresDriver(primary: url, replicas: [hole.url], connections: 2, replicaConnectTimeout: 2),
                              configuration: DatabaseConfiguration(replicaCheckInterval: 0.05))
        defer { db.close() }
        let replicas = try #require(db.replicaSet)
        let deadline = Date(timeIntervalSinceNow: 30)
        while replicas.completedRounds < 3 && Date() < deadline {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(replicas.completedRounds >= 3, "the health check stalled on the black-holed replica")
        #expect(db.servingReplicas == [])
        // Reads go to the primary meanwhile.
        let one = try await db.read { try $0.fetchOne(sql: "SELECT 1") }
        #expect(one?[0] == .integer(1))
    }
}
