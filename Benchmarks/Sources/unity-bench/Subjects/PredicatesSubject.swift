import DriverPostgres
import DriverSQLite
import Foundation
import Unity
import UnityPredicates

/// Unity's key-path predicate flavor (UnityPredicates, after Sworm), used as its README
/// shows: models declared in code with `keyColumn = "id"` (the fixture's tables are keyed by
/// their own id), one `schedule { ctx in }` (one transaction) per timed run, typed
/// predicates and requests, `insert` / `encode` (batched before the next statement and at the
/// end of the transaction), `fetch(...).map { try $0.decode() }`, `forEach` for streaming.
/// Updates fetch the objects first (the flavor has no update by key without an object), and
/// deletes are one `delete(request)` over the id range (the flavor's set-based delete).
/// One-to-many is two fetches grouped in memory: the flavor's relations live in link tables,
/// which the fixture's `parent_id` schema does not have.
struct PredicatesSubject: BenchSubject {
    let name = "predicates"
    let backend: Backend

    func unsupportedReason(_ workload: Workload) -> String? {
        workload == .upsert ? "the upsert workload measures the SQL-first flavor's duplicate rules; upsert-batch measures insertOrUpdate" : nil
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        let database: Database
        switch backend {
        case .sqlite:
            database = try Database(driver: SQLiteDriver(path: target.sqlitePath))
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            database = try Database(driver: PostgresDriver(url, connections: 2))
        }
        // The fixture owns the tables, so the container does not create or record a schema.
        let container = PersistentContainer(database: database, models: [BenchItem.self, BenchParentItem.self, BenchChildItem.self,
                                                                                 BenchJSONItem.self, BenchTextItem.self],
                                            createsSchema: false)
        return PredicatesSession(database: database, container: container)
    }
}

/// The `bench` table as a predicate-flavor model.
struct BenchItem: ManagedObjectConvertible {
    var id: Int64 = 0
    var name = ""
    var score = 0.0
    var createdAt = Date(timeIntervalSince1970: 0)
    var rank: Int64?
    var payload = Data()

    static let entityName = "bench"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<BenchItem>> = [
        Attribute(\.id, "id"), Attribute(\.name, "name"), Attribute(\.score, "score"),
        Attribute(\.createdAt, "created_at"), Attribute(\.rank, "rank"), Attribute(\.payload, "payload"),
    ]

    init() {}
    init(_ r: BenchRecord) {
        id = r.id
        name = r.name
        score = r.score
        createdAt = r.createdAt
        rank = r.rank
        payload = r.payload
    }

    var record: BenchRecord { BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload) }
}

/// The flavor stores its attributes as primitives (no `Codable` attribute), so a JSON document
/// is an attribute whose primitive is its JSON text: Unity's JSON encoder writes it, Foundation's
/// decoder reads it back, as for the other flavors' `Codable` properties.
extension BenchDocument: SupportedAttributeType {
    typealias PrimitiveAttributeType = String

    func encodePrimitiveValue() -> String {
        // The benchmark only reads documents; a document of strings and integers always encodes.
        guard let data = try? JSONCoding.encoder().encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    static func decode(primitiveValue: String) throws -> BenchDocument {
        try JSONCoding.decoder().decode(BenchDocument.self, from: Data(primitiveValue.utf8))
    }
}

/// The `bench_json` table: the document is a `Codable` attribute in a JSON column.
struct BenchJSONItem: ManagedObjectConvertible {
    var id: Int64 = 0
    var doc = BenchDocument(name: "", size: 0, meta: BenchDocument.Meta(bucket: 0, tags: []))
    static let entityName = "bench_json"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<BenchJSONItem>> = [Attribute(\.id, "id"), Attribute(\.doc, "doc")]
}

/// The `bench_text` table.
struct BenchTextItem: ManagedObjectConvertible {
    var id: Int64 = 0
    var title = ""
    var body = ""
    static let entityName = "bench_text"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<BenchTextItem>> = [Attribute(\.id, "id"), Attribute(\.title, "title"), Attribute(\.body, "body")]
}

/// The `bench_parent` table.
struct BenchParentItem: ManagedObjectConvertible {
    var id: Int64 = 0
    var name = ""
    static let entityName = "bench_parent"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<BenchParentItem>> = [Attribute(\.id, "id"), Attribute(\.name, "name")]
}

/// The `bench_child` table.
struct BenchChildItem: ManagedObjectConvertible {
    var id: Int64 = 0
    var parentID: Int64 = 0
    var name = ""
    var score = 0.0
    static let entityName = "bench_child"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<BenchChildItem>> = [
        Attribute(\.id, "id"), Attribute(\.parentID, "parent_id"), Attribute(\.name, "name"), Attribute(\.score, "score"),
    ]
}

final class PredicatesSession: BenchSession {
    private let database: Database
    private let container: PersistentContainer

    init(database: Database, container: PersistentContainer) {
        self.database = database
        self.container = container
    }

