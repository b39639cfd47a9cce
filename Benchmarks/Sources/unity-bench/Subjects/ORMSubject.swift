import DriverPostgres
import DriverSQLite
import Foundation
import UnityORM

/// Unity's ORM-session flavor (Amigo's API), used as its README shows: `ORMModel` mappings
/// over the fixture's tables, writes through `session.batch { }` (multi-row INSERTs / upserts,
/// deletes by key lists) and `commit()`, reads through `amigo.query(...)`: `all()`, `get(id)`,
/// `filter("score >= ?").orderBy("score").limit(n)`, and one-to-many as children loaded with
/// `selectRelated("parent")` (one join) beside the parents; `stream` through `QuerySet.forEach`.
struct ORMSubject: BenchSubject {
    let name = "orm"
    let backend: Backend

    func unsupportedReason(_ workload: Workload) -> String? { nil }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        let database: Database
        switch backend {
        case .sqlite:
            database = try SQLiteEngineFactory(target.sqlitePath).connect()
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            database = try PostgresEngineFactory(url, connections: 2).connect()
        }
        return try ORMBenchSession(database: database)
    }
}

/// The `bench` table's record as a mapped class. Its accessor table is the setter form that
/// `@ORMFields` generates, written by hand: the benchmark does not build swift-syntax, and
/// the column `created_at` is not the property's name.
final class ORMBenchRecord: AmigoModel {
    var id: Int64 = 0
    var name = ""
    var score = 0.0
    var createdAt = Date(timeIntervalSince1970: 0)
    var rank: Int64?
    var payload = Data()

    override class var ormFields: ORMFieldTable {
        ORMFieldTable(ORMBenchRecord.self, .property("id", \.id) { $0.id = $1 }, .property("name", \.name) { $0.name = $1 },
                      .property("score", \.score) { $0.score = $1 }, .property("created_at", \.createdAt) { $0.createdAt = $1 },
                      .property("rank", \.rank) { $0.rank = $1 }, .property("payload", \.payload) { $0.payload = $1 })
    }

    convenience init(_ record: BenchRecord) {
        self.init()
        id = record.id
        name = record.name
        score = record.score
        createdAt = record.createdAt
        rank = record.rank
        payload = record.payload
    }

    var record: BenchRecord {
        BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload)
    }
}

/// `bench_json`: the document is a `Codable` property in a JSON column.
final class ORMJSONRecord: AmigoModel {
    var id: Int64 = 0
    var doc = BenchDocument(name: "", size: 0, meta: BenchDocument.Meta(bucket: 0, tags: []))
    override class var ormFields: ORMFieldTable {
        ORMFieldTable(ORMJSONRecord.self, .property("id", \.id) { $0.id = $1 }, .property("doc", \.doc) { $0.doc = $1 })
    }
}

/// `bench_text`.
final class ORMTextRecord: AmigoModel {
    var id: Int64 = 0
    var title = ""
    var body = ""
    override class var ormFields: ORMFieldTable {
        ORMFieldTable(ORMTextRecord.self, .property("id", \.id) { $0.id = $1 }, .property("title", \.title) { $0.title = $1 },
                      .property("body", \.body) { $0.body = $1 })
    }
}

/// `bench_parent`.
final class ORMBenchParent: AmigoModel {
    var id: Int64 = 0
    var name = ""
    override class var ormFields: ORMFieldTable {
        ORMFieldTable(ORMBenchParent.self, .property("id", \.id) { $0.id = $1 }, .property("name", \.name) { $0.name = $1 })
    }
}

/// `bench_child`: its foreign key `parent` is the column `parent_id`.
final class ORMBenchChild: AmigoModel {
    var id: Int64 = 0
    var parent: ORMBenchParent?
    var name = ""
    var score = 0.0
    override class var ormFields: ORMFieldTable {
        ORMFieldTable(ORMBenchChild.self, .property("id", \.id) { $0.id = $1 }, .property("parent", \.parent) { $0.parent = $1 },
                      .property("name", \.name) { $0.name = $1 }, .property("score", \.score) { $0.score = $1 })
    }
}

final class ORMBenchSession: BenchSession {
    private let amigo: Amigo
    private var modelsToDelete: [ORMBenchRecord] = []

    init(database: Database) throws {
        let record = ORMModel(ORMBenchRecord.self, table: "bench",
            Column("id", type: Int64.self, primaryKey: true),
            Column("name", type: String.self),
            Column("score", type: Double.self, indexed: true),
            Column("created_at", type: Date.self),
            Column("rank", type: Int64.self),
            Column("payload", type: Data.self))
        let parent = ORMModel(ORMBenchParent.self, table: "bench_parent",
            Column("id", type: Int64.self, primaryKey: true),
            Column("name", type: String.self),
            OneToMany("children", using: ORMBenchChild.self))
        let child = ORMModel(ORMBenchChild.self, table: "bench_child",
            Column("id", type: Int64.self, primaryKey: true),
            Column("parent", type: ForeignKey(parent)),
            Column("name", type: String.self),
            Column("score", type: Double.self))
        let json = ORMModel(ORMJSONRecord.self, table: "bench_json",
            Column("id", type: Int64.self, primaryKey: true),
            Column("doc", type: BenchDocument.self))
        let text = ORMModel(ORMTextRecord.self, table: "bench_text",
            Column("id", type: Int64.self, primaryKey: true),
            Column("title", type: String.self),
            Column("body", type: String.self))
        // The fixture owns the schema: no createAll().
        amigo = try Amigo([record, parent, child, json, text], database: database)
    }

