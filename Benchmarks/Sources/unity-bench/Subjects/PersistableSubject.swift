import DriverPostgres
import DriverSQLite
import Foundation
import UnityPersistable

/// Unity's active-record flavor (Tailor's API), used as its README shows: `Persistable`
/// structs with hand-written `init(databaseRow:)` / `valuesToPersist()`, `Query<T>` with
/// `filter` / `order` / `limit` / `find` / `all`, `insertAll` / `saveAll` / `destroyAll` for
/// the batched writes (one transaction each), `forEach` (a cursor) for streaming, and
/// `allIncluding` for one-to-many (two statements). Every call passes the session's database
/// explicitly, as a server with several databases would.
struct PersistableSubject: BenchSubject {
    let name = "persistable"
    let backend: Backend

    func unsupportedReason(_ workload: Workload) -> String? {
        workload == .upsert ? "the upsert workload measures the SQL-first flavor's duplicate rules; upsert-batch measures insertOrUpdateAll" : nil
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        switch backend {
        case .sqlite:
            return PersistableSession(database: try Database(driver: SQLiteDriver(path: target.sqlitePath)))
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            return PersistableSession(database: try Database(driver: PostgresDriver(url, connections: 2)))
        }
    }
}

/// The `bench` table as a `Persistable`.
struct PersistableBenchItem: Persistable {
    var id: Int?
    var name: String
    var score: Double
    var createdAt: Date
    var rank: Int64?
    var payload: Data

    static var tableName: String { "bench" }

    init(_ record: BenchRecord) {
        id = Int(record.id)
        name = record.name
        score = record.score
        createdAt = record.createdAt
        rank = record.rank
        payload = record.payload
    }

    init(databaseRow: DatabaseRow) throws {
        id = try databaseRow.read("id")
        name = try databaseRow.read("name")
        score = try databaseRow.read("score")
        createdAt = try databaseRow.read("created_at")
        rank = try databaseRow.read("rank")
        payload = try databaseRow.read("payload")
    }

    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
        ["name": name, "score": score, "created_at": createdAt, "rank": rank, "payload": payload]
    }

    /// The plain record, for the checksum.
    var record: BenchRecord {
        BenchRecord(id: Int64(id ?? 0), name: name, score: score, createdAt: createdAt, rank: rank, payload: payload)
    }
}

/// The `bench_json` table as a `Persistable`: the document is a `Codable` value in a JSON column.
struct PersistableJSONItem: Persistable {
    var id: Int?
    var doc: BenchDocument
    static var tableName: String { "bench_json" }
    init(databaseRow: DatabaseRow) throws {
        id = try databaseRow.read("id")
        doc = try databaseRow.read("doc")
    }
    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["doc": doc] }
}

/// The `bench_text` table as a `Persistable`.
struct PersistableTextItem: Persistable {
    var id: Int?
    var title: String
    var body: String
    static var tableName: String { "bench_text" }
    init(databaseRow: DatabaseRow) throws {
        id = try databaseRow.read("id")
        title = try databaseRow.read("title")
        body = try databaseRow.read("body")
    }
    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["title": title, "body": body] }
}

/// The `bench_parent` table as a `Persistable`.
struct PersistableBenchParent: Persistable {
    var id: Int?
    var name: String
    static var tableName: String { "bench_parent" }
    init(databaseRow: DatabaseRow) throws {
        id = try databaseRow.read("id")
        name = try databaseRow.read("name")
    }
    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
}

/// The `bench_child` table as a `Persistable`.
struct PersistableBenchChild: Persistable {
    var id: Int?
    var parentId: Int
    var name: String
    var score: Double
    static var tableName: String { "bench_child" }
    init(databaseRow: DatabaseRow) throws {
        id = try databaseRow.read("id")
        parentId = try databaseRow.read("parent_id")
        name = try databaseRow.read("name")
        score = try databaseRow.read("score")
    }
    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] {
        ["parent_id": parentId, "name": name, "score": score]
    }
}

/// One ``Database`` for all iterations of a workload, passed to every call.
final class PersistableSession: BenchSession {
    private let database: Database
    /// The records the `delete` workload destroys: an application destroys records it holds,
    /// so building them is not part of the timed work (built once, on the warm-up run).
    private var itemsToDelete: [PersistableBenchItem] = []

    init(database: Database) { self.database = database }

