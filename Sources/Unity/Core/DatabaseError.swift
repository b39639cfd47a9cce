/// What the database said about a failure, carried by every ``DatabaseError`` case that
/// comes from a server or an engine.
public struct DatabaseErrorContext: Sendable, Hashable {
    /// The engine's own message (SQLite's `sqlite3_errmsg`, PostgreSQL's primary message).
    public var message: String
    /// The SQL that failed, if a statement was running.
    public var sql: String?
    /// The engine's code: a SQLSTATE (`"23505"`) on PostgreSQL, the extended result code
    /// (`"2067"`) on SQLite.
    public var code: String?
    /// PostgreSQL's DETAIL field, or nil.
    public var detail: String?
    /// The name of the constraint at fault, where the engine reports it.
    public var constraint: String?
    /// For ``DatabaseError/connectionLost(_:)`` out of a `write`, `transaction` or `read`
    /// closure: whether its transaction committed. Nil for a loss outside a transaction that
    /// Unity opened (a statement run by itself in `withConnection`), where a write may or may
    /// not have happened.
    public var commitState: CommitState?

    /// Creates a context.
    public init(message: String, sql: String? = nil, code: String? = nil, detail: String? = nil, constraint: String? = nil,
                commitState: CommitState? = nil) {
        self.message = message
        self.sql = sql
        self.code = code
        self.detail = detail
        self.constraint = constraint
        self.commitState = commitState
    }
}

/// Whether a transaction that lost its connection committed
/// (``DatabaseErrorContext/commitState``).
public enum CommitState: String, Sendable, Hashable {
    /// The connection was lost before the COMMIT was sent: nothing of the transaction was
    /// kept. Running the transaction again is safe.
    case notCommitted
    /// The connection was lost while the COMMIT was on its way or being answered: the server
    /// may have committed or not, and no one can tell from here. Run the transaction again
    /// only when it is idempotent (an upsert, a write keyed by an id the caller chose), or
    /// look first whether its effect is there.
    case unknown
}

/// The kind of constraint a write violated.
public enum ConstraintKind: String, Sendable, Hashable {
    /// A UNIQUE or PRIMARY KEY constraint: SQLSTATE 23505, SQLITE_CONSTRAINT_UNIQUE/PRIMARYKEY.
    case unique
    /// A FOREIGN KEY constraint: SQLSTATE 23503, SQLITE_CONSTRAINT_FOREIGNKEY.
    case foreignKey
    /// A NOT NULL constraint: SQLSTATE 23502, SQLITE_CONSTRAINT_NOTNULL.
    case notNull
    /// A CHECK constraint: SQLSTATE 23514, SQLITE_CONSTRAINT_CHECK.
    case check
    /// Any other constraint (exclusion, trigger-raised, …).
    case other
}

/// A value read from a column could not become the Swift type asked for.
public struct ConversionFailure: Sendable, Hashable {
    /// The column's name, or its index as text when the name is unknown.
    public var column: String
    /// The Swift type that was asked for.
    public var expectedType: String
    /// What the database held, abbreviated.
    public var actual: String

    /// Creates a conversion failure description.
    public init(column: String, expectedType: String, actual: String) {
        self.column = column
        self.expectedType = expectedType
        self.actual = actual
    }
}

