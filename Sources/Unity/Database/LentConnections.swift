#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The connections a thread has been lent, innermost last, so that a nested call on the same
/// thread reuses the connection instead of checking out another one.
///
/// Without it, `db.write { _ in try thing.save() }` would ask the pool for a second writer:
/// on SQLite (one writer) that waits for the checkout timeout, and on PostgreSQL the save
/// would run outside the enclosing transaction, survive its rollback, and block on any row the
/// transaction had locked. Sharing the connection makes the nested write a savepoint of the
/// enclosing transaction, and a nested read see the enclosing transaction's own changes, as
/// connection-per-thread ORMs do.
final class LentConnections {
    struct Lending {
        let database: ObjectIdentifier
        let connection: Connection
        /// What the connection was lent for: a PostgreSQL connection lent by `read` is a
        /// writer in a read-only transaction, so its pool role does not tell.
        let role: ConnectionRole
        /// True for a connection to a read replica: `read(.primary)` does not reuse it.
        var onReplica: Bool = false
    }

    private(set) var stack: [Lending] = []

    /// The key of the per-thread instance; nil only if the system is out of keys, in which
    /// case nothing is shared and every call checks out a connection as before.
    private static let key: pthread_key_t? = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<LentConnections>.fromOpaque(pointer).release()
        }
        return status == 0 ? key : nil
    }()

    /// The current thread's instance, if it has ever been lent a connection.
    @inline(__always)
    private static var existing: LentConnections? {
        guard let key, let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<LentConnections>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// The current thread's instance, made on first use; nil when there is no key.
    static var current: LentConnections? {
        if let existing { return existing }
        guard let key else { return nil }
        let made = LentConnections()
        guard pthread_setspecific(key, Unmanaged.passRetained(made).toOpaque()) == 0 else {
            Unmanaged.passUnretained(made).release()
            return nil
        }
        return made
    }

    /// The innermost connection of `database` on this thread that can serve `role`: one lent
    /// for writing serves reads and writes, one lent for reading serves reads only (a write
    /// inside a read gets a writer of its own, on both backends). A PostgreSQL connection with
    /// an open cursor is busy with it and serves nothing else; a SQLite one runs other
    /// statements beside its cursors.
    @inline(__always)
    func reusable(for database: ObjectIdentifier, role: ConnectionRole, primaryOnly: Bool = false) -> Connection? {
        guard let lending = stack.last(where: { $0.database == database }) else { return nil }
        guard lending.role == .writer || role == .reader else { return nil }
        guard !(primaryOnly && lending.onReplica) else { return nil }
        guard lending.connection.driverConnection.runsStatementsBesideCursors || !lending.connection.hasOpenCursors else {
            return nil
        }
        return lending.connection
    }

    /// True when this thread already holds a connection of `database`: a checkout it makes
    /// now is nested, and waiting for the pool could wait for itself.
    @inline(__always)
    func holds(_ database: ObjectIdentifier) -> Bool {
        stack.contains { $0.database == database }
    }

    func push(_ lending: Lending) { stack.append(lending) }

    func pop() { stack.removeLast() }
}
