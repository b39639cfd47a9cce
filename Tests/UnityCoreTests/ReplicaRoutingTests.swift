import Foundation
import Testing
@testable import Unity

/// The core's replica routing against scripted fake servers: which server each call reaches,
/// when a commit's position is asked for, and when a replica may serve.
@Suite("Replica routing (core)")
struct ReplicaRoutingTests {
    /// One fake server: what its connections ran, and the replication position it reports.
    final class FakeServer: @unchecked Sendable {
        let name: String
        private let lock = NSLock()
        private var _log: [String] = []
        private var _position: UInt64
        private var _down = false
        private var _commitsReportingPosition = 0

        init(name: String, position: UInt64) {
            self.name = name
            _position = position
        }

        var log: [String] { lock.withLock { _log } }
        var position: UInt64 {
            get { lock.withLock { _position } }
            set { lock.withLock { _position = newValue } }
        }
        var down: Bool {
            get { lock.withLock { _down } }
            set { lock.withLock { _down = newValue } }
        }
        var commitsReportingPosition: Int { lock.withLock { _commitsReportingPosition } }
        func record(_ sql: String) { lock.withLock { _log.append(sql) } }
        func recordCommitReportingPosition() -> UInt64 {
            lock.withLock {
                _commitsReportingPosition += 1
                _position += 100
                return _position
            }
        }
        func clearLog() { lock.withLock { _log.removeAll() } }
    }

    final class FakeConnection: DriverConnection {
        let server: FakeServer
        private var status = DriverTransactionStatus.idle
        private var closed = false
        init(_ server: FakeServer) { self.server = server }

        func execute(_ sql: String, bindings: [DatabaseValue], onRow: ((Row) throws -> Void)?) throws -> Int {
            guard !server.down else {
                closed = true
                throw DatabaseError.connectionLost(DatabaseErrorContext(message: "\(server.name) is down", sql: sql))
            }
            server.record(sql)
            if sql.hasPrefix("BEGIN") { status = .active }
            if sql == "COMMIT" || sql == "ROLLBACK" { status = .idle }
            if let onRow {
                try onRow(Row(layout: RowLayout(columnNames: ["server"]), values: [.text(server.name)]))
            }
            return 0
        }
        func executeBatch(_ sql: String, bindingSets: [[DatabaseValue]]) throws -> Int { 0 }
        func openCursor(_ sql: String, bindings: [DatabaseValue]) throws -> any DriverCursor {
            throw DatabaseError.misuse("no cursors here")
        }
        func executeScript(_ sql: String) throws {}
        var transactionStatus: DriverTransactionStatus { status }
        var isUsable: Bool { !closed }
        func makeInterrupter() -> @Sendable () -> Void { {} }
        func close() { closed = true }

        func commitReportingPosition(_ sql: String) throws -> UInt64? {
            _ = try execute(sql, bindings: [], onRow: nil)
            return server.recordCommitReportingPosition()
        }
        func replicationPosition() throws -> UInt64? {
            guard !server.down else { throw DatabaseError.connectionLost(DatabaseErrorContext(message: "\(server.name) is down")) }
            return server.position
        }
    }

    struct FakeDriver: DatabaseDriver {
        let server: FakeServer
        let replicaServers: [FakeServer]
        var dialect: SQLDialect { .postgres }
        var poolShape: PoolShape { .uniform(connections: 2) }
        func connect(role: ConnectionRole) throws -> any DriverConnection {
            guard !server.down else { throw DatabaseError.connectionFailed(DatabaseErrorContext(message: "\(server.name) is down")) }
            return FakeConnection(server)
        }
        var replicas: [any DatabaseDriver] { replicaServers.map { FakeDriver(server: $0, replicaServers: []) } }
    }

    static let select = SQLStatement.select(SQLSelect(from: "t").columns(.expression(.column("x"))))

    /// The server that answered a read (each fake row names it).
    static func server(of row: Row?) -> String? {
        if case .text(let name)? = row?[0] { return name }
        return nil
    }

    static func waitUntil(_ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }

    @Test func withoutReplicasACommitIsJustACommit() throws {
        let primary = FakeServer(name: "primary", position: 0)
        let db = try Database(driver: FakeDriver(server: primary, replicaServers: []))
        defer { db.close() }
        try db.write { try $0.execute(sql: "INSERT INTO t VALUES (1)") }
        try db.withConnection { try $0.execute(sql: "INSERT INTO t VALUES (2)") }
        #expect(primary.commitsReportingPosition == 0)
        #expect(primary.log == ["BEGIN", "INSERT INTO t VALUES (1)", "COMMIT", "INSERT INTO t VALUES (2)"])
        #expect(db.servingReplicas.isEmpty)
    }