/// The one error type of Unity. The same fault is the same case on every backend: a unique
/// violation is `.constraintViolation(.unique, …)` whether PostgreSQL said SQLSTATE 23505 or
/// SQLite said SQLITE_CONSTRAINT_UNIQUE.
public enum DatabaseError: Error, Sendable {
    /// A write broke a constraint; nothing of the failed statement was kept.
    case constraintViolation(ConstraintKind, DatabaseErrorContext)
    /// The SQL could not be parsed.
    case syntax(DatabaseErrorContext)
    /// A table (or view) named in the SQL does not exist.
    case undefinedTable(DatabaseErrorContext)
    /// A column named in the SQL does not exist.
    case undefinedColumn(DatabaseErrorContext)
    /// A value could not be converted to or from the Swift type asked for.
    case typeConversion(ConversionFailure)
    /// The database was busy or locked by another connection; retrying later may succeed.
    case busy(DatabaseErrorContext)
    /// A write was attempted where only reads are allowed: in a `read` closure, a read-only
    /// transaction or on a read-only connection (SQLite's SQLITE_READONLY, PostgreSQL's 25006).
    case readOnly(DatabaseErrorContext)
    /// The connection to the server was lost; the pool replaces it. The context's
    /// ``DatabaseErrorContext/commitState`` says whether the transaction that met the loss
    /// committed: retry on ``CommitState/notCommitted`` only (or with an idempotent write).
    case connectionLost(DatabaseErrorContext)
    /// A hot standby (a read replica) cancelled the read because replaying the primary's
    /// changes needed what the read held (PostgreSQL's "conflict with recovery", SQLSTATE
    /// 40001 or 40P01 on a standby). Nothing was written; running the read again usually
    /// succeeds, on the same replica or another.
    case recoveryConflict(DatabaseErrorContext)
    /// The disk (or the database's size limit) is full: SQLite's SQLITE_FULL, PostgreSQL's
    /// SQLSTATE 53100. The failed statement (or transaction) changed nothing; free space or
    /// raise the limit, then retry.
    case diskFull(DatabaseErrorContext)
    /// No connection could be checked out of the pool within the configured timeout.
    case poolTimeout(waitedSeconds: Double, poolSize: Int)
    /// The operation was cancelled (Swift task cancellation, or an interrupt).
    case cancelled(DatabaseErrorContext)
    /// The connection could not be opened (bad path, bad URL, server refused, …).
    case connectionFailed(DatabaseErrorContext)
    /// The API was used in a way it cannot serve (a closed database, an empty IN list with
    /// no fallback, a value out of range, …). The message says what to change.
    case misuse(String)
    /// Any other engine error, with the engine's message and code.
    case other(DatabaseErrorContext)
    /// The transaction this statement or commit belongs to can no longer commit: a statement
    /// in it failed (and the error was caught inside the closure), or it was ended inside its
    /// closure (a raw `COMMIT`/`ROLLBACK`, SQLite's `ON CONFLICT ROLLBACK`). The same on both
    /// backends: nothing more runs in it, and its `write`/`transaction` throws this error
    /// instead of reporting a commit, the transaction rolled back. A nested `transaction { }`
    /// (a savepoint) whose statement failed is rolled back to its savepoint, and the enclosing
    /// transaction stays usable. The message says which statement ended or aborted it.
    case transactionAborted(DatabaseErrorContext)

    /// The engine context of this error, if it came from an engine.
    public var context: DatabaseErrorContext? {
        switch self {
        case .constraintViolation(_, let c), .syntax(let c), .undefinedTable(let c), .undefinedColumn(let c),
             .busy(let c), .readOnly(let c), .connectionLost(let c), .diskFull(let c), .cancelled(let c),
             .connectionFailed(let c), .other(let c), .transactionAborted(let c), .recoveryConflict(let c):
            return c
        case .typeConversion, .poolTimeout, .misuse:
            return nil
        }
    }

    /// Returns the same error with `sql` attached, when the driver did not know the SQL.
    public func withSQL(_ sql: String) -> DatabaseError {
        func attach(_ c: DatabaseErrorContext) -> DatabaseErrorContext {
            var c = c
            if c.sql == nil { c.sql = sql }
            return c
        }
        switch self {
        case .constraintViolation(let k, let c): return .constraintViolation(k, attach(c))
        case .syntax(let c): return .syntax(attach(c))
        case .undefinedTable(let c): return .undefinedTable(attach(c))
        case .undefinedColumn(let c): return .undefinedColumn(attach(c))
        case .busy(let c): return .busy(attach(c))
        case .readOnly(let c): return .readOnly(attach(c))
        case .connectionLost(let c): return .connectionLost(attach(c))
        case .recoveryConflict(let c): return .recoveryConflict(attach(c))
        case .diskFull(let c): return .diskFull(attach(c))
        case .cancelled(let c): return .cancelled(attach(c))
        case .connectionFailed(let c): return .connectionFailed(attach(c))
        case .other(let c): return .other(attach(c))
        case .transactionAborted(let c): return .transactionAborted(attach(c))
        case .typeConversion, .poolTimeout, .misuse: return self
        }
    }
}

