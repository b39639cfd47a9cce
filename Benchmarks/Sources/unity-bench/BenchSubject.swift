import Foundation

/// One way of talking to a database that the benchmark measures: the raw C library, Unity's
/// core API, a Unity flavor, or a peer library.
///
/// To add a subject, write one file with a type conforming to this protocol and list it in
/// ``SubjectRegistry/all``. The harness seeds the tables before every timed run (with the raw
/// library, untimed), opens a session (untimed), times ``BenchSession/run(_:spec:)`` alone, and
/// checks the returned ``WorkloadOutput`` against the expected values.
protocol BenchSubject: Sendable {
    /// The name shown in the table and `--json` (`raw`, `core`, `modeldef`, `grdb`, …).
    var name: String { get }
    /// The database this subject runs against.
    var backend: Backend { get }
    /// Why this subject cannot run `workload`, or nil when it can.
    func unsupportedReason(_ workload: Workload) -> String?
    /// Opens a session (a connection, a pool, a database queue) against the benchmark database.
    func openSession(_ target: BenchTarget) async throws -> any BenchSession
    /// Whether this subject runs the `concurrent` workload (subjects that do not are left out
    /// of its cases rather than listed as skipped).
    var runsConcurrent: Bool { get }
    /// Whether this subject runs the `concurrent` workload only (left out of the others).
    var concurrentOnly: Bool { get }
}

extension BenchSubject {
    var runsConcurrent: Bool { false }
    var concurrentOnly: Bool { false }
}

/// An open connection of a subject; lives for all iterations of one workload.
protocol BenchSession: AnyObject {
    /// Runs `workload` once. This is the only timed part. Reads return the checksum of every
    /// value they decoded; writes return the checksum of what they wrote (the harness then
    /// checks the table's contents itself).
    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput
    /// Closes the session.
    func close() async throws
}

/// Where the benchmark databases are.
struct BenchTarget: Sendable {
    /// The SQLite database file.
    var sqlitePath: String
    /// The PostgreSQL URL (`postgres://user@host:port/db`), nil when PostgreSQL is skipped.
    var postgresURL: String?
}

/// What one run of a workload returns: what it read or wrote, folded into a checksum.
struct WorkloadOutput: Sendable, Equatable {
    /// The checksum of the values read or written.
    var checksum: Checksum
    /// `fts-query` only, from the raw baselines: the ids each query returned, in order, which
    /// the harness checks against the generated documents (untimed) before it takes raw's
    /// checksum as the one every other subject must return.
    var searchResults: [[Int64]]? = nil
}

/// The sizes of one workload case.
struct WorkloadSpec: Sendable, Equatable {
    /// The workload.
    var workload: Workload
    /// The number of rows (or operations) the timed part handles; the `rows` of the report.
    var rows: Int
    /// The number of records in the table the workload reads from (lookup, query).
    var tableRows: Int
    /// Children per parent (one-to-many only).
    var childrenPerParent: Int = 20
    /// Concurrent tasks (W) sharing the lookups (concurrent only).
    var tasks: Int = 1
    /// `json-filter` only: test containment of a tag (`json-filter-contains`) instead of
    /// equality on the indexed path.
    var jsonContainment = false

    /// The case's name in the table, `--only` and `--json`: the workload, with W for
    /// `concurrent` and `-contains` for the containment form of `json-filter`.
    var label: String {
        switch workload {
        case .concurrent: "\(workload.rawValue)-\(tasks)"
        case .jsonFilter where jsonContainment: "\(workload.rawValue)-contains"
        default: workload.rawValue
        }
    }
}

/// Every subject the benchmark knows, in the order of the table. Raw baselines first: the
/// ratio column divides by the `raw` subject of the same backend measured in the same run.
enum SubjectRegistry {
    /// All subjects. Unity's subjects go between the raw baselines and the peers:
    /// - `core`: Unity's core API (AST statements and rows) — add `CoreSubject.swift`.
    /// - `modeldef`: SQL-first `ModelDef` records — add `ModelDefSubject.swift`.
    /// - `modeldef-gen`: the same with `@RowCoded` (generated row coding).
    /// - `modeldef-predicate`: `modeldef-gen`'s query workload through `#Predicate`.
    /// - later the flavors (`persistable`, `orm`, `predicates`, `state`), one file each.
    /// - peers built only on request join at the end: `fluent` with the `Fluent` package trait.
    static let all: [any BenchSubject] = {
        var subjects: [any BenchSubject] = [
            RawSQLiteSubject(),
            RawLibPQSubject(mode: .pipeline),
            RawLibPQSubject(mode: .copy),
            CoreSubject(backend: .sqlite),
            CoreSubject(backend: .postgres),
            CoreSubject(backend: .sqlite, form: .asyncStatement),
            CoreSubject(backend: .postgres, form: .asyncStatement),
            CoreSubject(backend: .postgres, form: .pipelinedStatement),
            CoreSubject(backend: .postgres, form: .pooler),
            CoreSubject(backend: .postgres, form: .pgbouncer),
            CoreSubject(backend: .sqlite, form: .copy),
            CoreSubject(backend: .postgres, form: .copy),
            ModelDefSubject(backend: .sqlite),
            ModelDefSubject(backend: .postgres),
            ModelDefGenSubject(backend: .sqlite),
            ModelDefGenSubject(backend: .postgres),
            ModelDefPredicateSubject(backend: .sqlite),
            ModelDefPredicateSubject(backend: .postgres),
            PersistableSubject(backend: .sqlite),
            PersistableSubject(backend: .postgres),
            PredicatesSubject(backend: .sqlite),
            PredicatesSubject(backend: .postgres),
            ORMSubject(backend: .sqlite),
            ORMSubject(backend: .postgres),
            // The other flavors join here as they land, one subject per backend each:
            // StateSubject.
            GRDBSubject(),
            PostgresNIOSubject(),
        ]
        #if Telemetry
        // Unity with metrics and tracing on, built only with `--traits Telemetry` (Package.swift).
        subjects += [CoreSubject(backend: .sqlite, form: .telemetry), CoreSubject(backend: .postgres, form: .telemetry)]
        #endif
        #if Fluent
        // Vapor's ORM, built only with `--traits Fluent` (Package.swift).
        subjects += [FluentSubject(backend: .sqlite), FluentSubject(backend: .postgres)]
        #endif
        return subjects
    }()
}

/// A failure of the benchmark itself (bad options, a failed check, a database error).
struct BenchError: Error, CustomStringConvertible {
    /// What went wrong and what to do.
    var description: String

    init(_ description: String) { self.description = description }
}
