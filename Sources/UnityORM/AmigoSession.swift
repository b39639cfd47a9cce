import Foundation
import Logging

/// Where a query runs: in a session's transaction, or on the database by itself.
enum ORMExecutor {
    case session(AmigoSession)
    case database(Database)

    func run<T>(_ body: (Connection) throws -> T) throws -> T {
        switch self {
        case .session(let s): return try s.withConnection(body)
        // Every query outside a session is one statement, consistent by itself: no
        // BEGIN/COMMIT around it.
        case .database(let db): return try db.withConnection(role: .reader, body)
        }
    }
}

/// A unit of work, as in Amigo and SQLAlchemy: a transaction that begins when the session
/// is created.
///
/// - `add(...)` writes at once inside the transaction, so later queries of the session see
///   the rows; **nothing is durable until `commit()`**.
/// - `commit()` commits; `rollback()` undoes everything since the last commit. Either one
///   gives the connection back; the next call begins a new transaction.
/// - `begin()` inside the transaction opens a savepoint: the next `commit()` releases it and
///   the next `rollback()` rolls back to it.
/// - A failed `add` or `delete` is rolled back to before that call (a savepoint): earlier
///   work of the session survives.
/// - A session released with uncommitted work rolls it back and logs a warning.
///
/// While a session's transaction is open it holds one writer connection: on SQLite (one
/// writer) another session waits for it, up to the pool's checkout timeout.
public final class AmigoSession {
    /// The ORM this session works for.
    public let amigo: Amigo
    private var held: SessionConnection?
    private var savepoints: [String] = []
    private var savepointCounter = 0
    private var hasUncommittedWork = false

    init(amigo: Amigo) throws {
        self.amigo = amigo
        try beginTransaction()
    }

    deinit {
        guard let held else { return }
        if hasUncommittedWork {
            amigo.logger.warning("an AmigoSession was released with uncommitted work: it is rolled back (call commit() to keep it)")
        }
        _ = try? held.run { try $0.execute(.rollback) }
        held.stop()
    }

    private func beginTransaction() throws {
        let connection = try SessionConnection(database: amigo.database)
        do {
            try connection.run { _ = try $0.execute(.begin(.immediate)) }
        } catch {
            connection.stop()
            throw error
        }
        held = connection
        savepoints = []
        hasUncommittedWork = false
    }

