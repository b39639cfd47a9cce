import DriverPostgres
import DriverSQLite
import Foundation
import Unity

/// `modeldef-gen`'s `query` workload written with Foundation's `#Predicate` and
/// `SortDescriptor` (`instances(matching:orderBy:limit:)`) instead of the flavor's own AST
/// filter: the cost of compiling a predicate to SQL on every call, beside `modeldef-gen`
/// in the same run. Only the `query` workload is measured.
struct ModelDefPredicateSubject: BenchSubject {
    let name = "modeldef-predicate"
    let backend: Backend

    func unsupportedReason(_ workload: Workload) -> String? {
        workload == .query ? nil : "only the query workload (#Predicate beside modeldef-gen's own filter)"
    }

    func openSession(_ target: BenchTarget) async throws -> any BenchSession {
        switch backend {
        case .sqlite:
            try DBManager.open(target.sqlitePath, dbDefFilePaths: [])
        case .postgres:
            guard let url = target.postgresURL else { throw BenchError("no PostgreSQL URL") }
            try DBManager.open(postgresURL: url, dbDefFilePaths: [], connections: 2)
        }
        return ModelDefPredicateSession()
    }
}

final class ModelDefPredicateSession: BenchSession {
    func close() async throws { DBManager.close() }

    func run(_ workload: Workload, spec: WorkloadSpec) async throws -> WorkloadOutput {
        guard workload == .query else { throw BenchError("modeldef-predicate: only the query workload") }
        var checksum = Checksum()
        let order = [SortDescriptor(\BenchGenModel.score)]
        for index in 0..<spec.rows {
            let lowerBound = BenchData.queryLowerBound(index)
            let page = try BenchGenModel.instances(matching: #Predicate { $0.score >= lowerBound }, orderBy: order,
                                                   limit: BenchData.queryLimit)
            for model in page { checksum.add(model.record) }
        }
        return WorkloadOutput(checksum: checksum)
    }
}
