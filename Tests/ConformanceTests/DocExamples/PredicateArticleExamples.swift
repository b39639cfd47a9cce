import Foundation
import Testing
import Unity
import UnityRowCoding

// The code of "Filtering with #Predicate", compiled and run on both backends.

@RowCoded
struct Gizmo: ModelDef {
    var id: Int
    var name: String
    var nick: String?
    var price: Decimal
    var existsInDatabase = false
    static let tableName = "gizmo"
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }
}

func cheapGizmos(in db: Database) throws -> [Gizmo] {
    let limit = Decimal(string: "9.99")!
    return try Gizmo.instances(matching: #Predicate { $0.price < limit && $0.nick != "old" },
                               orderBy: [SortDescriptor(\.name)], limit: 10, in: db)
}

struct Poet: Sendable {
    var name: String
}

struct Poem: Sendable {
    var title: String
    var poet: Poet
}

func poemsByAnn(in db: Database) throws -> [String] {
    let poets = PredicateSchema(table: "poet").column(\Poet.name, "name")
    let poems = PredicateSchema(table: "poem")
        .column(\Poem.title, "title")
        .toOne(\Poem.poet, foreignKey: "poet_id", target: { poets })
    let condition = try PredicateSQL.condition(#Predicate<Poem> { $0.poet.name == "Ann" }, schema: poems)
    var query = SQLSelect(from: "poem").columns(.column("title")).where(condition)
    query.orderBy = try PredicateSQL.ordering([SortDescriptor(\Poem.title)], schema: poems)
    return try db.read { conn in try conn.fetchAll(.select(query)).map { try $0.decode(String.self, column: "title") } }
}

@Suite("Documentation: filtering with #Predicate")
struct PredicateArticleExamples {
    @Test(arguments: Backend.allCases)
    func sqlFirstRecords(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            // A money column declared TEXT on SQLite, as a schema Unity did not create might have it.
            let price = backend == .sqlite ? "TEXT" : "NUMERIC(12, 2)"
            try db.execute(sql: "CREATE TABLE gizmo (id INTEGER PRIMARY KEY, name TEXT NOT NULL, nick TEXT, price \(price) NOT NULL)")
            for (id, name, nick, price) in [(1, "lamp", nil, "10.00"), (2, "clock", "old", "5.50"), (3, "bell", nil, "9.91"),
                                            (4, "fan", "new", "99.5"), (5, "cup", "mug", "2")] as [(Int, String, String?, String)] {
                try Gizmo(id: id, name: name, nick: nick, price: Decimal(string: price)!).save(in: db)
            }
            #expect(try cheapGizmos(in: db).map(\.name) == ["bell", "cup"])
        }
    }

    @Test(arguments: Backend.allCases)
    func aSchemaOfYourOwn(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(sql: "CREATE TABLE poet (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
                try conn.execute(sql: "CREATE TABLE poem (id INTEGER PRIMARY KEY, title TEXT NOT NULL, poet_id INTEGER NOT NULL)")
                try conn.execute(sql: "INSERT INTO poet (id, name) VALUES (1, 'Ann'), (2, 'Bo')")
                try conn.execute(sql: "INSERT INTO poem (id, title, poet_id) VALUES (1, 'Rain', 1), (2, 'Ash', 1), (3, 'Snow', 2)")
            }
            #expect(try poemsByAnn(in: db) == ["Ash", "Rain"])
        }
    }
}
