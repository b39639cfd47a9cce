import Foundation
import Testing
import UnityORM

@Suite struct ORMSessionTests {
    typealias Dog = AmigoSeed.Dog
    typealias Person = AmigoSeed.Person

    @Test(arguments: Backend.allCases)
    func addInsertsUpdatesAndIsSeenBeforeCommit(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            let session = try amigo.session
            let d1 = Dog()
            d1.label = "Lucy"
            let d2 = Dog()
            d2.label = "Rex"
            let d3 = Dog()
            d3.label = "Max"
            try session.add(d1)
            try session.add(d2, d3)
            #expect([d1.id, d2.id, d3.id] == [Int](arrayLiteral: 1, 2, 3))
            try session.add([Dog(), Dog()])
            // The session sees its own rows; the database outside does not yet.
            #expect(try session.query(Dog.self).count() == 5)
            #expect(try test.database.fetchAll(sql: "SELECT id FROM dog").isEmpty)
            d1.label = "Lucy II"
            try session.add(d1)
            try session.commit()
            let rows = try test.database.fetchAll(sql: "SELECT id, label FROM dog ORDER BY id")
            #expect(rows.count == 5)
            #expect(rows[0]["label"] == .text("Lucy II"))
            #expect(rows[2]["label"] == .text("Max"))
        }
    }

    @Test(arguments: Backend.allCases)
    func upsertInsertsOrReplacesByKey(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            let a = Dog()
            a.id = 10
            a.label = "first"
            try session.add(a, upsert: true)
            let b = Dog()
            b.id = 10
            b.label = "second"
            try session.add(b, upsert: true)
            try session.commit()
            let all = try amigo.query(Dog.self).all()
            #expect(all.map(\.id) == [10])
            #expect(all.map(\.label) == ["second"])
        }
    }

    @Test(arguments: Backend.allCases)
    func upsertWithARepeatedKeyKeepsTheLastObject(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            func dog(_ id: Int, _ label: String) -> Dog {
                let d = Dog()
                d.id = id
                d.label = label
                return d
            }
            let session = try amigo.session
            // An array upsert and a batch upsert, each holding key 20 twice (and 21 three times
            // in the batch): the later object wins, as a sequence of single upserts would.
            try session.add([dog(20, "a"), dog(21, "b"), dog(20, "c")], upsert: true)
            try session.batch { b in
                b.add([dog(21, "d"), dog(22, "e"), dog(21, "f"), dog(22, "g"), dog(21, "h")], upsert: true)
            }
            try session.commit()
            let rows = try test.database.fetchAll(sql: "SELECT id, label FROM dog ORDER BY id")
            #expect(rows.map { $0["id"] } == [.integer(20), .integer(21), .integer(22)])
            #expect(rows.map { $0["label"] } == [.text("c"), .text("h"), .text("g")])
        }
    }

    @Test(arguments: Backend.allCases)
    func forEachStreamsStopsEarlyAndRethrows(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            for i in 1...50 {
                let d = Dog()
                d.label = "dog \(i)"
                try session.add(d)
            }
            var labels: [String] = []
            try session.query(Dog.self).orderBy("id").forEach { labels.append($0.label) }
            #expect(labels.count == 50)
            #expect(labels.first == "dog 1")
            #expect(labels.last == "dog 50")
            var seen: [Int] = []
            try session.query(Dog.self).orderBy("id").stream { seen.append($0.id); return seen.count < 3 }
            #expect(seen == [1, 2, 3])
            struct Boom: Error {}
            var count = 0
            #expect(throws: Boom.self) {
                try session.query(Dog.self).orderBy("id").forEach { _ in
                    count += 1
                    if count == 5 { throw Boom() }
                }
            }
            #expect(count == 5)
            // The session is still usable and its uncommitted rows are still there.
            #expect(try session.query(Dog.self).count() == 50)
            try session.commit()
            #expect(try amigo.query(Dog.self).filter("id = 7").all().map(\.label) == ["dog 7"])
        }
    }

    @Test(arguments: Backend.allCases)
    func addingSavesUnsavedRelatedObjectsFirst(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            let session = try amigo.session
            let d1 = Dog()
            d1.label = "Lucy"
            let p1 = Person()
            p1.label = "Foo"
            p1.dog = d1
            try session.add(p1)
            #expect(d1.id == 1)
            #expect(p1.id == 1)
            try session.commit()
            let row = try #require(try test.database.fetchOne(sql: "SELECT dog_id FROM person"))
            #expect(row["dog_id"] == .integer(1))
        }
    }

    @Test(arguments: Backend.allCases)
    func rollbackUndoesAndTheSessionStaysUsable(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            try session.add(Dog())
            try session.rollback()
            #expect(try session.query(Dog.self).count() == 0)
            let d = Dog()
            d.label = "kept"
            try session.add(d)
            try session.commit()
            #expect(try amigo.query(Dog.self).all().map(\.label) == ["kept"])
        }
    }

    @Test(arguments: Backend.allCases)
    func beginInsideIsASavepoint(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            let outer = Dog()
            outer.label = "outer"
            try session.add(outer)
            try session.begin()
            let inner = Dog()
            inner.label = "inner"
            try session.add(inner)
            try session.rollback()  // back to the savepoint
            try session.begin()
            let kept = Dog()
            kept.label = "kept"
            try session.add(kept)
            try session.commit()  // releases the savepoint
            try session.commit()  // commits the transaction
            #expect(try amigo.query(Dog.self).orderBy("label").all().map(\.label) == ["kept", "outer"])
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailedAddRollsBackToBeforeThatCall(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            let first = Dog()
            first.label = "first"
            try session.add(first)
            let a = Dog()
            a.label = "a"
            // A person whose dog has key 999, which no row has: the foreign key refuses it.
            let ghost = Dog()
            ghost.id = 999
            let bad = Person()
            bad.dog = ghost
            bad.label = "bad"
            let p = Person()
            p.label = "ok"
            #expect {
                try session.add(a, p, bad)
            } throws: { error in
                if case .constraintViolation(.foreignKey, _)? = error as? DatabaseError { return true }
                return false
            }
            // Everything of that call is undone, the work before it kept, the session usable.
            #expect(try session.query(Dog.self).all().map(\.label) == ["first"])
            #expect(try session.query(Person.self).count() == 0)
            let later = Dog()
            later.label = "later"
            try session.add(later)
            try session.commit()
            #expect(try amigo.query(Dog.self).orderBy("label").all().map(\.label) == ["first", "later"])
        }
    }

    @Test(arguments: Backend.allCases)
    func releasedSessionRollsBackItsUncommittedWork(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            do {
                let session = try amigo.session
                try session.add(Dog())
                #expect(try session.query(Dog.self).count() == 1)
            }
            #expect(try amigo.query(Dog.self).count() == 0)
            // The connection went back to the pool: a new session gets it.
            let again = try amigo.session
            try again.add(Dog())
            try again.commit()
            #expect(try amigo.query(Dog.self).count() == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func deleteRemovesTheRow(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            let a = Dog()
            let b = Dog()
            b.label = "b"
            try session.add(a, b)
            try session.delete(a)
            #expect(try session.query(Dog.self).all().map(\.label) == ["b"])
            #expect(throws: ORMError.self) { try session.delete(Dog()) }
            // Deleting a dog a person still references is the core's foreign-key error.
            let p = Person()
            p.dog = b
            try session.add(p)
            #expect {
                try session.delete(b)
            } throws: { error in
                if case .constraintViolation(.foreignKey, _)? = error as? DatabaseError { return true }
                return false
            }
            try session.commit()
            #expect(try amigo.query(Dog.self).count() == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func batchInsertsManyRowsAndWritesKeysBack(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            let dogs = (0..<2500).map { i -> Dog in
                let d = Dog()
                d.label = "dog \(i)"
                return d
            }
            let doomed = Dog()
            try session.add(doomed)
            try session.batch { b in
                b.add(dogs)
                b.delete(doomed)
            }
            #expect(dogs.first?.id == 2)
            #expect(dogs.last?.id == 2501)
            try session.commit()
            #expect(try amigo.query(Dog.self).count() == 2500)
            #expect(try amigo.query(Dog.self).get(2501)?.label == "dog 2499")
            // Keyed objects in a batch: updated (or inserted with their key) by multi-row upserts.
            let again = try amigo.session
            let changed = (1...3).map { i -> Dog in
                let d = Dog()
                d.id = i + 1
                d.label = "changed \(i)"
                return d
            }
            let newKeyed = Dog()
            newKeyed.id = 9000
            newKeyed.label = "keyed"
            try again.batch { b in
                b.add(changed + [newKeyed])
                b.delete(dogs[10], dogs[11])
                for d in dogs[100..<2200] { b.delete(d) }  // more keys than one DELETE takes
            }
            try again.commit()
            #expect(try amigo.query(Dog.self).filter("id <= 4").orderBy("id").all().map(\.label) == ["changed 1", "changed 2", "changed 3"])
            #expect(try amigo.query(Dog.self).get(9000)?.label == "keyed")
            #expect(try amigo.query(Dog.self).count() == 2499 - 2100)
        }
    }
}

