import Foundation

/// Sworm's container, on a Unity `Database` instead of Core Data:
///
/// ```swift
/// let db = PersistentContainer(database: database, models: [Author.self, Book.self])
/// let names = try db.perform { ctx in
///     try ctx.fetch(Author.all.sort(\.name)).map { try $0.decode(\.name) }
/// }
/// ```
///
/// Each `perform` runs in one transaction: committed when the closure returns, rolled back
/// when it throws. The models' tables are created on first use (or by ``createSchema()``)
/// through the core's migrator, once; a later change to a model is a migration you write.
/// Every error a call throws (the database factory's included) is first given to
/// `logError`, then rethrown. Models whose relations do not fit together (a missing inverse,
/// a `Relations` type that is no ``RelationSet``) make every call throw
/// ``PredicatesError/invalidRelation(_:)``, naming the model.
public final class PersistentContainer: Sendable {
    private let databaseFactory: @Sendable () throws -> Database
    private let registry: SchemaRegistry
    private let createsSchema: Bool
    private let logError: (@Sendable (any Error) -> Void)?
    /// The databases already migrated, held weakly (a new database may reuse an old address).
    private let migrated = Mutex<[ObjectIdentifier: WeakDatabase]>([:])

    /// A container on `database` (nil: the core's `DefaultDatabase`, resolved at each
    /// call) for `models`.
    public convenience init(database: Database? = nil, models: [any ManagedObjectConvertible.Type],
                            createsSchema: Bool = true, logError: (@Sendable (any Error) -> Void)? = nil) {
        self.init(databaseFactory: { try DefaultDatabase.resolve(database) }, models: models,
                  createsSchema: createsSchema, logError: logError)
    }

    /// A container whose database comes from `databaseFactory`, called at each `perform`
    /// (its error is logged and rethrown). With `createsSchema: false` the container never
    /// migrates on its own (the tables exist already, made by someone else); ``createSchema()``
    /// still does when called.
    public init(databaseFactory: @escaping @Sendable () throws -> Database, models: [any ManagedObjectConvertible.Type],
                createsSchema: Bool = true, logError: (@Sendable (any Error) -> Void)? = nil) {
        self.databaseFactory = databaseFactory
        self.createsSchema = createsSchema
        self.registry = SchemaRegistry(models.map { $0.entitySchema })
        self.logError = logError
    }

    func logged<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            logError?(error)
            throw error
        }
    }

    /// Creates the models' missing tables through the core's migrator and returns the
    /// names of the migrations applied now (empty when there was nothing to do).
    ///
    /// - Throws: ``PredicatesError/invalidRelation(_:)`` for models whose relations do not
    ///   fit together; the core's `MigrationError` or `DatabaseError` when a migration cannot
    ///   run (nothing of that migration is then applied).
    @discardableResult
    public func createSchema() throws -> [String] {
        try logged {
            if let problem = registry.problem { throw problem }
            let db = try databaseFactory()
            return try migrate(db)
        }
    }

    private func migrate(_ db: Database) throws -> [String] {
        var migrator = try Migrator(migrations: registry.migrations(for: db.dialect))
        migrator.ignoresOtherAppliedMigrations = true
        let applied = try migrator.migrate(db)
        migrated.withLock { $0[ObjectIdentifier(db)] = WeakDatabase(db) }
        return applied
    }

    func ready() throws -> Database {
        if let problem = registry.problem { throw problem }
        let db = try databaseFactory()
        if createsSchema, !migrated.withLock({ $0[ObjectIdentifier(db)]?.database === db }) {
            _ = try migrate(db)
        }
        return db
    }

    /// Runs `action` in one transaction and returns its result: committed when `action`
    /// returns, rolled back when it throws.
    ///
    /// - Parameter action: the work, given the transaction's ``ManagedObjectContext``. Return
    ///   values from it, not objects: an object used after its `perform` throws
    ///   ``PredicatesError/wrongContext(_:)``.
    /// - Throws: what `action` throws, ``PredicatesError/invalidRelation(_:)`` for models
    ///   whose relations do not fit together, and the core's `DatabaseError` (the commit's
    ///   included). Each is given to `logError` first.
    @discardableResult
    public func perform<T>(action: (ManagedObjectContext) throws -> T) throws -> T {
        try logged {
            let db = try ready()
            let registry = self.registry
            return try db.transaction { connection in
                let context = ManagedObjectContext(connection: connection, registry: registry)
                defer { context.end() }
                let result = try action(context)
                try context.flush()
                try context.snapshotHandedOutSets()
                return result
            }
        }
    }

    /// The `async` form of ``perform(action:)`` (Sworm's name), which never blocks Swift's
    /// cooperative threads.
    ///
    /// - Throws: what ``perform(action:)`` throws.
    @discardableResult
    public func schedule<T: Sendable>(action: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        do {
            let db = try ready()
            let registry = self.registry
            return try await db.transaction { connection in
                let context = ManagedObjectContext(connection: connection, registry: registry)
                defer { context.end() }
                let result = try action(context)
                try context.flush()
                try context.snapshotHandedOutSets()
                return result
            }
        } catch {
            logError?(error)
            throw error
        }
    }
}

/// A small lock-protected value (the package targets platforms older than Synchronization).
final class Mutex<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched while `lock` is held.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

final class WeakDatabase: @unchecked Sendable {
    // @unchecked: only read and written under the container's lock.
    weak var database: Database?
    init(_ database: Database) { self.database = database }
}
