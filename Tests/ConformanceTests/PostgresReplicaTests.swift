import DriverPostgres
import Foundation
import Testing
import Unity
import UnityORM
import UnityPersistable

/// Read replicas on a real streaming standby (the replica pair scripts/with-postgres starts
/// with UNITY_PG_CLUSTERS=1): writes and raw SQL go to the primary, `read { }` and AST
/// SELECTs to the standby once it has replayed the database's last commit, a lagging or
/// stopped standby is skipped and comes back. Serialized: some tests pause or stop the
/// standby, which the others read from.
@Suite("PostgreSQL read replicas", .serialized, .enabled(if: PostgresClusters.replicaSuiteEnabled, PostgresClusters.missingMessage))
struct PostgresReplicaTests {
    struct Cluster {
        let primary: String
        let standby: String
        let standbyData: String
    }

    static func cluster() throws -> Cluster {
        Cluster(primary: try PostgresClusters.require(PostgresClusters.replicaPrimaryURL, "UNITY_PG_REPLICA_PRIMARY_URL"),
                standby: try PostgresClusters.require(PostgresClusters.replicaStandbyURL, "UNITY_PG_REPLICA_STANDBY_URL"),
                standbyData: try PostgresClusters.require(PostgresClusters.replicaStandbyData, "UNITY_PG_REPLICA_STANDBY_DATA"))
    }

    /// A database on the pair, in `schema`, that checks the standby every 20 ms.
    static func routedDatabase(_ cluster: Cluster, schema: String, maxReplicaLag: Double = 5) throws -> Database {
        try Database(driver: PostgresDriver(primary: cluster.primary, replicas: [cluster.standby], connections: 4, searchPath: schema),
                     configuration: DatabaseConfiguration(checkoutTimeout: 30, replicaCheckInterval: 0.02, maxReplicaLag: maxReplicaLag))
    }

    /// Runs `body` with a fresh schema on the pair (made on the primary) and a routed
    /// database in it, and drops both afterwards.
    static func withReplicatedDatabase<T>(maxReplicaLag: Double = 5, _ body: (Database, Cluster, String) throws -> T) throws -> T {
        let cluster = try cluster()
        let schema = try PostgresClusters.makeSchema(on: cluster.primary)
        defer { PostgresClusters.dropSchema(schema, on: cluster.primary) }
        let db = try routedDatabase(cluster, schema: schema, maxReplicaLag: maxReplicaLag)
        defer { db.close() }
        return try body(db, cluster, schema)
    }

