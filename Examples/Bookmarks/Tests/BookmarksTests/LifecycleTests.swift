import BookmarksApp
import Dispatch
import Foundation
import Hummingbird
import HummingbirdTesting
import ServiceLifecycle
import Testing
import Unity
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The PostgreSQL server Examples/Bookmarks/scripts/test starts for the restart test alone
/// (never the main test server, which other suites share).
enum RestartServer {
    static var url: String? { TestEnvironment.values["BOOKMARKS_RESTART_PG_URL"] }
    static var dataDirectory: String? { TestEnvironment.values["BOOKMARKS_RESTART_PG_DATA"] }
    static var helper: String? { TestEnvironment.values["UNITY_PG_CTL_HELPER"] }
    /// Runs where the server is, and under CI (which then fails on the missing variables).
    static var enabled: Bool { url != nil || TestEnvironment.underCI }

    enum Failure: Error, CustomStringConvertible {
        case helper(String)
        var description: String { switch self { case .helper(let message): message } }
    }

    /// Runs scripts/pg-ctl-helper `action` on the server's data directory, waiting at most
    /// `timeout` for it. Spawned with `posix_spawn`, every descriptor on /dev/null: a server
    /// it starts must hold no pipe of this process (Foundation's `Process` may then never
    /// see the child exit).
    static func run(_ action: String, timeout: Duration = .seconds(60)) async throws {
        let helper = try #require(helper, "UNITY_PG_CTL_HELPER is not set")
        let data = try #require(dataDirectory, "BOOKMARKS_RESTART_PG_DATA is not set")
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var argv: [UnsafeMutablePointer<CChar>?] = [helper, action, data].map { (text: String) in strdup(text) }
        argv.append(nil)
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, helper, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure.helper("posix_spawn \(helper) failed: \(spawned)") }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            if clock.now > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw Failure.helper("pg-ctl-helper \(action) did not finish within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // WIFEXITED and WEXITSTATUS, spelled out (they are macros).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw Failure.helper("pg-ctl-helper \(action) \(data) failed (wait status \(status))")
        }
    }
}

@Suite("Service lifecycle")
struct LifecycleTests {
    @Test("a request during a PostgreSQL restart: 503 while it is down, health back to 200, then requests succeed",
          .enabled(if: RestartServer.enabled, "no restartable server: run scripts/with-postgres Examples/Bookmarks/scripts/test"),
          .timeLimit(.minutes(2)))
    func postgresRestart() async throws {
        let url = try #require(RestartServer.url, "BOOKMARKS_RESTART_PG_URL is not set")
        try await withService(.postgres, postgresURL: url) { client, _ in
            let folder = try await client.createFolder("Reading")
            _ = try await client.createBookmark(folder: folder, url: "https://swift.org/", title: "Swift")
            #expect(try await client.send(.get, "/health").status == .ok)

            try await RestartServer.run("stop")
            do {
                // A request while the server is down: a 503 that says to retry, not a 500.
                let during = try await client.send(.get, "/bookmarks")
                #expect(during.status == .serviceUnavailable)
                #expect(during.headers[.retryAfter] == "1")
                #expect(try during.decode(ErrorBody.self).error == "database_unavailable")
                let down = try await waitUntil(timeout: .seconds(15)) {
                    try await client.send(.get, "/health").status == .serviceUnavailable
                }
                #expect(down, "health never answered 503 while the server was stopped")
                let health = try await client.send(.get, "/health").object()
                #expect(health["status"] as? String == "unavailable")
                #expect(health["backend"] as? String == "postgresql")
            } catch {
                try await RestartServer.run("start")
                throw error
            }
            try await RestartServer.run("start")

            let up = try await waitUntil(timeout: .seconds(30)) {
                try await client.send(.get, "/health").status == .ok
            }
            #expect(up, "health never came back to 200 after the restart")
            // The pool replaced its connections: reads and writes work again.
            _ = try await client.createBookmark(folder: folder, url: "https://www.postgresql.org/", title: "PostgreSQL")
            let page = try await client.send(.get, "/bookmarks?sort=title").decode(PageBody.self)
            #expect(page.items.map(\.title) == ["PostgreSQL", "Swift"])
        }
    }

