import DriverPostgres
import DriverSQLite   // re-exports Unity
import Foundation
import Testing
import Unity
import UnityRowCoding

// The code of the SQL-first articles of the Unity catalog (SQLFirstRecords, SQLFirstSaving,
// SQLFirstQueriesAndSchemas) and of the UnityRowCoding catalog, compiled and run on both
// backends. Every ```swift block of those articles stands here line for line
// (DocumentationExamplesTests checks that).
//
// The models live in the `SQLFirstDocs` namespace so that their names (sModel's own `Thing`
// and `Tree`) never meet the other test files' fixtures. The cases are part of the serialized
// `ModelDefTests` suite: they set the process-wide default database and
// `DBManager.blindlyReplaceDuplicates`, which no other case may see half-way.

enum SQLFirstDocs {
    // MARK: SQLFirstRecords: sModel's README example

    struct Thing: ModelDef {
        var tid: String
        var name: String?

        typealias ModelType = Thing
        static let tableName = "Thing"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
        var secondaryKeys: [any CodingKey] { [] }
        static let syncable = false
    }

    /// The schema file of the getting-started article.
    static let thingSQL = """
        CREATE TABLE "Thing" (
          "tid" TEXT PRIMARY KEY,
          "name" TEXT
        );
        """

    /// A folder holding the article's migration, as an app ships it.
    static func writeMigrations(_ files: [String: String]) throws -> String {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("unity-sqlfirst-docs-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for (name, sql) in files {
            try sql.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return dir.path
    }

    static func openOnSQLite(migrations: String) throws {
        let paths = try DBManager.getDBDefFiles(directory: migrations)   // the .sql files, sorted by name
        try DBManager.open(nil, dbDefFilePaths: paths)                    // SQLite: nil is in memory, or give a file path
    }

    static func openOnPostgres(migrations: String, postgresURL: String, schema: String) throws {
        let paths = try DBManager.getDBDefFiles(directory: migrations)
        try DBManager.open(postgresURL: postgresURL, dbDefFilePaths: paths, searchPath: schema)
    }

    static func gettingStarted() throws {
        let thing = Thing(tid: "tid1", name: "thing 1")
        try thing.save()

        let things = try Thing.allInstances()                                 // [Thing]
        let one = try Thing.firstInstanceWhere("tid = ?", "tid1")             // Thing?
        let some = try Thing.instancesWhere("tid in (?, ?)", "tid1", "tid2")  // [Thing]
        #expect(things.map(\.tid) == ["tid1"])
        #expect(one?.name == "thing 1" && one?.existsInDatabase == true)
        #expect(some.map(\.tid) == ["tid1"])

        if var stored = try Thing.firstInstanceWhere("tid = ?", "tid1") {
            stored.name = "renamed"
            try stored.save()   // read from the database, so an UPDATE of the row with its primary key
        }
        #expect(try Thing.firstInstanceWhere("tid = ?", "tid1")?.name == "renamed")

        try DBManager.executeStatements([
            Thing(tid: "tid2", name: "thing 2").createSaveStatement(),
            Thing(tid: "tid3", name: nil).createSaveStatement(),
            thing.createDeleteStatement(),
        ])
        #expect(try Thing.allInstances(orderedBy: [.ascending("tid")]).map(\.tid) == ["tid2", "tid3"])

        let named = try Thing.countWhere("name IS NOT NULL")   // 1
        try Thing.deleteWhere("name IS NULL")
        let left = try Thing.allInstances().map(\.tid)        // ["tid2"]
        #expect(named == 1)
        #expect(left == ["tid2"])
    }

    // MARK: SQLFirstSaving: sModel's test model with a secondary key

    enum DataStatus: Int, Codable {
        case localOnly = 1, dirty, synced, deleted
    }

    struct Tree: ModelDef {
        var localId = UUID().uuidString
        var name: String
        var status = DataStatus.synced
        var serverId: String?

        static let tableName = "Tree"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.localId] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.serverId] }
    }

    struct SyncedTree: ModelDef {
        var localId = UUID().uuidString
        var name: String
        var serverId: String?

        static let tableName = "Tree"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.localId] }
        var secondaryKeys: [any CodingKey] { [CodingKeys.serverId] }
        static let syncable = true   // a duplicate leaves the stored row as it is
    }

    static let treeSQL = """
        CREATE TABLE "Tree" (
          "localId" TEXT PRIMARY KEY,
          "name" TEXT NOT NULL,
          "status" INTEGER,
          "serverId" TEXT UNIQUE
        );
        """

    static func savingAndExistsInDatabase() throws {
        let oak = Tree(name: "oak")               // made in code: existsInDatabase is false
        var stored = try oak.save()               // inserted; the copy save() returns has existsInDatabase true
        stored.name = "old oak"
        try stored.save()                         // an UPDATE of the row with the same localId
        #expect(oak.existsInDatabase == false && stored.existsInDatabase == true)
        #expect(try Tree.allInstances().map(\.name) == ["old oak"])
    }

    static func duplicates() throws -> (Tree, SyncedTree) {
        var tree = Tree(name: "oak")
        tree.serverId = "s-1"
        try tree.save()

        var fromServer = Tree(name: "oak, from the server")   // another localId, the same serverId
        fromServer.serverId = "s-1"
        var updated: Tree?
        do {
            try fromServer.save()
        } catch ModelError<Tree>.duplicate(let existing) {
            // The row holding serverId "s-1" now has the new name (it keeps its own localId),
            // and that update is committed.
            updated = existing
        }
        #expect(updated?.name == "oak, from the server")
        #expect(updated?.localId == tree.localId)

        var synced = SyncedTree(name: "oak, once more")
        synced.serverId = "s-1"
        var kept: SyncedTree?
        do {
            try synced.save()
        } catch ModelError<SyncedTree>.duplicate(let existing) {
            kept = existing   // syncable: the row is left as it was ("oak, from the server")
        }
        #expect(kept?.name == "oak, from the server")
        return (try #require(updated), try #require(kept))
    }

    static func replacingDuplicates() throws {
        var tree = Tree(name: "elm")
        tree.serverId = "s-2"
        try tree.save()

        DBManager.blindlyReplaceDuplicates = true     // process-wide: set it once, at start-up
        defer { DBManager.blindlyReplaceDuplicates = false }
        var replacement = Tree(name: "elm, replaced")
        replacement.serverId = "s-2"
        try replacement.save()                        // no error: the row with serverId "s-2" is now this one
        let stored = try Tree.firstInstanceWhere("\"serverId\" = ?", "s-2")   // quoted: PostgreSQL folds unquoted names
        #expect(stored?.localId == replacement.localId && stored?.name == "elm, replaced")
    }

    static func batches() throws {
        var first = Tree(name: "ash")
        first.serverId = "s-3"
        var again = Tree(name: "ash, again")
        again.serverId = "s-3"
        try DBManager.executeStatements([
            first.createSaveStatement(),
            again.createSaveStatement(),              // a duplicate of a row saved in the same batch: updated, no error
            Tree(name: "birch").createSaveStatement(),
        ])
        #expect(try Tree.allInstances(orderedBy: [.ascending("name")]).map(\.name) == ["ash, again", "birch"])

        do {
            try DBManager.executeStatements([
                Tree(name: "cedar").createSaveStatement(),
                ModelStatement(sql: "INSERT INTO \"Tree\" (\"localId\", \"name\") VALUES (?, NULL)", "no name"),
            ])
        } catch DatabaseError.constraintViolation(.notNull, _) {
            // The whole batch was rolled back: there is no cedar either.
        }
        #expect(try Tree.countWhere("name = ?", "cedar") == 0)
    }

    static func resultsOfABatch() throws -> [[Row]?] {
        var results: [[Row]?] = []
        try DBManager.executeStatements([
            Tree(name: "fir").createSaveStatement(),
            ModelStatement(sql: "SELECT name FROM \"Tree\" ORDER BY name"),
        ]) { rows in
            results = rows   // one entry per statement: nil for the save, the rows of the SELECT
        }
        return results
    }

    // MARK: SQLFirstQueriesAndSchemas

    static func queries() throws {
        let ids = ["tid1", "tid2", "tid3"]
        let listed = try Thing.instancesWhere("tid IN (?, ?, ?)", params: ids)   // an array built at run time
        let ordered = try Thing.instancesOrderedBy("name DESC, tid")
        let everyRow = try Thing.numberOfInstancesWhere(nil)                   // nil counts every row
        let joined = try Thing.instances("SELECT * FROM \"Thing\" WHERE tid > ?", "tid1")
        #expect(listed.count == 3)
        #expect(ordered.map(\.tid) == ["tid3", "tid2", "tid1"])
        #expect(everyRow == 3)
        #expect(joined.map(\.tid).sorted() == ["tid2", "tid3"])

        let dictionaries = try DBManager.resultDictionariesFromQuery("SELECT tid, name FROM \"Thing\" WHERE tid = ?", "tid2")
        let thing = try Thing.model(from: dictionaries[0])   // existsInDatabase is true
        try DBManager.executeUpdateQuery("UPDATE \"Thing\" SET name = ? WHERE tid = ?", "second", "tid2")
        let fresh = try thing.readFromDB()                    // the row as it is now
        #expect(thing.name == "thing 2" && thing.existsInDatabase)
        #expect(fresh?.name == "second")
    }

    // A model on a table it did not create: CodingKeys map the columns' spellings.
    @RowCoded
    struct Invoice: ModelDef {
        enum CodingKeys: String, CodingKey {
            case invoiceId = "invoice_id", customer, total, existsInDatabase
        }
        var invoiceId: Int
        var customer: String
        var total: Decimal

        static let tableName = "invoices"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.invoiceId] }
    }

    /// The SQLite schema of an existing app: its money column is declared TEXT.
    static let invoicesSQL = """
        CREATE TABLE invoices (
          invoice_id INTEGER PRIMARY KEY,
          customer TEXT NOT NULL,
          total TEXT NOT NULL,
          note TEXT DEFAULT 'none'
        );
        """

    /// The same table on PostgreSQL, in its own variant of the migration.
    static let invoicesPostgresSQL = """
        CREATE TABLE invoices (
          invoice_id BIGINT PRIMARY KEY,
          customer TEXT NOT NULL,
          total NUMERIC(10, 2) NOT NULL,
          note TEXT DEFAULT 'none'
        );
        """

    static func existingSchema() throws -> [Int] {
        try Invoice(invoiceId: 1, customer: "Ann", total: Decimal(string: "9.91")!).save()
        try Invoice(invoiceId: 2, customer: "Bob", total: Decimal(string: "10.00")!).save()
        try Invoice(invoiceId: 3, customer: "Cy", total: Decimal(string: "100.5")!).save()

        let large = try Invoice.instances(where: Invoice.column(\.total).greaterThanOrEquals(Decimal(10)),
                                          orderedBy: [.descending(\Invoice.total)])
        let ten = try Invoice.instances(where: Invoice.column(\.total).equals(Decimal(10)))
        #expect(ten.map(\.invoiceId) == [2])   // 10 matches the stored "10.00"
        return large.map(\.invoiceId)          // [3, 2]: compared and ordered as numbers, even in a TEXT column
    }

    static func classModels() throws -> String? {
        try Visit(tid: "v1", name: "first").save()
        return try Visit.firstInstanceWhere("tid = ?", "v1")?.name
    }

    final class Visit: ModelDef {
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
    }

    // MARK: UnityRowCoding

    @RowCoded
    struct Reading: ModelDef {
        enum CodingKeys: String, CodingKey { case id, sensor = "sensor_name", value, existsInDatabase }
        var id: String
        var sensor: String
        var value: Double?
        static let tableName = "readings"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    static let readingsSQL = """
        CREATE TABLE readings (
          id TEXT PRIMARY KEY,
          sensor_name TEXT NOT NULL,
          value DOUBLE PRECISION
        );
        """

    static func rowCoded(_ db: Database) throws -> [String] {
        try Reading(id: "r1", sensor: "north", value: 21.5).save(in: db)
        try Reading(id: "r2", sensor: "south", value: nil).save(in: db)

        let readings = try Reading.allInstances(orderedBy: [.ascending("id")], in: db)   // decoded by the generated code
        let column = Reading.columnName(for: \.sensor)                                   // "sensor_name"
        let value = try readings[0].databaseValue(forColumn: "value")                   // .double(21.5)
        #expect(column == "sensor_name")
        #expect(value == .double(21.5))
        #expect(readings.map(\.value) == [21.5, nil])
        return readings.map(\.sensor)
    }

    static func rowReader(_ db: Database) throws -> [Reading] {
        let statement = SQLStatement.select(SQLSelect(from: "readings").orderBy(SQLExpression.column("id").asc))
        let all = try db.read { conn in try conn.fetchAll(Reading.self, statement) }   // columns resolved once
        let first = try db.read { conn in try conn.fetchOne(statement)?.decode(as: Reading.self) }
        #expect(first?.id == "r1")
        return all
    }
}