    /// True when a `read { }` of `db` ran on the standby.
    static func readRunsOnReplica(_ db: Database) throws -> Bool {
        try db.read { try $0.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") } == true
    }

    /// The standby's replay, paused or resumed (a superuser's function, run on the standby).
    static func setReplayPaused(_ paused: Bool, _ cluster: Cluster) throws {
        let standby = try Database(driver: PostgresDriver(cluster.standby, connections: 1))
        defer { standby.close() }
        try standby.withConnection { conn in
            _ = try conn.fetchOne(sql: paused ? "SELECT pg_wal_replay_pause()" : "SELECT pg_wal_replay_resume()")
        }
        let state = paused ? "paused" : "not paused"
        let reached = try PostgresClusters.waitUntil(timeout: 10) {
            try standby.withConnection { try $0.fetchValue(String.self, sql: "SELECT pg_get_wal_replay_pause_state()") } == state
        }
        #expect(reached, "the standby's replay did not become \(state)")
    }

    /// The synchronous calls, out of the async test (where the async overloads win).
    static func syncPrimaryRead(_ db: Database) throws -> Bool? {
        try db.read(.primary) { try $0.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") }
    }

    static func syncRawFetch(_ db: Database) throws -> DatabaseValue? {
        try db.fetchOne(sql: "SELECT pg_is_in_recovery()")?[0]
    }

    static func syncReadInsideWrite(_ db: Database) throws -> Bool? {
        try db.write { _ in try db.read { try $0.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") } }
    }

    static func selectNameAndRecovery(_ table: String, id: Int) -> SQLStatement {
        .select(SQLSelect(from: table)
            .columns(.expression(.column("name")), .expression(.function("pg_is_in_recovery")))
            .where(.column("id").equals(.bind(.integer(Int64(id))))))
    }

    @Test func readsGoToTheReplicaAndWritesAndRawSQLToThePrimary() async throws {
        try await Self.withReplicatedDatabaseAsync { db, _, _ in
            try await db.write { try $0.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)") }
            try await db.write { try $0.execute(sql: "INSERT INTO items (id, name) VALUES (?, ?)", [.integer(1), .text("alpha")]) }
            // The standby replays the commit within the checks' interval.
            let served = try PostgresClusters.waitUntil(timeout: 20) { try Self.readRunsOnReplica(db) }
            #expect(served, "no read {} ran on the replica within 20 s")
            #expect(db.servingReplicas == [0])

            // read {} and the one-statement AST reads: the replica, which has the row.
            let inRead = try await db.read { try $0.fetchOne(sql: "SELECT name, pg_is_in_recovery() FROM items WHERE id = ?", [.integer(1)]) }
            #expect(inRead?[0] == .text("alpha"))
            #expect(inRead?[1] == .bool(true))
            let ast = try await db.fetchOne(Self.selectNameAndRecovery("items", id: 1))
            #expect(ast?[0] == .text("alpha"))
            #expect(ast?[1] == .bool(true))
            let astAsync = try await db.fetchAll(Self.selectNameAndRecovery("items", id: 1))
            #expect(astAsync.first?[1] == .bool(true))

            // The primary: read(.primary), raw SQL outside read {}, write {}.
            #expect(try Self.syncPrimaryRead(db) == false)
            #expect(try await db.read(.primary) { try $0.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") } == false)
            #expect(try Self.syncRawFetch(db) == .bool(false))
            #expect(try await db.fetchOne(sql: "SELECT pg_is_in_recovery()")?[0] == .bool(false))
            #expect(try await db.write { try $0.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") } == false)
            // A read inside a write reads the write's own connection, on the primary.
            #expect(try Self.syncReadInsideWrite(db) == false)
        }
    }

    @Test func aReadRightAfterAWriteSeesIt() throws {
        try Self.withReplicatedDatabase { db, _, _ in
            try db.write { try $0.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)") }
            let count = SQLStatement.select(SQLSelect(from: "items").columns(.expression(.countAll)))
            for i in 1...40 {
                try db.write { try $0.execute(sql: "INSERT INTO items (id, name) VALUES (?, ?)", [.integer(Int64(i)), .text("n\(i)")]) }
                // Read at once, on whichever server the routing picks: it must see the row.
                #expect(try db.fetchOne(count)?[0] == .integer(Int64(i)), "AST read after write \(i)")
                #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM items") } == i, "read {} after write \(i)")
            }
            // And once the standby has replayed the last commit it serves the reads, fresh.
            let served = try PostgresClusters.waitUntil(timeout: 20) { try Self.readRunsOnReplica(db) }
            #expect(served)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM items WHERE pg_is_in_recovery()") } == 40)
        }
    }

    @Test func aLaggingReplicaIsSkippedAndComesBack() throws {
        try Self.withReplicatedDatabase(maxReplicaLag: 0.5) { db, cluster, _ in
            try db.write { try $0.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)") }
            #expect(try PostgresClusters.waitUntil(timeout: 20) { try Self.readRunsOnReplica(db) })
            try Self.setReplayPaused(true, cluster)
            defer { try? Self.setReplayPaused(false, cluster) }
            try db.write { try $0.execute(sql: "INSERT INTO items (id, name) VALUES (1, 'one')") }
            // The standby cannot replay the insert: reads go to the primary and see it.
            let fresh = try db.read { try $0.fetchOne(sql: "SELECT count(*), pg_is_in_recovery() FROM items") }
            #expect(fresh?[0] == .integer(1))
            #expect(fresh?[1] == .bool(false))
            // Past the lag bound, the standby is left out altogether.
            #expect(PostgresClusters.waitUntil(timeout: 10) { db.servingReplicas.isEmpty }, "the lagging standby still serves")
            try Self.setReplayPaused(false, cluster)
            // Caught up again, it comes back and serves the row.
            #expect(try PostgresClusters.waitUntil(timeout: 20) { try db.servingReplicas == [0] && Self.readRunsOnReplica(db) })
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM items WHERE pg_is_in_recovery()") } == 1)
        }
    }

    /// A record of the active-record flavor.
    struct Gizmo: Persistable {
        var id: Int?
        var name: String
        init(name: String) { self.name = name }
        static var tableName: String { "gizmos" }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            name = try databaseRow.read("name")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["name": name] }
    }

    /// A model of the SQL-first flavor, on the core test's table.
    struct ItemModel: ModelDef {
        var id: Int
        var name: String
        static let tableName = "items"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        enum CodingKeys: String, CodingKey {
            case id, name, existsInDatabase
        }
    }

    /// Each flavor reads through the replica path with no change: while the standby's replay
    /// is paused, another client changes the rows on the primary; the routed reads of the
    /// core, the SQL-first flavor, the active-record flavor and the ORM still see the standby's rows (the other
    /// client's commit is not this database's), and `read(.primary)` sees the change.
    @Test func theCoreAndTheFlavorsReadThroughTheReplica() throws {
        try Self.withReplicatedDatabase { db, cluster, schema in
            try db.write { conn in
                try conn.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
                try conn.execute(sql: "CREATE TABLE gizmos (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL)")
                try conn.execute(sql: "INSERT INTO items (id, name) VALUES (1, 'before')")
            }
            _ = try Gizmo(name: "before").saveOrThrow(db)
            let (dogModel, personModel) = AmigoSeed.dogPerson()
            let amigo = try Amigo([dogModel, personModel], database: db)
            try amigo.createAll()
            let session = try amigo.session
            let dog = AmigoSeed.Dog()
            dog.label = "before"
            try session.add(dog)
            try session.commit()
            #expect(try PostgresClusters.waitUntil(timeout: 20) {
                try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM dog WHERE pg_is_in_recovery()") } == 1
            })

            try Self.setReplayPaused(true, cluster)
            defer { try? Self.setReplayPaused(false, cluster) }
            let other = try Database(driver: PostgresDriver(cluster.primary, connections: 1, searchPath: schema))
            defer { other.close() }
            try other.write { conn in
                try conn.execute(sql: "UPDATE items SET name = 'after'")
                try conn.execute(sql: "UPDATE gizmos SET name = 'after'")
                try conn.execute(sql: "UPDATE dog SET label = 'after'")
            }

            // The routed reads: the standby's rows.
            let select = SQLStatement.select(SQLSelect(from: "items").columns(.expression(.column("name"))))
            #expect(try db.fetchOne(select)?[0] == .text("before"), "core AST read")
            #expect(try ItemModel.allInstances(in: db).map(\.name) == ["before"], "SQL-first allInstances")
            #expect(try Query<Gizmo>().findOrThrow(1, db)?.name == "before", "active-record find")
            #expect(try Query<Gizmo>().allOrThrow(db).map(\.name) == ["before"], "active-record query")
            #expect(try amigo.query(AmigoSeed.Dog.self).all().map(\.label) == ["before"], "ORM query")
            // The primary has the change.
            #expect(try db.read(.primary) { try $0.fetchValue(String.self, sql: "SELECT name FROM items") } == "after")
            #expect(try db.read(.primary) { try $0.fetchValue(String.self, sql: "SELECT label FROM dog") } == "after")

            try Self.setReplayPaused(false, cluster)
            #expect(try PostgresClusters.waitUntil(timeout: 20) {
                try amigo.query(AmigoSeed.Dog.self).all().map(\.label) == ["after"]
            }, "the replica did not catch up")
            #expect(try Query<Gizmo>().findOrThrow(1, db)?.name == "after")
            #expect(try ItemModel.allInstances(in: db).map(\.name) == ["after"])
        }
    }

    /// The standby stopped mid-workload: the one-statement reads in flight on it are sent
    /// once to the primary and none fails; a `read { }` closure that met the loss is not run
    /// again and fails with `connectionLost` (not committed); the standby, started again,
    /// serves again.
    @Test func aStoppedReplicaLosesNoOneStatementReadAndComesBack() async throws {
        let cluster = try Self.cluster()
        let schema = try PostgresClusters.makeSchema(on: cluster.primary)
        defer { PostgresClusters.dropSchema(schema, on: cluster.primary) }
        let db = try Self.routedDatabase(cluster, schema: schema)
        defer { db.close() }
        try await db.write { conn in
            try conn.execute(sql: "CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
            try conn.execute(sql: "INSERT INTO items (id, name) SELECT g, 'name ' || g FROM generate_series(1, 100) AS g")
        }
        #expect(try PostgresClusters.waitUntil(timeout: 20) { try Self.readRunsOnReplica(db) })

        let stop = Locked(false)
        let tally = Locked((reads: 0, wrong: [String](), errors: [String]()))
        let workers = (0..<6).map { worker in
            Task.detached {
                var i = worker
                while !stop.current {
                    i = i % 100 + 1
                    let select = SQLStatement.select(SQLSelect(from: "items").columns(.expression(.column("name")))
                        .where(.column("id").equals(.bind(.integer(Int64(i))))))
                    do {
                        let row = try await db.fetchOne(select)
                        tally.withLock {
                            $0.reads += 1
                            if row?[0] != .text("name \(i)") { $0.wrong.append("id \(i): \(String(describing: row))") }
                        }
                    } catch {
                        tally.withLock { $0.errors.append("\(error)") }
                    }
                }
            }
        }
        // Some reads on the standby first.
        _ = PostgresClusters.waitUntil(timeout: 5) { tally.current.reads > 200 }

        // A read {} closure whose replica stops under it: it fails, and runs once.
        let runs = Locked(0)
        var closureError: Error?
        do {
            try await db.read { conn in
                runs.withLock { $0 += 1 }
                #expect(try conn.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") == true)
                try PostgresClusters.runHelper("stop", cluster.standbyData)
                _ = try conn.fetchOne(sql: "SELECT count(*) FROM items")
            }
        } catch {
            closureError = error
        }
        defer { try? PostgresClusters.runHelper("start", cluster.standbyData) }
        #expect(runs.current == 1)
        guard case .connectionLost(let context)? = closureError as? DatabaseError else {
            Issue.record("expected connectionLost from the read closure, got \(String(describing: closureError))")
            return
        }
        #expect(context.commitState == .notCommitted)

        // The workload goes on against the primary alone.
        let readsAtStop = tally.current.reads
        #expect(PostgresClusters.waitUntil(timeout: 10) { db.servingReplicas.isEmpty })
        _ = PostgresClusters.waitUntil(timeout: 10) { tally.current.reads > readsAtStop + 300 }
        #expect(try await db.read { try $0.fetchValue(Bool.self, sql: "SELECT pg_is_in_recovery()") } == false)

        try PostgresClusters.runHelper("start", cluster.standbyData)
        #expect(try PostgresClusters.waitUntil(timeout: 30) { try db.servingReplicas == [0] && Self.readRunsOnReplica(db) },
                "the restarted standby did not serve again")
        stop.withLock { $0 = true }
        for worker in workers { await worker.value }
        let result = tally.current
        print("replica stopped: \(result.reads) one-statement reads (\(readsAtStop) before the stop), \(result.errors.count) failed")
        #expect(result.errors.isEmpty, "reads failed: \(result.errors.prefix(5))")
        #expect(result.wrong.isEmpty, "wrong answers: \(result.wrong.prefix(5))")
        #expect(result.reads > readsAtStop)
    }

    static func withReplicatedDatabaseAsync<T>(_ body: (Database, Cluster, String) async throws -> T) async throws -> T {
        let cluster = try cluster()
        let schema = try PostgresClusters.makeSchema(on: cluster.primary)
        defer { PostgresClusters.dropSchema(schema, on: cluster.primary) }
        let db = try routedDatabase(cluster, schema: schema)
        defer { db.close() }
        return try await body(db, cluster, schema)
    }
}