    /// Runs `body` on the session's connection, inside its transaction (begun if needed).
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        if held == nil { try beginTransaction() }
        guard let held else { throw ORMError.misuse("the session has no connection") }
        return try held.run(body)
    }

    /// Runs a write in a savepoint, so that a failure undoes it alone.
    func write<T>(_ body: (Connection) throws -> T) throws -> T {
        let result = try withConnection { conn in try conn.transaction(.immediate, body) }
        hasUncommittedWork = true
        return result
    }

    /// Refuses to end the transaction from a closure that runs on the session's connection (a
    /// `forEach` over a session query): the stream reads inside that transaction.
    private func refuseEndingInsideAQuery(_ call: String) throws {
        if held?.nestedConnection != nil {
            throw ORMError.misuse("\(call) inside the closure of a session query's forEach/stream: the stream reads in the session's transaction; end it after the stream")
        }
    }

    private func endTransaction() {
        held?.stop()
        held = nil
        savepoints = []
        hasUncommittedWork = false
    }

    /// Commits the transaction (or releases the innermost savepoint opened by ``begin()``).
    ///
    /// - Throws: the core's `DatabaseError` when the database refuses the commit (the work is
    ///   then rolled back); ``ORMError/misuse(_:)`` inside a ``QuerySet/forEach(_:)`` or
    ///   ``QuerySet/stream(_:)`` that reads in this transaction.
    public func commit() throws {
        guard let held else { return }
        try refuseEndingInsideAQuery("commit()")
        if let name = savepoints.popLast() {
            try held.run { _ = try $0.execute(.releaseSavepoint(name)) }
            return
        }
        do {
            try held.run { _ = try $0.execute(.commit) }
        } catch {
            _ = try? held.run { try $0.execute(.rollback) }
            endTransaction()
            throw error
        }
        endTransaction()
    }

    /// Undoes the work since the transaction began (or since the innermost ``begin()``).
    /// The session stays usable: its next call begins a new transaction.
    ///
    /// - Throws: the core's `DatabaseError` when the connection fails;
    ///   ``ORMError/misuse(_:)`` inside a stream that reads in this transaction.
    public func rollback() throws {
        guard let held else { return }
        try refuseEndingInsideAQuery("rollback()")
        if let name = savepoints.popLast() {
            try held.run { conn in
                _ = try conn.execute(.rollbackToSavepoint(name))
                _ = try conn.execute(.releaseSavepoint(name))
            }
            return
        }
        defer { endTransaction() }
        try held.run { _ = try $0.execute(.rollback) }
    }

    /// Opens a savepoint inside the session's transaction (SQLAlchemy's `begin_nested`).
    ///
    /// The next ``commit()`` releases it; the next ``rollback()`` rolls back to it.
    /// - Throws: the core's `DatabaseError` when the savepoint cannot be opened.
    public func begin() throws {
        savepointCounter += 1
        let name = "amigo_sp_\(savepointCounter)"
        try withConnection { _ = try $0.execute(.savepoint(name)) }
        savepoints.append(name)
    }

    // MARK: Writing

    /// Adds objects: inserts the unsaved ones (their generated integer keys written back),
    /// updates the saved ones, and with `upsert: true` inserts or replaces by key. Unsaved
    /// objects they point to are saved first.
    ///
    /// A failed call is rolled back to before it (a savepoint); the session's earlier work
    /// survives.
    /// - Parameters:
    ///   - objects: the objects to write.
    ///   - upsert: insert or replace by key (`INSERT … ON CONFLICT`) instead of choosing
    ///     insert or update by whether the key is set.
    /// - Throws: ``ORMError/unmappedType(_:)`` for an object of a type no ``ORMModel`` maps,
    ///   ``ORMError/conversion(model:column:message:)`` for a value its column cannot hold, and
    ///   the core's `DatabaseError` for what the database refuses (a unique or foreign-key
    ///   violation, a NOT NULL column left nil).
    public func add(_ objects: AmigoModel..., upsert: Bool = false) throws {
        try add(objects, upsert: upsert)
    }

    /// Adds an array of objects (see ``add(_:upsert:)-(AmigoModel...,_)``).
    public func add(_ objects: [AmigoModel], upsert: Bool = false) throws {
        try write { conn in
            let writer = ORMWriter(amigo: amigo, conn: conn)
            for o in objects { try writer.save(o, upsert: upsert) }
        }
    }

    /// Deletes objects by key, with their plain many-to-many link rows.
    ///
    /// A failed call is rolled back to before it (a savepoint).
    /// - Throws: ``ORMError/unmappedType(_:)`` for an object of a type no ``ORMModel`` maps;
    ///   the core's `DatabaseError` when the database refuses (a row still referenced by a
    ///   foreign key is `.constraintViolation(.foreignKey, …)`).
    public func delete(_ objects: AmigoModel...) throws {
        try delete(objects)
    }

    /// Deletes an array of objects.
    public func delete(_ objects: [AmigoModel]) throws {
        try write { conn in
            let writer = ORMWriter(amigo: amigo, conn: conn)
            for o in objects { try writer.delete(o) }
        }
    }

    /// Runs the adds and deletes `body` collects as batches: consecutive inserts of one model
    /// become multi-row INSERTs, in one savepoint of the session's transaction. Generated keys
    /// are written back into the inserted objects.
    ///
    /// - Throws: what ``add(_:upsert:)-(AmigoModel...,_)`` and ``delete(_:)-(AmigoModel...)``
    ///   throw, or the error `body` throws; the whole batch is then rolled back.
    public func batch(_ body: (AmigoBatch) throws -> Void) throws {
        let batch = AmigoBatch()
        try body(batch)
        try write { conn in
            try ORMWriter(amigo: amigo, conn: conn).run(batch.operations)
        }
    }

    // MARK: Reading

    /// A query of `type` inside this session's transaction.
    public func query<T: AmigoModel>(_ type: T.Type) -> QuerySet<T> {
        QuerySet(amigo: amigo, executor: .session(self))
    }

    /// The relationships of `object`, to add to or delete from a plain many-to-many:
    /// `session.using(p1).relationship("children").add(c1, c2)`.
    public func using(_ object: AmigoModel) -> SessionUsing {
        SessionUsing(session: self, object: object)
    }

    /// Adds or deletes link rows of a plain many-to-many relationship.
    func link(_ object: AmigoModel, relationship name: String, _ others: [AmigoModel], add: Bool) throws {
        try write { conn in
            let writer = ORMWriter(amigo: amigo, conn: conn)
            let source = try amigo.model(for: type(of: object))
            guard case .manyToMany(_, let target, let link, let through) = try amigo.relationship(name, of: source) else {
                throw ORMError.misuse("\(source.typeName).\(name) is not a many-to-many relationship: add or delete the objects themselves")
            }
            if through != nil { throw ORMError.throughRelationship(model: source.typeName, name: name) }
            guard let sourceKey = try source.savedKey(of: object) else {
                throw ORMError.misuse("add the \(source.typeName) to the session before linking it")
            }
            for other in others {
                guard type(of: other) == target.type else {
                    throw ORMError.misuse("\(source.typeName).\(name) links \(target.typeName) objects, not \(type(of: other))")
                }
                if try add && target.savedKey(of: other) == nil { try writer.save(other, upsert: false) }
                guard let targetKey = try target.savedKey(of: other) else {
                    throw ORMError.misuse("the \(target.typeName) to unlink was never saved")
                }
                if add {
                    try writer.insertLink(link, sourceKey, targetKey)
                } else {
                    _ = try conn.execute(.delete(SQLDelete(from: link.name, where: .all([
                        SQLExpression.column(link.sourceColumn).equals(.bind(sourceKey)),
                        SQLExpression.column(link.targetColumn).equals(.bind(targetKey)),
                    ]))))
                }
            }
        }
    }
}

