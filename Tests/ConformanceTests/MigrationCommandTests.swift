import Foundation
import Testing
import Unity
@testable import UnityCommandLine

/// `unity migrate status | apply | verify | new`, run in process (the same entry point as the
/// executable, with its output captured) on both backends, and once as a child process for
/// the exit codes.
@Suite("unity migrate")
struct MigrationCommandTests {
    struct Outcome: Equatable {
        var code: Int32
        var out: String
        var err: String
    }

    /// Runs `unity` with `arguments` in this process.
    static func unity(_ arguments: [String], environment: [String: String] = [:]) -> Outcome {
        let lock = NSLock()
        var out = "", err = ""
        let code = UnityCLI.run(arguments, environment: environment, output: CommandOutput { text, isError in
            lock.withLock { if isError { err += text } else { out += text } }
        })
        return lock.withLock { Outcome(code: code, out: out, err: err) }
    }

    /// The `--url` (and `--schema`) arguments that reach a test database.
    static func target(_ test: TestDatabase) -> [String] {
        switch test.backend {
        case .sqlite: return ["--url", test.location]
        case .postgres: return ["--url", postgresURL ?? "", "--schema", test.location]
        }
    }

    /// A fresh folder of migration files, removed after `body`.
    static func withFolder<T>(_ files: [String: String], _ body: (String) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("unity-migrate-\(UUID().uuidString)", isDirectory: true).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (name, text) in files {
            try Data(text.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent(name))
        }
        return try body(folder)
    }

    static let things = "CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT);\n"
    static let index = "CREATE INDEX things_name ON things (name);\n"