extension DatabaseError: CustomStringConvertible {
    /// A message that says what failed, what the engine said, and the SQL involved.
    public var description: String {
        func describe(_ what: String, _ c: DatabaseErrorContext) -> String {
            var s = what + ": " + c.message
            if let code = c.code { s += " [code \(code)]" }
            if let d = c.detail { s += " (\(d))" }
            if let sql = c.sql { s += " — while running: " + sql }
            return s
        }
        switch self {
        case .constraintViolation(let kind, let c):
            return describe("\(kind.rawValue) constraint violated", c)
        case .syntax(let c): return describe("SQL syntax error", c)
        case .undefinedTable(let c): return describe("no such table", c)
        case .undefinedColumn(let c): return describe("no such column", c)
        case .typeConversion(let f):
            return "could not convert column \(f.column) to \(f.expectedType): the database held \(f.actual)"
        case .busy(let c): return describe("database busy or locked (retry later)", c)
        case .readOnly(let c): return describe("write attempted in a read-only transaction or connection (use write)", c)
        case .connectionLost(let c):
            switch c.commitState {
            case .notCommitted?: return describe("connection lost (the transaction did not commit: running it again is safe)", c)
            case .unknown?: return describe("connection lost during COMMIT (whether the transaction committed is unknown: "
                + "run it again only if it is idempotent)", c)
            case nil: return describe("connection lost", c)
            }
        case .recoveryConflict(let c):
            return describe("the replica cancelled the read to replay the primary's changes (retry the read)", c)
        case .diskFull(let c): return describe("disk or database size limit full (free space, then retry)", c)
        case .poolTimeout(let waited, let size):
            return "no database connection became free within \(waited)s (pool size \(size)); "
                + "raise the pool size or the checkout timeout, or shorten long transactions"
        case .cancelled(let c): return describe("cancelled", c)
        case .connectionFailed(let c): return describe("could not connect", c)
        case .misuse(let m): return m
        case .other(let c): return describe("database error", c)
        case .transactionAborted(let c): return describe("transaction aborted", c)
        }
    }
}

extension DatabaseError: Equatable {
    /// Two errors are equal when their cases and payloads are equal.
    public static func == (lhs: DatabaseError, rhs: DatabaseError) -> Bool {
        switch (lhs, rhs) {
        case (.constraintViolation(let a, let c), .constraintViolation(let b, let d)): return a == b && c == d
        case (.syntax(let a), .syntax(let b)), (.undefinedTable(let a), .undefinedTable(let b)),
             (.undefinedColumn(let a), .undefinedColumn(let b)), (.busy(let a), .busy(let b)),
             (.readOnly(let a), .readOnly(let b)),
             (.connectionLost(let a), .connectionLost(let b)), (.diskFull(let a), .diskFull(let b)),
             (.recoveryConflict(let a), .recoveryConflict(let b)),
             (.cancelled(let a), .cancelled(let b)),
             (.connectionFailed(let a), .connectionFailed(let b)), (.other(let a), .other(let b)),
             (.transactionAborted(let a), .transactionAborted(let b)):
            return a == b
        case (.typeConversion(let a), .typeConversion(let b)): return a == b
        case (.poolTimeout(let a, let b), .poolTimeout(let c, let d)): return a == c && b == d
        case (.misuse(let a), .misuse(let b)): return a == b
        default: return false
        }
    }
}

extension DatabaseError {
    /// True for the failures that running the same work again may cure without changing it:
    /// ``busy(_:)``, ``recoveryConflict(_:)``, and ``connectionLost(_:)`` whose transaction
    /// did not commit (``CommitState/notCommitted``). A loss during COMMIT
    /// (``CommitState/unknown``, or no commit state) is not: the work may have been done.
    public var isRetryable: Bool {
        switch self {
        case .busy, .recoveryConflict: return true
        case .connectionLost(let c): return c.commitState == .notCommitted
        default: return false
        }
    }

    /// The same error with `state` as its commit state, when it is a
    /// ``connectionLost(_:)`` that has none yet; any other error as it is.
    func withCommitState(_ state: CommitState) -> DatabaseError {
        guard case .connectionLost(var c) = self, c.commitState == nil else { return self }
        c.commitState = state
        return .connectionLost(c)
    }
}
