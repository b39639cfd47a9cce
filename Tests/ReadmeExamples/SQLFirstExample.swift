import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

// The README's examples, compiled and run on both backends. Every ```swift block of README.md
// stands line for line in a file of this folder (DocumentationExamplesTests checks it); they
// live in a test target of their own so that the front page's short type names (`Thing`,
// `Hat`, `Dog`, `Book`, `Person`) clash with nothing in the conformance suite.

// From "Opening a database".
func openDatabase(_ location: String) throws -> Database {
    if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") {
        return try Database(driver: PostgresDriver(location, connections: 8))
    }
    return try Database(driver: SQLiteDriver(path: location))   // a file path, or ":memory:"
}

// From the SQL-first flavor's example.
struct Thing: ModelDef {
    var tid: String
    var name: String?
    static let tableName = "Thing"
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
}

func namedThings(in db: Database) throws -> [Thing] {
    _ = try Migrator(migrations: [Migration("0001_thing", sql: #"CREATE TABLE "Thing" ("tid" TEXT PRIMARY KEY, "name" TEXT)"#)]).migrate(db)
    try Thing(tid: "tid1", name: "thing 1").save(in: db)
    try Thing(tid: "tid2", name: nil).save(in: db)
    return try Thing.instancesWhere("name IS NOT NULL", in: db)
}

@Suite("README: the front page's examples")
struct ReadmeExampleTests {
    @Test(arguments: Backend.allCases)
    func openingEitherBackend(_ backend: Backend) throws {
        let db = try openDatabase(backend == .sqlite ? ":memory:" : try #require(postgresURL))
        defer { db.close() }
        #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT 40 + 2") } == 42)
    }

    @Test(arguments: Backend.allCases)
    func theCoreAlone(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in   // a transaction: commits on return, rolls back on throw
                try conn.execute(.createTable(SQLCreateTable("book", ifNotExists: true, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("title", .text, notNull: true, unique: true),
                    SQLColumnDefinition("year", .int64),
                ])))
                try conn.execute(.insert(SQLInsert(into: "book", columns: ["title", "year"], values: [
                    [.value("Dune"), .value(1965)], [.value("Emma"), .value(1815)], [.value("Neuromancer"), .value(1984)],
                ])))
            }

            let before1970 = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "book").columns(.column("title"))
                    .where(SQLExpression.column("year").lessThan(1970))
                    .orderBy(SQLExpression.column("title").asc)))
                    .map { try $0.decode(String.self, column: "title") }
            }
            #expect(before1970 == ["Dune", "Emma"])
        }
    }

    @Test(arguments: Backend.allCases)
    func sqlFirst(_ backend: Backend) throws {
        let things = try withTestDatabase(backend) { try namedThings(in: $0) }
        #expect(things.map(\.tid) == ["tid1"])
        #expect(things.map(\.name) == ["thing 1"])
        #expect(things.allSatisfy { $0.existsInDatabase })
    }

    @Test(arguments: Backend.allCases)
    func persistable(_ backend: Backend) throws {
        #expect(try withTestDatabase(backend) { try bigHatColors(in: $0) } == ["green", "red"])
    }

    @Test(arguments: Backend.allCases)
    func orm(_ backend: Backend) throws {
        #expect(try withTestDatabase(backend) { try lucysPeople(in: $0) } == ["Ann", "Bo"])
    }

    @Test(arguments: Backend.allCases)
    func predicates(_ backend: Backend) throws {
        #expect(try withTestDatabase(backend) { try recentTitles(in: $0) } == ["Neuromancer", "Dune"])
    }
}
