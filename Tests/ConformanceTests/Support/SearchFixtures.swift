import Foundation
import Unity

/// A table of items with text to search and JSON settings, shared by each flavor's JSON and
/// full-text search tests: the same literals, so every flavor must give the same answers.
enum SearchFixture {
    static let index = FullTextIndex(table: "item", columns: ["title", "body"])

    /// id → (title, body, settings).
    static let rows: [(Int, String, String, String?)] = [
        (1, "Swift actors", "Actors isolate data", #"{"theme":"dark","limits":{"daily":25},"tags":["admin"]}"#),
        (2, "Database notes", "Indexes make data fast", #"{"theme":"light","limits":{"daily":5},"tags":[]}"#),
        (3, "Gardening", "Tomatoes need sun", #"{"theme":"dark","beta":null,"limits":{"daily":"12"}}"#),
        (4, "Data science", "data data everywhere", nil),
    ]

    /// Creates and fills `item`, then its full-text index (which indexes the rows already there).
    static func create(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("item", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("title", .text, notNull: true),
                SQLColumnDefinition("body", .text, notNull: true),
                SQLColumnDefinition("settings", .json),
            ])))
            for (id, title, body, settings) in rows {
                _ = try conn.execute(.insert(SQLInsert(into: "item", values: [
                    "id": .integer(Int64(id)), "title": .text(title), "body": .text(body), "settings": settings.map { .json($0) } ?? .null,
                ])))
            }
        }
        _ = try Migrator(migrations: [index.migration("0001_item_search")]).migrate(db)
    }
}
