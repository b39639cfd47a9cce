import Foundation

/// A migration recorded in a database's tracking table.
public struct AppliedMigration: Sendable, Hashable {
    /// The migration's name.
    public var name: String
    /// The checksum it had when it ran (see ``Migration``).
    public var checksum: String
    /// When it was applied.
    public var appliedAt: Date

    /// Creates a record.
    public init(name: String, checksum: String, appliedAt: Date) {
        self.name = name
        self.checksum = checksum
        self.appliedAt = appliedAt
    }
}

/// Applies a list of ``Migration``s to a database, each exactly once, in order: sModel's
/// "each `sql` file runs once and only once", on SQLite and PostgreSQL alike.
///
/// ```swift
/// let migrator = try Migrator.directory("Migrations")   // 0001_things.sql, 0002_index.sql, …
/// let appliedNow = try migrator.migrate(db)              // ["0002_index"] on a database at 0001
/// ```
///
/// ## What migrate does
///
/// 1. Checks that need no database: names are unique; every migration has SQL for this
///    backend (a per-backend migration without a variant for it or a shared fallback is
///    ``MigrationError/missingVariant(name:backend:)``); checksums are computed.
/// 2. Reads the tracking table ``trackingTable`` (`name` primary key, `checksum`,
///    `applied_at`), creating it first if it does not exist.
/// 3. Compares every applied migration with the current list: one whose checksum changed
///    (an applied file was edited) is ``MigrationError/checksumMismatch(name:applied:current:)``,
///    one the list does not have is ``MigrationError/unknownAppliedMigration(name:)``. Either
///    way nothing runs.
/// 4. Runs each migration that is not applied yet, in list order, each in a transaction of
///    its own together with the row that records it. A failing migration is rolled back
///    entirely, DDL included (both backends have transactional DDL), and stops the run with
///    ``MigrationError/failed(name:underlying:)``: the migrations before it stay applied, and
///    a later `migrate` (after the fix) resumes there. The database is never deleted.
///
/// A migration added to the list before ones already applied still runs, after them.
///
/// ## Files and per-backend variants
///
/// ``init(sqlFilePaths:)`` and ``directory(_:)`` make one migration per file name without
/// `.sql`, ordered by that name (so prefix names with a zero-padded number). A migration may
/// come in per-backend variants beside or instead of its shared file:
///
/// ```
/// 0003_index.sql            shared: any backend without a variant of its own
/// 0003_index.sqlite.sql     SQLite only
/// 0003_index.postgres.sql   PostgreSQL only
/// ```
///
/// The three are one migration named `0003_index`; the variant for the current backend
/// wins, else the shared file. The checksum is that of the file that runs, so each backend
/// records the checksum of its own variant.
///
/// ## Concurrency
///
/// Several processes (or ``Database`` instances) may migrate the same database at once; each
/// migration is still applied once. On PostgreSQL every migration transaction (and the one
/// creating the tracking table) starts with `pg_advisory_xact_lock` on ``advisoryLockKey``;
/// on SQLite it is a `BEGIN IMMEDIATE` transaction, which holds the write lock. Inside, the
/// migrator checks again whether the migration was recorded meanwhile and skips it if so.
public struct Migrator: Sendable {
    /// The table that records applied migrations.
    public static let trackingTable = "unity_migrations"

    /// The PostgreSQL advisory lock key that serializes migrators ("UnityMig" in ASCII).
    /// It is database-wide, so migrators of different schemas of one database wait for each
    /// other too; they hold it only for one migration's transaction at a time.
    public static let advisoryLockKey: Int64 = 0x556E_6974_794D_6967

    /// The migrations, in the order they are applied.
    public let migrations: [Migration]

    /// How long, in seconds, a migration waits for another migrator (another process or
    /// ``Database``) to finish before it gives up with ``MigrationError/notStarted(name:underlying:)``
    /// (60 by default). On SQLite each attempt to take the write lock waits the driver's busy
    /// timeout; the migrator tries again until this much time has passed. On PostgreSQL the
    /// advisory lock waits as long as the server lets it (`lock_timeout`).
    public var lockWaitTimeout: Double = 60

