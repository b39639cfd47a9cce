import Foundation
import Testing
import Unity

/// `DatabaseConfiguration.pipelinesConcurrentQueries`: async one-statement reads queued while
/// every connection is busy share one (a pipeline on PostgreSQL), and each caller still gets
/// exactly its own rows or its own error.
@Suite("Core: pipelined concurrent queries")
struct CorePipelinedQueryTests {
    static let configuration = DatabaseConfiguration(asyncThreads: 1, pipelinesConcurrentQueries: true)

    func makeTable(_ db: Database) async throws {
        try await db.execute(.createTable(SQLCreateTable("t", columns: [
            SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("name", .text),
        ])))
        try await db.write { conn in
            for id in 1...200 { try conn.execute(.insert(SQLInsert(into: "t", values: ["id": .integer(Int64(id)), "name": .text("n\(id)")]))) }
        }
    }

    static func lookup(_ id: Int) -> SQLStatement {
        .select(SQLSelect(from: "t").columns(.column("name")).where(SQLExpression.column("id").equals(id)))
    }

    /// `id / divisor` for one row: a division by zero fails on PostgreSQL (SQLite answers NULL).
    static func division(_ id: Int, by divisor: Int) -> SQLStatement {
        .select(SQLSelect(from: "t")
            .columns(.expression(.binary(.column("id"), .divide, .bind(.integer(Int64(divisor))))))
            .where(SQLExpression.column("id").equals(id)))
    }

    enum Outcome: Sendable, Equatable {
        case name(Int, String?)
        case names(Int, [String])
        case quotient(Int, divisor: Int, Int64?)
        case failed(Int)
    }

    @Test(.timeLimit(.minutes(2)), arguments: Backend.allCases)
    func concurrentQueriesEachGetTheirOwnRowsAndErrors(_ backend: Backend) async throws {
        try await withTestDatabase(backend, readers: 1, connections: 1, configuration: Self.configuration) { (db: Database) async throws in
            try await makeTable(db)
            // One connection and one thread for 64 tasks: queries queue up and share pipelines.
            let outcomes = try await withThrowingTaskGroup(of: [Outcome].self) { group -> [Outcome] in
                for task in 0..<64 {
                    group.addTask {
                        var outcomes: [Outcome] = []
                        for step in 0..<6 {
                            let id = 1 + (task * 7 + step * 13) % 200
                            switch (task + step) % 6 {
                            case 0:
                                // Fails on PostgreSQL, in the middle of whatever pipeline it joins.
                                do {
                                    let row = try await db.fetchOne(Self.division(id, by: 0))
                                    outcomes.append(.quotient(id, divisor: 0, try row?.decode(Int64?.self, at: 0)))
                                } catch is DatabaseError {
                                    outcomes.append(.failed(id))
                                }
                            case 1:
                                let rows = try await db.fetchAll(.select(SQLSelect(from: "t").columns(.column("name"))
                                    .where(SQLExpression.column("id").between(.bind(.integer(Int64(id))), and: .bind(.integer(Int64(id + 2))))).orderBy(SQLExpression.column("id").asc)))
                                outcomes.append(.names(id, try rows.map { try $0.decode(String.self, at: 0) }))
                            case 2:
                                let row = try await db.fetchOne(Self.division(id, by: 2))
                                outcomes.append(.quotient(id, divisor: 2, try row?.decode(Int64?.self, at: 0)))
                            default:
                                outcomes.append(.name(id, try await db.fetchOne(Self.lookup(id))?.decode(String.self, at: 0)))
                            }
                        }
                        return outcomes
                    }
                }
                var all: [Outcome] = []
                for try await part in group { all += part }
                return all
            }
            #expect(outcomes.count == 64 * 6)
            for outcome in outcomes {
                switch outcome {
                case .name(let id, let name):
                    #expect(name == "n\(id)")
                case .names(let id, let names):
                    #expect(names == (id...min(id + 2, 200)).map { "n\($0)" })
                case .quotient(let id, let divisor, let quotient):
                    // SQLite answers a division by zero with NULL; PostgreSQL's is `.failed`.
                    #expect(quotient == (divisor == 0 ? nil : Int64(id / divisor)))
                    #expect(divisor != 0 || backend == .sqlite)
                case .failed:
                    #expect(backend == .postgres)
                }
            }
            let failures = outcomes.filter { if case .failed = $0 { return true } else { return false } }.count
            let divisionsByZero = (0..<64).reduce(0) { sum, task in sum + (0..<6).filter { (task + $0) % 6 == 0 }.count }
            #expect(failures == (backend == .postgres ? divisionsByZero : 0))
            #expect(db.openConnectionCount == db.idleConnectionCount)
            #expect(try await db.fetchOne(Self.lookup(200))?.decode(String.self, at: 0) == "n200")
        }
    }

