import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// Consumes an observation on a task of its own and keeps what it delivered.
final class ObservedValues<T: Sendable>: Sendable {
    let values = Locked<[T]>([])
    let failure = Locked<(any Error)?>(nil)
    let finished = Locked(false)
    private let task = Locked<Task<Void, Never>?>(nil)

    init(_ sequence: DatabaseObservation<T>) {
        let values = self.values, failure = self.failure, finished = self.finished
        task.withLock {
            $0 = Task {
                do {
                    for try await value in sequence { values.withLock { $0.append(value) } }
                } catch {
                    failure.withLock { $0 = error }
                }
                finished.withLock { $0 = true }
            }
        }
    }

    /// Waits until `condition` holds for the values delivered so far (checking every 5 ms),
    /// for at most `timeout` seconds; throws ``WaitTimedOut`` with the values otherwise.
    @discardableResult
    func wait(_ what: String, timeout: Double = 60, until condition: ([T]) -> Bool) async throws -> [T] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let now = values.current
            if condition(now) { return now }
            if let error = failure.current { throw error }
            if Date() > deadline { throw WaitTimedOut(what: "\(what) (delivered: \(now))", seconds: timeout) }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Cancels the consuming task and waits (at most `timeout` s) until it ended.
    func cancel(timeout: Double = 60) async throws {
        task.current?.cancel()
        try await wait("the end of the observation", timeout: timeout) { _ in finished.current }
    }
}

/// The table the observation tests follow: one row (id 1) whose `value` each commit sets,
/// and a table the queries never read. Change triggers / counters on `counter` only.
enum ObservedCounter {
    static let query = SQLStatement.select(SQLSelect(from: "counter").columns(.column("value")).where(.column("id").equals(1)))

    static func create(_ db: Database) throws {
        try Migrator(migrations: [
            Migration("0001_counter", sql: """
                CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
                INSERT INTO counter (id, value) VALUES (1, 0);
                CREATE TABLE unread (id INTEGER PRIMARY KEY, value INTEGER NOT NULL);
                """),
            Migration.observeChanges(of: ["counter"]),
        ]).migrate(db)
    }

    /// The value of a result of ``query``, or nil for none.
    static func value(_ rows: [Row]) -> Int? {
        guard let first = rows.first, case .integer(let v) = first[0] else { return nil }
        return Int(v)
    }

    /// Runs one raw statement in its own transaction (the blocking call, from async tests too).
    static func execute(_ db: Database, _ sql: String, _ bindings: [DatabaseValue] = []) throws {
        try db.execute(sql: sql, bindings)
    }

    struct Abort: Error {}

    /// A transaction that runs `sql` and rolls back.
    static func rollBack(_ db: Database, _ sql: String, _ bindings: [DatabaseValue] = []) throws {
        do {
            try db.write { conn in
                try conn.execute(sql: sql, bindings)
                throw Abort()
            }
        } catch is Abort {}
    }

    static func set(_ db: Database, _ value: Int) throws {
        try db.execute(.update(SQLUpdate("counter", set: [SQLAssignment("value", value: value)], where: .column("id").equals(1))))
    }

    /// The observation of ``query`` as values.
    static func observe(_ db: Database, removeDuplicates: Bool = true) -> DatabaseObservation<Int?> {
        db.observe(query, removeDuplicates: removeDuplicates) { value($0) }
    }
}

/// The helper executable `unity-observe-writer` (built beside the tests), run as a second
/// process that commits to the test's database.
final class ObserveWriter: @unchecked Sendable {
    // @unchecked: `process` and the pipes are set in init and used by the test's task.
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    let lines = Locked<[String]>([])

    /// The executable's path, or nil when it was not built.
    static let path: String? = {
        var dir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: "/proc/self/exe") {
            dir = Bundle.main.bundleURL.deletingLastPathComponent()
        }
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("unity-observe-writer").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return nil
    }()

    static let underCI = ProcessInfo.processInfo.environment["CI"] == "true"
    /// True when the two-process tests run: the helper is built, or CI requires it.
    static var enabled: Bool { path != nil || underCI }
    static let missingMessage: Comment = "unity-observe-writer is not built beside the tests: run `swift build` first (CI fails instead)"

    /// Starts the writer on `test`'s database; waits (10 s at most) for it to say `ready`.
    init(_ test: TestDatabase, commits: Int, rate: Double = 0, lockstep: Bool = false, rollbacks: Bool = false) async throws {
        let path = try #require(Self.path, "unity-observe-writer is not built beside the tests")
        var arguments: [String]
        switch test.backend {
        case .sqlite: arguments = ["sqlite", test.location]
        case .postgres: arguments = ["postgres", try #require(postgresURL), test.location]
        }
        arguments += ["--table", "counter", "--commits", String(commits), "--rate", String(rate)]
        if lockstep { arguments.append("--lockstep") }
        if rollbacks { arguments.append("--rollbacks") }
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        let lines = self.lines
        let buffer = Locked(Data())
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            buffer.withLock { data in
                data.append(chunk)
                while let newline = data.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: data[data.startIndex..<newline], as: UTF8.self)
                    data.removeSubrange(data.startIndex...newline)
                    lines.withLock { $0.append(line) }
                }
            }
        }
        try process.run()
        try await waitForLine("ready")
    }

    /// Waits (at most `timeout` s) for a line of output equal to `line`.
    func waitForLine(_ line: String, timeout: Double = 60) async throws {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !lines.current.contains(line) {
            if !process.isRunning && !lines.current.contains(line) {
                try await Task.sleep(nanoseconds: 50_000_000)
                if lines.current.contains(line) { return }
                throw WaitTimedOut(what: "the writer to print \(line) (it exited with \(process.terminationStatus))", seconds: 0)
            }
            if Date() > deadline { throw WaitTimedOut(what: "the writer to print \(line)", seconds: timeout) }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Lets a `--lockstep` writer make its next commit.
    func proceed() {
        input.fileHandleForWriting.write(Data("go\n".utf8))
    }

    /// Waits (at most `timeout` s) for the writer to exit; returns its status.
    func waitForExit(timeout: Double = 60) async throws -> Int32 {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()
                throw WaitTimedOut(what: "the writer to exit", seconds: timeout)
            }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { process.terminate() }
        output.fileHandleForReading.readabilityHandler = nil
    }
}

/// True when `values` is strictly increasing (an in-order subsequence of 0, 1, 2, …).
func isIncreasing(_ values: [Int?]) -> Bool {
    let numbers = values.compactMap { $0 }
    guard numbers.count == values.count else { return false }
    return zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }
}
