import Foundation

/// One step of a database's schema history, applied exactly once per database by a
/// ``Migrator``.
///
/// A migration has a unique ``name`` (migrations from files take the file name without
/// `.sql`) and a ``body``, which is one of:
///
/// - **SQL text**, a script of one or more statements run with
///   ``Connection/executeScript(_:)``: `Migration("0001_things", sql: "CREATE TABLE …")`.
/// - **Per-backend SQL**: a script for each backend by dialect name (`"sqlite"`,
///   `"postgres"`), with an optional shared script for backends that have none. The script
///   for the current backend wins, else the shared one; a backend with neither is refused
///   with ``MigrationError/missingVariant(name:backend:)`` before anything runs.
/// - **AST statements** (``SQLStatement`` values, DDL written in Swift), rendered by the
///   dialect of whichever backend runs them.
/// - **A Swift closure** given a ``Connection``, for data migrations that need code.
///
/// Scripts must not contain their own BEGIN/COMMIT: the migrator runs each migration in a
/// transaction of its own and needs it to stay open until the migration is recorded. A script
/// that does is refused before anything runs (``MigrationError/transactionControl(name:statement:)``);
/// trigger and function bodies with `BEGIN … END` are told apart from it.
///
/// ## Checksums
///
/// When a migration runs, the migrator records its checksum beside its name; on every later
/// run it compares the recorded checksum with the current one and refuses
/// (``MigrationError/checksumMismatch(name:applied:current:)``) to go on if an applied
/// migration was edited. The checksum is the SHA-256 (64 lower-case hex digits) of what runs
/// on the backend at hand, so it is per backend:
///
/// - SQL and per-backend SQL: the script chosen for the backend, with CRLF line endings
///   read as LF (a checkout on Windows is not an edit).
/// - AST statements: the SQL the dialect renders for them, joined by `;\n`, with any bind
///   values spelled out after the statement that takes them. Editing the Swift changes it;
///   a renderer change that alters the SQL changes it too, which is the honest answer.
/// - Closures: the explicit `checksum:` string you give. Change that string when you change
///   what the closure does to an unapplied migration; never for an applied one.
public struct Migration: Sendable {
    /// What a migration runs.
    public enum Body: Sendable {
        /// A SQL script, the same for every backend.
        case sql(String)
        /// A SQL script per backend, keyed by dialect name (``SQLDialect/name``: `"sqlite"`,
        /// `"postgres"`), and an optional script for backends without their own.
        case perBackend([String: String], shared: String?)
        /// Statements built in Swift, rendered for the backend that runs them.
        case statements([SQLStatement])
        /// Swift code given the migration's connection, inside the migration's transaction.
        /// `checksum` is the text hashed into the recorded checksum.
        case closure(checksum: String, @Sendable (Connection) throws -> Void)
    }

    /// How a migration treats foreign keys while it runs.
    public enum ForeignKeys: Sendable, Hashable {
        /// Every statement is checked as it runs (the default).
        case enforced
        /// Checked once, at the end of the migration, before it commits: what SQLite's
        /// table rebuild (create the new table, copy, drop the old one, rename) needs when
        /// another table references the one rebuilt.
        ///
        /// On SQLite the migrator turns enforcement off (`PRAGMA foreign_keys = OFF`, which
        /// only works outside a transaction) around the migration's transaction, runs
        /// `PRAGMA foreign_key_check` before the commit and turns enforcement back on. On
        /// PostgreSQL it runs `SET CONSTRAINTS ALL DEFERRED` first and
        /// `SET CONSTRAINTS ALL IMMEDIATE` before the commit (constraints declared
        /// `DEFERRABLE` wait until then; others are checked per statement, as always).
        /// Either way a violation left behind rolls the migration back with
        /// ``MigrationError/foreignKeyViolation(name:table:detail:)`` naming the table.
        ///
        /// A `.sql` migration asks for it with a comment line at its top:
        /// `-- unity: foreign_keys = deferred`.
        case deferred
    }

    /// The backend (dialect) names a per-backend migration may use.
    public static let knownBackends: [String] = [SQLDialect.sqlite.name, SQLDialect.postgres.name]

    /// The migration's unique name. Migrations from files are ordered by it.
    public let name: String
    /// What the migration runs.
    public let body: Body
    /// Whether foreign keys are checked per statement or once before the commit. A SQL
    /// script can also ask for ``ForeignKeys/deferred`` with a header comment (see
    /// ``foreignKeys(for:)``).
    public let foreignKeys: ForeignKeys

    /// Creates a migration with any body.
    public init(_ name: String, body: Body, foreignKeys: ForeignKeys = .enforced) {
        self.name = name
        self.body = body
        self.foreignKeys = foreignKeys
    }

    /// Creates a migration that runs a SQL script on every backend.
    public init(_ name: String, sql: String, foreignKeys: ForeignKeys = .enforced) {
        self.init(name, body: .sql(sql), foreignKeys: foreignKeys)
    }

