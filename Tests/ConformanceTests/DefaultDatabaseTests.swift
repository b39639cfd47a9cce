import Foundation
import Testing
import Unity

/// The core's default database (`DefaultDatabase`): the process-wide stack and the task-local
/// override every flavor resolves through. These cases change process-wide state, so they
/// belong to the serialized `ModelDefTests` suite (the other cases that set the default).
extension ModelDefTests {
    @Test(arguments: Backend.allCases)
    func defaultDatabaseStackAndScopedOverride(_ backend: Backend) async throws {
        let first = try TestDatabase(backend)
        defer { first.tearDown() }
        let second = try TestDatabase(backend)
        defer { second.tearDown() }
        let scoped = try TestDatabase(backend)
        defer { scoped.tearDown() }
        let baseDepth = DefaultDatabase.depth
        #expect(DefaultDatabase.current == nil)
        #expect(throws: DatabaseError.self) { try DefaultDatabase.resolve(nil) }

        DefaultDatabase.push(first.database)
        DefaultDatabase.push(second.database)
        defer { while DefaultDatabase.depth > baseDepth { DefaultDatabase.pop() } }
        #expect(DefaultDatabase.depth == baseDepth + 2)
        #expect(DefaultDatabase.current === second.database)
        #expect(DBManager.defaultDatabase === second.database)
        // An explicit database always wins.
        #expect(try DefaultDatabase.resolve(first.database) === first.database)

        // The scoped override wins over the stack, in this scope and in tasks it starts, and
        // ends with the scope.
        try DefaultDatabase.withDatabase(scoped.database) { () throws in
            #expect(try DefaultDatabase.resolve(nil) === scoped.database)
            #expect(DBManager.defaultDatabase === scoped.database)
        }
        await DefaultDatabase.withDatabase(scoped.database) {
            let seen = await Task { DefaultDatabase.current === scoped.database }.value
            #expect(seen)
        }
        #expect(DefaultDatabase.current === second.database)

        // Each database is really used: a row written through the default lands in `second`.
        _ = try await DefaultDatabase.resolve(nil).execute(sql: "CREATE TABLE default_probe (n INTEGER)")
        _ = try await DefaultDatabase.resolve(nil).execute(sql: "INSERT INTO default_probe (n) VALUES (?)", [.integer(7)])
        #expect(try await second.database.fetchOne(sql: "SELECT n FROM default_probe")?.decode(Int.self, at: 0) == 7)
        await #expect(throws: DatabaseError.self) { try await first.database.fetchOne(sql: "SELECT n FROM default_probe") }

        // Popping returns the top without closing it; the one below is the default again.
        #expect(DefaultDatabase.pop() === second.database)
        #expect(DefaultDatabase.current === first.database)
        #expect(try await second.database.fetchOne(sql: "SELECT n FROM default_probe") != nil)

        // replaceTop swaps the top (what DBManager.open does) and returns what it replaced.
        #expect(DefaultDatabase.replaceTop(with: second.database) === first.database)
        #expect(DefaultDatabase.current === second.database)
        #expect(DefaultDatabase.depth == baseDepth + 1)
        #expect(DefaultDatabase.contains(second.database))
        #expect(!DefaultDatabase.contains(first.database))
    }

    /// `withDatabase` is task-local: code the scope runs (and tasks it starts) sees the scoped
    /// database; a `Thread`, a detached task or a queue started from inside sees the
    /// process-wide default instead.
    @Test(arguments: Backend.allCases)
    func scopedDefaultIsTaskLocalNotSeenByThreads(_ backend: Backend) throws {
        let stacked = try TestDatabase(backend)
        defer { stacked.tearDown() }
        let scoped = try TestDatabase(backend)
        defer { scoped.tearDown() }
        let baseDepth = DefaultDatabase.depth
        DefaultDatabase.push(stacked.database)
        defer { while DefaultDatabase.depth > baseDepth { DefaultDatabase.pop() } }

        // What each kind of code started inside the scope sees, by name.
        let seen = Mutexed<[String: String]>([:])
        let done = DispatchSemaphore(value: 0)
        let stackedDatabase = stacked.database
        let scopedDatabase = scoped.database
        @Sendable func record(_ who: String) {
            let current = DefaultDatabase.current
            let name = current === scopedDatabase ? "scoped" : current === stackedDatabase ? "stacked" : "other"
            seen.mutate { $0[who] = name }
            done.signal()
        }
        DefaultDatabase.withDatabase(scoped.database) {
            record("scope")
            Thread { record("thread") }.start()
            DispatchQueue.global().async { record("queue") }
            Task { record("task") }
            Task.detached { record("detached") }
        }
        for _ in 0..<5 { #expect(done.wait(timeout: .now() + 30) == .success) }
        #expect(seen.value == ["scope": "scoped", "task": "scoped",
                               "thread": "stacked", "queue": "stacked", "detached": "stacked"])
        #expect(DefaultDatabase.current === stacked.database)
    }
}
