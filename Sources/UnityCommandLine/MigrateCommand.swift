import ArgumentParser
import DriverPostgres
import DriverSQLite
import Foundation
import Unity

/// `unity migrate`: the library's migrator over a folder of `.sql` files.
struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply and check the .sql migrations of a folder.",
        discussion: """
            The database is --url, else the environment variable UNITY_DATABASE_URL: a \
            PostgreSQL URL (postgres:// or postgresql://) or a SQLite file's path (sqlite: in \
            front is allowed). Files are named NNNN_name.sql, or NNNN_name.sqlite.sql and \
            NNNN_name.postgres.sql for a backend's own variant; each runs once, in order of \
            name, with the checksum of its text recorded.
            """,
        subcommands: [Status.self, Apply.self, Verify.self, New.self])
}

/// The options every database subcommand takes.
struct DatabaseOptions: ParsableArguments {
    @Option(help: "The database: a PostgreSQL URL or a SQLite path (default: $UNITY_DATABASE_URL).")
    var url: String?

    @Option(help: "PostgreSQL only: the schema to put first on the search path.")
    var schema: String?

    @Option(help: "The folder of .sql migration files.")
    var migrations: String = "Migrations"

    @Flag(help: "Print machine-readable JSON on standard output.")
    var json = false

    /// The database URL given, or the environment's.
    func databaseURL(_ environment: [String: String]) throws -> String {
        if let url, !url.isEmpty { return url }
        if let url = environment["UNITY_DATABASE_URL"], !url.isEmpty { return url }
        throw CommandFailure(exitCode: ExitStatus.usage, kind: "usage",
                             message: "no database: pass --url (a PostgreSQL URL or a SQLite path) or set UNITY_DATABASE_URL")
    }

    /// Opens the database. `mustExist`: a SQLite file that is not there is an error rather
    /// than created (a status or a check creates nothing).
    func open(_ environment: [String: String], mustExist: Bool) throws -> Database {
        let url = try databaseURL(environment)
        let lowered = url.lowercased()
        if lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://") {
            return try Database(driver: PostgresDriver(url, connections: 1, searchPath: schema))
        }
        guard schema == nil else {
            throw CommandFailure(exitCode: ExitStatus.usage, kind: "usage", message: "--schema applies to PostgreSQL only")
        }
        var path = url
        if lowered.hasPrefix("sqlite://") {
            path = String(url.dropFirst("sqlite://".count))
        } else if lowered.hasPrefix("sqlite:") {
            path = String(url.dropFirst("sqlite:".count))
        }
        if mustExist && !FileManager.default.fileExists(atPath: path) {
            throw CommandFailure(exitCode: ExitStatus.database, kind: "database", message: "no SQLite database at \(path)")
        }
        return try Database(driver: SQLiteDriver(path: path, readers: 1))
    }

    /// The migrator of the folder's files.
    func migrator() throws -> Migrator {
        try Migrator.directory(migrations)
    }
}

/// Where one migration stands.
struct MigrationState: Encodable, Equatable {
    enum State: String, Encodable {
        /// Applied, and its file is as it was then.
        case applied
        /// Not applied yet.
        case pending
        /// Applied, but its file changed since: its checksum differs.
        case edited
        /// Applied, but no file has it any more.
        case missing
    }

    var name: String
    var state: State
    /// The checksum of the file as it is now (nil when missing).
    var checksum: String?
    /// The checksum recorded when it was applied (nil when pending).
    var appliedChecksum: String?
    var appliedAt: Date?
}

/// Every migration of the folder and of the database, in order of name.
func migrationStates(_ db: Database, _ migrator: Migrator) throws -> [MigrationState] {
    let applied = try migrator.appliedMigrations(db)
    let appliedByName = Dictionary(applied.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    var states: [MigrationState] = []
    var names = Set<String>()
    for migration in migrator.migrations {
        names.insert(migration.name)
        let checksum = try migration.checksum(for: db.dialect)
        if let record = appliedByName[migration.name] {
            states.append(MigrationState(name: migration.name, state: record.checksum == checksum ? .applied : .edited,
                                         checksum: checksum, appliedChecksum: record.checksum, appliedAt: record.appliedAt))
        } else {
            states.append(MigrationState(name: migration.name, state: .pending, checksum: checksum))
        }
    }
    // A flavor's own schema records (`flavor:…`) belong to no file.
    for record in applied where !names.contains(record.name) && !record.name.hasPrefix(Migrator.flavorMigrationPrefix) {
        states.append(MigrationState(name: record.name, state: .missing, appliedChecksum: record.checksum, appliedAt: record.appliedAt))
    }
    return states.sorted { $0.name < $1.name }
}

/// A report of states, as text lines and as JSON.
struct StatusReport: Encodable {
    var migrations: [MigrationState]
    var applied: Int
    var pending: Int
    var edited: Int
    var missing: Int

    init(_ migrations: [MigrationState]) {
        self.migrations = migrations
        applied = migrations.filter { $0.state == .applied }.count
        pending = migrations.filter { $0.state == .pending }.count
        edited = migrations.filter { $0.state == .edited }.count
        missing = migrations.filter { $0.state == .missing }.count
    }

    var summary: String {
        "\(applied) applied, \(pending) pending, \(edited) edited, \(missing) missing"
    }

    /// One line per migration: its state, padded, then its name.
    var lines: [String] {
        migrations.map { $0.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0) + "  " + $0.name }
    }
}

