#if Fluent
import FluentKit
import FluentPostgresDriver
import FluentSQL
import FluentSQLiteDriver
import Foundation
import Logging
import NIOCore
import NIOPosix

/// Fluent 4 (Vapor's ORM: fluent-kit with FluentSQLiteDriver / FluentPostgresDriver), used the
/// way its documentation shows: `Model` classes with `@ID` / `@Field` / `@OptionalField` /
/// `@Children` / `@Parent` mapped onto the fixture's tables, a `Databases` on NIO's singleton
/// event loop group and thread pool, async/await query builders, `[Model].create(on:)` for the
/// batched insert, `find(_:on:)`, `with(\.$children)` eager loading, writes in `db.transaction`.
/// Built only with the `Fluent` package trait (`swift build --traits Fluent`).
///
/// Choices worth knowing (the README's Subjects section says more):
/// - update: one `query().filter(\.$id == id).set(…).update()` per record (new values made in
///   code, not read first; Fluent has no batch update of different values per row);
/// - delete: set-based, `query().filter(\.$id ~~ ids).delete()` in chunks of ids, what a Fluent
///   user writes to delete many rows by key (one statement per row would be
///   `filter(\.$id == id).delete()` per id; the README gives its figures too);
/// - upsert: Fluent's query builder has none, but fluent-kit's FluentSQL module has the bridge
///   for it: SQLKit's `insert(into:)` with `fluentModels(_:)` and
///   `onConflict(with:) { $0.set(excludedContentOfFluentModel:) }`;
/// - stream: `QueryBuilder.run(_:)`, each row decoded into a model and dropped. fluent-kit
///   1.57's `chunk(max:)` and `all(_:)` keep every model of the query in an array (for eager
///   loading), and the async `chunk(max:)` does not deliver the last, partial chunk;
/// - created_at: the fixture stores it as text on SQLite, which a `Date` field cannot write
///   (sqlite-nio writes a REAL) nor read exactly (it drops the milliseconds), so the field is a
///   ``FluentTimestamp``.
struct FluentSubject: BenchSubject {
    let name = "fluent"
    let backend: Backend
    var runsConcurrent: Bool { true }

    func unsupportedReason(_ workload: Workload) -> String? {
        switch workload {
        case .jsonFilter, .ftsQuery: "not written for this peer yet: \(workload.rawValue) compares Unity with raw"
        default: nil
        }
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        let logger = Logger(label: "unity-bench.fluent")
        // What a Vapor application does: one `Databases` on the process's event loops and
        // blocking thread pool.
        let eventLoopGroup = MultiThreadedEventLoopGroup.singleton
        let databases = Databases(threadPool: NIOThreadPool.singleton, on: eventLoopGroup)
        switch backend {
        case .sqlite:
            try await SQLiteNIOKeeper.shared.keepOpen(target.sqlitePath)
            databases.use(.sqlite(.file(target.sqlitePath)), as: .sqlite)
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            // The pool is per event loop: 8 connections in all (the `concurrent` workload's pool
            // of 8, like the other subjects'), spread over the group's loops.
            let loopCount = Array(eventLoopGroup.makeIterator()).count
            databases.use(
                .postgres(
                    configuration: SQLPostgresConfiguration(coreConfiguration: try PostgresNIOSubject.configuration(url: url)),
                    maxConnectionsPerEventLoop: (ConcurrentLookups.poolSize + loopCount - 1) / loopCount),
                as: .psql)
        }
        guard let db = databases.database(logger: logger, on: eventLoopGroup.any()) else {
            throw BenchError("fluent: no database")
        }
        let session = FluentSession(
            backend: backend, databases: databases, db: db, logger: logger, sqlitePath: target.sqlitePath)
        if backend == .sqlite, let sql = db as? any SQLDatabase {
            // The same durability every SQLite subject uses (the driver keeps one connection per
            // event loop, and `db` always uses this loop's).
            do {
                try await sql.raw("PRAGMA synchronous = NORMAL").run()
            } catch {
                try? await session.close()
                throw error
            }
        }
        return session
    }
}