    func close() async throws { amigo.database.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        var checksum = Checksum()
        switch workload {
        case .concurrent:
            throw BenchError("orm: no \(workload.rawValue) workload")
        case .insert, .update, .upsert:
            // upsert: Amigo's add(_:upsert: true), half of whose rows exist.
            let records = BenchData.records(count: spec.rows, generation: workload == .insert ? 0 : 1)
            var objects: [ORMBenchRecord] = []
            objects.reserveCapacity(records.count)
            for record in records {
                objects.append(ORMBenchRecord(record))
                checksum.add(record)
            }
            let session = try amigo.session
            try session.batch { $0.add(objects, upsert: workload == .upsert) }
            try session.commit()
        case .upsertBatch:
            // The session's insert-or-update call; each object takes the row as stored.
            let records = BenchData.records(count: spec.rows, generation: 1)
            let objects = records.map(ORMBenchRecord.init)
            let session = try amigo.session
            try session.insertOrUpdate(objects)
            try session.commit()
            for object in objects { checksum.add(object.record) }
        case .delete:
            if modelsToDelete.count != spec.rows {
                modelsToDelete = BenchData.records(count: spec.rows).map(ORMBenchRecord.init)
            }
            for model in modelsToDelete { checksum.add(hash: UInt64(model.id)) }
            let session = try amigo.session
            try session.batch { batch in for m in modelsToDelete { batch.delete(m) } }
            try session.commit()
        case .fetch:
            for object in try amigo.query(ORMBenchRecord.self).orderBy("id").all() { checksum.add(object.record) }
        case .stream:
            // QuerySet.forEach decodes one row at a time and keeps none.
            try amigo.query(ORMBenchRecord.self).orderBy("id").forEach { checksum.add($0.record) }
        case .lookup:
            let query = amigo.query(ORMBenchRecord.self)
            for index in 0..<spec.rows {
                let id = BenchData.lookupID(index, tableRows: spec.tableRows)
                guard let object = try query.get(id) else { throw BenchError("orm: no record \(id)") }
                checksum.add(object.record)
            }
        case .query:
            for index in 0..<spec.rows {
                let page = try amigo.query(ORMBenchRecord.self)
                    .filter("score >= ?", BenchData.queryLowerBound(index))
                    .orderBy("score")
                    .limit(BenchData.queryLimit)
                    .all()
                for object in page { checksum.add(object.record) }
            }
        case .jsonFilter:
            // `filter(json:at:as:equals:)` (the indexed path) or `filter(json:contains:)`.
            for index in 0..<spec.rows {
                var query = amigo.query(ORMJSONRecord.self)
                if spec.jsonContainment {
                    query = query.filter(json: "doc", contains: JSONData.containmentJSON(tag: JSONData.tag(forQuery: index, tableRows: spec.tableRows)))
                } else {
                    query = query.filter(json: "doc", at: JSONData.bucketPath, as: .integer,
                                         equals: JSONData.bucket(forQuery: index, tableRows: spec.tableRows))
                }
                query = query.orderBy("id")
                if !spec.jsonContainment { query = query.limit(JSONData.limit) }
                for object in try query.all() {
                    checksum.add(BenchJSONRecord(id: object.id, doc: object.doc))
                }
            }
        case .ftsQuery:
            // `search(_:in:)` filters and orders by relevance; ties by id after it.
            for (number, query) in SearchData.queries(spec).enumerated() {
                let page = try amigo.query(ORMTextRecord.self).search(query.text, in: SearchData.index).orderBy("id")
                    .limit(SearchData.limit).all()
                for (position, object) in page.enumerated() {
                    checksum.add(search: BenchTextRecord(id: object.id, title: object.title, body: object.body), query: number,
                                 position: position)
                }
            }
        case .oneToMany:
            // Two queries, no N+1: the parents, and every child with its parent by one join.
            let parents = try amigo.query(ORMBenchParent.self).orderBy("id").all()
            let children = try amigo.query(ORMBenchChild.self).selectRelated("parent").orderBy("id").all()
            var byParent: [Int64: [BenchChild]] = [:]
            for child in children {
                guard let parent = child.parent else { continue }
                byParent[parent.id, default: []].append(BenchChild(id: child.id, parentID: parent.id, name: child.name, score: child.score))
            }
            for parent in parents {
                checksum.add(BenchParentWithChildren(parent: BenchParent(id: parent.id, name: parent.name),
                                                     children: byParent[parent.id] ?? []))
            }
        }
        return WorkloadOutput(checksum: checksum)
    }
}