extension MigrateCommand {
    /// `unity migrate status`.
    struct Status: ParsableCommand, UnityRunnable, JSONOutputting {
        static let configuration = CommandConfiguration(
            abstract: "List the migrations: applied, pending, edited after they were applied, or missing (applied, file gone).")

        @OptionGroup var options: DatabaseOptions
        var json: Bool { options.json }

        func execute(environment: [String: String], output: CommandOutput) throws -> Int32 {
            let migrator = try options.migrator()
            let db = try options.open(environment, mustExist: true)
            defer { db.close() }
            let report = StatusReport(try migrationStates(db, migrator))
            if json {
                output.print(JSONText.encode(report))
            } else {
                report.lines.forEach(output.print)
                output.print(report.summary)
            }
            return ExitStatus.success
        }
    }

    /// `unity migrate verify`.
    struct Verify: ParsableCommand, UnityRunnable, JSONOutputting {
        static let configuration = CommandConfiguration(
            abstract: "Exit 1 when an applied migration's file was edited or is missing.")

        @OptionGroup var options: DatabaseOptions
        @Flag(help: "Exit 1 when a migration is pending too.")
        var failOnPending = false
        var json: Bool { options.json }

        private struct Report: Encodable {
            var ok: Bool
            var problems: [MigrationState]
            var applied: Int
            var pending: Int
        }

        func execute(environment: [String: String], output: CommandOutput) throws -> Int32 {
            let migrator = try options.migrator()
            let db = try options.open(environment, mustExist: true)
            defer { db.close() }
            let status = StatusReport(try migrationStates(db, migrator))
            let problems = status.migrations.filter {
                $0.state == .edited || $0.state == .missing || (failOnPending && $0.state == .pending)
            }
            if json {
                output.print(JSONText.encode(Report(ok: problems.isEmpty, problems: problems, applied: status.applied,
                                                    pending: status.pending)))
            } else {
                for problem in problems {
                    switch problem.state {
                    case .edited:
                        output.print("edited   \(problem.name): its file changed after it was applied "
                                     + "(restore it, and put the change in a new migration)")
                    case .missing:
                        output.print("missing  \(problem.name): applied, but no file has it")
                    case .pending:
                        output.print("pending  \(problem.name)")
                    case .applied:
                        break
                    }
                }
                output.print((problems.isEmpty ? "ok: " : "failed: ") + status.summary)
            }
            return problems.isEmpty ? ExitStatus.success : ExitStatus.verifyFailed
        }
    }

    /// `unity migrate apply`.
    struct Apply: ParsableCommand, UnityRunnable, JSONOutputting {
        static let configuration = CommandConfiguration(
            abstract: "Apply the pending migrations, in order, each in a transaction of its own (the library's migrator).")

        @OptionGroup var options: DatabaseOptions
        @Option(help: "Seconds to wait for another migrator holding the lock.")
        var lockTimeout: Double = 60
        var json: Bool { options.json }

        private struct Report: Encodable {
            var applied: [String]
        }

        func execute(environment: [String: String], output: CommandOutput) throws -> Int32 {
            var migrator = try options.migrator()
            migrator.lockWaitTimeout = lockTimeout
            let db = try options.open(environment, mustExist: false)
            defer { db.close() }
            let applied = try migrator.migrate(db)
            if json {
                output.print(JSONText.encode(Report(applied: applied)))
            } else if applied.isEmpty {
                output.print("nothing to apply")
            } else {
                applied.forEach { output.print("applied  \($0)") }
            }
            return ExitStatus.success
        }
    }

    /// `unity migrate new NAME`.
    struct New: ParsableCommand, UnityRunnable, JSONOutputting {
        static let configuration = CommandConfiguration(
            abstract: "Write the next numbered migration file (NNNN_name.sql).")