/// Keeps one idle sqlite-nio connection to each SQLite file the subject uses open until the
/// process exits.
///
/// Why: sqlite-nio compiles its own copy of SQLite (3.54, symbols renamed) into the process,
/// beside the system libsqlite3 that the fixture and every other SQLite subject use, and two
/// copies of SQLite in one process do not see each other's POSIX locks
/// (https://sqlite.org/howtocorrupt.html, 2.2.1). Without this, closing the session's last
/// sqlite-nio connection made its copy of SQLite take itself for the file's last user: it
/// checkpointed and deleted the WAL and shared-memory files under the fixture's open
/// connection, whose next write failed with "disk I/O error" (later reads found the file
/// malformed). With a connection of its own copy always open (holding, in WAL mode, its
/// SHARED lock), sqlite-nio never deletes them. The two copies still never touch the file at
/// the same time: the harness runs the fixture and one subject at a time. The connection stays
/// idle, outside every timed run. A Vapor application, with one copy of SQLite and its
/// `Databases` open for the process's life, has no such problem.
final class SQLiteNIOKeeper: @unchecked Sendable {
    // @unchecked: `connections` is only touched under `lock`.
    static let shared = SQLiteNIOKeeper()
    private let lock = NSLock()
    private var connections: [String: SQLiteConnection] = [:]

    func keepOpen(_ path: String) async throws {
        guard lock.withLock({ connections[path] == nil }) else { return }
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        // A first read opens the WAL and takes the SHARED lock the connection then keeps.
        _ = try await connection.query("SELECT count(*) FROM sqlite_master", [])
        let kept = lock.withLock {
            if connections[path] != nil { return false }
            connections[path] = connection
            return true
        }
        if !kept { try await connection.close() }
    }
}

// MARK: - Models

/// The `bench` table as a Fluent model.
final class FluentBenchRecord: Model, @unchecked Sendable {
    // @unchecked Sendable: Fluent's models are classes with property wrappers, the usual
    // pattern with Swift 6 (each instance here is used by one task at a time).
    static let schema = "bench"

    @ID(custom: "id", generatedBy: .user)
    var id: Int64?

    @Field(key: "name")
    var name: String

    @Field(key: "score")
    var score: Double

    @Field(key: "created_at")
    var createdAt: FluentTimestamp

    @OptionalField(key: "rank")
    var rank: Int64?

    @Field(key: "payload")
    var payload: Data

    init() {}

    init(_ record: BenchRecord) {
        self.id = record.id
        self.name = record.name
        self.score = record.score
        self.createdAt = FluentTimestamp(record.createdAt)
        self.rank = record.rank
        self.payload = record.payload
    }

    /// The plain record, for the checksum.
    func record() throws -> BenchRecord {
        BenchRecord(id: try requireID(), name: name, score: score, createdAt: createdAt.date, rank: rank, payload: payload)
    }
}

/// The `bench_parent` table as a Fluent model.
final class FluentBenchParent: Model, @unchecked Sendable {
    static let schema = "bench_parent"

    @ID(custom: "id", generatedBy: .user)
    var id: Int64?

    @Field(key: "name")
    var name: String

    @Children(for: \.$parent)
    var children: [FluentBenchChild]

    init() {}
}

/// The `bench_child` table as a Fluent model.
final class FluentBenchChild: Model, @unchecked Sendable {
    static let schema = "bench_child"

    @ID(custom: "id", generatedBy: .user)
    var id: Int64?

    @Parent(key: "parent_id")
    var parent: FluentBenchParent

    @Field(key: "name")
    var name: String

    @Field(key: "score")
    var score: Double

    init() {}
}

/// `created_at` as the fixture stores it: `timestamptz` on PostgreSQL (the same binary coding
/// as `Date`), text `YYYY-MM-DD HH:MM:SS.ffffff` on SQLite (what every other subject reads and
/// writes). sqlite-nio writes a `Date` as a REAL (seconds since 1970) and reads this text
/// without its fraction of a second (its ISO 8601 parse keeps whole seconds), so a plain
/// `Date` field would fail the checks. The idiomatic fix is a value type that conforms to each
/// driver's conversion protocol (`SQLiteDataConvertible`, `PostgresEncodable` /
/// `PostgresDecodable`), which both drivers use before any `Codable` fallback. The text is
/// written and parsed by the benchmark's `DateText`, the fixed-offset code the raw baseline uses.
struct FluentTimestamp: Codable, Sendable, Equatable {
    var date: Date

    init(_ date: Date) { self.date = date }

    /// The SQLite text form.
    var text: String { DateText.string(milliseconds: BenchData.milliseconds(date)) }

    init?(text: String) {
        var text = text
        guard let milliseconds = text.withUTF8({ DateText.parse($0) }) else { return nil }
        date = Date(timeIntervalSince1970: Double(milliseconds) / 1000.0)
    }

    /// `Codable` (JSON, for instance) uses the text form too; the drivers do not come here.
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = FluentTimestamp(text: text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a timestamp: \(text)")
        }
        self = value
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

extension FluentTimestamp: SQLiteDataConvertible {
    init?(sqliteData: SQLiteData) {
        guard case .text(let text) = sqliteData else { return nil }
        self.init(text: text)
    }

