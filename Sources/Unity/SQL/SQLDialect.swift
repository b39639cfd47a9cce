// STUB owned by the SQL AST work: it is replaced by the full dialect (capability flags and
// hooks) and renderer. Drivers and the Database use only `SQLDialect.sqlite`,
// `SQLDialect.postgres`, `name`, and `render(_:)`.

/// How one backend spells SQL: placeholder style, identifier quoting, type names, upsert
/// syntax, RETURNING, boolean literals, LIKE semantics.
public struct SQLDialect: Sendable, Hashable {
    /// The backend's name: "sqlite" or "postgres".
    public let name: String

    /// SQLite's dialect.
    public static let sqlite = SQLDialect(name: "sqlite")
    /// PostgreSQL's dialect.
    public static let postgres = SQLDialect(name: "postgres")

    /// Renders a statement to SQL text and its bind values.
    public func render(_ statement: SQLStatement) -> RenderedSQL {
        switch statement {
        case .begin(let kind):
            switch kind {
            case .deferred: return RenderedSQL(sql: name == "sqlite" ? "BEGIN DEFERRED TRANSACTION" : "BEGIN", bindings: [])
            case .immediate: return RenderedSQL(sql: name == "sqlite" ? "BEGIN IMMEDIATE TRANSACTION" : "BEGIN", bindings: [])
            case .readOnly: return RenderedSQL(sql: name == "sqlite" ? "BEGIN DEFERRED TRANSACTION" : "BEGIN READ ONLY", bindings: [])
            }
        case .commit: return RenderedSQL(sql: "COMMIT", bindings: [])
        case .rollback: return RenderedSQL(sql: "ROLLBACK", bindings: [])
        case .savepoint(let n): return RenderedSQL(sql: "SAVEPOINT \"\(n)\"", bindings: [])
        case .releaseSavepoint(let n): return RenderedSQL(sql: "RELEASE SAVEPOINT \"\(n)\"", bindings: [])
        case .rollbackToSavepoint(let n): return RenderedSQL(sql: "ROLLBACK TO SAVEPOINT \"\(n)\"", bindings: [])
        case .raw(let f): return RenderedSQL(sql: f.sql, bindings: f.bindings)
        }
    }
}

/// SQL text in a dialect's spelling, with the values for its placeholders in order.
public struct RenderedSQL: Sendable, Hashable {
    /// The SQL text.
    public var sql: String
    /// The bind values, one per placeholder.
    public var bindings: [DatabaseValue]
    /// Creates rendered SQL.
    public init(sql: String, bindings: [DatabaseValue]) {
        self.sql = sql
        self.bindings = bindings
    }
}

/// How a transaction begins.
public enum TransactionKind: Sendable, Hashable {
    /// Takes locks as statements need them.
    case deferred
    /// Takes the write lock at once (SQLite's BEGIN IMMEDIATE), so a writer never fails
    /// half-way for want of the lock.
    case immediate
    /// A read-only transaction: a consistent snapshot for reads.
    case readOnly
}

/// A raw SQL fragment written by a user, with `?` placeholders and their values.
public struct SQLFragment: Sendable, Hashable {
    /// The text, with `?` placeholders.
    public var sql: String
    /// The values for the placeholders, in order.
    public var bindings: [DatabaseValue]
    /// Creates a fragment.
    public init(_ sql: String, _ bindings: [DatabaseValue] = []) {
        self.sql = sql
        self.bindings = bindings
    }
}

/// A whole SQL statement as a value.
public indirect enum SQLStatement: Sendable, Hashable {
    /// BEGIN.
    case begin(TransactionKind)
    /// COMMIT.
    case commit
    /// ROLLBACK.
    case rollback
    /// SAVEPOINT name.
    case savepoint(String)
    /// RELEASE SAVEPOINT name.
    case releaseSavepoint(String)
    /// ROLLBACK TO SAVEPOINT name.
    case rollbackToSavepoint(String)
    /// A raw statement with `?` placeholders.
    case raw(SQLFragment)
}