    @Test func readsWaitForAReplicaThatHasReplayedTheLastCommit() throws {
        let primary = FakeServer(name: "primary", position: 1_000)
        let replica = FakeServer(name: "replica", position: 1_000)
        let db = try Database(driver: FakeDriver(server: primary, replicaServers: [replica]),
                              configuration: DatabaseConfiguration(replicaCheckInterval: 0.005, maxReplicaLag: 60))
        defer { db.close() }
        #expect(Self.waitUntil { db.servingReplicas == [0] })
        // Nothing written yet by this database: the replica serves.
        #expect(Self.server(of: try db.fetchOne(Self.select)) == "replica")
        #expect(Self.server(of: try db.read { try $0.fetchOne(Self.select) }) == "replica")
        // Raw SQL outside read {}, read(.primary) and writes: the primary.
        #expect(Self.server(of: try db.fetchOne(sql: "SELECT x FROM t")) == "primary")
        #expect(Self.server(of: try db.read(.primary) { try $0.fetchOne(Self.select) }) == "primary")
        #expect(Self.server(of: try db.write { try $0.fetchOne(Self.select) }) == "primary")

        // A write: its COMMIT reports the primary's next position, which the replica has not
        // replayed (the write above was the first such commit).
        #expect(primary.commitsReportingPosition == 1)
        try db.write { try $0.execute(sql: "INSERT INTO t VALUES (1)") }
        #expect(primary.commitsReportingPosition == 2)
        let committed = primary.position
        #expect(committed == 1_200)
        #expect(primary.log.suffix(3) == ["BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"])
        for _ in 0..<5 {
            #expect(Self.server(of: try db.fetchOne(Self.select)) == "primary")
            #expect(Self.server(of: try db.read { try $0.fetchOne(Self.select) }) == "primary")
            usleep(10_000)
        }
        // One short of it is not enough; reaching it is.
        replica.position = committed - 1
        let rounds = db.replicaSet!.completedRounds
        #expect(Self.waitUntil { db.replicaSet!.completedRounds >= rounds + 2 })
        #expect(Self.server(of: try db.fetchOne(Self.select)) == "primary")
        replica.position = committed
        #expect(Self.waitUntil { Self.server(of: try? db.fetchOne(Self.select)) == "replica" })

        // A statement that committed by itself on a writer is tracked too (one position query).
        primary.position = 5_000
        try db.withConnection { try $0.execute(sql: "INSERT INTO u VALUES (1)") }
        #expect(Self.server(of: try db.fetchOne(Self.select)) == "primary")
    }

    @Test func aLaggingReplicaIsLeftOutAndABrokenOneFallsBackToThePrimary() throws {
        let primary = FakeServer(name: "primary", position: 1_000)
        let replica = FakeServer(name: "replica", position: 1_000)
        let db = try Database(driver: FakeDriver(server: primary, replicaServers: [replica]),
                              configuration: DatabaseConfiguration(replicaCheckInterval: 0.005, maxReplicaLag: 0.2))
        defer { db.close() }
        #expect(Self.waitUntil { db.servingReplicas == [0] })
        try db.write { try $0.execute(sql: "INSERT INTO t VALUES (1)") }
        // Behind this database's commit for longer than the bound: left out.
        #expect(Self.waitUntil { db.servingReplicas.isEmpty })
        replica.position = 1_100
        #expect(Self.waitUntil { db.servingReplicas == [0] })
        #expect(Self.server(of: try db.fetchOne(Self.select)) == "replica")

        // The replica goes down between checks: a one-statement read that meets the loss is
        // sent once to the primary; a read {} closure is not run again.
        _ = try db.fetchOne(Self.select)
        replica.down = true
        #expect(Self.server(of: try db.fetchOne(Self.select)) == "primary")
        #expect(Self.waitUntil { db.servingReplicas.isEmpty })
        replica.down = false
        #expect(Self.waitUntil { db.servingReplicas == [0] })
        _ = try db.read { try $0.fetchOne(Self.select) }
        var runs = 0
        var thrown: Error?
        do {
            _ = try db.read { conn in
                runs += 1
                replica.down = true
                return try conn.fetchOne(Self.select)
            }
        } catch {
            thrown = error
        }
        #expect(runs == 1)
        guard case .connectionLost(let context)? = thrown as? DatabaseError else {
            Issue.record("expected connectionLost, got \(String(describing: thrown))")
            return
        }
        #expect(context.commitState == .notCommitted)
        #expect(Self.waitUntil { db.servingReplicas.isEmpty })
        // With the replica left out, read {} goes to the primary.
        #expect(Self.server(of: try db.read { try $0.fetchOne(Self.select) }) == "primary")
    }
}