    var sqliteData: SQLiteData? { .text(text) }
}

extension FluentTimestamp: PostgresNonThrowingEncodable, PostgresDecodable {
    static var psqlType: PostgresDataType { Date.psqlType }
    static var psqlFormat: PostgresFormat { Date.psqlFormat }

    func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        date.encode(into: &byteBuffer, context: context)
    }

    init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer, type: PostgresDataType, format: PostgresFormat, context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        date = try Date(from: &buffer, type: type, format: format, context: context)
    }
}

// MARK: - Session

/// One `Databases` and the `Database` every workload but `concurrent` uses.
final class FluentSession: BenchSession {
    private let backend: Backend
    private let databases: Databases
    private let db: any Database
    private let logger: Logger
    private let sqlitePath: String
    /// SQLite's `concurrent` setup, made at its first run (see ``concurrentDatabases(tasks:)``).
    private var sqliteConcurrent: (databases: Databases, group: MultiThreadedEventLoopGroup, threadPool: NIOThreadPool)?

    /// Rows per multi-row INSERT (insert, upsert): PostgreSQL takes at most 65,535 bind
    /// parameters per statement (6 a row here; sqlite-nio's SQLite is built with 250,000).
    /// Chunks of 1,000 rows measured 3–7% slower.
    static let insertChunk = 10_000
    /// Ids per `DELETE … WHERE id IN (…)`, under the same limit.
    static let deleteChunk = 60_000

    init(backend: Backend, databases: Databases, db: any Database, logger: Logger, sqlitePath: String) {
        self.backend = backend
        self.databases = databases
        self.db = db
        self.logger = logger
        self.sqlitePath = sqlitePath
    }

    func close() async throws {
        await databases.shutdownAsync()
        if let sqliteConcurrent {
            await sqliteConcurrent.databases.shutdownAsync()
            try await sqliteConcurrent.threadPool.shutdownGracefully()
            try await sqliteConcurrent.group.shutdownGracefully()
            self.sqliteConcurrent = nil
        }
    }

