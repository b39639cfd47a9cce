import Foundation
import Testing
import Unity
import UnityORMFields
import UnityPersistable
import UnityPredicates

/// The flavors' pure-insert batches at and above `Connection.copyThreshold` (COPY on
/// PostgreSQL, the INSERT path on SQLite): the same rows, ids and errors on both backends.
@Suite("Flavors: batches large enough for COPY")
struct FlavorCopyTests {
    static let size = max(Connection.copyThreshold, 1_000) + 200

    /// SQL-first: a batch of new models goes as one plain load; a taken key in it sends the
    /// attempt through sModel's duplicate rules, which update that row.
    @Test(arguments: Backend.allCases)
    func sqlFirstNewModels(_ backend: Backend) throws {
        typealias Thing = ModelDefFixtures.Thing
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Thing(tid: "t00010", name: "old").save(in: db)
            let tids = (0..<Self.size).map { String(format: "t%05d", $0) }
            try DBManager.executeStatements(tids.enumerated().map { index, tid in
                try Thing(tid: tid, name: index % 3 == 0 ? nil : "n\(index)").createSaveStatement()
            }, in: db)
            let stored = try Thing.allInstances(orderedBy: [.ascending("tid")], in: db)
            #expect(stored.map(\.tid) == tids)
            #expect(stored[10].name == "n10")
            #expect(stored[9].name == nil && stored[11].name == "n11")
            // A batch with no taken key.
            try DBManager.executeStatements((0..<Self.size).map { try Thing(tid: "u\($0)", name: "u").createSaveStatement() }, in: db)
            #expect(try Thing.numberOfInstancesWhere("name = ?", "u", in: db) == Self.size)
        }
    }

    /// Inserts one order before a test's batch and returns its generated id.
    static func insertFirstOrder(_ db: Database) throws -> Int {
        let first = try PersistableFixtures.Order.insertAll([PersistableFixtures.Order(hatId: -1, customerId: nil, quantity: 1)], db)
        return try #require(first.first?.id)
    }

    /// Persistable: `insertAll` returns the database's ids in the order given; a taken id in
    /// the middle is the core's unique-constraint error, and nothing is kept.
    @Test(arguments: Backend.allCases)
    func persistableInsertAll(_ backend: Backend) throws {
        typealias Order = PersistableFixtures.Order
        try PersistableFixtures.withWorld(backend) { db in
            let firstId = try Self.insertFirstOrder(db)
            let orders = (0..<Self.size).map { Order(hatId: $0, customerId: $0 % 2 == 0 ? 7 : 8, quantity: 2, note: "n\($0)") }
            let copies = try Order.insertAll(orders, db)
            #expect(copies.map(\.id) == (1...Self.size).map { firstId + $0 })
            #expect(copies.map(\.hatId) == Array(0..<Self.size))
            let stored = try Query<Order>().order("id", .orderedAscending).allOrThrow(db)
            #expect(stored.count == Self.size + 1)
            #expect(stored.last?.id == firstId + Self.size && stored.last?.note == "n\(Self.size - 1)")
            #expect(stored[1].customerId == 7 && stored[2].customerId == 8)
            // The next generated id follows the batch's.
            let after = try Order.insertAll([Order(hatId: -2, customerId: nil, quantity: 1)], db)
            #expect(after.first?.id == firstId + Self.size + 1)

            var keyed = try (0..<Self.size).map { index in
                try Order(databaseRow: DatabaseRow(data: ["id": .integer(Int64(100_000 + index)), "hat_id": .integer(Int64(index)), "quantity": 3]))
            }
            keyed[Self.size / 2] = try Order(databaseRow: DatabaseRow(data: ["id": .integer(Int64(firstId)), "hat_id": 0, "quantity": 3]))
            let error = #expect(throws: DatabaseError.self) { try Order.insertAll(keyed, db) }
            guard case .constraintViolation(.unique, _)? = error else {
                Issue.record("expected a unique violation, got \(String(describing: error))")
                return
            }
            #expect(try Query<Order>().countOrThrow(db) == Self.size + 2)
        }
    }

    /// Persistable: a batch of records that name their ids, in three shapes (a nil quantity
    /// leaves the column to its default, a nil note is NULL either way), the first record's
    /// shape the most common one but not the only one at the start: every row is stored with
    /// its own values, the copies come back in the order given, and the next generated id
    /// follows the highest given one.
    @Test(arguments: Backend.allCases)
    func persistableInsertAllOfKeyedRecordsInSeveralShapes(_ backend: Backend) throws {
        typealias Order = PersistableFixtures.Order
        func order(_ index: Int) throws -> Order {
            var data: [String: DatabaseValue] = ["id": .integer(Int64(5_000 + index)), "hat_id": .integer(Int64(index)),
                                                 "customer_id": .integer(Int64(index % 7))]
            if index % 3 != 1 { data["quantity"] = .integer(Int64(10 + index)) }
            if index % 4 != 2 { data["note"] = .text("n\(index)") }
            return try Order(databaseRow: DatabaseRow(data: data))
        }
        try PersistableFixtures.withWorld(backend) { db in
            let orders = try (0..<Self.size).map(order)
            let copies = try Order.insertAll(orders, db)
            #expect(copies.map(\.id) == (0..<Self.size).map { 5_000 + $0 })
            #expect(copies.map(\.hatId) == Array(0..<Self.size))
            #expect(copies[1].quantity == nil && copies[2].note == nil && copies[3].quantity == 13 && copies[3].note == "n3")
            let stored = try Query<Order>().order("id", .orderedAscending).allOrThrow(db)
            #expect(stored.count == Self.size)
            #expect(stored.map(\.hatId) == Array(0..<Self.size))
            // The quantity left out took the column's default; the others are as given.
            #expect(stored.map(\.quantity) == (0..<Self.size).map { $0 % 3 == 1 ? 1 : 10 + $0 })
            #expect(stored.map(\.note) == (0..<Self.size).map { $0 % 4 == 2 ? nil : "n\($0)" })
            #expect(stored.map(\.customerId) == (0..<Self.size).map { $0 % 7 })
            let after = try Order.insertAll([Order(hatId: -1, customerId: nil)], db)
            #expect(after.first?.id == 5_000 + Self.size)
        }
    }

    /// Persistable: a batch of new records in three shapes, with two records that name their
    /// (negative) ids among them: every record gets an id of its own (on PostgreSQL, the sequence's next
    /// values in the records' order), its row holds its own values, and the sequence skips
    /// nothing: the next generated id follows the batch's.
    @Test(arguments: Backend.allCases)
    func persistableInsertAllOfNewRecordsInSeveralShapes(_ backend: Backend) throws {
        typealias Order = PersistableFixtures.Order
        try PersistableFixtures.withWorld(backend) { db in
            let firstId = try Self.insertFirstOrder(db)
            let keyed = Set([5, 700])
            let orders = try (0..<Self.size).map { index -> Order in
                var data: [String: DatabaseValue] = ["hat_id": .integer(Int64(index)), "customer_id": .integer(Int64(index % 7))]
                if keyed.contains(index) { data["id"] = .integer(Int64(-index)) }
                if index % 3 != 1 { data["quantity"] = .integer(Int64(10 + index)) }
                if index % 4 != 2 { data["note"] = .text("n\(index)") }
                return try Order(databaseRow: DatabaseRow(data: data))
            }
            let copies = try Order.insertAll(orders, db)
            #expect(copies.map(\.hatId) == Array(0..<Self.size))
            #expect(copies[5].id == -5 && copies[700].id == -700)
            let generated = copies.indices.filter { !keyed.contains($0) }.compactMap { copies[$0].id }
            #expect(generated.count == Self.size - 2)
            #expect(Set(generated) == Set((1...(Self.size - 2)).map { firstId + $0 }))
            if backend == .postgres {
                // Taken before the load, in the records' order.
                #expect(generated == (1...(Self.size - 2)).map { firstId + $0 })
            }
            let stored = try Query<Order>().order("id", .orderedAscending).allOrThrow(db)
            #expect(stored.count == Self.size + 1)
            let byId = Dictionary(uniqueKeysWithValues: stored.compactMap { order in order.id.map { ($0, order) } })
            for (index, copy) in copies.enumerated() {
                let row = try #require(copy.id.flatMap { byId[$0] })
                #expect(row.hatId == index && row.customerId == index % 7)
                #expect(row.quantity == (index % 3 == 1 ? 1 : 10 + index))
                #expect(row.note == (index % 4 == 2 ? nil : "n\(index)"))
            }
            // Nothing skipped on the sequence: the next id follows the batch's generated ones
            // (the given ids are below them).
            let after = try Order.insertAll([Order(hatId: -2, customerId: nil)], db)
            #expect(after.first?.id == firstId + Self.size - 1)
        }
    }

    /// ORM: a session batch of new objects gets its generated keys, in order.
    @Test(arguments: Backend.allCases)
    func ormBatchOfNewObjects(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            let session = try amigo.session
            let one = AmigoSeed.Dog()
            one.label = "first"
            try session.add(one)
            try session.commit()
            let dogs = (0..<Self.size).map { index -> AmigoSeed.Dog in
                let d = AmigoSeed.Dog()
                d.label = "dog \(index)"
                return d
            }
            let batch = try amigo.session
            try batch.batch { b in b.add(dogs) }
            try batch.commit()
            #expect(dogs.map(\.id) == (1...Self.size).map { one.id + $0 })
            let rows = try test.database.fetchAll(sql: "SELECT id, label FROM dog ORDER BY id")
            #expect(rows.count == Self.size + 1)
            #expect(rows[1]["label"] == .text("dog 0") && rows[1]["id"] == .integer(Int64(one.id + 1)))
            #expect(rows.last?["label"] == .text("dog \(Self.size - 1)"))
        }
    }

    /// ORM: a session batch of keyed objects (`add` of objects with ids) replaces the rows
    /// whose keys exist and inserts the others (PostgreSQL: through a staging table), the
    /// later of two objects with one key winning; the next generated key follows the batch's.
    @Test(arguments: Backend.allCases)
    func ormBatchOfKeyedObjects(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            func dog(_ id: Int, _ label: String) -> AmigoSeed.Dog {
                let d = AmigoSeed.Dog()
                d.id = id
                d.label = label
                return d
            }
            let old = try amigo.session
            try old.batch { b in b.add((1...100).map { dog($0, "old \($0)") }) }
            try old.commit()
            // Keys 51…(50 + size), then key 60 again, last.
            var dogs = (51...(50 + Self.size)).map { dog($0, "dog \($0)") }
            dogs.append(dog(60, "again"))
            let batch = try amigo.session
            try batch.batch { b in b.add(dogs) }
            try batch.commit()
            let rows = try test.database.fetchAll(sql: "SELECT id, label FROM dog ORDER BY id")
            #expect(rows.count == 50 + Self.size)
            #expect(rows[49]["label"] == .text("old 50") && rows[50]["label"] == .text("dog 51"))
            #expect(rows[59]["label"] == .text("again") && rows[99]["label"] == .text("dog 100"))
            #expect(rows.last?["id"] == .integer(Int64(50 + Self.size)) && rows.last?["label"] == .text("dog \(50 + Self.size)"))
            let next = AmigoSeed.Dog()
            next.label = "generated"
            let session = try amigo.session
            try session.add(next)
            try session.commit()
            #expect(next.id == 50 + Self.size + 1)
        }
    }

    /// Predicates: inserts of a model keyed by its own attribute in one perform; a duplicate
    /// key among them fails the perform, which leaves nothing.
    @Test(arguments: Backend.allCases)
    func predicatesInsertsInOnePerform(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: [PKeyed.self])
            try container.perform { ctx in
                for i in 1...Self.size { _ = try ctx.insert(PKeyed(id: Int64(i), label: "l\(i)", score: i % 4 == 0 ? nil : Double(i) / 2)) }
            }
            let labels = try container.perform { ctx in try ctx.fetch(PKeyed.all.sort(\.id), \.label) }
            #expect(labels == (1...Self.size).map { "l\($0)" })
            let scores = try container.perform { ctx in try ctx.fetch(PKeyed.all.where(\PKeyed.id <= 4).sort(\.id), \.score) }
            #expect(scores == [0.5, 1.0, 1.5, nil])
            let error = #expect(throws: DatabaseError.self) {
                try container.perform { ctx in
                    for i in 1...Self.size { _ = try ctx.insert(PKeyed(id: Int64(Self.size + i), label: "new")) }
                    _ = try ctx.insert(PKeyed(id: 5, label: "duplicate"))
                    for i in 1...Self.size { _ = try ctx.insert(PKeyed(id: Int64(3 * Self.size + i), label: "new")) }
                }
            }
            guard case .constraintViolation(.unique, _)? = error else {
                Issue.record("expected a unique violation, got \(String(describing: error))")
                return
            }
            #expect(try container.perform { ctx in try ctx.count(of: PKeyed.all) } == Self.size)
        }
    }
}
