import DriverPostgres
import DriverSQLite
import Foundation

/// Unity's SQL-first flavor, used as its README shows: `ModelDef` structs, `DBManager.open`
/// setting the default database, `createSaveStatement()` / `createDeleteStatement()` run by
/// `DBManager.executeStatements` (one transaction, multi-row INSERTs), `allInstances`,
/// `firstInstanceWhere`, `instances(_:)` for a query with a LIMIT. The flavor has no
/// association or streaming API, so one-to-many is two `allInstances` calls grouped in
/// memory, and streaming takes a core cursor and decodes each row with `RowDecoder`.
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
        return ModelDefSession()
    }
}

/// The `bench` table as a `ModelDef`.
struct BenchModel: ModelDef, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, name, score, createdAt = "created_at", rank, payload, existsInDatabase
    }

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
}

/// The `bench_parent` table as a `ModelDef`.
struct BenchParentModel: ModelDef {
    static let tableName = "bench_parent"
    var id: Int64
    var name: String
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_child` table as a `ModelDef`.
struct BenchChildModel: ModelDef {
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

/// Works on `DBManager`'s default database.
final class ModelDefSession: BenchSession {
    /// The models the `delete` workload deletes: an application deletes models it holds, so
    /// building them is not part of the timed work (built once, on the warm-up run).
    private var modelsToDelete: [BenchModel] = []

    func close() async throws { DBManager.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        var checksum = Checksum()
        switch workload {
        case .insert, .update:
            // An update saves models read from the database (existsInDatabase == true).
            let isUpdate = workload == .update
            let records = BenchData.records(count: spec.rows, generation: isUpdate ? 1 : 0)
            var statements: [ModelStatement] = []
            statements.reserveCapacity(records.count)
            for record in records {
                statements.append(try BenchModel(record, existsInDatabase: isUpdate).createSaveStatement())
                checksum.add(record)
            }
            try DBManager.executeStatements(statements)
        case .delete:
            if modelsToDelete.count != spec.rows {
                modelsToDelete = BenchData.records(count: spec.rows).map { BenchModel($0, existsInDatabase: true) }
            }
            var statements: [ModelStatement] = []
            statements.reserveCapacity(modelsToDelete.count)
            for model in modelsToDelete {
                statements.append(try model.createDeleteStatement())
                checksum.add(hash: UInt64(model.id))
            }
            try DBManager.executeStatements(statements)
        case .fetch:
            let models = try BenchModel.allInstances(orderedBy: [.ascending("id")])
            for model in models { checksum.add(model.record) }
        case .stream:
            guard let database = DBManager.defaultDatabase else { throw BenchError("modeldef: no default database") }
            checksum = try await database.read { conn in
                var checksum = Checksum()
                let decoder = RowDecoder(defaultValues: ["existsInDatabase": .bool(true)]).rowsDecoder(for: BenchModel.self)
                let cursor = try conn.cursor(.select(SQLSelect(from: BenchModel.tableName).orderBy(SQLExpression.column("id").asc)))
                while let row = try cursor.next() { checksum.add(try decoder.decode(row).record) }
                return checksum
            }
        case .lookup:
            for index in 0..<spec.rows {
                let id = BenchData.lookupID(index, tableRows: spec.tableRows)
                guard let model = try BenchModel.firstInstanceWhere("id = ?", id) else { throw BenchError("modeldef: no record \(id)") }
                checksum.add(model.record)
            }
        case .query:
            for index in 0..<spec.rows {
                let page = try BenchModel.instances(
                    SQLSelect(from: BenchModel.tableName)
                        .where(SQLExpression.column("score").greaterThanOrEquals(BenchData.queryLowerBound(index)))
                        .orderBy(SQLExpression.column("score").asc)
                        .limit(BenchData.queryLimit))
                for model in page { checksum.add(model.record) }
            }
        case .concurrent:
            throw BenchError("modeldef: no concurrent workload")
        case .oneToMany:
            // Two queries: every parent, every child; grouped by parent id in memory.
            let parents = try BenchParentModel.allInstances(orderedBy: [.ascending("id")])
            let children = try BenchChildModel.allInstances()
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