    /// The databases the `concurrent` workload's tasks use, one per task, spread over the event
    /// loops as a server's requests are (a Vapor request's `req.db` is on its event loop).
    ///
    /// PostgreSQL: the session's `Databases` (8 connections over the loops). SQLite: the driver
    /// keeps one connection per event loop (it ignores `maxConnectionsPerEventLoop`) and runs
    /// every SQLite call on the `NIOThreadPool`, so a pool of 8 is a `Databases` on 8 event
    /// loops with a thread pool of 8.
    private func concurrentDatabases(tasks: Int) throws -> [any Database] {
        let databases: Databases
        let group: any EventLoopGroup
        switch backend {
        case .postgres:
            databases = self.databases
            group = MultiThreadedEventLoopGroup.singleton
        case .sqlite:
            if let sqliteConcurrent {
                databases = sqliteConcurrent.databases
                group = sqliteConcurrent.group
            } else {
                let newGroup = MultiThreadedEventLoopGroup(numberOfThreads: ConcurrentLookups.poolSize)
                let threadPool = NIOThreadPool(numberOfThreads: ConcurrentLookups.poolSize)
                threadPool.start()
                let newDatabases = Databases(threadPool: threadPool, on: newGroup)
                newDatabases.use(.sqlite(.file(sqlitePath)), as: .sqlite)
                sqliteConcurrent = (newDatabases, newGroup, threadPool)
                databases = newDatabases
                group = newGroup
            }
        }
        let loops = Array(group.makeIterator())
        return try (0..<tasks).map { task in
            guard let database = databases.database(logger: logger, on: loops[task % loops.count]) else {
                throw BenchError("fluent: no database")
            }
            return database
        }
    }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        let db = db
        var checksum = Checksum()
        switch workload {
        case .insert:
            let records = BenchData.records(count: spec.rows)
            let models = records.map(FluentBenchRecord.init)
            for record in records { checksum.add(record) }
            try await db.transaction { tx in
                for start in stride(from: 0, to: models.count, by: Self.insertChunk) {
                    try await models[start..<min(start + Self.insertChunk, models.count)].create(on: tx)
                }
            }
        case .update:
            let records = BenchData.records(count: spec.rows, generation: 1)
            for record in records { checksum.add(record) }
            try await db.transaction { tx in
                for record in records {
                    try await FluentBenchRecord.query(on: tx)
                        .filter(\.$id == record.id)
                        .set(\.$name, to: record.name)
                        .set(\.$score, to: record.score)
                        .set(\.$createdAt, to: FluentTimestamp(record.createdAt))
                        .set(\.$rank, to: record.rank)
                        .set(\.$payload, to: record.payload)
                        .update()
                }
            }
        case .delete:
            // The way Fluent deletes many rows by key: one `DELETE … WHERE id IN (…)` per
            // chunk of ids (set-based, like `predicates`; see the README).
            let ids = Array(1...Int64(spec.rows))
            for id in ids { checksum.add(hash: UInt64(id)) }
            try await db.transaction { tx in
                for start in stride(from: 0, to: ids.count, by: Self.deleteChunk) {
                    try await FluentBenchRecord.query(on: tx)
                        .filter(\.$id ~~ ids[start..<min(start + Self.deleteChunk, ids.count)])
                        .delete()
                }
            }
        case .upsert, .upsertBatch:
            // Fluent's query builder has no upsert; FluentSQL (in fluent-kit) bridges Fluent
            // models to SQLKit's INSERT … ON CONFLICT (id) DO UPDATE SET col = EXCLUDED.col.
            let records = BenchData.records(count: spec.rows, generation: 1)
            let models = records.map(FluentBenchRecord.init)
            for record in records { checksum.add(record) }
            try await db.transaction { tx in
                guard let sql = tx as? any SQLDatabase else { throw BenchError("fluent: not an SQL database") }
                for start in stride(from: 0, to: models.count, by: Self.insertChunk) {
                    let chunk = Array(models[start..<min(start + Self.insertChunk, models.count)])
                    try await sql.insert(into: FluentBenchRecord.schema)
                        .fluentModels(chunk)
                        .onConflict(with: ["id"]) { try $0.set(excludedContentOfFluentModel: chunk[0]) }
                        .run()
                }
            }
        case .fetch:
            let models = try await FluentBenchRecord.query(on: db).sort(\.$id).all()
            for model in models { checksum.add(try model.record()) }
        case .stream:
            // `all(_:)` without the array it keeps: each row becomes a model, is folded into the
            // checksum and dropped. The callback runs on the event loop, one row after another.
            nonisolated(unsafe) var streamed = Checksum()
            nonisolated(unsafe) var failure: (any Error)?
            try await FluentBenchRecord.query(on: db).sort(\.$id).run { output in
                guard failure == nil else { return }
                do {
                    let model = FluentBenchRecord()
                    try model.output(from: output.qualifiedSchema(
                        space: FluentBenchRecord.spaceIfNotAliased, FluentBenchRecord.schemaOrAlias))
                    streamed.add(try model.record())
                } catch {
                    failure = error
                }
            }
            if let failure { throw failure }
            checksum = streamed
        case .lookup:
            for index in 0..<spec.rows {
                let id = BenchData.lookupID(index, tableRows: spec.tableRows)
                guard let model = try await FluentBenchRecord.find(id, on: db) else { throw BenchError("fluent: no record \(id)") }
                checksum.add(try model.record())
            }
        case .query:
            for index in 0..<spec.rows {
                let page = try await FluentBenchRecord.query(on: db)
                    .filter(\.$score >= BenchData.queryLowerBound(index))
                    .sort(\.$score)
                    .limit(BenchData.queryLimit)
                    .all()
                for model in page { checksum.add(try model.record()) }
            }
        case .jsonFilter, .ftsQuery:
            throw BenchError("fluent: no \(workload.rawValue) workload")
        case .concurrent:
            let databases = try concurrentDatabases(tasks: spec.tasks)
            let tableRows = spec.tableRows
            let tasks = spec.tasks
            checksum = try await ConcurrentLookups.runTasks(spec.tasks, rows: spec.rows) { indices in
                var checksum = Checksum()
                for index in indices {
                    // Task t does the indices t, t + W, …: index % W is t, so this is its database.
                    let database = databases[index % tasks]
                    let id = BenchData.lookupID(index, tableRows: tableRows)
                    guard let model = try await FluentBenchRecord.find(id, on: database) else {
                        throw BenchError("fluent: no record \(id)")
                    }
                    checksum.add(try model.record())
                }
                return checksum
            }
        case .oneToMany:
            // Two queries: the parents, then their children (`parent_id IN (…)`).
            let parents = try await FluentBenchParent.query(on: db).sort(\.$id).with(\.$children).all()
            for parent in parents {
                let parentID = try parent.requireID()
                checksum.add(BenchParentWithChildren(
                    parent: BenchParent(id: parentID, name: parent.name),
                    children: try parent.children.map {
                        BenchChild(id: try $0.requireID(), parentID: $0.$parent.id, name: $0.name, score: $0.score)
                    }))
            }
        }
        return WorkloadOutput(checksum: checksum)
    }
}
#endif
