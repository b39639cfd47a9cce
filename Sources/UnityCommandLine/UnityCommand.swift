import ArgumentParser
import Foundation

/// The `unity` command: Unity's tools at the command line.
struct UnityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unity",
        abstract: "Unity's command-line tools.",
        discussion: """
            Exit codes: 0 success; 1 verify found an applied migration edited or missing (or one \
            pending, with --fail-on-pending), or apply refused to run for that reason; 2 usage \
            (bad arguments, no database URL); 3 the database failed (it cannot be opened, a \
            migration's SQL failed, another migrator held the lock too long); 4 the migration \
            files are wrong (the folder cannot be read, two files are one migration, a backend's \
            variant is missing, a file to create exists already).
            """,
        subcommands: [MigrateCommand.self])
}

/// Where a command writes: the process's standard output and error, or buffers (tests).
public final class CommandOutput {
    private let write: (String, Bool) -> Void

    /// Writes to the process's standard output and standard error.
    public static var standard: CommandOutput {
        CommandOutput { text, isError in
            FileHandle(fileDescriptor: isError ? STDERR_FILENO : STDOUT_FILENO).write(Data(text.utf8))
        }
    }

    init(_ write: @escaping (String, Bool) -> Void) {
        self.write = write
    }

    /// Writes `line` and a newline to standard output.
    func print(_ line: String) { write(line + "\n", false) }
    /// Writes `line` and a newline to standard error.
    func printError(_ line: String) { write(line + "\n", true) }
}

/// The exit codes of `unity` (see ``UnityCommand``).
enum ExitStatus {
    static let success: Int32 = 0
    static let verifyFailed: Int32 = 1
    static let usage: Int32 = 2
    static let database: Int32 = 3
    static let migrationFiles: Int32 = 4
}

/// A command that runs with its output and environment given, so that the tests run it in
/// process exactly as the executable does.
protocol UnityRunnable {
    /// Runs the command and returns its exit code; what it throws is reported by ``UnityCLI/run(_:environment:output:)``.
    func execute(environment: [String: String], output: CommandOutput) throws -> Int32
}

/// Parses and runs `unity`'s arguments (the `unity` executable is this call and `exit`).
public enum UnityCLI {
    /// Runs `arguments` (without the program's name) and returns the exit code.
    public static func run(_ arguments: [String], environment: [String: String], output: CommandOutput) -> Int32 {
        let command: ParsableCommand
        do {
            command = try UnityCommand.parseAsRoot(arguments)
        } catch {
            let message = UnityCommand.fullMessage(for: error)
            if UnityCommand.exitCode(for: error) == .success {
                output.print(message)
                return ExitStatus.success
            }
            output.printError(message)
            return ExitStatus.usage
        }
        guard let runnable = command as? UnityRunnable else {
            if command is UnityCommand || command is MigrateCommand {
                // `unity` or `unity migrate` alone: say what may follow.
                output.printError(type(of: command).helpMessage())
                return ExitStatus.usage
            }
            // `--help`, `help`: ArgumentParser's help command, which ends by throwing its text.
            var help = command
            do {
                try help.run()
            } catch {
                let message = UnityCommand.fullMessage(for: error)
                if UnityCommand.exitCode(for: error) == .success {
                    output.print(message)
                    return ExitStatus.success
                }
                output.printError(message)
            }
            return ExitStatus.usage
        }
        let json = (runnable as? JSONOutputting)?.json ?? false
        return report({ try runnable.execute(environment: environment, output: output) }, json: json, output: output)
    }

    /// Runs `body`, turning what it throws into a message and an exit code.
    static func report(_ body: () throws -> Int32, json: Bool, output: CommandOutput) -> Int32 {
        do {
            return try body()
        } catch let failure as CommandFailure {
            failure.report(json: json, output: output)
            return failure.exitCode
        } catch {
            let failure = CommandFailure(error)
            failure.report(json: json, output: output)
            return failure.exitCode
        }
    }
}

/// A command whose output may be JSON (`--json`).
protocol JSONOutputting {
    var json: Bool { get }
}

/// A failure reported with a message and an exit code.
struct CommandFailure: Error {
    var exitCode: Int32
    var kind: String
    var message: String

    init(exitCode: Int32, kind: String, message: String) {
        self.exitCode = exitCode
        self.kind = kind
        self.message = message
    }

    /// The exit code and kind for an error of the library.
    init(_ error: any Error) {
        switch error {
        case let error as CommandFailure:
            self = error
        case let error as MigrationErrorDescription:
            self = error.failure
        default:
            self.init(exitCode: ExitStatus.database, kind: "database", message: "\(error)")
        }
    }

    func report(json: Bool, output: CommandOutput) {
        if json {
            output.print(JSONText.encode(ErrorReport(error: .init(kind: kind, message: message, exitCode: exitCode))))
        }
        output.printError("error: " + message)
    }

    private struct ErrorReport: Encodable {
        struct Body: Encodable {
            var kind: String
            var message: String
            var exitCode: Int32
        }
        var error: Body
    }
}

/// An error that knows its exit code (``MigrationError`` conforms in MigrateCommand.swift).
protocol MigrationErrorDescription: Error {
    var failure: CommandFailure { get }
}

/// JSON in one line, keys sorted, dates in ISO 8601.
enum JSONText {
    static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(value), let text = String(data: data, encoding: .utf8) else {
            return #"{"error":{"kind":"internal","message":"the output could not be encoded as JSON","exitCode":3}}"#
        }
        return text
    }
}