    @Test("graceful shutdown finishes the request in flight, then closes the pool", arguments: Backend.allCases)
    func gracefulShutdownDrains(_ backend: Backend) async throws {
        let location = try TestLocation(backend)
        defer { location.remove() }
        let database = try openDatabase(location.configuration, logger: testLogger)
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try buildApplication(configuration: location.configuration, database: database, logger: testLogger) { port in
            portContinuation.yield(port)
        }
        let inspector = try location.openInspector()
        defer { inspector.close() }
        let group = ServiceGroup(configuration: .init(services: [app], logger: testLogger))

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let port = try await firstValue(of: ports, timeout: .seconds(20))
            try await TestClient.withClient(host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(20))) { client in
                let folder = try await Self.createFolder(client)

                // Hold the table's write lock from another connection, so that the next
                // insert waits inside its request.
                // The test waits for the lock without blocking a thread of the task pool: on a
                // 2-core machine the holder's task may need the only other one.
                let (locked, lockedContinuation) = AsyncStream.makeStream(of: Int.self)
                let release = DispatchSemaphore(value: 0)
                let holder = Task {
                    try await inspector.write { conn in
                        if backend == .postgres { try conn.execute(sql: "LOCK TABLE bookmarks IN EXCLUSIVE MODE") }
                        else { try conn.execute(sql: "DELETE FROM bookmarks WHERE 0 = 1") }   // takes SQLite's write lock
                        lockedContinuation.yield(1)
                        _ = release.wait(timeout: .now() + 30)   // on Unity's thread, not the task pool's
                    }
                }
                _ = try await firstValue(of: locked, timeout: .seconds(30))
                async let inFlight = client.post("/bookmarks", headers: [.contentType: "application/json"], body: ByteBuffer(
                    string: #"{"folderId": "\#(folder)", "url": "https://swift.org/", "title": "Swift"}"#))
                // The insert is waiting: PostgreSQL shows it; SQLite cannot, so give it time to arrive.
                if backend == .postgres {
                    let waiting = try await waitUntil(timeout: .seconds(10)) {
                        let count = try await location.waitingInserts()
                        return count == 1
                    }
                    #expect(waiting, "the insert never waited for the lock")
                } else {
                    try await Task.sleep(for: .milliseconds(300))
                }
                await group.triggerGracefulShutdown()
                try await Task.sleep(for: .milliseconds(200))
                #expect(database.openConnectionCount > 0, "the pool closed while a request was in flight")
                release.signal()
                try await holder.value
                let response = try await inFlight
                #expect(response.status == .created)
            }
            try await tasks.next()
        }
        #expect(database.openConnectionCount == 0)
        #expect(try await bookmarkRows(inspector).map { $0[1] } == ["https://swift.org/"])
    }

    static func createFolder(_ client: TestClient) async throws -> String {
        let response = try await client.post("/folders", headers: [.contentType: "application/json"],
                                              body: ByteBuffer(string: #"{"name": "Reading"}"#))
        try #require(response.status == .created)
        let body = try #require(response.body)
        return try JSONDecoder().decode(FolderBody.self, from: Data(body.readableBytesView)).id
    }
}

/// The first value of `stream`, waiting at most `timeout`.
func firstValue(of stream: AsyncStream<Int>, timeout: Duration) async throws -> Int {
    try await withThrowingTaskGroup(of: Int?.self) { group in
        group.addTask { await stream.first { _ in true } }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        let first = try await group.next() ?? nil
        return try #require(first ?? nil, "the server did not start within \(timeout)")
    }
}

extension TestLocation {
    /// How many statements on this test's PostgreSQL database wait for a lock on an insert.
    func waitingInserts() async throws -> Int {
        let admin = try openInspector()
        defer { admin.close() }
        return try await admin.read { conn in
            try conn.fetchValue(Int.self, sql: """
                SELECT count(*) FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%bookmarks%'
                """) ?? 0
        }
    }
}
