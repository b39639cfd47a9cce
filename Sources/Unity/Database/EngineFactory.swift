/// Opens a ``Database`` for a flavor that is handed a factory instead of a database (Amigo's
/// `SQLiteEngineFactory(":memory:", echo: true)`).
///
/// The protocol lives in the core so that a flavor imports no driver: each driver implements
/// it (`SQLiteEngineFactory` in DriverSQLite, `PostgresEngineFactory` in DriverPostgres).
public protocol EngineFactory: Sendable {
    /// True when every statement is logged through swift-log (``DatabaseConfiguration/echo``).
    var echo: Bool { get }
    /// Opens the database this factory describes; a bad path or URL throws
    /// ``DatabaseError/connectionFailed(_:)``.
    func connect() throws -> Database
}