    /// When true, migrations recorded in the tracking table but not in ``migrations`` are
    /// left alone instead of refused with ``MigrationError/unknownAppliedMigration(name:)``:
    /// for a flavor's own schema migration (the ORM's `createAll()`) sharing the table with
    /// the application's migrations. False by default.
    public var allowsUnknownAppliedMigrations = false

    /// Creates a migrator that applies `migrations` in the order given.
    public init(migrations: [Migration]) {
        self.migrations = migrations
    }

    // MARK: Migrating

    /// Applies every migration that is not applied yet, in order, and returns the names of
    /// those it applied now (empty when the database was up to date). See the type's
    /// documentation for the checks made first and what a failure leaves behind.
    ///
    /// - Throws: ``MigrationError`` naming the migration at fault; a ``DatabaseError`` when
    ///   the tracking table cannot be created or read (a connection failure, a pool timeout).
    @discardableResult
    public func migrate(_ db: Database) throws -> [String] {
        let plan = try resolvedPlan(for: db.dialect)
        return try db.withConnection { conn in
            // Read first and create the table only when it is missing: migrating an
            // up-to-date database then takes no write lock.
            let applied: [AppliedMigration]
            do {
                applied = try fetchApplied(conn)
            } catch DatabaseError.undefinedTable {
                try createTrackingTable(conn)
                applied = try fetchApplied(conn)
            }
            try verify(plan, against: applied)
            let appliedNames = Set(applied.map(\.name))

            var appliedNow: [String] = []
            for step in plan where !appliedNames.contains(step.migration.name) {
                if try apply(step, on: conn) {
                    appliedNow.append(step.migration.name)
                }
            }
            return appliedNow
        }
    }

    /// The migrations recorded in the database's tracking table, oldest first. Empty when
    /// the database was never migrated (the table does not exist); creates nothing.
    public func appliedMigrations(_ db: Database) throws -> [AppliedMigration] {
        do {
            return try db.read { conn in try fetchApplied(conn) }
        } catch DatabaseError.undefinedTable {
            return []
        }
    }

    /// The names of the migrations not applied to the database yet, in the order
    /// ``migrate(_:)`` would apply them.
    public func pendingMigrations(_ db: Database) throws -> [String] {
        let applied = Set(try appliedMigrations(db).map(\.name))
        return migrations.map(\.name).filter { !applied.contains($0) }
    }

    // MARK: Steps

    /// A migration and its checksum on the backend at hand.
    struct Step {
        var migration: Migration
        var checksum: String
    }

    /// Checks names and variants and computes checksums: everything that needs no database,
    /// so that a bad list is refused before anything runs.
    func resolvedPlan(for dialect: SQLDialect) throws -> [Step] {
        var seen = Set<String>()
        var plan: [Step] = []
        plan.reserveCapacity(migrations.count)
        for migration in migrations {
            guard seen.insert(migration.name).inserted else {
                throw MigrationError.duplicateName(migration.name)
            }
            if let script = try migration.script(for: dialect) {
                // Before anything else: the engines read SQL up to its first NUL, so the rest
                // of such a script would be dropped in silence and the migration recorded.
                if let offset = SQLText.offsetOfNUL(in: script) {
                    throw MigrationError.nulCharacter(name: migration.name, byteOffset: offset)
                }
                if let statement = SQLTextScanner.firstTransactionControl(in: script, dialect: dialect) {
                    throw MigrationError.transactionControl(name: migration.name, statement: statement)
                }
            }
            if case .statements(let statements) = migration.body {
                for statement in statements {
                    if let offset = SQLText.offsetOfNUL(in: try dialect.renderUncached(statement).sql) {
                        throw MigrationError.nulCharacter(name: migration.name, byteOffset: offset)
                    }
                }
            }
            plan.append(Step(migration: migration, checksum: try migration.checksum(for: dialect)))
        }
        return plan
    }

    /// Refuses edited applied migrations and applied migrations the list does not know.
    private func verify(_ plan: [Step], against applied: [AppliedMigration]) throws {
        var recorded: [String: String] = [:]
        for record in applied { recorded[record.name] = record.checksum }
        for step in plan {
            if let checksum = recorded[step.migration.name], checksum != step.checksum {
                throw MigrationError.checksumMismatch(name: step.migration.name, applied: checksum, current: step.checksum)
            }
        }
        guard !allowsUnknownAppliedMigrations else { return }
        let known = Set(plan.map(\.migration.name))
        if let unknown = applied.first(where: { !known.contains($0.name) }) {
            throw MigrationError.unknownAppliedMigration(name: unknown.name)
        }
    }

