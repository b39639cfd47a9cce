import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

@Suite("Observation: results that follow the database")
struct ObservationTests {
    // MARK: The tables a statement reads

    @Test func theASTWalkFindsEveryTableAStatementReads() throws {
        let inner = SQLSelect(from: "tags").columns(.column("todo_id"))
        let exists = SQLSelect(from: "owners").where(.column("owners", "id").equals(.column("todos", "owner_id")))
        let scalar = SQLSelect(from: "counts").columns(.expression(.countAll))
        let select = SQLSelect(from: .subquery(SQLSelect(from: "todos"), alias: "t"))
            .columns(.column("t", "title"), .expression(.subquery(scalar)))
            .join(.left, "lists", on: .column("lists", "id").equals(.column("t", "list_id")))
            .where(.inSubquery(.column("t", "id"), inner, negated: false))
            .where(.exists(exists, negated: false))
            .union(SQLSelect(from: "archived").columns(.column("title"), .expression(.literal(.null))))
        #expect(try ObservedTablesProbe.tables(.select(select)) == ["todos", "lists", "tags", "owners", "counts", "archived"])
        // A raw fragment without a subquery reads nothing more.
        let filtered = SQLSelect(from: "todos").where(.raw("done = ?", [true]))
        #expect(try ObservedTablesProbe.tables(.select(filtered)) == ["todos"])
    }

    @Test func rawSQLAndSubqueryFragmentsNeedTheirTablesNamed() throws {
        #expect(throws: ObservationError.self) { try ObservedTablesProbe.tables(.raw(SQLFragment("SELECT * FROM todos"))) }
        let hidden = SQLSelect(from: "todos").where(.raw("list_id IN (select id FROM lists)"))
        #expect(throws: ObservationError.self) { try ObservedTablesProbe.tables(.select(hidden)) }
        // A string literal that says select is not a subquery.
        let quoted = SQLSelect(from: "todos").where(.raw("title <> 'select'"))
        #expect(try ObservedTablesProbe.tables(.select(quoted)) == ["todos"])
    }