/// `session.using(object)`: the object's relationships, for adding and deleting links.
public struct SessionUsing {
    let session: AmigoSession
    let object: AmigoModel

    /// The relationship named `name`.
    public func relationship(_ name: String) -> SessionRelationship {
        SessionRelationship(session: session, object: object, name: name)
    }
}

/// A many-to-many relationship of one object, inside a session.
public struct SessionRelationship {
    let session: AmigoSession
    let object: AmigoModel
    let name: String

    /// Links `objects` (saved first if new). A relationship with a through model throws
    /// ``ORMError/throughRelationship(model:name:)``: add the through model's objects instead.
    public func add(_ objects: AmigoModel...) throws {
        try session.link(object, relationship: name, objects, add: true)
    }

    /// Unlinks `objects`.
    public func delete(_ objects: AmigoModel...) throws {
        try session.link(object, relationship: name, objects, add: false)
    }
}

/// The operations a ``AmigoSession/batch(_:)`` collects.
public final class AmigoBatch {
    enum Operation {
        case add(AmigoModel, upsert: Bool)
        case delete(AmigoModel)
    }

    var operations: [Operation] = []

    /// Adds objects in the batch (see ``AmigoSession/add(_:upsert:)-(AmigoModel...,_)``).
    public func add(_ objects: AmigoModel..., upsert: Bool = false) {
        operations += objects.map { .add($0, upsert: upsert) }
    }

    /// Adds an array of objects in the batch.
    public func add(_ objects: [AmigoModel], upsert: Bool = false) {
        operations += objects.map { .add($0, upsert: upsert) }
    }

    /// Adds one object in the batch; as a function value it fits `forEach`
    /// (`results.forEach(batch.add)`, as in Amigo).
    public func add(_ object: AmigoModel) {
        operations.append(.add(object, upsert: false))
    }

    /// Deletes objects in the batch.
    public func delete(_ objects: AmigoModel...) {
        operations += objects.map { .delete($0) }
    }

    /// Deletes one object in the batch; as a function value it fits `forEach`
    /// (`results.forEach(batch.delete)`, as in Amigo).
    public func delete(_ object: AmigoModel) {
        operations.append(.delete(object))
    }

    /// Deletes an array of objects in the batch.
    public func delete(_ objects: [AmigoModel]) {
        operations += objects.map { .delete($0) }
    }
}
