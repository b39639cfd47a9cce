import Foundation
import Testing
import UnityState

/// The stores every state-flavor case runs on: one test body, each database.
enum StateStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemory
    case inMemoryHistory
    case sqlite
    case sqliteHistory
    case postgres
    case postgresHistory

    var testDescription: String { rawValue }

    /// A new, empty database of this kind (its SQL database dropped by `tearDown`).
    func make() throws -> StateTestDatabase {
        switch self {
        case .inMemory: return StateTestDatabase(InMemoryDatabase())
        case .inMemoryHistory: return StateTestDatabase(InMemoryHistoryDatabase())
        case .sqlite: return try StateTestDatabase(.sqlite, history: false)
        case .sqliteHistory: return try StateTestDatabase(.sqlite, history: true)
        case .postgres: return try StateTestDatabase(.postgres, history: false)
        case .postgresHistory: return try StateTestDatabase(.postgres, history: true)
        }
    }
}

/// The history stores (``UnityState/HistoryDatabase``).
enum StateHistoryStore: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case inMemoryHistory
    case sqliteHistory
    case postgresHistory

    var testDescription: String { rawValue }

    /// A new, empty history database whose writes without a date are dated by `clock`.
    func make(clock: @escaping @Sendable () -> Date) throws -> StateTestDatabase {
        switch self {
        case .inMemoryHistory: return StateTestDatabase(InMemoryHistoryDatabase(clock: clock))
        case .sqliteHistory: return try StateTestDatabase(.sqlite, history: true, clock: clock)
        case .postgresHistory: return try StateTestDatabase(.postgres, history: true, clock: clock)
        }
    }
}

/// One test's state database, and what to drop afterwards.
final class StateTestDatabase {
    let database: any UnityState.Database
    /// The core database under a SQL store.
    let sql: TestDatabase?

    init(_ database: any UnityState.Database) {
        self.database = database
        self.sql = nil
    }

    init(_ backend: Backend, history: Bool, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        let sql = try TestDatabase(backend)
        self.sql = sql
        self.database = history ? try SQLHistoryDatabase(sql.database, clock: clock) : try SQLDatabase(sql.database, clock: clock)
    }

    /// The store as a history database (for the history stores).
    var history: any UnityState.HistoryDatabase {
        get throws {
            guard let history = database as? any UnityState.HistoryDatabase else { throw TestSetupError.notAHistoryStore }
            return history
        }
    }

    func tearDown() { sql?.tearDown() }
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