    @Test(arguments: Backend.allCases)
    func statusApplyAndVerify(_ backend: Backend) throws {
        try withTestDatabaseHandle(backend) { test in
            try Self.withFolder(["0001_things.sql": Self.things, "0002_index.sql": Self.index]) { folder in
                let args = Self.target(test) + ["--migrations", folder]
                #expect(Self.unity(["migrate", "status"] + args) == Outcome(code: 0, out: """
                    pending   0001_things
                    pending   0002_index
                    0 applied, 2 pending, 0 edited, 0 missing

                    """, err: ""))
                #expect(Self.unity(["migrate", "apply"] + args) == Outcome(code: 0, out: """
                    applied  0001_things
                    applied  0002_index

                    """, err: ""))
                // The tables are there, recorded with the files' checksums.
                try test.database.execute(sql: "INSERT INTO things (id, name) VALUES (?, ?)", [1, "a"])
                let recorded = try Migrator.directory(folder).appliedMigrations(test.database).map(\.name)
                #expect(recorded == ["0001_things", "0002_index"])
                #expect(Self.unity(["migrate", "apply"] + args) == Outcome(code: 0, out: "nothing to apply\n", err: ""))
                #expect(Self.unity(["migrate", "status"] + args) == Outcome(code: 0, out: """
                    applied   0001_things
                    applied   0002_index
                    2 applied, 0 pending, 0 edited, 0 missing

                    """, err: ""))
                #expect(Self.unity(["migrate", "verify"] + args)
                            == Outcome(code: 0, out: "ok: 2 applied, 0 pending, 0 edited, 0 missing\n", err: ""))

                // An applied file edited: verify fails, apply refuses and changes nothing.
                try Data((Self.index + "-- tweaked\n").utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("0002_index.sql"))
                try Data("CREATE TABLE later (id INTEGER);\n".utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("0003_later.sql"))
                #expect(Self.unity(["migrate", "verify"] + args) == Outcome(code: 1, out: """
                    edited   0002_index: its file changed after it was applied (restore it, and put the change in a new migration)
                    failed: 1 applied, 1 pending, 1 edited, 0 missing

                    """, err: ""))
                let refused = Self.unity(["migrate", "apply"] + args)
                #expect(refused.code == 1)
                #expect(refused.out == "")
                #expect(refused.err.hasPrefix("error: "))
                #expect(refused.err.contains("0002_index"))
                #expect(throws: DatabaseError.self) { try test.database.fetchAll(sql: "SELECT id FROM later") }

                // Restored, but the first file gone: missing.
                try Data(Self.index.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("0002_index.sql"))
                try FileManager.default.removeItem(atPath: URL(fileURLWithPath: folder).appendingPathComponent("0001_things.sql").path)
                #expect(Self.unity(["migrate", "verify"] + args) == Outcome(code: 1, out: """
                    missing  0001_things: applied, but no file has it
                    failed: 1 applied, 1 pending, 0 edited, 1 missing

                    """, err: ""))
                #expect(Self.unity(["migrate", "status"] + args) == Outcome(code: 0, out: """
                    missing   0001_things
                    applied   0002_index
                    pending   0003_later
                    1 applied, 1 pending, 0 edited, 1 missing

                    """, err: ""))
                // Back in place: verify passes with a pending migration, unless asked not to.
                try Data(Self.things.utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("0001_things.sql"))
                #expect(Self.unity(["migrate", "verify"] + args).code == 0)
                #expect(Self.unity(["migrate", "verify", "--fail-on-pending"] + args) == Outcome(code: 1, out: """
                    pending  0003_later
                    failed: 2 applied, 1 pending, 0 edited, 0 missing

                    """, err: ""))
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func jsonOutput(_ backend: Backend) throws {
        try withTestDatabaseHandle(backend) { test in
            try Self.withFolder(["0001_things.sql": Self.things, "0002_index.sql": Self.index]) { folder in
                let args = Self.target(test) + ["--migrations", folder, "--json"]
                let applied = Self.unity(["migrate", "apply"] + args)
                #expect(applied == Outcome(code: 0, out: #"{"applied":["0001_things","0002_index"]}"# + "\n", err: ""))
                try Data("CREATE TABLE later (id INTEGER);\n".utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("0003_later.sql"))
                let status = Self.unity(["migrate", "status"] + args)
                #expect(status.code == 0)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(status.out.utf8)) as? [String: Any])
                #expect(object["applied"] as? Int == 2)
                #expect(object["pending"] as? Int == 1)
                #expect(object["edited"] as? Int == 0)
                #expect(object["missing"] as? Int == 0)
                let migrations = try #require(object["migrations"] as? [[String: Any]])
                #expect(migrations.map { $0["name"] as? String } == ["0001_things", "0002_index", "0003_later"])
                #expect(migrations.map { $0["state"] as? String } == ["applied", "applied", "pending"])
                let current = try Migrator.directory(folder).migrations.map { try $0.checksum(for: test.database.dialect) }
                #expect(migrations.map { $0["checksum"] as? String } == current)
                #expect(migrations.map { $0["appliedChecksum"] as? String } == [current[0], current[1], nil])
                #expect(migrations[0]["appliedAt"] is String)
                #expect(migrations[2]["appliedAt"] == nil)

                let verify = Self.unity(["migrate", "verify", "--fail-on-pending"] + args)
                #expect(verify.code == 1)
                let report = try #require(try JSONSerialization.jsonObject(with: Data(verify.out.utf8)) as? [String: Any])
                #expect(report["ok"] as? Bool == false)
                #expect((report["problems"] as? [[String: Any]])?.map { $0["name"] as? String } == ["0003_later"])

                // An error is JSON on standard output too, and a message on standard error.
                let failed = Self.unity(["migrate", "status", "--url", "/nonexistent/unity.sqlite", "--migrations", folder, "--json"])
                #expect(failed.code == 3)
                #expect(failed.out == #"{"error":{"exitCode":3,"kind":"database","message":"no SQLite database at /nonexistent/unity.sqlite"}}"# + "\n")
                #expect(failed.err == "error: no SQLite database at /nonexistent/unity.sqlite\n")
            }
        }
    }

    @Test
    func newWritesTheNextNumberedFile() throws {
        try Self.withFolder(["0007_old.sql": "SELECT 1;\n", "notes.txt": "not a migration"]) { folder in
            #expect(Self.unity(["migrate", "new", "add users", "--migrations", folder])
                        == Outcome(code: 0, out: "created  \(folder)/0008_add_users.sql\n", err: ""))
            #expect(try String(contentsOfFile: folder + "/0008_add_users.sql", encoding: .utf8)
                        == "-- 0008_add_users: runs once, in a transaction of its own; no BEGIN or COMMIT.\n")
            #expect(Self.unity(["migrate", "new", "split", "--per-backend", "--migrations", folder, "--json"]) == Outcome(
                code: 0, out: #"{"created":["\#(folder)/0009_split.sqlite.sql","\#(folder)/0009_split.postgres.sql"]}"# + "\n", err: ""))
            #expect(try String(contentsOfFile: folder + "/0009_split.postgres.sql", encoding: .utf8)
                        == "-- 0009_split (PostgreSQL): runs once, in a transaction of its own; no BEGIN or COMMIT.\n")
            // The migrator reads the pair as one migration with a variant per backend.
            let migrator = try Migrator.directory(folder)
            #expect(migrator.migrations.map(\.name) == ["0007_old", "0008_add_users", "0009_split"])
            #expect(try migrator.migrations[2].script(for: .postgres)
                        == "-- 0009_split (PostgreSQL): runs once, in a transaction of its own; no BEGIN or COMMIT.\n")
            // A name that is not a plain word is refused, and nothing is written.
            let refused = Self.unity(["migrate", "new", "drop;table", "--migrations", folder])
            #expect(refused.code == 2)
            #expect(refused.err == "error: a migration's name takes letters, digits, '_' and '-' only, not \"drop;table\"\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).sorted() == [
                "0007_old.sql", "0008_add_users.sql", "0009_split.postgres.sql", "0009_split.sqlite.sql", "notes.txt",
            ])
        }
        // A new folder starts at 0001.
        try Self.withFolder([:]) { parent in
            let folder = parent + "/Migrations"
            #expect(Self.unity(["migrate", "new", "first", "--migrations", folder]).out == "created  \(folder)/0001_first.sql\n")
        }
    }

    @Test
    func usageAndFileErrorsHaveTheirExitCodes() throws {
        try Self.withFolder(["0001_only_pg.postgres.sql": "SELECT 1;\n"]) { folder in
            let sqlite = FileManager.default.temporaryDirectory.appendingPathComponent("unity-cli-\(UUID().uuidString).sqlite").path
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlite + suffix) } }
            // No URL, and none in the environment.
            #expect(Self.unity(["migrate", "status", "--migrations", folder]) == Outcome(
                code: 2, out: "",
                err: "error: no database: pass --url (a PostgreSQL URL or a SQLite path) or set UNITY_DATABASE_URL\n"))
            // An unknown subcommand or option.
            #expect(Self.unity(["migrate", "rollback"]).code == 2)
            #expect(Self.unity(["migrate", "status", "--verbose"]).code == 2)
            #expect(Self.unity(["migrate"]).code == 2)
            let help = Self.unity(["migrate", "apply", "--help"])
            #expect(help.code == 0)
            #expect(help.out.hasPrefix("OVERVIEW: Apply the pending migrations"))
            #expect(Self.unity(["--help"]).code == 0)
            // The environment's URL; a PostgreSQL-only migration has no SQLite variant: a files error.
            let missingVariant = Self.unity(["migrate", "apply", "--migrations", folder], environment: ["UNITY_DATABASE_URL": sqlite])
            #expect(missingVariant.code == 4)
            #expect(missingVariant.err.contains("0001_only_pg"))
            // A folder that is not there.
            #expect(Self.unity(["migrate", "apply", "--url", sqlite, "--migrations", folder + "/absent"]).code == 4)
            // A server that does not answer.
            #expect(Self.unity(["migrate", "status", "--url", "postgresql://127.0.0.1:1/none?connect_timeout=2",
                                "--migrations", folder]).code == 3)
        }
    }

    /// The built executable, beside the test bundle (or in the package's build folder).
    static func executable() throws -> String {
        var candidates = [URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("unity").path]
        let cwd = FileManager.default.currentDirectoryPath
        candidates += [cwd + "/.build/debug/unity", cwd + "/.build/release/unity"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ChildProcessError(message: "the unity executable was not built (looked at \(candidates))")
        }
        return found
    }

    struct ChildProcessError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Runs the executable as a child process, killed after `timeout` seconds.
    static func runChild(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try executable())
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["UNITY_DATABASE_URL"] = nil
        env.merge(environment) { _, new in new }
        process.environment = env
        let outFile = FileManager.default.temporaryDirectory.appendingPathComponent("unity-out-\(UUID().uuidString)")
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("unity-err-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: outFile.path, contents: nil),
              FileManager.default.createFile(atPath: errFile.path, contents: nil) else {
            throw ChildProcessError(message: "cannot create the child's output files")
        }
        defer {
            try? FileManager.default.removeItem(at: outFile)
            try? FileManager.default.removeItem(at: errFile)
        }
        process.standardOutput = try FileHandle(forWritingTo: outFile)
        process.standardError = try FileHandle(forWritingTo: errFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning {
            process.terminate()
            throw ChildProcessError(message: "unity \(arguments) did not exit within \(timeout) s")
        }
        return Outcome(code: process.terminationStatus,
                       out: (try? String(contentsOf: outFile, encoding: .utf8)) ?? "",
                       err: (try? String(contentsOf: errFile, encoding: .utf8)) ?? "")
    }

    @Test(.timeLimit(.minutes(2)))
    func theExecutablesExitCodes() throws {
        try Self.withFolder(["0001_things.sql": Self.things]) { folder in
            let sqlite = FileManager.default.temporaryDirectory.appendingPathComponent("unity-cli-\(UUID().uuidString).sqlite").path
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlite + suffix) } }
            let env = ["UNITY_DATABASE_URL": sqlite]
            #expect(try Self.runChild(["migrate", "apply", "--migrations", folder], environment: env)
                        == Outcome(code: 0, out: "applied  0001_things\n", err: ""))
            #expect(try Self.runChild(["migrate", "verify", "--migrations", folder], environment: env).code == 0)
            try Data((Self.things + "-- edited\n").utf8).write(to: URL(fileURLWithPath: folder).appendingPathComponent("0001_things.sql"))
            #expect(try Self.runChild(["migrate", "verify", "--migrations", folder], environment: env).code == 1)
            #expect(try Self.runChild(["migrate", "verify", "--migrations", folder]).code == 2)
            #expect(try Self.runChild(["migrate", "frobnicate"]).code == 2)
            #expect(try Self.runChild(["migrate", "status", "--url", sqlite + ".absent", "--migrations", folder]).code == 3)
            #expect(try Self.runChild(["migrate", "status", "--url", sqlite, "--migrations", folder + "/absent"]).code == 4)
        }
    }
}
