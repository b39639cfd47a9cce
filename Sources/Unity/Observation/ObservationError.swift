/// Why an observation (``Database/observe(_:tables:removeDuplicates:)``) could not start.
///
/// These are faults of the setup, found when the observation starts (at the first `next()`
/// of its iterator, or at ``Database/observeChanges(to:_:)``): nothing was observed. Faults of
/// the database while an observation runs (a refetch that fails) end the sequence with the
/// ``DatabaseError`` that said so.
public enum ObservationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The tables the statement reads cannot be found in it: raw SQL, or a raw fragment that
    /// may hold a subquery. Pass them with `tables:`. The associated text says which part.
    case tablesUnknown(String)
    /// The statement reads no table at all: it could never change.
    case noTables
    /// PostgreSQL: the table has no change trigger, so no commit to it would ever be seen.
    /// Install it with ``Migration/observeChanges(of:name:)`` (or its generated SQL).
    case missingChangeTrigger(table: String)
    /// PostgreSQL: no table of that name is visible on the connection's search path.
    case unknownTable(String)
    /// PostgreSQL behind a transaction-mode pooler: `LISTEN` needs a session of its own,
    /// which a pooler never keeps. Set ``DatabaseConfiguration/notificationURL`` to a URL of
    /// the primary itself.
    case notificationURLRequired
    /// The database's driver cannot observe changes.
    case unsupported(String)

    /// A message that says what to do.
    public var description: String {
        switch self {
        case .tablesUnknown(let part):
            return "cannot tell which tables \(part) reads: pass them to observe(_:tables:) with tables:"
        case .noTables:
            return "the statement reads no table, so nothing could ever change its result"
        case .missingChangeTrigger(let table):
            return "table \(table) has no change trigger, so its commits could never be seen: add "
                + "Migration.observeChanges(of: [\"\(table)\"]) to your migrations (or run the SQL its script(for: .postgres) gives)"
        case .unknownTable(let table):
            return "no table \(table) is visible on the connection's search path"
        case .notificationURLRequired:
            return "observation on PostgreSQL behind a transaction-mode pooler needs "
                + "DatabaseConfiguration.notificationURL: a URL of the primary server itself (LISTEN needs a session of its own)"
        case .unsupported(let what):
            return "this database cannot observe changes: \(what)"
        }
    }
}
