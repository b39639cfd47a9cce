import Foundation
import Testing
import UnityState

/// The stores every state-flavor case runs on: one test body, each database. (The SQL stores
/// on SQLite and PostgreSQL join this list when they land.)
enum StateStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory
    case inMemoryHistory

    var testDescription: String { rawValue }

    /// A new, empty database of this kind.
    func make() -> any UnityState.Database {
        switch self {
        case .inMemory: return InMemoryDatabase()
        case .inMemoryHistory: return InMemoryHistoryDatabase()
        }
    }
}

/// The history stores (``UnityState/HistoryDatabase``).
enum StateHistoryStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemoryHistory

    var testDescription: String { rawValue }

    /// A new, empty history database whose writes without a date are dated by `clock`.
    func make(clock: @escaping @Sendable () -> Date) -> any UnityState.HistoryDatabase {
        switch self {
        case .inMemoryHistory: return InMemoryHistoryDatabase(clock: clock)
        }
    }
}

/// The arguments of a command as the receiving side sees them, for tests of generated
/// `execute(command:)` without the synchronization layer: arguments encoded as JSON.
struct JSONCommandArguments: CommandArguments {
    let commandId: Int
    let arguments: [Data]

    init(_ request: CommandRequest) throws {
        commandId = request.command
        arguments = try request.arguments.map { try JSONEncoder().encode($0) }
    }

    init(commandId: Int, arguments: [Data]) {
        self.commandId = commandId
        self.arguments = arguments
    }

    func argument<T: Decodable>(_ index: Int, as type: T.Type) throws(StateError) -> T {
        guard index < arguments.count else { throw StateError.missingArgument(index: index) }
        do {
            return try JSONDecoder().decode(T.self, from: arguments[index])
        } catch {
            throw StateError.argumentDecodingFailed(index: index, error: String(describing: error))
        }
    }
}