    /// Creates a migration with a SQL script per backend (`["sqlite": …, "postgres": …]`) and
    /// an optional `shared` script for backends that have none of their own.
    public init(_ name: String, sql variants: [String: String], shared: String? = nil, foreignKeys: ForeignKeys = .enforced) {
        self.init(name, body: .perBackend(variants, shared: shared), foreignKeys: foreignKeys)
    }

    /// Creates a migration from statements built in Swift, rendered for each backend.
    public init(_ name: String, statements: [SQLStatement], foreignKeys: ForeignKeys = .enforced) {
        self.init(name, body: .statements(statements), foreignKeys: foreignKeys)
    }

    /// Creates a migration that runs Swift code. `checksum` stands for what the code does:
    /// change it whenever you change the closure of a migration that has not shipped yet.
    public init(_ name: String, checksum: String, foreignKeys: ForeignKeys = .enforced,
                _ body: @escaping @Sendable (Connection) throws -> Void) {
        self.init(name, body: .closure(checksum: checksum, body), foreignKeys: foreignKeys)
    }

    /// How foreign keys are checked when this migration runs on `dialect`'s backend:
    /// ``foreignKeys``, or ``ForeignKeys/deferred`` when the script for that backend has the
    /// line `-- unity: foreign_keys = deferred` among the comment lines at its top.
    public func foreignKeys(for dialect: SQLDialect) throws -> ForeignKeys {
        if foreignKeys == .deferred { return .deferred }
        if let script = try script(for: dialect), Migration.headerDefersForeignKeys(script) { return .deferred }
        return .enforced
    }

    /// True when the comment lines at the top of `script` (before its first statement)
    /// include `-- unity: foreign_keys = deferred` (spaces and case do not matter).
    static func headerDefersForeignKeys(_ script: String) -> Bool {
        for line in script.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard trimmed.hasPrefix("--") else { return false }
            let words = trimmed.dropFirst(2).lowercased().filter { !$0.isWhitespace }
            if words == "unity:foreign_keys=deferred" { return true }
        }
        return false
    }

    /// The SQL script this migration runs on `dialect`'s backend, or nil for AST and closure
    /// migrations. Throws ``MigrationError/missingVariant(name:backend:)`` when a per-backend
    /// migration has nothing for that backend, and ``MigrationError/unknownBackend(name:backend:)``
    /// when it names a backend Unity does not know.
    public func script(for dialect: SQLDialect) throws -> String? {
        switch body {
        case .sql(let text):
            return text
        case .perBackend(let variants, let shared):
            if let unknown = variants.keys.sorted().first(where: { !Migration.knownBackends.contains($0) }) {
                throw MigrationError.unknownBackend(name: name, backend: unknown)
            }
            if let text = variants[dialect.name] ?? shared { return text }
            throw MigrationError.missingVariant(name: name, backend: dialect.name)
        case .statements, .closure:
            return nil
        }
    }

    /// The checksum of what this migration runs on `dialect`'s backend: see the type's
    /// documentation. Throws like ``script(for:)``, and ``DatabaseError/misuse(_:)`` for an
    /// AST statement the dialect cannot render.
    public func checksum(for dialect: SQLDialect) throws -> String {
        switch body {
        case .sql, .perBackend:
            let text = try script(for: dialect) ?? ""
            return SHA256.hex(text.replacingOccurrences(of: "\r\n", with: "\n"))
        case .statements(let statements):
            var parts: [String] = []
            parts.reserveCapacity(statements.count)
            for statement in statements {
                let rendered = try dialect.renderUncached(statement)
                var part = rendered.sql
                if !rendered.bindings.isEmpty {
                    part += " -- bindings: " + rendered.bindings.map(Migration.checksumSpelling).joined(separator: ", ")
                }
                parts.append(part)
            }
            return SHA256.hex(parts.joined(separator: ";\n"))
        case .closure(let checksum, _):
            return SHA256.hex(checksum)
        }
    }

    /// Runs the migration's body on `connection`, inside the migrator's transaction.
    func run(on connection: Connection) throws {
        switch body {
        case .sql, .perBackend:
            if let text = try script(for: connection.dialect) {
                try connection.executeScript(text)
            }
        case .statements(let statements):
            for statement in statements {
                try connection.execute(statement)
            }
        case .closure(_, let code):
            try code(connection)
        }
    }

    /// A complete, unabbreviated spelling of a bind value (``DatabaseValue/description``
    /// abbreviates long values, and a checksum must see every byte).
    private static func checksumSpelling(_ value: DatabaseValue) -> String {
        switch value {
        case .null: return "NULL"
        case .integer(let v): return "integer(\(v))"
        case .double(let v): return "double(\(v.bitPattern))"
        case .text(let v): return "text(\(v.utf8.count):\(v))"
        case .blob(let v): return "blob(" + v.map { String($0, radix: 16) }.joined(separator: ".") + ")"
        case .bool(let v): return "bool(\(v))"
        case .date(let v): return "date(\(v.timeIntervalSince1970.bitPattern))"
        case .uuid(let v): return "uuid(\(v.uuidString))"
        case .decimal(let v): return "decimal(\(v))"
        case .json(let v): return "json(\(v.utf8.count):\(v))"
        }
    }
}