    func close() async throws { database.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        let rows = spec.rows
        let tableRows = spec.tableRows
        let checksum: Checksum
        switch workload {
        case .upsert, .concurrent:
            throw BenchError("predicates: no \(workload.rawValue) workload")
        case .insert:
            let records = BenchData.records(count: rows)
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                for record in records {
                    _ = try ctx.insert(BenchItem(record))
                    checksum.add(record)
                }
                return checksum
            }
        case .update:
            let records = BenchData.records(count: rows, generation: 1)
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                let objects = try ctx.fetch(BenchItem.all.where(\BenchItem.id <= Int64(rows)).sort(\.id))
                guard objects.count == records.count else { throw BenchError("predicates: \(objects.count) records to update") }
                for (object, record) in zip(objects, records) {
                    try object.encode(BenchItem(record))
                    checksum.add(record)
                }
                return checksum
            }
        case .upsertBatch:
            let records = BenchData.records(count: rows, generation: 1)
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                for result in try ctx.insertOrUpdate(records.map { BenchItem($0) }) { checksum.add(try result.value.decode().record) }
                return checksum
            }
        case .delete:
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                try ctx.delete(BenchItem.all.where(\BenchItem.id >= 1 && \BenchItem.id <= Int64(rows)))
                for id in 1...Int64(rows) { checksum.add(hash: UInt64(id)) }
                return checksum
            }
        case .fetch:
            let records = try await container.schedule { ctx in
                try ctx.fetch(BenchItem.all.sort(\.id)).map { try $0.decode().record }
            }
            var sum = Checksum()
            for record in records { sum.add(record) }
            checksum = sum
        case .stream:
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                try ctx.forEach(BenchItem.all.sort(\.id)) { checksum.add(try $0.decode().record) }
                return checksum
            }
        case .lookup:
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                for index in 0..<rows {
                    let id = BenchData.lookupID(index, tableRows: tableRows)
                    guard let object = try ctx.fetchOne(BenchItem.all.where(\BenchItem.id == id)) else {
                        throw BenchError("predicates: no record \(id)")
                    }
                    checksum.add(try object.decode().record)
                }
                return checksum
            }
        case .query:
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                for index in 0..<rows {
                    let page = try ctx.fetch(BenchItem.all
                        .where(\BenchItem.score >= BenchData.queryLowerBound(index))
                        .sort(\.score)
                        .limit(BenchData.queryLimit))
                    for object in page { checksum.add(try object.decode().record) }
                }
                return checksum
            }
        case .jsonFilter:
            // `Query.json(\.doc, path, as:) == value` (the indexed path) or `Query.jsonContains`.
            let containment = spec.jsonContainment
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                for index in 0..<rows {
                    let condition = containment
                        ? Query.jsonContains(\BenchJSONItem.doc, json: JSONData.containmentJSON(tag: JSONData.tag(forQuery: index, tableRows: tableRows)))
                        : Query.json(\BenchJSONItem.doc, JSONData.bucketPath, as: .integer) == JSONData.bucket(forQuery: index, tableRows: tableRows)
                    let request = BenchJSONItem.all.where(condition).sort(\.id)
                    for object in try ctx.fetch(containment ? request : request.limit(JSONData.limit)) {
                        let item = try object.decode()
                        checksum.add(BenchJSONRecord(id: item.id, doc: item.doc))
                    }
                }
                return checksum
            }
        case .ftsQuery:
            // `Query.matches(_:in:)`, `sortByRelevance(_:in:)`, ties by id.
            let queries = SearchData.queries(spec)
            checksum = try await container.schedule { ctx in
                var checksum = Checksum()
                for (number, query) in queries.enumerated() {
                    let request = BenchTextItem.all.where(Query.matches(query.text, in: SearchData.index))
                        .sortByRelevance(query.text, in: SearchData.index).sort(\.id).limit(SearchData.limit)
                    for (position, object) in try ctx.fetch(request).enumerated() {
                        let item = try object.decode()
                        checksum.add(search: BenchTextRecord(id: item.id, title: item.title, body: item.body), query: number,
                                     position: position)
                    }
                }
                return checksum
            }
        case .oneToMany:
            let parents = try await container.schedule { ctx in
                let parents = try ctx.fetch(BenchParentItem.all.sort(\.id)).map { try $0.decode() }
                var children: [Int64: [BenchChild]] = [:]
                for object in try ctx.fetch(BenchChildItem.all) {
                    let child = try object.decode()
                    children[child.parentID, default: []].append(
                        BenchChild(id: child.id, parentID: child.parentID, name: child.name, score: child.score))
                }
                return parents.map {
                    BenchParentWithChildren(parent: BenchParent(id: $0.id, name: $0.name), children: children[$0.id] ?? [])
                }
            }
            var sum = Checksum()
            for parent in parents { sum.add(parent) }
            checksum = sum
        }
        return WorkloadOutput(checksum: checksum)
    }
}
