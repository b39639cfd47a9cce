import Foundation
import Logging
import Testing
import Unity
import UnityPredicates

@Suite("Predicates: container and context")
struct PredicatesContainerTests {
    @Test(arguments: Backend.allCases)
    func schemaThroughMigratorOnce(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: predicateModels)
            let first = try container.createSchema()
            #expect(first.contains("flavor:predicates/create/PItem"))
            #expect(first.contains("flavor:predicates/link/PAuthor_books_PBook_author"))
            let again = PersistentContainer(database: db, models: predicateModels)
            #expect(try again.createSchema() == [])
            let history = try Migrator(migrations: []).appliedMigrations(db).map(\.name)
            #expect(history.contains("flavor:predicates/create/T"))
        }
    }

    @Test(arguments: Backend.allCases)
    func schemaBesideOtherMigrations(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            // A database whose own migrations belong to someone else.
            try Migrator(migrations: [Migration("0001_other", sql: "CREATE TABLE other (x INTEGER)")]).migrate(db)
            let container = PersistentContainer(database: db, models: [T.self])
            #expect(try container.createSchema() == ["flavor:predicates/create/T"])
            try container.perform { ctx in _ = try ctx.insert(T(marker: "m", amount: 1, name: "n")) }
            // The other migrator leaves the flavor's migrations alone and goes on.
            let more = try Migrator(migrations: [
                Migration("0001_other", sql: "CREATE TABLE other (x INTEGER)"),
                Migration("0002_more", sql: "CREATE TABLE more (y INTEGER)"),
            ]).migrate(db)
            #expect(more == ["0002_more"])
            // An unknown migration that is not a flavor's is still refused.
            try Migrator(migrations: [Migration("0001_other", sql: "CREATE TABLE other (x INTEGER)"),
                                      Migration("0002_more", sql: "CREATE TABLE more (y INTEGER)")]).migrate(db)
            #expect(throws: MigrationError.self) {
                try Migrator(migrations: [Migration("0001_other", sql: "CREATE TABLE other (x INTEGER)")]).migrate(db)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func insertFetchDecodeEncodeCountDelete(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: predicateModels)
            try container.perform { ctx in
                try ctx.insert(T(marker: "a", amount: 1, name: "one"))
                try ctx.insert(T(marker: "b", amount: 2, name: "two"))
                try ctx.insert(T(marker: "c", amount: 3, name: "three"))
            }
            let names = try container.perform { ctx in try ctx.fetch(T.all.sort(\.amount)).map { try $0.decode(\.name) } }
            #expect(names == ["one", "two", "three"])
            #expect(try container.perform { ctx in try ctx.fetch(T.all.sort(\.amount, ascending: false), \.marker) } == ["c", "b", "a"])
            #expect(try container.perform { ctx in try ctx.count(of: T.all) } == 3)
            #expect(try container.perform { ctx in try ctx.count(of: T.all.limit(2)) } == 2)
            #expect(try container.perform { ctx in try ctx.fetchOne(T.all.where(\T.amount == 2))?.decode() } == T(marker: "b", amount: 2, name: "two"))
            #expect(try container.perform { ctx in try ctx.fetchOne(T.all.where(\T.amount == 9), \.name) } == nil)
            try container.perform { ctx in
                let two = try #require(try ctx.fetchOne(T.all.where(\T.amount == 2)))
                try two.encode(\.name, "deux")
                // The change is visible to the next fetch in the same perform.
                #expect(try ctx.fetch(T.all.where(\T.name == "deux")).count == 1)
                let three = try #require(try ctx.fetchOne(T.all.where(\T.amount == 3)))
                try three.encode(T(marker: "z", amount: 30, name: "trente"))
            }
            #expect(try container.perform { ctx in try ctx.fetch(T.all.sort(\.amount)).map { try $0.decode() } } == [
                T(marker: "a", amount: 1, name: "one"), T(marker: "b", amount: 2, name: "deux"), T(marker: "z", amount: 30, name: "trente"),
            ])
            try container.perform { ctx in
                let one = try #require(try ctx.fetchOne(T.all.where(\T.amount == 1)))
                try ctx.delete(one)
            }
            #expect(try container.perform { ctx in try ctx.count(of: T.all) } == 2)
            try container.perform { ctx in try ctx.delete(T.all.where(\T.amount == 2)) }
            #expect(try container.perform { ctx in try ctx.fetch(T.all, \.amount) } == [30])
            for i in 0..<5 { try container.perform { ctx in try ctx.insert(T(marker: "m", amount: 100 + i, name: "n")) } }
            #expect(try container.perform { ctx in try ctx.batchDelete(T.all.where(\T.marker == "m").sort(\.amount).limit(2)) } == 2)
            #expect(try container.perform { ctx in try ctx.batchDelete(T.all.where(\T.marker == "m")) } == 3)
            #expect(try container.perform { ctx in try ctx.fetch(T.all, \.amount) } == [30])
        }
    }

    /// A fetched object holds its decoded value; a change made through `encode` is what
    /// `decode` then returns, attribute by attribute and whole, and what is written.
    @Test(arguments: Backend.allCases)
    func fetchedObjectsReadTheirOwnChanges(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: predicateModels)
            try container.perform { ctx in _ = try ctx.insert(T(marker: "a", amount: 7, name: "seven")) }
            try container.perform { ctx in
                let seven = try #require(try ctx.fetchOne(T.all))
                #expect(try seven.decode() == T(marker: "a", amount: 7, name: "seven"))
                #expect(try seven.decode(\.amount) == 7)
                try seven.encode(\.name, "sept")
                #expect(try seven.decode() == T(marker: "a", amount: 7, name: "sept"))
                #expect(try seven.decode(\.name) == "sept")
                #expect(try seven.decode(\.marker) == "a")
                try seven.encode(\.amount, 70)
                #expect(try seven.decode() == T(marker: "a", amount: 70, name: "sept"))
            }
            #expect(try container.perform { ctx in try ctx.fetch(T.all).map { try $0.decode() } } == [T(marker: "a", amount: 70, name: "sept")])
        }
    }

    /// A stored value the model cannot hold fails the object's `decode()`, not the fetch:
    /// the other objects, and the other attributes of that one, stay readable.
    @Test(arguments: Backend.allCases)
    func aValueTheModelCannotHoldFailsItsDecodeOnly(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: predicateModels)
            try container.perform { ctx in
                _ = try ctx.insert(PItem(id: 1, name: "good", kind: .alpha))
                _ = try ctx.insert(PItem(id: 2, name: "bad", kind: .zeta))
                _ = try ctx.insert(PItem(id: 3, name: "wide"))
            }
            try db.write { conn in
                _ = try conn.execute(.update(SQLUpdate("PItem", set: [SQLAssignment("kind", .bind(.text("omega")))],
                                                       where: .column("id").equals(.bind(.integer(2))))))
                // Too wide for the model's Int32 (PostgreSQL's column is widened for it first).
                if backend == .postgres { try conn.executeScript(#"ALTER TABLE "PItem" ALTER COLUMN "i32" TYPE BIGINT"#) }
                _ = try conn.execute(.update(SQLUpdate("PItem", set: [SQLAssignment("i32", .bind(.integer(1 << 40)))],
                                                       where: .column("id").equals(.bind(.integer(3))))))
            }
            try container.perform { ctx in
                let objects = try ctx.fetch(PItem.all.sort(\.id))
                #expect(objects.count == 3)
                do {
                    _ = try objects[2].decode()
                    Issue.record("decoding an i32 of 2^40 should throw")
                } catch PredicatesError.conversion(let column, _, let value) {
                    #expect(column == "i32")
                    #expect(value == .integer(1 << 40))
                }
                #expect(try objects[0].decode().kind == .alpha)
                do {
                    _ = try objects[1].decode()
                    Issue.record("decoding a kind of \"omega\" should throw")
                } catch PredicatesError.conversion(let column, _, let value) {
                    #expect(column == "kind")
                    #expect(value == .text("omega"))
                }
                #expect(try objects[1].decode(\.name) == "bad")
                #expect(throws: PredicatesError.self) { try objects[1].decode(\.kind) }
                // Setting a valid value makes the object whole again.
                try objects[1].encode(\.kind, .mid)
                #expect(try objects[1].decode().kind == .mid)
            }
            #expect(try container.perform { ctx in try ctx.fetch(PItem.all.sort(\.id), \.kind) } == [.alpha, .mid, .mid])
        }
    }

    @Test(arguments: Backend.allCases)
    func throwingPerformRollsBackAndLogs(_ backend: Backend) throws {
        struct Boom: Error {}
        try withTestDatabase(backend) { db in
            let log = ErrorLog()
            let container = PersistentContainer(database: db, models: predicateModels, logError: log.log)
            #expect(throws: Boom.self) {
                try container.perform { ctx in
                    try ctx.insert(T(marker: "x", amount: 1, name: "lost"))
                    throw Boom()
                }
            }
            #expect(try container.perform { ctx in try ctx.count(of: T.all) } == 0)
            #expect(log.all.count == 1)
            // A unique attribute broken inside perform rolls the whole closure back.
            try container.perform { ctx in try ctx.insert(PItem(id: 1, name: "first")) }
            #expect(throws: DatabaseError.self) {
                try container.perform { ctx in
                    try ctx.insert(T(marker: "kept?", amount: 2, name: "no"))
                    try ctx.insert(PItem(id: 1, name: "duplicate"))
                }
            }
            #expect(try container.perform { ctx in try ctx.count(of: T.all) } == 0)
            #expect(try container.perform { ctx in try ctx.fetch(PItem.all, \.name) } == ["first"])
            #expect(log.all.count == 2)
            // A change made by encode that breaks the constraint fails at the end of perform.
            #expect(throws: DatabaseError.self) {
                try container.perform { ctx in
                    let other = try ctx.insert(PItem(id: 2, name: "second"))
                    try other.encode(\.id, 1)
                }
            }
            #expect(try container.perform { ctx in try ctx.fetch(PItem.all, \.id) } == [1])
            // An error of the database factory is logged and rethrown.
            struct NoDatabase: Error {}
            let failing = PersistentContainer(databaseFactory: { throw NoDatabase() }, models: predicateModels, logError: log.log)
            #expect(throws: NoDatabase.self) { try failing.perform { _ in 1 } }
            #expect(log.all.count == 4)
        }
    }

    @Test(arguments: Backend.allCases)
    func modelKeyedByItsOwnAttribute(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [PKeyed.self])
            try c.perform { ctx in
                for i in 1...5 { _ = try ctx.insert(PKeyed(id: Int64(i), label: "l\(i)", score: i == 3 ? nil : Double(i))) }
                // Batched inserts are written before the next statement.
                #expect(try ctx.count(of: PKeyed.all) == 5)
                for object in try ctx.fetch(PKeyed.all.where(\PKeyed.id <= 2)) { try object.encode(\.label, "changed") }
            }
            var streamed: [PKeyed] = []
            try c.perform { ctx in try ctx.forEach(PKeyed.all.sort(\.id)) { streamed.append(try $0.decode()) } }
            #expect(streamed.map(\.label) == ["changed", "changed", "l3", "l4", "l5"])
            #expect(streamed[2].score == nil)
            try c.perform { ctx in try ctx.delete(PKeyed.all.where(\PKeyed.id === [1, 5])) }
            #expect(try c.perform { ctx in try ctx.fetch(PKeyed.all.sort(\.id), \.id) } == [2, 3, 4])
            // A duplicate key in a batched insert fails the perform, which leaves nothing.
            #expect(throws: DatabaseError.self) {
                try c.perform { ctx in
                    _ = try ctx.insert(PKeyed(id: 10, label: "new"))
                    _ = try ctx.insert(PKeyed(id: 2, label: "duplicate"))
                }
            }
            #expect(try c.perform { ctx in try ctx.fetch(PKeyed.all.sort(\.id), \.label) } == ["changed", "l3", "l4"])
        }
    }

    /// A fetch selects each column once: a key that is one of the attributes is not selected
    /// again as the key (its value serves both), while a hidden key follows the attributes.
    /// The objects still know their keys: changing one writes that row and no other.
    @Test(arguments: Backend.allCases)
    func aFetchSelectsTheKeyOnce(_ backend: Backend) throws {
        let captured = Mutexed<[String]>([])
        var logger = Logger(label: "unity.test.predicates") { _ in CapturingLogHandler(captured) }
        logger.logLevel = .info
        try withTestDatabase(backend, configuration: DatabaseConfiguration(echo: true, logger: logger)) { db in
            let c = PersistentContainer(database: db, models: [PKeyed.self, T.self])
            try c.perform { ctx in
                for i in 1...3 { _ = try ctx.insert(PKeyed(id: Int64(10 * i), label: "l\(i)", score: Double(i))) }
                for i in 1...3 { _ = try ctx.insert(T(marker: "m\(i)", amount: i, name: "b\(i)")) }
            }
            captured.mutate { $0.removeAll() }
            try c.perform { ctx in
                let keyed = try ctx.fetch(PKeyed.all.sort(\.id))
                #expect(try keyed.map { try $0.decode() } == [
                    PKeyed(id: 10, label: "l1", score: 1), PKeyed(id: 20, label: "l2", score: 2), PKeyed(id: 30, label: "l3", score: 3),
                ])
                try keyed[1].encode(\.label, "changed")
                let hidden = try ctx.fetch(T.all.sort(\.amount))
                #expect(try hidden.map { try $0.decode().name } == ["b1", "b2", "b3"])
                try hidden[2].encode(\.name, "changed")
            }
            let selects = captured.value.filter { $0.contains("SELECT") && !$0.contains("COUNT") }
            let keyedSelect = try #require(selects.first { $0.contains("PKeyed") })
            #expect(keyedSelect.components(separatedBy: "\"id\"").count - 1 == 2)  // selected once, sorted once
            #expect(!keyedSelect.contains("Z_PK"))
            let hiddenSelect = try #require(selects.first { $0.contains("FROM \"T\"") })
            #expect(hiddenSelect.contains("\"Z_PK\""))
            #expect(try c.perform { ctx in try ctx.fetch(PKeyed.all.sort(\.id), \.label) } == ["l1", "changed", "l3"])
            #expect(try c.perform { ctx in try ctx.fetch(T.all.sort(\.amount), \.name) } == ["b1", "b2", "changed"])
        }
    }

    /// `forEach` over more rows than one batch (a server-side cursor on PostgreSQL), with a
    /// body that uses the context between objects: every object once, in order, and the
    /// body's own fetches, changes and inserts all take effect.
    @Test(arguments: Backend.allCases)
    func forEachStreamsWhileTheBodyUsesTheContext(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [PKeyed.self, T.self])
            try c.perform { ctx in
                for i in 1...2_500 { _ = try ctx.insert(PKeyed(id: Int64(i), label: "l\(i)", score: Double(i) / 4)) }
            }
            var ids: [Int64] = []
            var scores = 0.0
            try c.perform { ctx in
                try ctx.forEach(PKeyed.all.sort(\.id)) { object in
                    let value = try object.decode()
                    ids.append(value.id)
                    scores += value.score ?? 0
                    if value.id % 500 == 0 {
                        // The context works between two objects: a fetch, an insert, a change.
                        #expect(try ctx.count(of: PKeyed.all.where(\PKeyed.id <= value.id)) == Int(value.id))
                        _ = try ctx.insert(T(marker: "seen", amount: Int(value.id), name: value.label))
                        try object.encode(\.label, "visited")
                    }
                }
            }
            #expect(ids == Array(1...2_500))
            #expect(scores == Double(2_500 * 2_501 / 2) / 4)
            #expect(try c.perform { ctx in try ctx.fetch(T.all.sort(\.amount), \.amount) } == [500, 1_000, 1_500, 2_000, 2_500])
            #expect(try c.perform { ctx in try ctx.count(of: PKeyed.all.where(\PKeyed.label == "visited")) } == 5)
        }
    }

    @Test(arguments: Backend.allCases)
    func containerThatDoesNotCreateTheSchema(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let log = ErrorLog()
            let c = PersistentContainer(database: db, models: [T.self], createsSchema: false, logError: log.log)
            #expect(throws: DatabaseError.self) { try c.perform { ctx in try ctx.count(of: T.all) } }
            #expect(log.all.count == 1)
            let applied = try Migrator(migrations: []).appliedMigrations(db)
            #expect(applied.isEmpty)
            try c.createSchema()
            #expect(try c.perform { ctx in try ctx.count(of: T.all) } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func asyncSchedule(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: predicateModels)
            try await container.schedule { ctx in _ = try ctx.insert(T(marker: "a", amount: 7, name: "async")) }
            let names = try await container.schedule { ctx in try ctx.fetch(T.all, \.name) }
            #expect(names == ["async"])
        }
    }

    @Test(arguments: Backend.allCases)
    func defaultDatabase(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(models: predicateModels)
            _ = try DefaultDatabase.withDatabase(db) {
                try container.perform { ctx in try ctx.insert(T(marker: "d", amount: 1, name: "default")) }
            }
            #expect(try PersistentContainer(database: db, models: predicateModels).perform { ctx in try ctx.fetch(T.all, \.name) } == ["default"])
        }
    }
}
