import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import UnityORMFields

// Amigo's README example ("Fire it up" and "Querying"), ported to UnityORM by a reader who knows
// Amigo and read only UnityORM's documentation. Each step follows the README's order.

// "Fire it up": `class Dog: AmigoModel { dynamic var id: Int = 0; dynamic var label: String! }`
@ORMFields
final class RpDog: AmigoModel {
    var id: Int = 0
    var label: String!
}

// "Querying": `dynamic var id: NSNumber!`, which the docs port as `var id: Int?`.
@ORMFields
final class RpQueryDog: AmigoModel {
    var id: Int?
    var label: String!
}

/// The README's first mapping: a column list with an `Index` of its own name.
func rpDogMappingWithIndex() -> ORMModel {
    ORMModel(RpDog.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self),
        Index("dog_label_idx", "label")
    )
}

/// The README's second mapping, "the same mapping this way": `indexed: true` on the column.
func rpDogMappingIndexedColumn() -> ORMModel {
    ORMModel(RpDog.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self, indexed: true)
    )
}

/// The names of the indexes on `table`, read from the backend's catalog.
func rpIndexNames(_ amigo: Amigo, table: String, backend: Backend) throws -> [String] {
    switch backend {
    case .sqlite:
        return try amigo.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name", [table]) {
            try $0.decode(String.self, column: "name")
        }
    case .postgres:
        return try amigo.execute("SELECT indexname FROM pg_indexes WHERE tablename = ? AND schemaname = current_schema() AND indexname NOT LIKE '%pkey' ORDER BY indexname", [table]) {
            try $0.decode(String.self, column: "indexname")
        }
    }
}

@Suite("Reader port: Amigo's README on UnityORM")
struct ReaderPortORMTests {

    @Test("Fire it up: the mapping with an Index creates the table and the named index", arguments: Backend.allCases)
    func fireItUpWithIndex(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let dog = rpDogMappingWithIndex()
            let amigo = try Amigo([dog], database: db)
            try amigo.createAll()
            #expect(dog.tableName == "conformancetests_rpdog")
            #expect(try rpIndexNames(amigo, table: "conformancetests_rpdog", backend: backend) == ["dog_label_idx"])
            // createAll a second time changes nothing
            try amigo.createAll()
            #expect(try rpIndexNames(amigo, table: "conformancetests_rpdog", backend: backend) == ["dog_label_idx"])
        }
    }

    @Test("Fire it up: indexed: true makes the index <table>_<column>_idx", arguments: Backend.allCases)
    func fireItUpIndexedColumn(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let amigo = try Amigo([rpDogMappingIndexedColumn()], database: db)
            try amigo.createAll()
            #expect(try rpIndexNames(amigo, table: "conformancetests_rpdog", backend: backend) == ["conformancetests_rpdog_label_idx"])
        }
    }

    @Test("Querying: add a dog in a session, query it back", arguments: Backend.allCases)
    func querying(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let dog = ORMModel(RpQueryDog.self,
                Column("id", type: Int.self, primaryKey: true),
                Column("label", type: String.self)
            )
            let amigo = try Amigo([dog], database: db)
            try amigo.createAll()

            // first lets add a dog
            let session = try amigo.session
            let d1 = RpQueryDog()
            d1.label = "Lucy"
            try session.add(d1)
            #expect(d1.id == 1)

            // now lets query:
            let results = try session.query(RpQueryDog.self).all()
            #expect(results.count == 1)
            #expect(results.map(\.label) == ["Lucy"])
            #expect(results.map(\.id) == [1])
            try session.commit()

            // committed: a query outside the session sees it
            let after = try amigo.query(RpQueryDog.self).all()
            #expect(after.map(\.label) == ["Lucy"])
        }
    }

    @Test("Querying: a session released without commit() keeps nothing", arguments: Backend.allCases)
    func uncommittedSessionKeepsNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let amigo = try Amigo([rpDogMappingWithIndex()], database: db)
            try amigo.createAll()
            do {
                let session = try amigo.session
                let d1 = RpDog()
                d1.label = "Lucy"
                try session.add(d1)
                #expect(try session.query(RpDog.self).count() == 1)
            }
            #expect(try amigo.query(RpDog.self).count() == 0)
        }
    }

    @Test("Fire it up on SQLiteEngineFactory(\":memory:\", echo: true), as the README opens it")
    func memoryEngine() throws {
        let amigo = try Amigo([rpDogMappingWithIndex()], factory: SQLiteEngineFactory(":memory:", echo: true))
        try amigo.createAll()
        let session = try amigo.session
        let d1 = RpDog()
        d1.label = "Lucy"
        try session.add(d1)
        let results = try session.query(RpDog.self).all()
        #expect(results.count == 1)
        #expect(results.first?.label == "Lucy")
        #expect(results.first?.id == 1)
        try session.commit()
        #expect(try amigo.query(RpDog.self).all().map(\.label) == ["Lucy"])

        // Amigo's `dynamic var label: String!` left unset is stored as NULL and reads back as nil
        let d2 = RpDog()
        try session.add(d2)
        try session.commit()
        let both = try amigo.query(RpDog.self).orderBy("id").all()
        #expect(both.map(\.id) == [1, 2])
        #expect(both.map { $0.label as String? } == ["Lucy", nil])
        #expect(try amigo.query(RpDog.self).filter("label = nil").all().map(\.id) == [2])
    }
}