    /// Runs one migration and records it, in one transaction. Returns false when another
    /// migrator applied it first (found recorded once the lock was held).
    private func apply(_ step: Step, on conn: Connection) throws -> Bool {
        let name = step.migration.name
        let deferForeignKeys = try step.migration.foreignKeys(for: conn.dialect) == .deferred
        let isSQLite = conn.dialect.name == SQLDialect.sqlite.name
        if deferForeignKeys && isSQLite {
            // SQLite ignores `PRAGMA foreign_keys` inside a transaction.
            guard !conn.isInTransaction else {
                throw MigrationError.notStarted(name: name, underlying: .misuse(
                    "migration \(name) runs with foreign keys deferred, which SQLite can only do outside a "
                        + "transaction: call migrate outside read/write/transaction closures"))
            }
            do {
                try conn.executeScript("PRAGMA foreign_keys = OFF")
            } catch let error as DatabaseError {
                throw MigrationError.notStarted(name: name, underlying: error)
            }
        }
        let applied: Bool
        do {
            applied = try waitingForTheLock(name: name) { markStarted in
                try conn.transaction(.immediate) { conn in
                    try lockMigrations(conn)
                    if let recorded = try recordedChecksum(of: name, conn) {
                        guard recorded == step.checksum else {
                            throw MigrationError.checksumMismatch(name: name, applied: recorded, current: step.checksum)
                        }
                        return false
                    }
                    markStarted()
                    if deferForeignKeys {
                        try runDeferringForeignKeys(step.migration, on: conn)
                    } else {
                        try step.migration.run(on: conn)
                    }
                    try conn.execute(.insert(SQLInsert(into: Migrator.trackingTable, values: [
                        "name": .text(name),
                        "checksum": .text(step.checksum),
                        "applied_at": .date(Date()),
                    ])))
                    return true
                }
            }
        } catch {
            if deferForeignKeys && isSQLite { try? Migrator.enforceForeignKeysAgain(conn) }
            throw error
        }
        if deferForeignKeys && isSQLite {
            // Committed: a failure here is the connection's, reported as it is.
            try Migrator.enforceForeignKeysAgain(conn)
        }
        return applied
    }

    /// Turns SQLite's foreign key enforcement back on, straight through the driver: a task
    /// cancelled meanwhile must not leave the pooled connection without it (the connection's
    /// cancellation check would refuse the statement).
    private static func enforceForeignKeysAgain(_ conn: Connection) throws {
        try conn.driverConnection.executeScript("PRAGMA foreign_keys = ON")
    }

    /// Runs a migration whose foreign keys are checked once at its end (enforcement is
    /// already off on SQLite): a violation left behind is
    /// ``MigrationError/foreignKeyViolation(name:table:detail:)``, thrown before the commit.
    private func runDeferringForeignKeys(_ migration: Migration, on conn: Connection) throws {
        let name = migration.name
        if conn.dialect.name == SQLDialect.sqlite.name {
            try migration.run(on: conn)
            var violations: [(table: String, parent: String)] = []
            try conn.forEachRow(.raw(SQLFragment("PRAGMA foreign_key_check"))) { row in
                let table = (try? row.decode(String.self, at: 0)) ?? "?"
                let parent = (try? row.decode(String.self, at: 2)) ?? "?"
                violations.append((table, parent))
            }
            if let first = violations.first {
                let count = violations.filter { $0.table == first.table && $0.parent == first.parent }.count
                throw MigrationError.foreignKeyViolation(
                    name: name, table: first.table,
                    detail: "\(count) row(s) of \"\(first.table)\" reference rows missing from \"\(first.parent)\""
                        + (violations.count > count ? " (and \(violations.count - count) more violation(s) elsewhere)" : ""))
            }
            return
        }
        do {
            try conn.executeScript("SET CONSTRAINTS ALL DEFERRED")
            try migration.run(on: conn)
            // Checks the deferred constraints now, while the transaction can still roll back.
            try conn.executeScript("SET CONSTRAINTS ALL IMMEDIATE")
        } catch DatabaseError.constraintViolation(.foreignKey, let context) {
            throw MigrationError.foreignKeyViolation(
                name: name, table: Migrator.referencingTable(in: context.message) ?? "?",
                detail: context.message + (context.detail.map { " (\($0))" } ?? ""))
        }
    }

