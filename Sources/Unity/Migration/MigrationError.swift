/// Why a ``Migrator`` refused to run, or stopped.
///
/// Every case names the migration at fault. When a migrator throws one of these, the
/// database is as the last successful migration left it: checks that need no database
/// (``duplicateName(_:)``, ``missingVariant(name:backend:)``, ``unknownBackend(name:backend:)``,
/// ``transactionControl(name:statement:)``, ``nulCharacter(name:byteOffset:)``)
/// and the comparison with what is already applied (``checksumMismatch(name:applied:current:)``,
/// ``unknownAppliedMigration(name:)``) happen before any migration runs; ``failed(name:underlying:)``
/// and ``closureFailed(name:underlying:)`` roll back the failing migration entirely and keep
/// the ones applied before it.
public enum MigrationError: Error, Sendable {
    /// A migration that is already applied has changed since: its checksum now differs from
    /// the one recorded when it ran. Applied migrations are history: restore the file (or
    /// code) as it was and add a new migration for the change. Nothing ran.
    case checksumMismatch(name: String, applied: String, current: String)
    /// A migration has SQL for other backends but neither a variant for this one nor a
    /// shared fallback (for files: no `NAME.<backend>.sql` and no `NAME.sql`). Nothing ran.
    case missingVariant(name: String, backend: String)
    /// A per-backend migration names a backend Unity does not know (a typo such as
    /// `"postgresql"` for `"postgres"`). Nothing ran.
    case unknownBackend(name: String, backend: String)
    /// The database records a migration this migrator does not have: the database was
    /// migrated by newer code (or one with differently named migrations). Running older
    /// migrations against it is refused. Nothing ran.
    case unknownAppliedMigration(name: String)
    /// A migration's SQL begins, commits or rolls back a transaction itself (`BEGIN;` …
    /// `COMMIT;`, common in hand-written migration files). The migrator already runs each
    /// migration in a transaction of its own together with its record: a COMMIT inside would
    /// end that transaction half-way, so a later failure could no longer undo the migration.
    /// Remove those statements (savepoints are fine). Nothing ran.
    case transactionControl(name: String, statement: String)
    /// A migration's SQL contains a NUL character at `byteOffset` (of its UTF-8 text). Both
    /// engines read SQL only up to the first NUL, so the rest would be dropped in silence and
    /// the migration recorded as applied: a file damaged or saved in UTF-16 by mistake.
    /// Remove the NUL (or re-save the file as UTF-8). Nothing ran.
    case nulCharacter(name: String, byteOffset: Int)
    /// Two migrations (or two files for the same backend) have the same name. Nothing ran.
    case duplicateName(String)
    /// A migration file could not be read, or a path does not name a `.sql` file.
    case unreadableFile(path: String, reason: String)
    /// A migration failed in the database. It was rolled back entirely, its DDL included,
    /// and no later migration ran; the migrations before it stay applied. Fix it and migrate
    /// again.
    case failed(name: String, underlying: DatabaseError)
    /// A migration run with foreign keys deferred (``Migration/ForeignKeys/deferred``) left
    /// rows in `table` that reference missing rows; `detail` says which. It was rolled back
    /// entirely and not recorded; foreign keys are enforced again.
    case foreignKeyViolation(name: String, table: String, detail: String)
    /// A migration never started: the lock that serializes migrators (SQLite's write lock,
    /// PostgreSQL's advisory lock) stayed with another migrator (another process or
    /// ``Database``) longer than ``Migrator/lockWaitTimeout``, or the database failed before
    /// the migration's first statement. Nothing of it ran; the migrations before it stay
    /// applied. Migrate again once the other migrator is done (it may well have applied this
    /// one).
    case notStarted(name: String, underlying: DatabaseError)
    /// A Swift closure migration threw an error that is not a ``DatabaseError``. It was
    /// rolled back like ``failed(name:underlying:)``.
    case closureFailed(name: String, underlying: any Error)
}

extension MigrationError: CustomStringConvertible {
    /// A message that names the migration and says what to do.
    public var description: String {
        switch self {
        case .checksumMismatch(let name, let applied, let current):
            return "migration \(name) was edited after it was applied (applied checksum \(applied), "
                + "current checksum \(current)); restore it and add a new migration for the change. Nothing ran."
        case .missingVariant(let name, let backend):
            return "migration \(name) has no SQL for \(backend): add \(name).\(backend).sql or a shared \(name).sql. Nothing ran."
        case .unknownBackend(let name, let backend):
            return "migration \(name) has SQL for an unknown backend \"\(backend)\"; "
                + "backends are \(Migration.knownBackends.joined(separator: ", ")). Nothing ran."
        case .unknownAppliedMigration(let name):
            return "the database has migration \(name) applied, which this migrator does not know: "
                + "it was migrated by newer code. Nothing ran."
        case .transactionControl(let name, let statement):
            return "migration \(name) controls its own transaction (\"\(statement)\"); remove its BEGIN/COMMIT/ROLLBACK: "
                + "the migrator runs each migration and its record in one transaction. Nothing ran."
        case .nulCharacter(let name, let offset):
            return "migration \(name) contains a NUL character at byte \(offset); the database would ignore "
                + "everything after it. Remove it (a file saved as UTF-16 must be re-saved as UTF-8). Nothing ran."
        case .duplicateName(let name):
            return "two migrations are named \(name); migration names must be unique. Nothing ran."
        case .unreadableFile(let path, let reason):
            return "cannot read migration file \(path): \(reason)"
        case .failed(let name, let underlying):
            return "migration \(name) failed and was rolled back; earlier migrations stay applied: \(underlying)"
        case .foreignKeyViolation(let name, let table, let detail):
            return "migration \(name) left foreign keys of table \(table) broken (\(detail)); it was rolled back "
                + "and earlier migrations stay applied. Fix the migration so every reference has its row."
        case .notStarted(let name, let underlying):
            return "migration \(name) never started: another migrator held the lock (or the database failed) before "
                + "its first statement; nothing of it ran and earlier migrations stay applied. Migrate again when "
                + "the other migrator is done: \(underlying)"
        case .closureFailed(let name, let underlying):
            return "migration \(name) failed and was rolled back; earlier migrations stay applied: \(underlying)"
        }
    }
}