/// A hand-written conformance: what `@RowCoded` generates, for a type that cannot take the
/// macro (or a reader who wants to see it).
struct DocPoint: RowDecodable, RowEncodable {
    var x: Int64
    var label: String?

    static let decodingColumns = ["x", "label"]
    static let encodingColumns = ["x", "label"]

    init(x: Int64, label: String?) {
        self.x = x
        self.label = label
    }

    init(row: borrowing Row, columns: borrowing RowColumns) throws {
        x = try columns.decode(0, from: row)
        label = try columns.decodeIfPresent(1, from: row, as: String.self)
    }

    func encodeRow(to values: inout [DatabaseValue]) throws {
        values.append(try RowCoding.value(x))
        values.append(try RowCoding.valueIfPresent(label))
    }
}

extension ModelDefTests {
    /// Opens the article's database the way the article does, runs `body`, and closes it.
    private func withArticleDatabase(_ backend: Backend, _ files: [String: String], _ body: () throws -> Void) throws {
        let migrations = try SQLFirstDocs.writeMigrations(files)
        defer { try? FileManager.default.removeItem(atPath: migrations) }
        switch backend {
        case .sqlite:
            try SQLFirstDocs.openOnSQLite(migrations: migrations)
            defer { DBManager.close() }
            try body()
        case .postgres:
            let url = try #require(postgresURL, "UNITY_POSTGRES_URL is not set")
            // A schema of the test's own, created and dropped by the test database.
            try withTestDatabaseHandle(.postgres) { test in
                try SQLFirstDocs.openOnPostgres(migrations: migrations, postgresURL: url, schema: test.location)
                defer { DBManager.close() }
                try body()
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func docSQLFirstGettingStarted(_ backend: Backend) throws {
        try withArticleDatabase(backend, ["0001_thing.sql": SQLFirstDocs.thingSQL]) {
            try SQLFirstDocs.gettingStarted()
            // The migration ran once and was recorded by name.
            let applied = try DBManager.resultDictionariesFromQuery("SELECT name FROM unity_migrations")
            #expect(applied.map { $0["name"] } == [.text("0001_thing")])
        }
    }

    @Test(arguments: Backend.allCases)
    func docSQLFirstSaving(_ backend: Backend) throws {
        try withArticleDatabase(backend, ["0001_tree.sql": SQLFirstDocs.treeSQL]) {
            try SQLFirstDocs.savingAndExistsInDatabase()
            try SQLFirstDocs.Tree.deleteAllInstances()
            let (updated, kept) = try SQLFirstDocs.duplicates()
            #expect(updated.name == "oak, from the server" && kept.serverId == "s-1")
            #expect(try SQLFirstDocs.Tree.count() == 1)
            try SQLFirstDocs.replacingDuplicates()
            #expect(DBManager.blindlyReplaceDuplicates == false)
            try SQLFirstDocs.Tree.deleteAllInstances()
            try SQLFirstDocs.batches()
            let results = try SQLFirstDocs.resultsOfABatch()
            #expect(results.count == 2)
            #expect(results[0] == nil)
            #expect(try results[1]?.map { try $0.decode(String.self, column: "name") } == ["ash, again", "birch", "fir"])
        }
    }

    @Test(arguments: Backend.allCases)
    func docSQLFirstQueriesAndSchemas(_ backend: Backend) throws {
        try withArticleDatabase(backend, ["0001_thing.sql": SQLFirstDocs.thingSQL,
                                          "0002_invoices.sql": SQLFirstDocs.invoicesSQL,
                                          "0002_invoices.postgres.sql": SQLFirstDocs.invoicesPostgresSQL]) {
            for (tid, name) in [("tid1", "thing 1"), ("tid2", "thing 2"), ("tid3", "thing 3")] {
                try SQLFirstDocs.Thing(tid: tid, name: name).save()
            }
            try SQLFirstDocs.queries()
            #expect(try SQLFirstDocs.existingSchema() == [3, 2])
            // The column the model does not declare took its default.
            let notes = try DBManager.resultDictionariesFromQuery("SELECT note FROM invoices WHERE invoice_id = ?", 1)
            #expect(notes.first?["note"] == .text("none"))
            try SQLFirstDocs.Thing.deleteAllInstances()
            #expect(try SQLFirstDocs.classModels() == "first")
        }
    }

    @Test(arguments: Backend.allCases)
    func docRowCoded(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            _ = try Migrator(migrations: [Migration("0001_readings", sql: SQLFirstDocs.readingsSQL)]).migrate(db)
            #expect(try SQLFirstDocs.rowCoded(db) == ["north", "south"])
            #expect(try SQLFirstDocs.rowReader(db).map(\.sensor) == ["north", "south"])
            // The hand-written conformance reads and writes the same way.
            let point = DocPoint(x: 3, label: nil)
            #expect(try point.encodedRowValues() == [.integer(3), .null])
            let row = Row(layout: RowLayout(columnNames: ["label", "x"]), values: [.text("p"), .integer(4)])
            let decoded = try row.decode(as: DocPoint.self)
            #expect(decoded.x == 4 && decoded.label == "p")
        }
    }
}
