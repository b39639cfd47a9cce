import DriverPostgres
import DriverSQLite
import Foundation
import Unity

/// `modeldef` with generated row coding: the same workloads, the same calls, on models with the
/// `RowDecodable`/`RowEncodable` conformance that `@RowCoded` generates. `ModelDef` uses that
/// code for fetches, saves and batches; streaming decodes with a core `RowReader`.
///
/// The conformances below are the macro's expansion written out (the expansion tests in
/// Tests/UnityMacrosTests show the same shape), so that this release build does not compile
/// swift-syntax: building it in release took over 20 minutes on the 2-core CI machine. Same
/// code, same speed; the macro itself is tested on both backends by ModelDefGeneratedCodingTests.
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

/// The `bench` table as a `ModelDef` with generated row coding.
struct BenchGenModel: BenchRecordModel, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, name, score, createdAt = "created_at", rank, payload, existsInDatabase
    }
    typealias DocumentModel = BenchGenJSONModel
    typealias TextModel = BenchGenTextModel

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
    static func streamChecksum(_ cursor: RowCursor) throws -> Checksum {
        var reader = RowReader<BenchGenModel>()
        var checksum = Checksum()
        while let row = try cursor.next() { checksum.add(try reader.decode(row).record) }
        return checksum
    }
}

/// The `bench_json` table as a `ModelDef` with generated row coding.
struct BenchGenJSONModel: BenchJSONRecordModel {
    static let tableName = "bench_json"
    var id: Int64
    var doc: BenchDocument
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_text` table as a `ModelDef` with generated row coding.
struct BenchGenTextModel: BenchTextRecordModel {
    static let tableName = "bench_text"
    var id: Int64
    var title: String
    var body: String
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_parent` table as a `ModelDef` with generated row coding.
struct BenchGenParentModel: BenchParentRecordModel {
    static let tableName = "bench_parent"
    var id: Int64
    var name: String
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

/// The `bench_child` table as a `ModelDef` with generated row coding.
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

// What `@RowCoded` expands to for the three models above.

extension BenchGenModel: RowDecodable, RowEncodable {
    static let decodingColumns: [String] = ["id", "name", "score", "created_at", "rank", "payload", "existsInDatabase"]
    static let encodingColumns: [String] = ["id", "name", "score", "created_at", "rank", "payload"]
    init(row: borrowing Row, columns: borrowing RowColumns) throws {
        self.id = try columns.decode(0, from: row)
        self.name = try columns.decode(1, from: row)
        self.score = try columns.decode(2, from: row)
        self.createdAt = try columns.decode(3, from: row)
        self.rank = try columns.decodeIfPresent(4, from: row)
        self.payload = try columns.decode(5, from: row)
        self.existsInDatabase = try columns.decodeIfColumn(6, from: row) ?? true
    }
    func encodeRow(to values: inout [DatabaseValue]) throws {
        values.append(try RowCoding.value(self.id))
        values.append(try RowCoding.value(self.name))
        values.append(try RowCoding.value(self.score))
        values.append(try RowCoding.value(self.createdAt))
        values.append(try RowCoding.valueIfPresent(self.rank))
        values.append(try RowCoding.value(self.payload))
    }
    func databaseValue(forColumn name: String) throws -> DatabaseValue? {
        switch name {
        case "id": return try RowCoding.value(self.id)
        case "name": return try RowCoding.value(self.name)
        case "score": return try RowCoding.value(self.score)
        case "created_at": return try RowCoding.value(self.createdAt)
        case "rank": return try RowCoding.valueIfPresent(self.rank)
        case "payload": return try RowCoding.value(self.payload)
        default: return nil
        }
    }
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
        if keyPath == \Self.id { return "id" }
        if keyPath == \Self.name { return "name" }
        if keyPath == \Self.score { return "score" }
        if keyPath == \Self.createdAt { return "created_at" }
        if keyPath == \Self.rank { return "rank" }
        if keyPath == \Self.payload { return "payload" }
        if keyPath == \Self.existsInDatabase { return "existsInDatabase" }
        return nil
    }
}

extension BenchGenParentModel: RowDecodable, RowEncodable {
    static let decodingColumns: [String] = ["id", "name", "existsInDatabase"]
    static let encodingColumns: [String] = ["id", "name"]
    init(row: borrowing Row, columns: borrowing RowColumns) throws {
        self.id = try columns.decode(0, from: row)
        self.name = try columns.decode(1, from: row)
        self.existsInDatabase = try columns.decodeIfColumn(2, from: row) ?? true
    }
    func encodeRow(to values: inout [DatabaseValue]) throws {
        values.append(try RowCoding.value(self.id))
        values.append(try RowCoding.value(self.name))
    }
    func databaseValue(forColumn name: String) throws -> DatabaseValue? {
        switch name {
        case "id": return try RowCoding.value(self.id)
        case "name": return try RowCoding.value(self.name)
        default: return nil
        }
    }
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
        if keyPath == \Self.id { return "id" }
        if keyPath == \Self.name { return "name" }
        if keyPath == \Self.existsInDatabase { return "existsInDatabase" }
        return nil
    }
}