    @Test(arguments: Backend.allCases)
    func rawSQLWithoutTablesFailsWhenTheObservationStarts(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            var iterator = db.observe(.raw(SQLFragment("SELECT value FROM counter"))).makeAsyncIterator()
            await #expect(throws: ObservationError.tablesUnknown("the raw SQL \"SELECT value FROM counter\"")) { _ = try await iterator.next() }
            #expect(db.activeObservationCount == 0)
            #expect(!db.isWatchingChanges)
            // Named, the same SQL is observed.
            let named = ObservedValues(db.observe(.raw(SQLFragment("SELECT value FROM counter")), tables: ["counter"]) {
                ObservedCounter.value($0)
            })
            try await named.wait("the first result") { $0 == [0] }
            try ObservedCounter.set(db, 7)
            try await named.wait("the commit") { $0 == [0, 7] }
            try await named.cancel()
        }
    }

    // MARK: Semantics

    @Test(arguments: Backend.allCases)
    func theCurrentResultFirstThenOneAfterEachCommit(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let observed = ObservedValues(ObservedCounter.observe(db))
            try await observed.wait("the first result") { $0 == [0] }
            #expect(db.isWatchingChanges)
            for value in 1...3 {
                try ObservedCounter.set(db, value)
                try await observed.wait("commit \(value)") { $0.last == value }
            }
            #expect(observed.values.current == [0, 1, 2, 3])
            try await observed.cancel()
        }
    }

    @Test(arguments: Backend.allCases)
    func aRolledBackTransactionIsNeverSeen(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let observed = ObservedValues(ObservedCounter.observe(db, removeDuplicates: false))
            try await observed.wait("the first result") { $0 == [0] }
            for _ in 0..<3 {
                try ObservedCounter.rollBack(db, "UPDATE counter SET value = ? WHERE id = 1", [.integer(-1)])
            }
            #expect(try await ObservedCounter.value(db.fetchAll(sql: "SELECT value FROM counter WHERE id = 1")) == 0)
            try await Task.sleep(nanoseconds: 300_000_000)
            // Not even a refetch of the unchanged value: removeDuplicates is off.
            #expect(observed.values.current == [0])
            try ObservedCounter.set(db, 5)
            try await observed.wait("the commit after the rollbacks") { $0.last == 5 }
            // (On SQLite the 10 ms check of other connections' commits may fetch this commit
            // once more: removeDuplicates is off.)
            let values = observed.values.current
            #expect(values.first == 0 && values.dropFirst().allSatisfy { $0 == 5 }, "\(values)")
            try await observed.cancel()
        }
    }

    @Test(arguments: Backend.allCases)
    func writesToATableTheQueryDoesNotReadCauseNoDelivery(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let observed = ObservedValues(ObservedCounter.observe(db, removeDuplicates: false))
            try await observed.wait("the first result") { $0 == [0] }
            for id in 1...5 {
                try ObservedCounter.execute(db, "INSERT INTO unread (id, value) VALUES (?, ?)", [.integer(Int64(id)), .integer(1)])
            }
            try await Task.sleep(nanoseconds: 300_000_000)
            #expect(observed.values.current == [0])
            try ObservedCounter.set(db, 1)
            let values = try await observed.wait("the commit to the read table") { $0.last == 1 }
            #expect(values.first == 0 && values.dropFirst().allSatisfy { $0 == 1 }, "\(values)")
            try await observed.cancel()
        }
    }

    @Test(arguments: Backend.allCases)
    func changesWhileNoOneAsksAreCoalescedIntoTheLatestState(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            var iterator = ObservedCounter.observe(db, removeDuplicates: false).makeAsyncIterator()
            let first = try await iterator.next()
            #expect(first == .some(0))
            for value in 1...50 { try ObservedCounter.set(db, value) }
            // Let every notification arrive, then ask: one result, the latest, and no backlog.
            try await Task.sleep(nanoseconds: 300_000_000)
            let second = try await iterator.next()
            #expect(second == .some(50))
            let box = IteratorBox(iterator)
            let third = try? await within(0.5, "a third result") { try await box.iterator.next() }
            #expect(third == nil, "a backlog delivered \(String(describing: third))")
        }
    }

    @Test(arguments: Backend.allCases)
    func removeDuplicatesSkipsAnUnchangedResult(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let deduplicated = ObservedValues(ObservedCounter.observe(db))
            let everything = ObservedValues(ObservedCounter.observe(db, removeDuplicates: false))
            try await deduplicated.wait("the first result") { $0 == [0] }
            try await everything.wait("the first result") { $0 == [0] }
            // A commit to the table that leaves the result as it was.
            try ObservedCounter.set(db, 0)
            try await everything.wait("the unchanged result") { $0.count >= 2 }
            try ObservedCounter.set(db, 2)
            let all = try await everything.wait("the change") { $0.last == 2 }
            // The unchanged result came again (on SQLite perhaps twice: the 10 ms check of other
            // connections' commits may fetch a commit of this process once more).
            let zeros = all.prefix { $0 == 0 }
            #expect(zeros.count >= 2 && all.dropFirst(zeros.count).allSatisfy { $0 == 2 }, "\(all)")
            try await deduplicated.wait("the change") { $0.last == 2 }
            try await Task.sleep(nanoseconds: 100_000_000)
            #expect(deduplicated.values.current == [0, 2])
            try await deduplicated.cancel()
            try await everything.cancel()
        }
    }

    @Test(arguments: Backend.allCases)
    func theTypedFormDecodesEachResult(_ backend: Backend) async throws {
        struct Counter: Decodable, Sendable, Equatable {
            let id: Int
            let value: Int
        }
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let observed = ObservedValues(db.observe(.select(SQLSelect(from: "counter")), as: Counter.self))
            try await observed.wait("the first result") { $0 == [[Counter(id: 1, value: 0)]] }
            try ObservedCounter.set(db, 4)
            try await observed.wait("the commit") { $0.last == [Counter(id: 1, value: 4)] }
            try await observed.cancel()
        }
    }

    @Test(arguments: Backend.allCases)
    func observeChangesCallsWithTheTablesGivenAndNeverForARollback(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let calls = Locked<[Set<String>]>([])
            let observer = try db.observeChanges(to: ["counter"]) { tables in calls.withLock { $0.append(tables) } }
            try ObservedCounter.rollBack(db, "UPDATE counter SET value = 9")
            try ObservedCounter.execute(db, "INSERT INTO unread (id, value) VALUES (1, 1)")
            try await Task.sleep(nanoseconds: 200_000_000)
            #expect(calls.current.isEmpty)
            try ObservedCounter.set(db, 3)
            #expect(try await within(60, "a call") {
                while calls.current.isEmpty { try await Task.sleep(nanoseconds: 5_000_000) }
                return calls.current[0]
            } == ["counter"])
            #expect(db.activeObservationCount == 1)
            observer.cancel()
            #expect(db.activeObservationCount == 0)
            #expect(!db.isWatchingChanges)
        }
    }

    @Test(arguments: Backend.allCases)
    func cancellingTheConsumerEndsTheObservationAndStopsWatching(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            try ObservedCounter.create(db)
            let observed = ObservedValues(ObservedCounter.observe(db))
            try await observed.wait("the first result") { $0 == [0] }
            #expect(db.activeObservationCount == 1)
            #expect(db.isWatchingChanges)
            try await observed.cancel()
            #expect(db.activeObservationCount == 0)
            #expect(!db.isWatchingChanges)
            // Nothing is delivered after the end.
            try ObservedCounter.set(db, 1)
            try await Task.sleep(nanoseconds: 100_000_000)
            #expect(observed.values.current == [0])
        }
    }

    @Test func cancellingFreesThePostgresListeningConnection() async throws {
        let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
        let name = "obs_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let listenURL = url + (url.contains("?") ? "&" : "?") + "application_name=\(name)"
        let test = try TestDatabase(.postgres, connections: 2, configuration: DatabaseConfiguration(notificationURL: listenURL))
        defer { test.tearDown() }
        let db = test.database
        try ObservedCounter.create(db)
        let listeners: @Sendable () throws -> Int64? = {
            let row = try db.read { try $0.fetchOne(sql: "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", [.text(name)]) }
            if case .integer(let n)? = row?[0] { return n }
            return nil
        }
        #expect(try listeners() == 0)
        let first = ObservedValues(ObservedCounter.observe(db))
        let second = ObservedValues(ObservedCounter.observe(db))
        try await first.wait("the first result") { $0 == [0] }
        try await second.wait("the first result") { $0 == [0] }
        // One listening connection per Database, however many observations.
        #expect(try listeners() == 1)
        try await first.cancel()
        #expect(try listeners() == 1)
        try await second.cancel()
        let closed = try await within(60, "the listening connection to close") {
            while try listeners() != 0 { try await Task.sleep(nanoseconds: 20_000_000) }
            return true
        }
        #expect(closed)
    }

    // MARK: Errors of the setup

    @Test func aPostgresTableWithoutTheTriggerIsATypedError() async throws {
        try await withTestDatabase(.postgres) { db in
            try ObservedCounter.create(db)
            var iterator = db.observe(.select(SQLSelect(from: "unread"))).makeAsyncIterator()
            await #expect(throws: ObservationError.missingChangeTrigger(table: "unread")) { _ = try await iterator.next() }
            var missing = db.observe(.select(SQLSelect(from: "no_such_table"))).makeAsyncIterator()
            await #expect(throws: ObservationError.unknownTable("no_such_table")) { _ = try await missing.next() }
            #expect(throws: ObservationError.missingChangeTrigger(table: "unread")) {
                _ = try db.observeChanges(to: ["counter", "unread"]) { _ in }
            }
            #expect(db.activeObservationCount == 0)
            #expect(!db.isWatchingChanges)
        }
    }

    @Test func poolerModeWithoutANotificationURLIsAMisuseError() async throws {
        try await withTestDatabase(.postgres, configuration: DatabaseConfiguration(poolerMode: .transaction)) { db in
            try ObservedCounter.create(db)
            var iterator = ObservedCounter.observe(db).makeAsyncIterator()
            await #expect(throws: ObservationError.notificationURLRequired) { _ = try await iterator.next() }
        }
    }

    @Test func theMigrationHelperGeneratesEachBackendsSQL() throws {
        let migration = Migration.observeChanges(of: ["todos"])
        #expect(migration.name == "unity_observe_todos")
        let postgres = try #require(try migration.script(for: .postgres))
        #expect(postgres.contains("""
            CREATE TRIGGER unity_observe_changes AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "todos"
                FOR EACH STATEMENT EXECUTE FUNCTION unity_notify_change();
            """))
        #expect(postgres.contains("PERFORM pg_notify('unity_changes', TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);"))
        let sqlite = try #require(try migration.script(for: .sqlite))
        #expect(sqlite.contains("""
            CREATE TRIGGER IF NOT EXISTS "unity_observe_changes_todos_delete" AFTER DELETE ON "todos" BEGIN
                UPDATE unity_change_counters SET changes = changes + 1 WHERE table_name = 'todos';
            END;
            """))
    }

    // MARK: SQLite specifics

    @Test func anSQLiteDeleteOfEveryRowIsSeen() async throws {
        // `DELETE FROM t` without WHERE may empty the table without visiting its rows (the
        // truncate optimization), which the update hook would then not see. In memory, the
        // hooks are the only way commits are seen (no other connection can reach it).
        let db = try Database(driver: SQLiteDriver.inMemory())
        defer { db.close() }
        try ObservedCounter.create(db)
        try ObservedCounter.execute(db, "INSERT INTO unread (id, value) VALUES (1, 1), (2, 2)")
        let observed = ObservedValues(db.observe(.select(SQLSelect(from: "unread").columns(.expression(.countAll)))) { rows -> Int in
            guard case .integer(let n)? = rows.first?[0] else { return -1 }
            return Int(n)
        })
        try await observed.wait("the first result") { $0 == [2] }
        try ObservedCounter.execute(db, "DELETE FROM unread")
        try await observed.wait("the delete") { $0 == [2, 0] }
        try await observed.cancel()
    }

    @Test func anInMemorySQLiteDatabaseIsObservedThroughItsHooks() async throws {
        let db = try Database(driver: SQLiteDriver.inMemory())
        defer { db.close() }
        try ObservedCounter.create(db)
        let observed = ObservedValues(ObservedCounter.observe(db, removeDuplicates: false))
        try await observed.wait("the first result") { $0 == [0] }
        try ObservedCounter.rollBack(db, "UPDATE counter SET value = -1")
        try ObservedCounter.execute(db, "INSERT INTO unread (id, value) VALUES (1, 1)")
        try ObservedCounter.set(db, 3)
        try await observed.wait("the commit") { $0.last == 3 }
        try await Task.sleep(nanoseconds: 100_000_000)
        // Exactly one fetch: the hooks alone, no 10 ms check.
        #expect(observed.values.current == [0, 3])
        try await observed.cancel()
        #expect(!db.isWatchingChanges)
    }

    /// A commit made through the observed file database itself is fetched once: the writer's
    /// hooks report it, and the `data_version` check, which sees it too, knows from the
    /// counters that it was this database's own. (Results are not deduplicated here: each
    /// fetch delivers.)
    @Test func anSQLiteFileDatabasesOwnCommitIsFetchedOnce() async throws {
        let test = try TestDatabase(.sqlite)
        defer { test.tearDown() }
        let db = test.database
        try ObservedCounter.create(db)
        let observed = ObservedValues(ObservedCounter.observe(db, removeDuplicates: false))
        try await observed.wait("the first result") { $0 == [0] }
        for value in 1...5 {
            try ObservedCounter.set(db, value)
            try await observed.wait("commit \(value)") { $0.last == value }
            // Twenty checks of data_version go by.
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        // Each commit once. A COMMIT that outlasts the check's wait for it (a loaded machine)
        // may be fetched a second time, so one repeat in the whole run is let pass: without
        // the check's skipping, every commit is fetched twice.
        #expect(Self.withoutRepeats(observed.values.current) == [0, 1, 2, 3, 4, 5])
        #expect(observed.values.current.count <= 6 + 1, "fetched: \(observed.values.current)")
        // A write transaction of several statements, and one that writes nothing observed.
        try await db.write { conn in
            try conn.execute(sql: "UPDATE counter SET value = value + 1 WHERE id = 1")
            try conn.execute(sql: "UPDATE counter SET value = value + 1 WHERE id = 1")
        }
        try await observed.wait("the two-statement commit") { $0.last == 7 }
        try ObservedCounter.execute(db, "INSERT INTO unread (id, value) VALUES (1, 1)")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(Self.withoutRepeats(observed.values.current) == [0, 1, 2, 3, 4, 5, 7])
        #expect(observed.values.current.count <= 7 + 1, "fetched: \(observed.values.current)")
        try await observed.cancel()
    }

    /// `values` with each run of equal neighbours kept once.
    private static func withoutRepeats<Value: Equatable>(_ values: [Value]) -> [Value] {
        var kept: [Value] = []
        for value in values where kept.last != value { kept.append(value) }
        return kept
    }

    /// This database's commits and another connection's, close together: the other's are
    /// never taken for this database's own (each round ends in the other's value, which only
    /// the data_version check can see).
    @Test func anotherConnectionsCommitBesideOursIsNeverMissed() async throws {
        let test = try TestDatabase(.sqlite)
        defer { test.tearDown() }
        let db = test.database
        try ObservedCounter.create(db)
        let other = try test.openAgain()
        defer { other.close() }
        let observed = ObservedValues(ObservedCounter.observe(db, removeDuplicates: false))
        try await observed.wait("the first result") { $0 == [0] }
        for round in 1...30 {
            try ObservedCounter.set(db, 2 * round - 1)
            if round.isMultiple(of: 2) {
                // Ours delivered first, so that only the check can bring the other's.
                try await observed.wait("round \(round), ours") { $0.last == 2 * round - 1 }
            }
            try ObservedCounter.set(other, 2 * round)
            try await observed.wait("round \(round), the other connection's") { $0.last == 2 * round }
        }
        #expect(observed.values.current.last == 60)
        try await observed.cancel()
    }

    @Test func anSQLiteCommitByAnotherConnectionIsSeenThroughTheCounters() async throws {
        let test = try TestDatabase(.sqlite)
        defer { test.tearDown() }
        try ObservedCounter.create(test.database)
        let other = try test.openAgain()
        defer { other.close() }
        let observed = ObservedValues(ObservedCounter.observe(test.database, removeDuplicates: false))
        try await observed.wait("the first result") { $0 == [0] }
        // The other connection's write to an unread table: the counters say it is not ours.
        try ObservedCounter.execute(other, "INSERT INTO unread (id, value) VALUES (1, 1)")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(observed.values.current == [0])
        try ObservedCounter.set(other, 8)
        try await observed.wait("the other connection's commit") { $0 == [0, 8] }
        try await observed.cancel()
    }
}

/// The AST walk, through the public API: the tables observation would follow.
enum ObservedTablesProbe {
    static func tables(_ statement: SQLStatement) throws -> Set<String> {
        try statement.tablesRead()
    }
}

/// Hands an iterator to a child task (the test calls `next()` from one task at a time).
final class IteratorBox<I: AsyncIteratorProtocol>: @unchecked Sendable {
    var iterator: I
    init(_ iterator: I) { self.iterator = iterator }
}
