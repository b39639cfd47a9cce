import Foundation
import PostgresNIO

/// postgres-nio, the PostgreSQL peer, used the way its README shows: one `PostgresConnection`,
/// queries written as `PostgresQuery` string interpolations (every value a bind parameter),
/// rows decoded with `decode((…).self)` into `BenchRecord`, writes in `withTransaction`.
/// Statements are awaited one after another, as user code does; postgres-nio has no explicit
/// pipeline API, so writes pay one round trip per row.
struct PostgresNIOSubject: BenchSubject {
    let name = "postgres-nio"
    let backend = Backend.postgres
    var runsConcurrent: Bool { true }

    func unsupportedReason(_ workload: Workload) -> String? {
        switch workload {
        case .upsert: return "the upsert workload measures the SQL-first flavor's duplicate rules"
        case .upsertBatch: return "upsert-batch measures Unity's insert-or-update calls"
        case .jsonFilter, .ftsQuery: return "not written for this peer yet: \(workload.rawValue) compares Unity with raw"
        default: return nil
        }
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
        let configuration = try Self.configuration(url: url)
        let logger = Logger(label: "unity-bench.postgres-nio")
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        return PostgresNIOSession(connection: connection, logger: logger, configuration: configuration)
    }

    /// Parses `postgres://user[:password]@host[:port]/database` (TLS off: loopback only).
    static func configuration(url: String) throws -> PostgresConnection.Configuration {
        guard let components = URLComponents(string: url), let host = components.host,
              let user = components.user
        else { throw BenchError("postgres-nio needs a URL like postgres://user@host:port/db, got \(url)") }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        return PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
    }
}

/// One postgres-nio connection.
final class PostgresNIOSession: BenchSession {
    private let connection: PostgresConnection
    private let logger: Logger
    private let configuration: PostgresConnection.Configuration
    /// The `concurrent` workload's `PostgresClient` (a pool of 8) and the task running it,
    /// started at its first run.
    private var client: (client: PostgresClient, run: Task<Void, Never>)?

    init(connection: PostgresConnection, logger: Logger, configuration: PostgresConnection.Configuration) {
        self.connection = connection
        self.logger = logger
        self.configuration = configuration
    }

    func close() async throws {
        if let client {
            client.run.cancel()
            await client.run.value
        }
        try await connection.close()
    }

