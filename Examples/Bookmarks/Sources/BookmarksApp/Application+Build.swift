import DriverPostgres
import DriverSQLite
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Unity

/// Opens the database `configuration` names: a pool of PostgreSQL connections for a
/// `postgres://` / `postgresql://` URL, else a SQLite file (WAL, one writer and readers).
///
/// The first connection opens now, so a bad URL or a server that is down fails here with
/// `DatabaseError.connectionFailed`.
///
/// - Parameter telemetry: where the pool's and the statements' metrics and spans go (Unity's
///   `TelemetryInstrumentation`); nil reports nothing.
public func openDatabase(_ configuration: AppConfiguration, logger: Logger, telemetry: ServiceTelemetry? = nil) throws -> Database {
    let options = DatabaseConfiguration(checkoutTimeout: 5, logger: logger,
                                        instrumentation: telemetry?.instrumentation(for: configuration))
    if configuration.isPostgres {
        return try Database(
            driver: PostgresDriver(configuration.databaseURL, connections: configuration.connections,
                                   searchPath: configuration.postgresSchema),
            configuration: options)
    }
    return try Database(driver: SQLiteDriver(path: configuration.databaseURL, readers: configuration.connections),
                        configuration: options)
}

/// The migrator of the service's schema: the `.sql` files in the target's `Migrations`
/// resource folder (a `.sqlite.sql` and a `.postgres.sql` variant of each).
public func bookmarksMigrator() throws -> Migrator {
    guard let folder = Bundle.module.url(forResource: "Migrations", withExtension: nil) else {
        throw MigrationError.unreadableFile(path: "Migrations", reason: "the Migrations resource folder is missing from the bundle")
    }
    return try Migrator.directory(folder.path)
}

/// Builds the service: its routes over `database`, the migrations that run before the server
/// accepts a connection, and the pool's service, which closes the pool once the server has
/// stopped (the service group shuts its services down in reverse order: the HTTP server
/// first, which finishes the requests in flight, then the database).
///
/// Run it with `runService()`, which shuts down gracefully on SIGTERM and SIGINT.
///
/// - Parameters:
///   - telemetry: the request spans and metrics, and the periodic metrics report (give the
///     same value to ``openDatabase(_:logger:telemetry:)`` for the database's); nil for none.
///   - onServerRunning: called with the port once the server listens (useful with port 0,
///     which picks a free one).
public func buildApplication(
    configuration: AppConfiguration, database: Database, logger: Logger, telemetry: ServiceTelemetry? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    let migrator = try bookmarksMigrator()
    let router = Router(context: BasicRequestContext.self)
    if let telemetry {
        router.add(middleware: RequestTelemetryMiddleware(metrics: telemetry.metrics, tracer: telemetry.tracer))
    }
    router.add(middleware: APIErrorMiddleware())
    let routes = BookmarkRoutes(store: BookmarkStore(database: database),
                                backendName: configuration.isPostgres ? "postgresql" : "sqlite")
    routes.add(to: router)

    var app = Application(
        router: router,
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "bookmarks"),
        // Shut down in reverse order: the server (draining requests), the pool, the report.
        services: (telemetry.map { [MetricsReporter(telemetry: $0)] } ?? []) + [DatabaseService(database: database, logger: logger)],
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? configuration.port
            logger.info("listening", metadata: ["host": .string(configuration.host), "port": .stringConvertible(port)])
            await onServerRunning(port)
        },
        logger: logger)
    app.beforeServerStarts {
        let applied = try await runMigrations(migrator, on: database)
        logger.info("migrations", metadata: ["applied": .array(applied.map { .string($0) })])
    }
    return app
}

/// Applies the migrations `database` has not run yet (on one of Unity's threads: the
/// migrator's calls block), returning the names it applied.
func runMigrations(_ migrator: Migrator, on database: Database) async throws -> [String] {
    try await database.withConnection(role: .writer) { _ in try migrator.migrate(database) }
}

/// Keeps the database open while the service runs and closes its pool at graceful shutdown.
struct DatabaseService: Service {
    let database: Database
    let logger: Logger

    func run() async throws {
        // Returns (or throws CancellationError) once the group shuts down; the HTTP server,
        // later in the group, has stopped by then.
        try? await gracefulShutdown()
        database.close()
        logger.info("database pool closed")
    }
}

/// The `bookmarks` executable's entry point.
public enum BookmarksMain {
    /// Reads the configuration, opens the database and runs the service until SIGTERM or
    /// SIGINT. Returns the process's exit status: 0 after a graceful shutdown, 1 when the
    /// service could not start or failed, 2 for a bad command line.
    public static func run(arguments: [String], environment: [String: String]) async -> Int32 {
        var logger = Logger(label: "bookmarks")
        logger.logLevel = environment["LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
        let configuration: AppConfiguration
        do {
            configuration = try AppConfiguration.parse(arguments: arguments, environment: environment)
        } catch {
            FileHandle.standardError.write(Data("bookmarks: \(error)\n".utf8))
            return 2
        }
        let telemetry = configuration.telemetry
            ? ServiceTelemetry(tracer: LoggingTracer(logger: Logger(label: "bookmarks.trace")), logger: Logger(label: "bookmarks.metrics"))
            : nil
        do {
            let database = try openDatabase(configuration, logger: logger, telemetry: telemetry)
            let app = try buildApplication(configuration: configuration, database: database, logger: logger, telemetry: telemetry)
            try await app.runService()
            return 0
        } catch {
            logger.critical("bookmarks stopped", metadata: ["error": "\(error)"])
            return 1
        }
    }
}