extension BenchGenChildModel: RowDecodable, RowEncodable {
    static let decodingColumns: [String] = ["id", "parent_id", "name", "score", "existsInDatabase"]
    static let encodingColumns: [String] = ["id", "parent_id", "name", "score"]
    init(row: borrowing Row, columns: borrowing RowColumns) throws {
        self.id = try columns.decode(0, from: row)
        self.parentID = try columns.decode(1, from: row)
        self.name = try columns.decode(2, from: row)
        self.score = try columns.decode(3, from: row)
        self.existsInDatabase = try columns.decodeIfColumn(4, from: row) ?? true
    }
    func encodeRow(to values: inout [DatabaseValue]) throws {
        values.append(try RowCoding.value(self.id))
        values.append(try RowCoding.value(self.parentID))
        values.append(try RowCoding.value(self.name))
        values.append(try RowCoding.value(self.score))
    }
    func databaseValue(forColumn name: String) throws -> DatabaseValue? {
        switch name {
        case "id": return try RowCoding.value(self.id)
        case "parent_id": return try RowCoding.value(self.parentID)
        case "name": return try RowCoding.value(self.name)
        case "score": return try RowCoding.value(self.score)
        default: return nil
        }
    }
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
        if keyPath == \Self.id { return "id" }
        if keyPath == \Self.parentID { return "parent_id" }
        if keyPath == \Self.name { return "name" }
        if keyPath == \Self.score { return "score" }
        if keyPath == \Self.existsInDatabase { return "existsInDatabase" }
        return nil
    }
}

extension BenchGenJSONModel: RowDecodable, RowEncodable {
    static let decodingColumns: [String] = ["id", "doc", "existsInDatabase"]
    static let encodingColumns: [String] = ["id", "doc"]
    init(row: borrowing Row, columns: borrowing RowColumns) throws {
        self.id = try columns.decode(0, from: row)
        self.doc = try columns.decode(1, from: row)
        self.existsInDatabase = try columns.decodeIfColumn(2, from: row) ?? true
    }
    func encodeRow(to values: inout [DatabaseValue]) throws {
        values.append(try RowCoding.value(self.id))
        values.append(try RowCoding.value(self.doc))
    }
    func databaseValue(forColumn name: String) throws -> DatabaseValue? {
        switch name {
        case "id": return try RowCoding.value(self.id)
        case "doc": return try RowCoding.value(self.doc)
        default: return nil
        }
    }
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
        if keyPath == \Self.id { return "id" }
        if keyPath == \Self.doc { return "doc" }
        if keyPath == \Self.existsInDatabase { return "existsInDatabase" }
        return nil
    }
}

extension BenchGenTextModel: RowDecodable, RowEncodable {
    static let decodingColumns: [String] = ["id", "title", "body", "existsInDatabase"]
    static let encodingColumns: [String] = ["id", "title", "body"]
    init(row: borrowing Row, columns: borrowing RowColumns) throws {
        self.id = try columns.decode(0, from: row)
        self.title = try columns.decode(1, from: row)
        self.body = try columns.decode(2, from: row)
        self.existsInDatabase = try columns.decodeIfColumn(3, from: row) ?? true
    }
    func encodeRow(to values: inout [DatabaseValue]) throws {
        values.append(try RowCoding.value(self.id))
        values.append(try RowCoding.value(self.title))
        values.append(try RowCoding.value(self.body))
    }
    func databaseValue(forColumn name: String) throws -> DatabaseValue? {
        switch name {
        case "id": return try RowCoding.value(self.id)
        case "title": return try RowCoding.value(self.title)
        case "body": return try RowCoding.value(self.body)
        default: return nil
        }
    }
    static func columnName(for keyPath: PartialKeyPath<Self>) -> String? {
        if keyPath == \Self.id { return "id" }
        if keyPath == \Self.title { return "title" }
        if keyPath == \Self.body { return "body" }
        if keyPath == \Self.existsInDatabase { return "existsInDatabase" }
        return nil
    }
}