    /// The pool of the `concurrent` workload: `PostgresClient` with 8 connections, run as its
    /// README shows (`run()` in a task of its own).
    private func pooledClient() -> PostgresClient {
        if let client { return client.client }
        var clientConfiguration = PostgresClient.Configuration(
            host: configuration.host ?? "127.0.0.1", port: configuration.port ?? 5432, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: .disable)
        clientConfiguration.options.minimumConnections = ConcurrentLookups.poolSize
        clientConfiguration.options.maximumConnections = ConcurrentLookups.poolSize
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        self.client = (client, Task { await client.run() })
        return client
    }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        var checksum = Checksum()
        let logger = logger
        switch workload {
        case .upsert, .upsertBatch:
            throw BenchError("postgresnio: no \(workload.rawValue) workload")
        case .insert, .update:
            let records = BenchData.records(count: spec.rows, generation: workload == .update ? 1 : 0)
            let isInsert = workload == .insert
            checksum = try await connection.withTransaction(logger: logger) { connection in
                var checksum = Checksum()
                for record in records {
                    if isInsert {
                        try await connection.query("""
                            INSERT INTO bench (id, name, score, created_at, rank, payload)
                            VALUES (\(record.id), \(record.name), \(record.score), \(record.createdAt), \(record.rank), \(record.payload))
                            """, logger: logger)
                    } else {
                        try await connection.query("""
                            UPDATE bench SET name = \(record.name), score = \(record.score), created_at = \(record.createdAt),
                            rank = \(record.rank), payload = \(record.payload) WHERE id = \(record.id)
                            """, logger: logger)
                    }
                    checksum.add(record)
                }
                return checksum
            }
        case .delete:
            let rows = spec.rows
            checksum = try await connection.withTransaction(logger: logger) { connection in
                var checksum = Checksum()
                for id in 1...Int64(rows) {
                    try await connection.query("DELETE FROM bench WHERE id = \(id)", logger: logger)
                    checksum.add(hash: UInt64(id))
                }
                return checksum
            }
        case .fetch:
            var records: [BenchRecord] = []
            let rows = try await connection.query(
                "SELECT id, name, score, created_at, rank, payload FROM bench ORDER BY id", logger: logger)
            for try await (id, name, score, createdAt, rank, payload) in rows.decode((Int64, String, Double, Date, Int64?, Data).self) {
                records.append(BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload))
            }
            for record in records { checksum.add(record) }
        case .stream:
            // The row sequence is consumed as it arrives (postgres-nio applies back-pressure).
            let rows = try await connection.query(
                "SELECT id, name, score, created_at, rank, payload FROM bench ORDER BY id", logger: logger)
            for try await (id, name, score, createdAt, rank, payload) in rows.decode((Int64, String, Double, Date, Int64?, Data).self) {
                checksum.add(BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload))
            }
        case .lookup:
            for index in 0..<spec.rows {
                let key = BenchData.lookupID(index, tableRows: spec.tableRows)
                let rows = try await connection.query(
                    "SELECT id, name, score, created_at, rank, payload FROM bench WHERE id = \(key)", logger: logger)
                var found = false
                for try await (id, name, score, createdAt, rank, payload) in rows.decode((Int64, String, Double, Date, Int64?, Data).self) {
                    checksum.add(BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload))
                    found = true
                }
                guard found else { throw BenchError("postgres-nio: no record \(key)") }
            }
        case .query:
            for index in 0..<spec.rows {
                let bound = BenchData.queryLowerBound(index)
                let rows = try await connection.query("""
                    SELECT id, name, score, created_at, rank, payload FROM bench
                    WHERE score >= \(bound) ORDER BY score LIMIT \(BenchData.queryLimit)
                    """, logger: logger)
                var page: [BenchRecord] = []
                for try await (id, name, score, createdAt, rank, payload) in rows.decode((Int64, String, Double, Date, Int64?, Data).self) {
                    page.append(BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload))
                }
                for record in page { checksum.add(record) }
            }
        case .jsonFilter, .ftsQuery:
            throw BenchError("postgres-nio: no \(workload.rawValue) workload")
        case .concurrent:
            let client = pooledClient()
            let tableRows = spec.tableRows
            checksum = try await ConcurrentLookups.runTasks(spec.tasks, rows: spec.rows) { indices in
                var checksum = Checksum()
                for index in indices {
                    let key = BenchData.lookupID(index, tableRows: tableRows)
                    let rows = try await client.query(
                        "SELECT id, name, score, created_at, rank, payload FROM bench WHERE id = \(key)", logger: logger)
                    var found = false
                    for try await (id, name, score, createdAt, rank, payload) in rows.decode((Int64, String, Double, Date, Int64?, Data).self) {
                        checksum.add(BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload))
                        found = true
                    }
                    guard found else { throw BenchError("postgres-nio: no record \(key)") }
                }
                return checksum
            }
        case .oneToMany:
            var grouper = ParentGrouper()
            let rows = try await connection.query("""
                SELECT p.id, p.name, c.id, c.parent_id, c.name, c.score
                FROM bench_parent p LEFT JOIN bench_child c ON c.parent_id = p.id ORDER BY p.id
                """, logger: logger)
            for try await (parentID, parentName, childID, childParentID, childName, childScore)
                in rows.decode((Int64, String, Int64?, Int64?, String?, Double?).self) {
                let child: BenchChild? = if let childID, let childParentID, let childName, let childScore {
                    BenchChild(id: childID, parentID: childParentID, name: childName, score: childScore)
                } else { nil }
                grouper.add(parent: BenchParent(id: parentID, name: parentName), child: child)
            }
            for parent in grouper.result { checksum.add(parent) }
        }
        return WorkloadOutput(checksum: checksum)
    }
}
