import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// Arguments built at run time, models from rows of your own, and class models.
extension ModelDefTests {
    /// A class model whose stored properties are all `let`s of Sendable types: a `final class`
    /// is `Sendable` as it is.
    final class FrozenThing: ModelDef, Equatable {
        let tid: String
        let name: String?
        let existsInDatabase: Bool

        init(tid: String, name: String?) {
            self.tid = tid
            self.name = name
            self.existsInDatabase = false
        }

        static let tableName = "Thing"
        var primaryKeys: [any CodingKey] { [CodingKeys.tid] }

        static func == (lhs: FrozenThing, rhs: FrozenThing) -> Bool {
            lhs.tid == rhs.tid && lhs.name == rhs.name && lhs.existsInDatabase == rhs.existsInDatabase
        }
    }

    /// A class model with `var`s (and open to subclassing): Swift 6 needs `@unchecked Sendable`.
    class MutableAccount: ModelDef, @unchecked Sendable {
        var id: Int
        var email: String
        var name: String?
        var existsInDatabase = false

        init(id: Int, email: String, name: String?) {
            self.id = id
            self.email = email
            self.name = name
        }

        class var tableName: String { "Account" }
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.email] }
    }

    @Test(arguments: Backend.allCases)
    func argumentsInAnArrayBuiltAtRunTime(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            for (tid, name) in [("1", "pear"), ("2", "apple"), ("3", "fig"), ("4", "apricot"), ("5", "banana")] {
                try Thing(tid: tid, name: name).save(in: db)
            }
            // The list's length is known only at run time.
            let wanted = ["5", "2", "4"].filter { !$0.isEmpty }
            let marks = Array(repeating: "?", count: wanted.count).joined(separator: ", ")
            #expect(try Thing.instancesWhere("tid IN (\(marks))", params: wanted, orderedBy: [.ascending("tid")], in: db)
                .map(\.name) == ["apple", "apricot", "banana"])
            #expect(try Thing.firstInstanceWhere("tid IN (\(marks))", params: wanted, orderedBy: [.descending("tid")], in: db)?
                .name == "banana")
            #expect(try Thing.countWhere("tid IN (\(marks))", params: wanted, in: db) == 3)
            #expect(try Thing.numberOfInstancesWhere("name LIKE ?", params: ["ap%"], in: db) == 2)
            #expect(try Thing.numberOfInstancesWhere(nil, params: [], in: db) == 5)
            let mixed: [any DatabaseValueConvertible] = ["1", "fig"]
            #expect(try Thing.instances("SELECT * FROM \"Thing\" WHERE tid = ? OR name = ? ORDER BY tid", params: mixed, in: db)
                .map(\.tid) == ["1", "3"])
            #expect(try DBManager.resultDictionariesFromQuery("SELECT name FROM \"Thing\" WHERE tid IN (\(marks)) ORDER BY tid",
                                                              params: wanted, in: db)
                == [["name": .text("apple")], ["name": .text("apricot")], ["name": .text("banana")]])
            #expect(try DBManager.executeUpdateQuery("UPDATE \"Thing\" SET name = ? WHERE tid IN (\(marks))",
                                                     params: ["x"] + wanted, in: db) == 3)
            #expect(try Thing.countWhere("name = ?", params: ["x"], in: db) == 3)

            // One value too few: a misuse before anything runs, and nothing is deleted.
            #expect(throws: DatabaseError.self) { try Thing.deleteWhere("tid IN (?, ?)", params: ["1"], in: db) }
            #expect(try Thing.count(in: db) == 5)
            #expect(try Thing.deleteWhere("tid IN (\(marks))", params: wanted, in: db) == 3)
            #expect(try Thing.allInstances(orderedBy: [.ascending("tid")], in: db).map(\.tid) == ["1", "3"])
            // An empty list: no placeholders, no values.
            #expect(try Thing.instancesWhere("1 = 1", params: [], in: db).count == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func modelFromARowOfYourOwnQuery(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            try Thing(tid: "a", name: "A").save(in: db)
            try Thing(tid: "b", name: nil).save(in: db)
            // A query with extra columns: they are ignored.
            let rows = try db.read { try $0.fetchAll(sql: "SELECT tid, name, 7 AS extra FROM \"Thing\" ORDER BY tid") }
            let models = try rows.map { try Thing.model(from: $0) }
            #expect(models == [Thing(tid: "a", name: "A", existsInDatabase: true), Thing(tid: "b", name: nil, existsInDatabase: true)])
            var fromBatch: [Thing] = []
            try DBManager.executeStatement(ModelStatement(sql: "SELECT * FROM \"Thing\" WHERE tid = ?", "b"), in: db) { rows in
                fromBatch = try (rows ?? []).map { try Thing.model(from: $0) }
            }
            #expect(fromBatch == [Thing(tid: "b", name: nil, existsInDatabase: true)])
            let dictionaries = try DBManager.resultDictionariesFromQuery("SELECT * FROM \"Thing\" WHERE tid = ?", "a", in: db)
            #expect(try dictionaries.map { try Thing.model(from: $0) } == [Thing(tid: "a", name: "A", existsInDatabase: true)])
            // A row without the non-optional primary key column is a typed error naming it.
            let nameOnly = try #require(try db.read { try $0.fetchOne(sql: "SELECT name FROM \"Thing\" WHERE tid = 'a'") })
            do {
                _ = try Thing.model(from: nameOnly)
                Issue.record("a row without tid decoded")
            } catch let error as DatabaseError {
                #expect("\(error)".contains("tid"))
            }
            #expect(throws: DatabaseError.self) { try Thing.model(from: ["name": .text("A")]) }
            // A model from a row saves back as an update (it exists in the database).
            var edited = try Thing.model(from: rows[0])
            edited.name = "A2"
            try edited.save(in: db)
            #expect(try Thing.allInstances(orderedBy: [.ascending("tid")], in: db).map(\.name) == ["A2", nil])
        }
    }

    @Test(arguments: Backend.allCases)
    func classModels(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            let saved = try FrozenThing(tid: "c1", name: "class").save(in: db)
            #expect(saved.existsInDatabase)
            #expect(saved.tid == "c1" && saved.name == "class")
            #expect(try FrozenThing.firstInstanceWhere("tid = ?", "c1", in: db) == saved)
            #expect(try Thing.allInstances(in: db) == [Thing(tid: "c1", name: "class", existsInDatabase: true)])
            // A copy made in code with the same key: not syncable, so the row is updated and
            // the duplicate is reported, carrying the class instance as stored now.
            do {
                try FrozenThing(tid: "c1", name: "again").save(in: db)
                Issue.record("expected a duplicate")
            } catch ModelError<FrozenThing>.duplicate(let existing) {
                #expect(existing.tid == "c1" && existing.name == "again" && existing.existsInDatabase)
            }
            try DBManager.executeStatements([FrozenThing(tid: "c2", name: nil).createSaveStatement(),
                                             FrozenThing(tid: "c1", name: nil).createDeleteStatement()], in: db)
            #expect(try FrozenThing.allInstances(in: db).map(\.tid) == ["c2"])

            let account = MutableAccount(id: 1, email: "a@example.com", name: "A")
            let stored = try account.save(in: db)
            stored.name = "renamed"
            let updated = try stored.save(in: db)
            #expect(updated.name == "renamed" && updated !== stored)
            #expect(try MutableAccount.firstInstanceWhere("id = ?", 1, in: db)?.name == "renamed")
            // Another id with the same secondary key: the secondary key's row is the duplicate.
            do {
                try MutableAccount(id: 2, email: "a@example.com", name: "B").save(in: db)
                Issue.record("expected a duplicate")
            } catch ModelError<MutableAccount>.duplicate(let existing) {
                #expect(existing.id == 1 && existing.name == "B")
            }
            #expect(try MutableAccount.count(in: db) == 1)
            #expect(try updated.delete(in: db))
            #expect(try MutableAccount.count(in: db) == 0)
        }
    }
}