import Logging

/// Collects log messages, for checking the released-session warning.
final class ORMCapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var messages: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}

struct ORMLogCapture: LogHandler {
    let log: ORMCapturedLog
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        log.append("\(event.level): \(event.message)")
    }
}

extension ORMSessionTests {
    @Test(arguments: Backend.allCases)
    func releasedSessionWarns(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let log = ORMCapturedLog()
        let (dog, person) = AmigoSeed.dogPerson()
        let amigo = try Amigo([dog, person], database: test.database,
                              logger: Logger(label: "test") { _ in ORMLogCapture(log: log) })
        try amigo.createAll()
        do {
            let committed = try amigo.session
            try committed.add(Dog())
            try committed.commit()
        }
        #expect(log.messages.isEmpty)
        do {
            let forgotten = try amigo.session
            try forgotten.add(Dog())
        }
        #expect(log.messages.count == 1)
        #expect(log.messages.first?.hasPrefix("warning: an AmigoSession was released with uncommitted work") == true)
        #expect(try amigo.query(Dog.self).count() == 1)
    }
}

extension ORMSessionTests {
    /// `forEach` holds one batch of rows, not the whole result: on PostgreSQL through a
    /// server-side cursor (libpq would otherwise receive every row before the first object
    /// reached the closure), on SQLite by stepping the statement. The closure may query
    /// meanwhile, in a session and outside one, on both backends.
    @Test(arguments: Backend.allCases)
    func forEachHoldsOneBatchAndLetsTheClosureQuery(_ backend: Backend) throws {
        let log = ORMCapturedLog()
        let test = try TestDatabase(backend, configuration: DatabaseConfiguration(
            echo: true, logger: Logger(label: "test") { _ in ORMLogCapture(log: log) }))
        defer { test.tearDown() }
        let (dog, person) = AmigoSeed.dogPerson()
        let amigo = try Amigo([dog, person], database: test.database)
        try amigo.createAll()
        let seed = try amigo.session
        try seed.batch { b in
            b.add((1...2_500).map { i -> Dog in
                let d = Dog()
                d.label = "dog \(i)"
                return d
            })
        }
        try seed.commit()

        var labels: [String] = []
        var lookedUp: [String] = []
        try amigo.query(Dog.self).orderBy("id").forEach { d in
            labels.append(d.label)
            if d.id % 1_000 == 0 {
                // A query in the closure, on this thread, while the stream is open.
                lookedUp.append(contentsOf: try amigo.query(Dog.self).filter("id = ?", d.id - 1).all().map(\.label))
            }
        }
        #expect(labels.count == 2_500)
        #expect(labels[0] == "dog 1" && labels[1_234] == "dog 1235" && labels[2_499] == "dog 2500")
        #expect(lookedUp == ["dog 999", "dog 1999"])
        if backend == .postgres {
            let statements = log.messages
            #expect(statements.contains { $0.contains("DECLARE") && $0.contains("CURSOR") })
            #expect(statements.filter { $0.contains("FETCH FORWARD") }.count == 3)
        }

        // In a session: its uncommitted rows are streamed, and the closure may use the session.
        // A call that waited for the session's own busy thread would never return: run on a
        // thread of its own, the part fails after a minute instead of hanging the suite.
        struct Seen { var count = 0, counted: [Int] = [], refusals: [String] = [], countAfter = -1 }
        let part = ORMUncheckedBox(amigo)
        let seen = ORMUncheckedBox(Seen())
        let failure = ORMUncheckedBox<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do {
                let session = try part.value.session
                let extra = Dog()
                extra.label = "uncommitted"
                try session.add(extra)
                try session.query(Dog.self).orderBy("id").forEach { d in
                    seen.value.count += 1
                    if d.id == 2_000 { seen.value.counted.append(try session.query(Dog.self).count()) }
                }
                // Ending the transaction the stream reads in is refused, and changes nothing.
                try session.query(Dog.self).orderBy("id").limit(2).forEach { _ in
                    do { try session.commit() } catch ORMError.misuse(let message) { seen.value.refusals.append(message) }
                }
                seen.value.countAfter = try session.query(Dog.self).count()
                try session.rollback()
            } catch {
                failure.value = error
            }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + 60) == .success else {
            Issue.record("a session query inside a session's forEach did not return within a minute")
            return
        }
        if let error = failure.value { throw error }
        #expect(seen.value.count == 2_501)
        #expect(seen.value.counted == [2_501])
        #expect(seen.value.refusals.count == 2)
        #expect(seen.value.refusals.first?.hasPrefix("commit() inside the closure of a session query's forEach/stream") == true)
        #expect(seen.value.countAfter == 2_501)
        #expect(try amigo.query(Dog.self).count() == 2_500)
    }
}

/// Hands a non-Sendable value to a thread the test waits for.
final class ORMUncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
