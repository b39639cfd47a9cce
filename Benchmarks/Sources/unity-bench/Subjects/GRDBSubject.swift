import Foundation
import GRDB

/// GRDB 7, the SQLite peer, used the way its documentation shows: `Codable` records with
/// `FetchableRecord & PersistableRecord`, a `DatabasePool` (WAL), the query interface, and
/// `including(all:)` for the one-to-many workload (GRDB runs it as one query for the parents
/// plus one `IN` batch for the children).
struct GRDBSubject: BenchSubject {
    let name = "grdb"
    let backend = Backend.sqlite

    func unsupportedReason(_ workload: Workload) -> String? {
        switch workload {
        case .upsert: return "the upsert workload measures the SQL-first flavor's duplicate rules"
        case .upsertBatch: return "upsert-batch measures Unity's insert-or-update calls"
        case .jsonFilter, .ftsQuery: return "not written for this peer yet: \(workload.rawValue) compares Unity with raw"
        default: return nil
        }
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // The same durability every SQLite subject uses.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        return GRDBSession(pool: try DatabasePool(path: target.sqlitePath, configuration: configuration))
    }
}

extension BenchRecord: FetchableRecord, PersistableRecord {
    /// The table GRDB reads and writes.
    static let databaseTableName = "bench"
}

extension BenchParent: FetchableRecord, TableRecord {
    /// The table GRDB reads.
    static let databaseTableName = "bench_parent"
    /// The parent's children.
    static var children: HasManyAssociation<BenchParent, BenchChild> {
        hasMany(BenchChild.self, key: "children", using: ForeignKey(["parent_id"]))
    }
}

extension BenchChild: FetchableRecord, TableRecord {
    /// The table GRDB reads.
    static let databaseTableName = "bench_child"
}

/// A parent with its children, decoded by GRDB from `including(all:)`.
struct GRDBParentInfo: Decodable, FetchableRecord, Sendable {
    /// The parent.
    var parent: BenchParent
    /// Its children.
    var children: [BenchChild]
}

/// One `DatabasePool`.
final class GRDBSession: BenchSession {
    private let pool: DatabasePool

    init(pool: DatabasePool) { self.pool = pool }

    func close() async throws { try pool.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        let rows = spec.rows
        let tableRows = spec.tableRows
        let checksum: Checksum
        switch workload {
        case .upsert, .upsertBatch:
            throw BenchError("grdb: no \(workload.rawValue) workload")
        case .insert, .update:
            let records = BenchData.records(count: rows, generation: workload == .update ? 1 : 0)
            checksum = try await pool.write { db in
                var checksum = Checksum()
                for record in records {
                    if workload == .insert { try record.insert(db) } else { try record.update(db) }
                    checksum.add(record)
                }
                return checksum
            }
        case .delete:
            checksum = try await pool.write { db in
                var checksum = Checksum()
                for id in 1...Int64(rows) {
                    guard try BenchRecord.deleteOne(db, key: id) else { throw BenchError("grdb: nothing deleted for \(id)") }
                    checksum.add(hash: UInt64(id))
                }
                return checksum
            }
        case .fetch:
            let records = try await pool.read { db in try BenchRecord.order(Column("id")).fetchAll(db) }
            var sum = Checksum()
            for record in records { sum.add(record) }
            checksum = sum
        case .stream:
            checksum = try await pool.read { db in
                var checksum = Checksum()
                let cursor = try BenchRecord.order(Column("id")).fetchCursor(db)
                while let record = try cursor.next() { checksum.add(record) }
                return checksum
            }
        case .lookup:
            checksum = try await pool.read { db in
                var checksum = Checksum()
                for index in 0..<rows {
                    let id = BenchData.lookupID(index, tableRows: tableRows)
                    guard let record = try BenchRecord.fetchOne(db, key: id) else { throw BenchError("grdb: no record \(id)") }
                    checksum.add(record)
                }
                return checksum
            }
        case .query:
            checksum = try await pool.read { db in
                var checksum = Checksum()
                for index in 0..<rows {
                    let page = try BenchRecord
                        .filter(Column("score") >= BenchData.queryLowerBound(index))
                        .order(Column("score"))
                        .limit(BenchData.queryLimit)
                        .fetchAll(db)
                    for record in page { checksum.add(record) }
                }
                return checksum
            }
        case .concurrent, .jsonFilter, .ftsQuery:
            throw BenchError("grdb: no \(workload.rawValue) workload")
        case .oneToMany:
            let infos = try await pool.read { db in
                try BenchParent.including(all: BenchParent.children).asRequest(of: GRDBParentInfo.self).fetchAll(db)
            }
            var sum = Checksum()
            for info in infos { sum.add(BenchParentWithChildren(parent: info.parent, children: info.children)) }
            checksum = sum
        }
        return WorkloadOutput(checksum: checksum)
    }
}
