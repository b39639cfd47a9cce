import Foundation
import Testing
import Unity

/// The README's core example, kept compiling and passing on both backends.
@Suite("README examples")
struct ReadmeExampleTests {
    @Test(arguments: Backend.allCases)
    func coreExample(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { try $0.execute(.createTable(SQLCreateTable("author", columns: [SQLColumnDefinition("id", .int64, primaryKey: .plain)]))) }
            try db.write { try $0.execute(.insert(SQLInsert(into: "author", values: ["id": 1]))) }
            // --- as in README.md ---
            try db.write { conn in   // a transaction: commits on return, rolls back on throw
                try conn.execute(.createTable(SQLCreateTable("book", ifNotExists: true, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("title", .text, notNull: true, unique: true),
                    SQLColumnDefinition("author_id", .int64, references: SQLForeignKeyReference("author", columns: ["id"], onDelete: .cascade)),
                ])))
                let id = try conn.fetchOne(.insert(SQLInsert(into: "book", values: ["title": "Dune", "author_id": 1])
                    .returning(.column("id"))))?.decode(Int.self, at: 0)
                try conn.transaction { inner in   // nested: a savepoint
                    try inner.execute(sql: "UPDATE book SET title = ? WHERE id = ?", ["Dune Messiah", .integer(Int64(id ?? 0))])
                }
            }
            let rows = try db.read { conn in
                try conn.fetchAll(.select(SQLSelect(from: "book").where(SQLExpression.column("title").beginsWith("Dune"))))
            }
            let title: String = try rows[0].decode(column: "title")
            // --- end ---
            #expect(title == "Dune Messiah")
        }
    }
}
