// unity-demo: a tour of Unity on an embedded SQLite file (no arguments) or on a PostgreSQL
// server (a postgresql:// URL as the only argument). It grows with each flavor.
import DriverPostgres
import DriverSQLite
import Foundation
import Unity

// MARK: - The SQL-first flavor: the seed's Thing, as written there (modulo Swift 6 syntax)

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

/// The same table, for a client that mirrors a server: a row it already has stays as it is.
struct SyncedThing: ModelDef {
    var tid: String
    var name: String?

    static let tableName = "Thing"
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
    static let syncable = true
}

/// A local primary key and a secondary key the server gives the row later.
struct Gadget: ModelDef {
    var id: Int
    var serverId: String?
    var name: String?

    static let tableName = "Gadget"
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    var secondaryKeys: [any CodingKey] { [CodingKeys.serverId] }
}

func section(_ title: String) {
    print("\n== \(title)")
}

/// Where the demo keeps its files: migrations and, on SQLite, the database.
let workDir = FileManager.default.temporaryDirectory.appendingPathComponent("unity-demo-\(getpid())", isDirectory: true)

func writeMigrations() throws -> [String] {
    let dir = workDir.appendingPathComponent("migrations", isDirectory: true)
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    let files = [
        "0001_thing.sql": """
            CREATE TABLE "Thing" (
              "tid" TEXT PRIMARY KEY,
              "name" TEXT
            );
            """,
        "0002_order.sql": """
            CREATE TABLE "Order" (
              "id" INTEGER PRIMARY KEY,
              "thing_tid" TEXT NOT NULL REFERENCES "Thing"("tid") ON DELETE CASCADE,
              "qty" INTEGER NOT NULL CHECK ("qty" > 0)
            );
            """,
        "0003_gadget.sql": """
            CREATE TABLE "Gadget" ("id" INTEGER PRIMARY KEY, "serverId" TEXT UNIQUE, "name" TEXT);
            """,
    ]
    for (name, sql) in files {
        try sql.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }
    return try DBManager.getDBDefFiles(directory: dir.path)
}