    /// The queries of a pipeline run after the COMMIT of a read that went before them on the
    /// connection (never inside its transaction), in the session's `READ COMMITTED`, and they
    /// did share pipelines: several saw the same transaction start (`now()`).
    @Test(.timeLimit(.minutes(2))) func postgresPipelinesRunOutsideTheReadsBesideThem() async throws {
        try await withTestDatabase(.postgres, connections: 1, configuration: Self.configuration) { (db: Database) async throws in
            try await makeTable(db)
            enum Seen: Sendable, Equatable {
                case query(isolation: String, readOnly: String, transactionStart: Date)
                case read(isolation: String, readOnly: String)
            }
            let settings = SQLSelect(from: "t").columns(
                .expression(.function(name: "current_setting", arguments: [.bind(.text("transaction_isolation"))], distinct: false)),
                .expression(.function(name: "current_setting", arguments: [.bind(.text("transaction_read_only"))], distinct: false)),
                .expression(.function(name: "now", arguments: [], distinct: false))
            ).where(SQLExpression.column("id").equals(1))
            let seen = try await withThrowingTaskGroup(of: [Seen].self) { group -> [Seen] in
                for task in 0..<64 {
                    group.addTask {
                        var seen: [Seen] = []
                        for step in 0..<4 {
                            if (task + step) % 4 == 0 {
                                seen.append(try await db.read { conn -> Seen in
                                    .read(isolation: try conn.fetchValue(String.self, sql: "SHOW transaction_isolation") ?? "?",
                                          readOnly: try conn.fetchValue(String.self, sql: "SHOW transaction_read_only") ?? "?")
                                })
                            } else {
                                guard let row = try await db.fetchOne(.select(settings)) else { throw DatabaseError.misuse("no row") }
                                seen.append(.query(isolation: try row.decode(String.self, at: 0), readOnly: try row.decode(String.self, at: 1),
                                                   transactionStart: try row.decode(Date.self, at: 2)))
                            }
                        }
                        return seen
                    }
                }
                var all: [Seen] = []
                for try await part in group { all += part }
                return all
            }
            #expect(seen.count == 256)
            var starts: [Date] = []
            for entry in seen {
                switch entry {
                case .query(let isolation, let readOnly, let start):
                    #expect(isolation == "read committed")
                    #expect(readOnly == "off")
                    starts.append(start)
                case .read(let isolation, let readOnly):
                    #expect(isolation == "repeatable read")
                    #expect(readOnly == "on")
                }
            }
            #expect(starts.count == 192)
            #expect(Set(starts).count < starts.count, "no two queries shared a pipeline")
            #expect(try await db.withConnection { $0.isInTransaction } == false)
            #expect(db.openConnectionCount == db.idleConnectionCount)
        }
    }

    /// A pipeline whose prepared statements the server lost (`DEALLOCATE ALL` run where the
    /// driver cannot see it, inside a function) prepares them again and answers every query.
    @Test(.timeLimit(.minutes(2))) func aPostgresPipelineRecoversPreparedStatementsTheServerLost() async throws {
        try await withTestDatabase(.postgres, connections: 1, configuration: Self.configuration) { (db: Database) async throws in
            try await makeTable(db)
            try await db.execute(sql: """
                CREATE FUNCTION forget_prepared() RETURNS int LANGUAGE plpgsql AS $$
                BEGIN EXECUTE 'DEALLOCATE ALL'; RETURN 1; END $$
                """)
            // Prepares the lookup on the one connection.
            #expect(try await db.fetchOne(Self.lookup(1))?.decode(String.self, at: 0) == "n1")
            // Holds the one thread while the lookups queue up behind it, after the server
            // dropped every statement the connection had prepared.
            let blocker = Task {
                try await db.withConnection { conn in
                    _ = try conn.fetchOne(sql: "SELECT forget_prepared()")
                    Thread.sleep(forTimeInterval: 0.3)
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            let names = try await withThrowingTaskGroup(of: (Int, String?).self) { group -> [(Int, String?)] in
                for id in 1...40 {
                    group.addTask { (id, try await db.fetchOne(Self.lookup(id))?.decode(String.self, at: 0)) }
                }
                var all: [(Int, String?)] = []
                for try await pair in group { all.append(pair) }
                return all
            }
            try await blocker.value
            #expect(names.count == 40)
            for (id, name) in names { #expect(name == "n\(id)") }
            let prepared = try await db.withConnection { conn in
                try conn.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM pg_prepared_statements WHERE statement LIKE '%\"t\"%'")
            }
            #expect((prepared ?? 0) > 0)
        }
    }
}