    /// The referencing table PostgreSQL names in a foreign-key error: the last `on table "…"`
    /// (`insert or update on table "child" violates …`, `update or delete on table "parent"
    /// violates … on table "child"`).
    static func referencingTable(in message: String) -> String? {
        guard let range = message.range(of: "on table \"", options: .backwards) else { return nil }
        let rest = message[range.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    /// Runs `attempt` (a migration's transaction), trying again while it fails with
    /// ``DatabaseError/busy(_:)`` before the migration started (another migrator holds the
    /// lock), for up to ``lockWaitTimeout`` seconds. Maps errors to ``MigrationError``: one
    /// before the start is ``MigrationError/notStarted(name:underlying:)`` (nothing ran),
    /// one after it ``MigrationError/failed(name:underlying:)`` or
    /// ``MigrationError/closureFailed(name:underlying:)`` (rolled back).
    private func waitingForTheLock<T>(name: String, _ attempt: (_ markStarted: () -> Void) throws -> T) throws -> T {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(Int64(max(0, min(lockWaitTimeout, 1e9)) * 1000)))
        while true {
            var started = false
            do {
                return try attempt { started = true }
            } catch let error as MigrationError {
                throw error
            } catch let error as DatabaseError {
                guard !started else { throw MigrationError.failed(name: name, underlying: error) }
                if case .busy = error, clock.now < deadline {
                    // SQLite's busy handler already waited its timeout; a short pause keeps a
                    // zero timeout from spinning.
                    Thread.sleep(forTimeInterval: 0.05)
                    continue
                }
                throw MigrationError.notStarted(name: name, underlying: error)
            } catch {
                throw MigrationError.closureFailed(name: name, underlying: error)
            }
        }
    }

    // MARK: Tracking table

    private func createTrackingTable(_ conn: Connection) throws {
        let table = SQLCreateTable(Migrator.trackingTable, ifNotExists: true, columns: [
            SQLColumnDefinition("name", .text, primaryKey: .plain, notNull: true),
            SQLColumnDefinition("checksum", .text, notNull: true),
            SQLColumnDefinition("applied_at", .date, notNull: true),
        ])
        do {
            try waitingForTheLock(name: Migrator.trackingTable) { _ in
                try conn.transaction(.immediate) { conn in
                    // Without the lock, two PostgreSQL sessions creating the table at once can
                    // both pass IF NOT EXISTS and one then fails on the catalog's unique index.
                    try lockMigrations(conn)
                    try conn.execute(.createTable(table))
                }
            }
        } catch MigrationError.notStarted(_, let underlying) {
            // Not a migration of the list: the documented DatabaseError.
            throw underlying
        }
    }

    /// Serializes migrators on PostgreSQL until the transaction ends. On SQLite the
    /// `BEGIN IMMEDIATE` that opened the transaction already holds the write lock.
    private func lockMigrations(_ conn: Connection) throws {
        guard conn.dialect.name == SQLDialect.postgres.name else { return }
        let lock = SQLSelect(columns: [
            .expression(.function("pg_advisory_xact_lock", .value(Migrator.advisoryLockKey)), alias: "locked"),
        ])
        try conn.forEachRow(.select(lock)) { _ in }
    }

    private func recordedChecksum(of name: String, _ conn: Connection) throws -> String? {
        let query = SQLSelect(from: Migrator.trackingTable)
            .columns(.column("checksum"))
            .where(.column("name").equals(name))
        return try conn.fetchValue(String.self, .select(query))
    }

    private func fetchApplied(_ conn: Connection) throws -> [AppliedMigration] {
        let query = SQLSelect(from: Migrator.trackingTable)
            .columns(.column("name"), .column("checksum"), .column("applied_at"))
            .orderBy(SQLExpression.column("applied_at").asc, SQLExpression.column("name").asc)
        return try conn.fetchAll(.select(query)).map { row in
            AppliedMigration(
                name: try row.decode(String.self, column: "name"),
                checksum: try row.decode(String.self, column: "checksum"),
                appliedAt: try row.decode(Date.self, column: "applied_at"))
        }
    }
}
