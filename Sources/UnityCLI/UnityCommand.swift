import ArgumentParser

/// The `unity` command.
@main
struct UnityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unity", abstract: "Unity's command-line tools.")
}
