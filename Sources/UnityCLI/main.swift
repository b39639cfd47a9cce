import Foundation
import UnityCommandLine

// The `unity` executable: parses the arguments, runs the command, exits with its code (the
// command itself lives in UnityCommandLine, which the tests call in process).
exit(UnityCLI.run(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment,
                  output: .standard))
