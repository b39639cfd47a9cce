import DriverPostgres
import DriverSQLite
import Foundation

/// Unity's SQL-first flavor, used as its README shows: `ModelDef` structs, `DBManager.open`
/// setting the default database, `createSaveStatement()` / `createDeleteStatement()` run by
/// `DBManager.executeStatements` (one transaction, multi-row INSERTs), `allInstances`,
/// `firstInstanceWhere`, `instances(_:)` for a query with a LIMIT. The flavor has no
/// association or streaming API, so one-to-many is two `allInstances` calls grouped in
/// memory, and streaming takes a core cursor and decodes each row with `RowDecoder`.
/// `modeldef-gen` (ModelDefGenSubject.swift) runs the same session with `@RowCoded` models.
struct ModelDefSubject: BenchSubject {
    let name = "modeldef"
    let backend: Backend

    func unsupportedReason(_ workload: Workload) -> String? { nil }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        // The benchmark's fixture owns the schema, so there are no migration files to run.
        switch backend {
        case .sqlite:
            try DBManager.open(target.sqlitePath, dbDefFilePaths: [])
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            try DBManager.open(postgresURL: url, dbDefFilePaths: [], connections: 2)
        }
        return ModelDefSession<BenchModel, BenchParentModel, BenchChildModel>()
    }
}

/// The `bench` table's model, as `modeldef` (Codable) and `modeldef-gen` (`@RowCoded`) write it.
protocol BenchRecordModel: ModelDef {
    init(_ record: BenchRecord, existsInDatabase: Bool)
    var id: Int64 { get }
    var record: BenchRecord { get }
    /// The `bench_json` model of the same coding (`Codable` or generated).
    associatedtype DocumentModel: BenchJSONRecordModel
    /// The `bench_text` model of the same coding.
    associatedtype TextModel: BenchTextRecordModel
    /// Decodes every row of `cursor` the fastest way this model's coding offers, and sums them.
    /// Written in each concrete model, as a user's own loop is: the session is generic and runs
    /// unspecialized behind `any BenchSession`, so a loop there paid for generic calls per row
    /// (a reabstraction thunk and a value-witness copy of the model) that no user's code pays.
    static func streamChecksum(_ cursor: RowCursor) throws -> Checksum
}

/// The `bench_json` table's model: the document is a `Codable` property (a JSON column).
protocol BenchJSONRecordModel: ModelDef {
    var id: Int64 { get }
    var doc: BenchDocument { get }
}

/// The `bench_text` table's model.
protocol BenchTextRecordModel: ModelDef {
    var id: Int64 { get }
    var title: String { get }
    var body: String { get }
}

/// The `bench_parent` table's model.
protocol BenchParentRecordModel: ModelDef {
    var id: Int64 { get }
    var name: String { get }
}

/// The `bench_child` table's model.
protocol BenchChildRecordModel: ModelDef {
    var id: Int64 { get }
    var parentID: Int64 { get }
    var name: String { get }
    var score: Double { get }
}

/// The `bench` table as a `ModelDef`.
struct BenchModel: BenchRecordModel, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, name, score, createdAt = "created_at", rank, payload, existsInDatabase
    }
    typealias DocumentModel = BenchJSONModel
    typealias TextModel = BenchTextModel

    static let tableName = "bench"
    var id: Int64
    var name: String
    var score: Double
    var createdAt: Date
    var rank: Int64?
    var payload: Data
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }

    init(_ record: BenchRecord, existsInDatabase: Bool = false) {
        id = record.id
        name = record.name
        score = record.score
        createdAt = record.createdAt
        rank = record.rank
        payload = record.payload
        self.existsInDatabase = existsInDatabase
    }

    /// The plain record, for the checksum.
    var record: BenchRecord {
        BenchRecord(id: id, name: name, score: score, createdAt: createdAt, rank: rank, payload: payload)
    }

    /// `Codable` through `RowDecoder.rowsDecoder`.
    static func streamChecksum(_ cursor: RowCursor) throws -> Checksum {
        let decoder = RowDecoder(defaultValues: ["existsInDatabase": .bool(true)]).rowsDecoder(for: BenchModel.self)
        var checksum = Checksum()
        while let row = try cursor.next() { checksum.add(try decoder.decode(row).record) }
        return checksum
    }
}