        @Argument(help: "What the migration does, in letters, digits, '_' and '-' (spaces become '_').")
        var name: String

        @Option(help: "The folder of .sql migration files (made if missing).")
        var migrations: String = "Migrations"

        @Flag(help: "Write a variant per backend (NNNN_name.sqlite.sql and NNNN_name.postgres.sql) instead of one file.")
        var perBackend = false

        @Flag(help: "Print machine-readable JSON on standard output.")
        var json = false

        private struct Report: Encodable {
            var created: [String]
        }

        func execute(environment: [String: String], output: CommandOutput) throws -> Int32 {
            let slug = name.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: " ", with: "_")
            guard !slug.isEmpty, slug.unicodeScalars.allSatisfy({
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-")
            }) else {
                throw CommandFailure(exitCode: ExitStatus.usage, kind: "usage",
                                     message: "a migration's name takes letters, digits, '_' and '-' only, not \"\(name)\"")
            }
            let paths = try NewMigrationFiles.create(slug, in: migrations, perBackend: perBackend)
            if json {
                output.print(JSONText.encode(Report(created: paths)))
            } else {
                paths.forEach { output.print("created  \($0)") }
            }
            return ExitStatus.success
        }
    }
}

/// The files `unity migrate new` writes.
enum NewMigrationFiles {
    /// Writes the next numbered file(s) for `slug` in `directory` and returns their paths.
    /// The number is one more than the highest leading number of the folder's `.sql` files,
    /// as wide as theirs (at least 4 digits).
    static func create(_ slug: String, in directory: String, perBackend: Bool) throws -> [String] {
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if !manager.fileExists(atPath: directory, isDirectory: &isDirectory) {
            do {
                try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw CommandFailure(exitCode: ExitStatus.migrationFiles, kind: "migration_files",
                                     message: "cannot create the folder \(directory): \(error.localizedDescription)")
            }
        } else if !isDirectory.boolValue {
            throw CommandFailure(exitCode: ExitStatus.migrationFiles, kind: "migration_files", message: "\(directory) is not a folder")
        }
        let entries: [String]
        do {
            entries = try manager.contentsOfDirectory(atPath: directory)
        } catch {
            throw CommandFailure(exitCode: ExitStatus.migrationFiles, kind: "migration_files",
                                 message: "cannot list the folder \(directory): \(error.localizedDescription)")
        }
        var highest = 0
        var width = 4
        for entry in entries where entry.hasSuffix(".sql") && !entry.hasPrefix(".") {
            let digits = entry.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let number = Int(digits) else { continue }
            highest = max(highest, number)
            width = max(width, digits.count)
        }
        let number = String(highest + 1)
        let base = String(repeating: "0", count: max(0, width - number.count)) + number + "_" + slug
        let files = perBackend
            ? [(base + ".sqlite.sql", "SQLite"), (base + ".postgres.sql", "PostgreSQL")]
            : [(base + ".sql", nil)]
        let folder = URL(fileURLWithPath: directory, isDirectory: true)
        let paths = files.map { folder.appendingPathComponent($0.0).path }
        if let existing = paths.first(where: { manager.fileExists(atPath: $0) }) {
            throw CommandFailure(exitCode: ExitStatus.migrationFiles, kind: "migration_files", message: "\(existing) exists already")
        }
        for ((_, backend), path) in zip(files, paths) {
            let text = "-- \(base)" + (backend.map { " (\($0))" } ?? "") + ": runs once, in a transaction of its own; "
                + "no BEGIN or COMMIT.\n"
            guard manager.createFile(atPath: path, contents: Data(text.utf8)) else {
                throw CommandFailure(exitCode: ExitStatus.migrationFiles, kind: "migration_files", message: "cannot write \(path)")
            }
        }
        return paths
    }
}

extension MigrationError: MigrationErrorDescription {
    /// The exit code and kind for each case.
    var failure: CommandFailure {
        switch self {
        case .checksumMismatch, .unknownAppliedMigration:
            return CommandFailure(exitCode: ExitStatus.verifyFailed, kind: "verify", message: description)
        case .missingVariant, .unknownBackend, .transactionControl, .nulCharacter, .duplicateName, .unreadableFile:
            return CommandFailure(exitCode: ExitStatus.migrationFiles, kind: "migration_files", message: description)
        case .failed, .foreignKeyViolation, .notStarted, .closureFailed:
            return CommandFailure(exitCode: ExitStatus.database, kind: "database", message: description)
        }
    }
}