    func close() async throws { database.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        let db = database
        var checksum = Checksum()
        switch workload {
        case .upsert, .concurrent:
            throw BenchError("persistable: no \(workload.rawValue) workload")
        case .insert, .update:
            // Records with application-assigned ids (the benchmark's ids 1…n): insertAll
            // writes them as new rows; saveAll updates the ones that exist.
            let records = BenchData.records(count: spec.rows, generation: workload == .update ? 1 : 0)
            var items: [PersistableBenchItem] = []
            items.reserveCapacity(records.count)
            for record in records {
                items.append(PersistableBenchItem(record))
                checksum.add(record)
            }
            if workload == .insert {
                _ = try PersistableBenchItem.insertAll(items, db)
            } else {
                _ = try PersistableBenchItem.saveAll(items, db)
            }
        case .upsertBatch:
            let records = BenchData.records(count: spec.rows, generation: 1)
            let items = records.map { PersistableBenchItem($0) }
            // created_at is named: by default an upsert leaves a stored row's creation time alone.
            let updated = ["name", "score", "created_at", "rank", "payload"]
            for result in try PersistableBenchItem.insertOrUpdateAll(items, updating: updated, db) { checksum.add(result.value.record) }
        case .delete:
            if itemsToDelete.count != spec.rows {
                itemsToDelete = BenchData.records(count: spec.rows).map { PersistableBenchItem($0) }
            }
            for item in itemsToDelete { checksum.add(hash: UInt64(item.id ?? 0)) }
            try PersistableBenchItem.destroyAll(itemsToDelete, db)
        case .fetch:
            let items = try Query<PersistableBenchItem>().order("id", .orderedAscending).allOrThrow(db)
            for item in items { checksum.add(item.record) }
        case .stream:
            try Query<PersistableBenchItem>().order("id", .orderedAscending).forEach(db) { checksum.add($0.record) }
        case .lookup:
            let query = Query<PersistableBenchItem>()
            for index in 0..<spec.rows {
                let id = BenchData.lookupID(index, tableRows: spec.tableRows)
                guard let item = try query.findOrThrow(Int(id), db) else { throw BenchError("persistable: no record \(id)") }
                checksum.add(item.record)
            }
        case .query:
            for index in 0..<spec.rows {
                let page = try Query<PersistableBenchItem>()
                    .filter("score >= ?", [BenchData.queryLowerBound(index)])
                    .order("score", .orderedAscending)
                    .limit(BenchData.queryLimit)
                    .allOrThrow(db)
                for item in page { checksum.add(item.record) }
            }
        case .jsonFilter:
            // `filter(json:at:as:equals:)` (the indexed path) or `filter(json:contains:)`.
            for index in 0..<spec.rows {
                var query = Query<PersistableJSONItem>()
                if spec.jsonContainment {
                    let tag = JSONData.tag(forQuery: index, tableRows: spec.tableRows)
                    query = try query.filter(json: "doc", contains: ["meta": ["tags": [tag]]])
                } else {
                    query = query.filter(json: "doc", at: JSONData.bucketPath, as: .integer,
                                         equals: JSONData.bucket(forQuery: index, tableRows: spec.tableRows))
                }
                query = query.order("id", .orderedAscending)
                if !spec.jsonContainment { query = query.limit(JSONData.limit) }
                let page = try query.allOrThrow(db)
                for item in page { checksum.add(BenchJSONRecord(id: Int64(item.id ?? 0), doc: item.doc)) }
            }
        case .ftsQuery:
            // `matching(_:in:)` filters and orders by relevance; ties by id after it.
            for (number, query) in SearchData.queries(spec).enumerated() {
                let page = try Query<PersistableTextItem>().matching(query.text, in: SearchData.index)
                    .order("id", .orderedAscending).limit(SearchData.limit).allOrThrow(db)
                for (position, item) in page.enumerated() {
                    checksum.add(search: BenchTextRecord(id: Int64(item.id ?? 0), title: item.title, body: item.body), query: number,
                                 position: position)
                }
            }
        case .oneToMany:
            let loaded = try Query<PersistableBenchParent>().order("id", .orderedAscending)
                .allIncluding(Query<PersistableBenchChild>(), foreignKey: "parent_id", db)
            for (parent, children) in loaded {
                checksum.add(BenchParentWithChildren(
                    parent: BenchParent(id: Int64(parent.id ?? 0), name: parent.name),
                    children: children.map {
                        BenchChild(id: Int64($0.id ?? 0), parentID: Int64($0.parentId), name: $0.name, score: $0.score)
                    }))
            }
        }
        return WorkloadOutput(checksum: checksum)
    }
}
