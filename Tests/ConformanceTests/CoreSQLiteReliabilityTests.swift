import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import Unity

/// Reliability defects of issue 13 that touch the drivers' caches, the SQL text the drivers
/// are given and the SQLite driver: each case runs on both backends.
@Suite("Core: statement caches, SQL text and SQLite reliability")
struct CoreSQLiteReliabilityTests {
    /// "é" as one scalar (NFC) and as "e" + a combining acute accent (NFD): equal as Swift
    /// strings, two different names to both databases.
    static let nfc = "t_\u{E9}"
    static let nfd = "t_e\u{301}"

    struct NFCRow: ModelDef {
        static let tableName = CoreSQLiteReliabilityTests.nfc
        var id: Int
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    struct NFDRow: ModelDef {
        static let tableName = CoreSQLiteReliabilityTests.nfd
        var id: Int
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    func makeTwinTables(_ db: Database) throws {
        #expect(Self.nfc == Self.nfd)  // the premise: Swift says they are one name
        try db.write { conn in
            for name in [Self.nfc, Self.nfd] {
                try conn.execute(.createTable(SQLCreateTable(name, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                ])))
            }
        }
    }

    func ids(_ db: Database, _ table: String) throws -> [Int] {
        try db.read { conn in
            try conn.fetchAll(.select(SQLSelect(from: table).columns(.column("id")).orderBy(SQLExpression.column("id").asc)))
                .map { try $0.decode(Int.self, at: 0) }
        }
    }

    @Test(arguments: Backend.allCases)
    func canonicallyEquivalentTableNamesNeverShareAStatement(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeTwinTables(db)
            // One at a time: each insert goes through the driver's prepared-statement cache.
            try db.write { conn in
                try conn.execute(.insert(SQLInsert(into: Self.nfc, values: ["id": .integer(1)])))
                try conn.execute(.insert(SQLInsert(into: Self.nfd, values: ["id": .integer(2)])))
            }
            // As a batch: neighbours with "the same" SQL are grouped into one prepared statement.
            try db.write { conn in
                try conn.executeBatch([
                    .insert(SQLInsert(into: Self.nfc, values: ["id": .integer(3)])),
                    .insert(SQLInsert(into: Self.nfd, values: ["id": .integer(4)])),
                ])
            }
            // Through ModelDef's batch runner, which merges inserts of one shape.
            try DBManager.executeStatements([
                try NFCRow(id: 5).createSaveStatement(),
                try NFDRow(id: 6).createSaveStatement(),
                try NFCRow(id: 7).createSaveStatement(),
            ], in: db)
            #expect(try ids(db, Self.nfc) == [1, 3, 5, 7])
            #expect(try ids(db, Self.nfd) == [2, 4, 6])
        }
    }

    @Test func sqlTextKeyComparesBytes() {
        #expect(SQLTextKey(Self.nfc) != SQLTextKey(Self.nfd))
        #expect(SQLTextKey(Self.nfc) == SQLTextKey("t_\u{E9}"))
        #expect(Set([SQLTextKey(Self.nfc), SQLTextKey(Self.nfd)]).count == 2)
        #expect(!SQLTextKey.sameBytes("abc", "abd"))
        #expect(SQLTextKey.sameBytes("", ""))
    }

    /// A wildcard or the escape character followed by a combining mark is one Swift
    /// `Character`, but the database sees the wildcard: it must be escaped all the same.
    @Test(arguments: Backend.allCases)
    func likeHelpersEscapeWildcardsFollowedByCombiningMarks(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let texts = ["%\u{301}abc", "xyz", "x_\u{301}q", "a\\\u{301}b", "plain"]
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("words", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain),
                    SQLColumnDefinition("w", .text, notNull: true),
                ])))
                for (i, text) in texts.enumerated() {
                    try conn.execute(.insert(SQLInsert(into: "words", values: ["id": .integer(Int64(i + 1)), "w": .text(text)])))
                }
            }
            func ids(_ condition: SQLExpression) throws -> [Int] {
                try db.read { conn in
                    try conn.fetchAll(.select(SQLSelect(from: "words").columns(.column("id")).where(condition)
                        .orderBy(SQLExpression.column("id").asc))).map { try $0.decode(Int.self, at: 0) }
                }
            }
            let w = SQLExpression.column("w")
            for ci in [false, true] {
                #expect(try ids(w.beginsWith("%\u{301}", caseInsensitive: ci)) == [1])
                #expect(try ids(w.contains("_\u{301}", caseInsensitive: ci)) == [3])
                #expect(try ids(w.endsWith("\\\u{301}b", caseInsensitive: ci)) == [4])
                #expect(try ids(w.contains("\u{301}", caseInsensitive: ci)) == [1, 3, 4])
            }
            #expect(SQLExpression.escapeLikePattern("%\u{301}_\\") == "\\%\u{301}\\_\\\\")
        }
    }
}
