import Foundation
import UnityPersistable

// From the active-record flavor's example.
struct Hat: Persistable {
    var id: Int?
    var color: String
    var brimSize: Int
    static let tableName = "hats"
    static let query = Query<Hat>()
    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["color": color, "brim_size": brimSize] }
}

extension Hat {
    init(databaseRow: DatabaseRow) throws {
        (id, color, brimSize) = (try databaseRow.read("id"), try databaseRow.read("color"), try databaseRow.read("brim_size"))
    }
}

func bigHatColors(in db: Database) throws -> [String] {
    _ = try Migrator(migrations: [Migration("0001_hats", statements: [.createTable(SQLCreateTable("hats", columns: [
        SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
        SQLColumnDefinition("color", .text, notNull: true), SQLColumnDefinition("brim_size", .int64, notNull: true)]))])]).migrate(db)
    for (color, size) in [("red", 12), ("blue", 8), ("green", 14)] { _ = try Hat(id: nil, color: color, brimSize: size).saveOrThrow(db) }
    return try Hat.query.filter("brim_size > ?", [10]).order("brim_size", .orderedDescending).allOrThrow(db).map(\.color)
}