func run() throws {
    let arguments = CommandLine.arguments.dropFirst()
    if arguments.contains("--help") || arguments.contains("-h") || arguments.count > 1 {
        print("usage: unity-demo [postgresql://user@host:port/database]")
        print("With no argument the demo runs on an embedded SQLite file; with a URL, on that PostgreSQL server.")
        return
    }
    try FileManager.default.createDirectory(at: workDir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: workDir) }

    let paths = try writeMigrations()
    let db: Database
    var cleanup: () -> Void = {}
    if let url = arguments.first {
        // A schema of its own, so the demo never touches the server's other tables.
        let schema = "unity_demo_\(getpid())"
        let admin = try Database(driver: PostgresDriver(url, connections: 1))
        try admin.withConnection { try $0.execute(sql: "CREATE SCHEMA \"\(schema)\"") }
        cleanup = {
            _ = try? admin.withConnection { try $0.execute(sql: "DROP SCHEMA \"\(schema)\" CASCADE") }
            admin.close()
        }
        db = try DBManager.open(postgresURL: url, dbDefFilePaths: paths, searchPath: schema)
        print("Unity demo on PostgreSQL (\(url), schema \(schema))")
    } else {
        let file = workDir.appendingPathComponent("demo.sqlite").path
        db = try DBManager.open(file, dbDefFilePaths: paths)
        print("Unity demo on an embedded SQLite file (\(file))")
    }
    defer {
        DBManager.close()
        cleanup()
    }

    section("Migrations run once")
    let migrator = try Migrator(sqlFilePaths: paths)
    for applied in try migrator.appliedMigrations(db) {
        print("applied \(applied.name)  sha256 \(applied.checksum.prefix(12))…")
    }
    print("running again applies: \(try migrator.migrate(db))")

    section("SQL-first records (ModelDef)")
    let thing = Thing(tid: "tid1", name: "thing 1")
    try thing.save()
    try Thing(tid: "tid2", name: "thing 2").save()
    try Thing(tid: "tid3", name: nil).save()
    let things = try Thing.allInstances()
    print("allInstances: \(things.map { "\($0.tid)=\($0.name ?? "nil")" })")
    if let first = try Thing.firstInstanceWhere("tid = ?", "tid1") {
        print("firstInstanceWhere(\"tid = ?\", \"tid1\"): \(first.name ?? "nil")")
        var renamed = first
        renamed.name = "thing one"
        try renamed.save()
    }
    let some = try Thing.instancesWhere("tid in (?, ?)", "tid1", "tid2")
    print("instancesWhere(\"tid in (?, ?)\", \"tid1\", \"tid2\"): \(some.map { $0.name ?? "nil" })")

    section("Saving a key that is already taken (sModel's rules)")
    do {
        try Thing(tid: "tid2", name: "thing two").save()
    } catch let ModelError<Thing>.duplicate(existing) {
        // Not syncable: the row was updated (and committed), then the error says it existed.
        print("save() of a new tid2: ModelError.duplicate; the row now: \(existing.name ?? "nil")")
    }
    do {
        try SyncedThing(tid: "tid2", name: "from the server").save()
    } catch let ModelError<SyncedThing>.duplicate(existing) {
        print("syncable: the row stays as it is: \(existing.name ?? "nil")")
    }
    try Gadget(id: 1, serverId: nil, name: "made offline").save()
    do {
        // Matched on the primary key (no row has srv-7 yet): the row takes the server's id.
        try Gadget(id: 1, serverId: "srv-7", name: "synced").save()
    } catch ModelError<Gadget>.duplicate {}
    do {
        // Matched on the secondary key first: row 1 is updated and keeps its own id.
        try Gadget(id: 99, serverId: "srv-7", name: "renamed on the server").save()
    } catch let ModelError<Gadget>.duplicate(existing) {
        print("secondary key first: row \(existing.id) (\(existing.serverId ?? "nil")) is now \(existing.name ?? "nil")")
    }
    DBManager.blindlyReplaceDuplicates = true
    try Thing(tid: "tid2", name: "replaced").save()
    DBManager.blindlyReplaceDuplicates = false
    print("blindlyReplaceDuplicates: no error; tid2 is \(try Thing.firstInstanceWhere("tid = ?", "tid2")?.name ?? "nil")")

    section("Batch statements in one transaction")
    let batch = try (4...1003).map { try Thing(tid: "tid\($0)", name: "batch \($0)").createSaveStatement() }
    try DBManager.executeStatements(batch)
    print("1,000 saves in one transaction; Thing.count() = \(try Thing.count())")
    try DBManager.executeStatements([
        try Thing(tid: "new-a", name: "a").createSaveStatement(),
        try Thing(tid: "tid1", name: "updated by a batch").createSaveStatement(),
    ])
    print("a batch with a duplicate does not throw: tid1 is \(try Thing.firstInstanceWhere("tid = ?", "tid1")?.name ?? "nil")")
    do {
        try DBManager.executeStatements([
            try Thing(tid: "new-b", name: "b").createSaveStatement(),
            ModelStatement(sql: "INSERT INTO \"Order\" (id, thing_tid, qty) VALUES (?, ?, ?)", 99, "new-b", 0),
        ])
    } catch {
        print("a batch with a CHECK violation fails as a whole: new-b saved? \(try Thing.firstInstanceWhere("tid = ?", "new-b") != nil)")
    }

    section("The core: AST statements, one error type, transactions")
    try db.write { conn in
        try conn.execute(.insert(SQLInsert(into: "Order", values: ["id": 1, "thing_tid": "tid1", "qty": 3])))
        try conn.execute(.insert(SQLInsert(into: "Order", values: ["id": 2, "thing_tid": "tid1", "qty": 4])))
    }
    let report = try db.read { conn in
        try conn.fetchAll(.select(SQLSelect(from: "Thing", as: "t")
            .columns(.expression(.column("t", "name"), alias: "name"), .expression(.sum(.column("o", "qty")), alias: "total"))
            .join(.inner, "Order", as: "o", on: SQLExpression.column("o", "thing_tid").equals(.column("t", "tid")))
            .groupBy(.column("t", "name"))))
    }
    for row in report {
        print("join + group by: \(try row.decode(String.self, column: "name")) ordered \(try row.decode(Int.self, column: "total"))")
    }
    for bad in [
        SQLStatement.insert(SQLInsert(into: "Order", values: ["id": 3, "thing_tid": "nope", "qty": 1])),
        SQLStatement.insert(SQLInsert(into: "Order", values: ["id": 4, "thing_tid": "tid1", "qty": 0])),
    ] {
        do {
            try db.execute(bad)
        } catch let DatabaseError.constraintViolation(kind, context) {
            print("constraint violation .\(kind) (engine code \(context.code ?? "?"))")
        }
    }
    struct Oops: Error {}
    _ = try? db.write { conn in
        try conn.execute(.delete(SQLDelete(from: "Order")))
        throw Oops()
    }
    let kept = try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM \"Order\"") } ?? 0
    print("a write that throws rolls back: \(kept) orders still there")

    try PersistableDemo.run(db)
    try predicatesDemo(db)
    try ORMDemo.run(db)
    try StateDemo.run(db)

    print("\nDone.")
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("unity-demo failed: \(error)\n".utf8))
    exit(1)
}
