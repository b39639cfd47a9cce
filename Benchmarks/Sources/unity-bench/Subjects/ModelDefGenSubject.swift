import DriverPostgres
import DriverSQLite
import Foundation
import UnityRowCoding

/// `modeldef` with generated row coding: the same workloads, the same calls, on `@RowCoded`
/// models (the seed's `struct Thing: ModelDef` plus one attribute). `ModelDef` uses the
/// generated code for fetches, saves and batches; streaming decodes with a core `RowReader`.
struct ModelDefGenSubject: BenchSubject {
    let name = "modeldef-gen"
    let backend: Backend

    func unsupportedReason(_ workload: Workload) -> String? { nil }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        switch backend {
        case .sqlite:
            try DBManager.open(target.sqlitePath, dbDefFilePaths: [])
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            try DBManager.open(postgresURL: url, dbDefFilePaths: [], connections: 2)
        }
        return ModelDefSession<BenchGenModel, BenchGenParentModel, BenchGenChildModel>()
    }
}

/// The `bench` table as a `@RowCoded` `ModelDef`.
@RowCoded
struct BenchGenModel: BenchRecordModel, Equatable {
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

    /// Generated coding through a `RowReader`: columns resolved once for the cursor.
    static func streamDecoder() -> (Row) throws -> BenchGenModel {
        var reader = RowReader<BenchGenModel>()
        return { try reader.decode($0) }
    }
}

/// The `bench_parent` table as a `@RowCoded` `ModelDef`.
@RowCoded
struct BenchGenParentModel: BenchParentRecordModel {
    static let tableName = "bench_parent"
    var id: Int64
    var name: String
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_child` table as a `@RowCoded` `ModelDef`.
@RowCoded
struct BenchGenChildModel: BenchChildRecordModel {
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
