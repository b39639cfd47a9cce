import Foundation
import Testing
import Unity

/// JSON documents queried through the AST give the same rows on both backends: typed and text
/// extraction, containment, key presence, and an expression index that serves them.
@Suite("Core: JSON documents on both backends")
struct CoreJSONTests {
    /// id → document (nil: SQL NULL).
    static let documents: [(Int, String?)] = [
        (1, #"{"name":"Ann","age":42,"score":1.5,"active":true,"tags":["a","b"],"nested":{"list":[[1,2],[3,4]]},"città":"Roma","code":"42","price":12.50,"nothing":null}"#),
        (2, #"{"name":"Bob","age":"42","active":false,"tags":["b"],"nested":{"list":[[5]]},"price":9.91,"nothing":1}"#),
        (3, #"{"name":"Cy","age":41.5,"active":1,"tags":[],"0":"zero","price":100}"#),
        (4, #"["x","name"]"#),
        (5, nil),
        (6, #"{"name":null,"active":"true","emoji 🎉":{"ключ":"значение"}}"#),
    ]

    static func d(_ text: String) -> Decimal { Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))! }

    static func makeTable(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("doc", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("body", .json),
            ])))
            for (id, body) in documents {
                try conn.execute(.insert(SQLInsert(into: "doc", values: ["id": .integer(Int64(id)), "body": body.map { .json($0) } ?? .null])))
            }
        }
    }

    func ids(_ db: Database, _ condition: SQLExpression) throws -> [Int] {
        let select = SQLSelect(from: "doc").columns(.column("id")).where(condition).orderBy(SQLExpression.column("id").asc)
        return try db.read { try $0.fetchAll(.select(select)).map { try $0.decode(Int.self, at: 0) } }
    }

    let body = SQLExpression.column("body")

    @Test(arguments: Backend.allCases)
    func extractionAnswersAlike(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            // Text: strings, numbers and booleans spelled as text; missing, JSON null and SQL NULL are NULL.
            #expect(try ids(db, body.jsonValue(at: ["name"]).equals("Ann")) == [1])
            #expect(try ids(db, body.jsonValue(at: ["name"]).isNull) == [4, 5, 6])
            #expect(try ids(db, body.jsonValue(at: ["age"]).equals("42")) == [1, 2])
            #expect(try ids(db, body.jsonValue(at: ["active"]).equals("true")) == [1, 6])
            #expect(try ids(db, body.jsonValue(at: ["price"]).equals("12.50")) == [1])
            // Typed: only a value of that JSON type.
            #expect(try ids(db, body.jsonValue(at: ["age"], as: .string).equals("42")) == [2])
            #expect(try ids(db, body.jsonValue(at: ["age"], as: .integer).equals(42)) == [1])
            #expect(try ids(db, body.jsonValue(at: ["age"], as: .integer).greaterThan(41)) == [1, 3])
            #expect(try ids(db, body.jsonValue(at: ["score"], as: .double).equals(1.5)) == [1])
            #expect(try ids(db, body.jsonValue(at: ["active"], as: .bool).equals(true)) == [1])
            #expect(try ids(db, body.jsonValue(at: ["active"], as: .bool).equals(false)) == [2])
            #expect(try ids(db, body.jsonValue(at: ["active"], as: .bool).isNull) == [3, 4, 5, 6])
            #expect(try ids(db, body.jsonValue(at: ["price"], as: .decimal).equals(Self.d("12.5"))) == [1])
            #expect(try ids(db, body.jsonValue(at: ["price"], as: .decimal).greaterThan(Self.d("9.92"))) == [1, 3])
            // Arrays by index, nested arrays, Unicode keys; a key never indexes an array, nor an index an object.
            #expect(try ids(db, body.jsonValue(at: ["tags", 0], as: .string).equals("b")) == [2])
            #expect(try ids(db, body.jsonValue(at: ["tags", 1]).equals("b")) == [1])
            #expect(try ids(db, body.jsonValue(at: ["nested", "list", 1, 0], as: .integer).equals(3)) == [1])
            #expect(try ids(db, body.jsonValue(at: ["nested", "list", 0, 1], as: .integer).equals(2)) == [1])
            #expect(try ids(db, body.jsonValue(at: ["città"]).equals("Roma")) == [1])
            #expect(try ids(db, body.jsonValue(at: ["emoji 🎉", "ключ"]).equals("значение")) == [6])
            #expect(try ids(db, body.jsonValue(at: ["0"]).equals("zero")) == [3])
            #expect(try ids(db, body.jsonValue(at: [0]).equals("x")) == [4])
            #expect(try ids(db, body.jsonValue(at: ["0"]).isNotNull) == [3])
            // Reading the values back: the same literals on both.
            let select = SQLSelect(from: "doc").columns(
                .expression(body.jsonValue(at: ["name"]), alias: "name"),
                .expression(body.jsonValue(at: ["age"], as: .integer), alias: "age"),
                .expression(body.jsonValue(at: ["active"], as: .bool), alias: "active")
            ).where(SQLExpression.column("id").equals(1))
            let row = try db.read { try $0.fetchOne(.select(select)) }
            #expect(try row?.decode(String.self, at: 0) == "Ann")
            #expect(try row?.decode(Int.self, at: 1) == 42)
            #expect(try row?.decode(Bool.self, at: 2) == true)
        }
    }

    @Test(arguments: Backend.allCases)
    func containmentAndPresenceAnswerAlike(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            #expect(try ids(db, body.jsonContains(json: #"{"tags":["a"]}"#)) == [1])
            #expect(try ids(db, body.jsonContains(json: #"{"tags":["b"]}"#)) == [1, 2])
            #expect(try ids(db, body.jsonContains(json: #""b""#, at: ["tags"])) == [1, 2])
            #expect(try ids(db, body.jsonContains(json: #"{"active":true}"#)) == [1])
            #expect(try ids(db, body.jsonContains(json: #"{"age":42}"#)) == [1])
            #expect(try ids(db, body.jsonContains(json: #"{"price":12.5}"#)) == [1])
            #expect(try ids(db, body.jsonContains(json: #"{"nested":{"list":[[3]]}}"#)) == [1])
            #expect(try ids(db, body.jsonContains(json: #"{"nothing":null}"#)) == [1])
            #expect(try ids(db, body.jsonContains(json: #""x""#)) == [4])
            #expect(try ids(db, body.jsonContains(json: "{}")) == [1, 2, 3, 6])
            #expect(try ids(db, !body.jsonContains(json: #"{"tags":["a"]}"#)) == [2, 3, 4, 6])
            struct Probe: Encodable { let name: String }
            #expect(try ids(db, try body.jsonContains(Probe(name: "Bob"))) == [2])
            // Presence: a JSON null counts, an array's string element is no key.
            #expect(try ids(db, body.jsonHasKey("nothing")) == [1, 2])
            #expect(try ids(db, body.jsonHasKey("name")) == [1, 2, 3, 6])
            #expect(try ids(db, !body.jsonHasKey("name")) == [4, 5])
            #expect(try ids(db, body.jsonHasValue(at: ["tags", 1])) == [1])
            #expect(try ids(db, body.jsonHasKey("list", at: ["nested"])) == [1, 2])
        }
    }

    @Test(arguments: Backend.allCases)
    func pathsThatCannotBeSpelledAlikeAreRefused(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            for path: SQLJSONPath in [["a\"b"], ["a\\b"], ["a/b"], [""], ["tags", -1], ["x\ny"]] {
                do {
                    _ = try ids(db, body.jsonValue(at: path).equals("x"))
                    Issue.record("the path \(path) was accepted")
                } catch let error as DatabaseError {
                    guard case .misuse = error else { Issue.record("unexpected error \(error)"); continue }
                }
            }
            // Nothing was changed by the refusals: the table still reads as written.
            #expect(try ids(db, body.jsonValue(at: ["name"]).isNotNull) == [1, 2, 3])
        }
    }

    @Test(arguments: Backend.allCases)
    func expressionIndexServesThePathFilter(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.makeTable(db)
            let migrator = Migrator(migrations: [
                Migration("0001_name_index", statements: [
                    SQLJSONIndex("doc_name", on: "doc", column: "body", path: ["name"]).statement,
                    SQLJSONIndex("doc_age", on: "doc", column: "body", path: ["age"], as: .integer).statement,
                ]),
            ])
            _ = try migrator.migrate(db)
            #expect(try ids(db, body.jsonValue(at: ["name"]).equals("Bob")) == [2])
            for (condition, index) in [(body.jsonValue(at: ["name"]).equals("Bob"), "doc_name"),
                                       (body.jsonValue(at: ["age"], as: .integer).equals(42), "doc_age")] {
                let select = SQLSelect(from: "doc").columns(.column("id")).where(condition)
                let plan: String = try db.write { conn in
                    let rendered = try conn.render(.select(select))
                    switch backend {
                    case .sqlite:
                        let rows = try conn.fetchAll(RenderedSQL(sql: "EXPLAIN QUERY PLAN " + rendered.sql, bindings: rendered.bindings))
                        return try rows.map { try $0.decode(String.self, at: 3) }.joined(separator: "\n")
                    case .postgres:
                        _ = try conn.execute(sql: "SET LOCAL enable_seqscan = off")
                        let rows = try conn.fetchAll(RenderedSQL(sql: "EXPLAIN " + rendered.sql, bindings: rendered.bindings))
                        return try rows.map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
                    }
                }
                #expect(plan.contains(index), "plan: \(plan)")
            }
            // A GIN index on the column serves containment on PostgreSQL; SQLite has no GIN.
            var gin = SQLCreateIndex("doc_body_gin", on: "doc", columns: ["body"])
            gin.method = .gin
            switch backend {
            case .sqlite:
                #expect(throws: DatabaseError.self) { try db.write { _ = try $0.execute(.createIndex(gin)) } }
            case .postgres:
                let plan: String = try db.write { conn in
                    _ = try conn.execute(.createIndex(gin))
                    _ = try conn.execute(sql: "SET LOCAL enable_seqscan = off")
                    let rendered = try conn.render(.select(SQLSelect(from: "doc").columns(.column("id"))
                        .where(body.jsonContains(json: #"{"tags":["a"]}"#))))
                    let rows = try conn.fetchAll(RenderedSQL(sql: "EXPLAIN " + rendered.sql, bindings: rendered.bindings))
                    return try rows.map { try $0.decode(String.self, at: 0) }.joined(separator: "\n")
                }
                #expect(plan.contains("doc_body_gin"), "plan: \(plan)")
            }
        }
    }

    @Test func containmentFollowsPostgresRules() {
        func c(_ d: String, _ v: String) -> Bool? { JSONContainment.contains(document: d, value: v) }
        #expect(c(#"{"a":1,"b":[1,2,{"c":"x"}]}"#, #"{"b":[{"c":"x"}]}"#) == true)
        #expect(c(#"[1,[2]]"#, #"[2]"#) == false)
        #expect(c(#"[1,[2]]"#, #"[[2]]"#) == true)
        #expect(c(#"{"a":["x"]}"#, #"{"a":"x"}"#) == false)
        #expect(c(#"["x"]"#, #""x""#) == true)
        #expect(c(#""x""#, #"["x"]"#) == false)
        #expect(c(#"{"n":1.0}"#, #"{"n":1}"#) == true)
        #expect(c(#"{"n":true}"#, #"{"n":1}"#) == false)
        #expect(c(#"{"s":"\u00e9\/"}"#, #"{"s":"é/"}"#) == true)
        #expect(c(#"{"a":"#, "{}") == nil)
    }
}