/// The `bench_json` table as a `ModelDef` (decoded through `Codable`; the document is JSON).
struct BenchJSONModel: BenchJSONRecordModel {
    static let tableName = "bench_json"
    var id: Int64
    var doc: BenchDocument
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_text` table as a `ModelDef`.
struct BenchTextModel: BenchTextRecordModel {
    static let tableName = "bench_text"
    var id: Int64
    var title: String
    var body: String
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_parent` table as a `ModelDef`.
struct BenchParentModel: BenchParentRecordModel {
    static let tableName = "bench_parent"
    var id: Int64
    var name: String
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_child` table as a `ModelDef`.
struct BenchChildModel: BenchChildRecordModel {
    enum CodingKeys: String, CodingKey {
        case id, parentID = "parent_id", name, score, existsInDatabase
    }

    static let tableName = "bench_child"
    var id: Int64
    var parentID: Int64
    var name: String
    var score: Double
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// Works on `DBManager`'s default database, with the models of one subject.
final class ModelDefSession<Model: BenchRecordModel, Parent: BenchParentRecordModel, Child: BenchChildRecordModel>: BenchSession {
    /// The models the `delete` workload deletes: an application deletes models it holds, so
    /// building them is not part of the timed work (built once, on the warm-up run).
    private var modelsToDelete: [Model] = []

    func close() async throws { DBManager.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        var checksum = Checksum()
        switch workload {
        case .insert, .update, .upsert:
            // An update saves models read from the database (existsInDatabase == true); an
            // upsert saves models made in code whose rows may exist (sModel's duplicate rules).
            let isUpdate = workload == .update
            let records = BenchData.records(count: spec.rows, generation: workload == .insert ? 0 : 1)
            var statements: [ModelStatement] = []
            statements.reserveCapacity(records.count)
            for record in records {
                statements.append(try Model(record, existsInDatabase: isUpdate).createSaveStatement())
                checksum.add(record)
            }
            try DBManager.executeStatements(statements)
        case .upsertBatch:
            // The insert-or-update call: one statement per chunk, the rows as stored returned.
            let records = BenchData.records(count: spec.rows, generation: 1)
            var models: [Model] = []
            models.reserveCapacity(records.count)
            for record in records { models.append(Model(record, existsInDatabase: false)) }
            for result in try Model.insertOrUpdate(models) { checksum.add(result.value.record) }
        case .delete:
            if modelsToDelete.count != spec.rows {
                modelsToDelete = BenchData.records(count: spec.rows).map { Model($0, existsInDatabase: true) }
            }
            var statements: [ModelStatement] = []
            statements.reserveCapacity(modelsToDelete.count)
            for model in modelsToDelete {
                statements.append(try model.createDeleteStatement())
                checksum.add(hash: UInt64(model.id))
            }
            try DBManager.executeStatements(statements)
        case .fetch:
            let models = try Model.allInstances(orderedBy: [.ascending("id")])
            for model in models { checksum.add(model.record) }
        case .stream:
            guard let database = DBManager.defaultDatabase else { throw BenchError("modeldef: no default database") }
            checksum = try await database.read { conn in
                let cursor = try conn.cursor(.select(SQLSelect(from: Model.tableName).orderBy(SQLExpression.column("id").asc)))
                return try Model.streamChecksum(cursor)
            }
        case .lookup:
            for index in 0..<spec.rows {
                let id = BenchData.lookupID(index, tableRows: spec.tableRows)
                guard let model = try Model.firstInstanceWhere("id = ?", id) else { throw BenchError("modeldef: no record \(id)") }
                checksum.add(model.record)
            }
        case .query:
            for index in 0..<spec.rows {
                let page = try Model.instances(
                    SQLSelect(from: Model.tableName)
                        .where(SQLExpression.column("score").greaterThanOrEquals(BenchData.queryLowerBound(index)))
                        .orderBy(SQLExpression.column("score").asc)
                        .limit(BenchData.queryLimit))
                for model in page { checksum.add(model.record) }
            }
        case .jsonFilter:
            // The flavor's query with a core condition (`instances(_:)` with a LIMIT, as in the
            // query workload: `instances(json:at:as:equals:orderedBy:)` has no limit).
            let document = SQLExpression.column(Model.DocumentModel.tableName, "doc")
            for index in 0..<spec.rows {
                let condition = spec.jsonContainment
                    ? document.jsonContains(json: JSONData.containmentJSON(tag: JSONData.tag(forQuery: index, tableRows: spec.tableRows)))
                    : document.jsonValue(at: JSONData.bucketPath, as: .integer)
                        .equals(JSONData.bucket(forQuery: index, tableRows: spec.tableRows))
                let page = try Model.DocumentModel.instances(
                    SQLSelect(from: Model.DocumentModel.tableName).where(condition).orderBy(SQLExpression.column("id").asc)
                        .limit(spec.jsonContainment ? nil : JSONData.limit))
                for model in page { checksum.add(BenchJSONRecord(id: model.id, doc: model.doc)) }
            }
        case .ftsQuery:
            // `matches` and `relevance` from the index, ties by id, with a LIMIT:
            // `search(_:in:limit:)` orders by relevance alone, so rows that rank alike at the
            // tenth place could come back in any order.
            let index = SearchData.index
            for (number, query) in SearchData.queries(spec).enumerated() {
                let page = try Model.TextModel.instances(
                    SQLSelect(from: Model.TextModel.tableName).where(index.matches(query.text))
                        .orderBy(index.relevance(query.text).desc, SQLExpression.column("id").asc)
                        .limit(SearchData.limit))
                for (position, model) in page.enumerated() {
                    checksum.add(search: BenchTextRecord(id: model.id, title: model.title, body: model.body), query: number, position: position)
                }
            }
        case .concurrent:
            throw BenchError("modeldef: no concurrent workload")
        case .oneToMany:
            // Two queries: every parent, every child; grouped by parent id in memory.
            let parents = try Parent.allInstances(orderedBy: [.ascending("id")])
            let children = try Child.allInstances()
            var childrenByParent: [Int64: [BenchChild]] = [:]
            for child in children {
                childrenByParent[child.parentID, default: []].append(
                    BenchChild(id: child.id, parentID: child.parentID, name: child.name, score: child.score))
            }
            for parent in parents {
                checksum.add(BenchParentWithChildren(
                    parent: BenchParent(id: parent.id, name: parent.name), children: childrenByParent[parent.id] ?? []))
            }
        }
        return WorkloadOutput(checksum: checksum)
    }
}
