import Foundation
import Testing
import Unity
import UnityRowCoding

/// The SQL-first flavor's typed columns on a schema it did not create: a money column
/// declared TEXT on SQLite, `numeric(10,2)` on PostgreSQL, rows written with raw SQL.
extension ModelDefTests {
    @RowCoded
    struct Invoice: ModelDef, Equatable {
        var id: Int
        var total: Decimal
        var note: String?
        var existsInDatabase = false
        static let tableName = "invoices"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// The same table, with the total read as an optional.
    @RowCoded
    struct MaybeInvoice: ModelDef, Equatable {
        var id: Int
        var total: Decimal?
        var existsInDatabase = false
        static let tableName = "invoices"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// A model whose key paths map to no column (plain `Codable`).
    struct UnmappedInvoice: ModelDef, RowEncodable {
        var id: Int
        var total: Decimal
        var existsInDatabase = false
        static let tableName = "invoices"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
        static let encodingColumns = ["id", "total"]
        func encodeRow(to values: inout [DatabaseValue]) throws {
            values.append(.integer(Int64(id)))
            values.append(.decimal(total))
        }
        func databaseValue(forColumn name: String) throws -> DatabaseValue? { nil }
    }

    /// Invoices 1…5: 9.91, 10.00, 8.94, 100.5, 10.
    static func createInvoices(_ db: Database, _ backend: Backend) throws {
        let create = backend == .sqlite
            ? "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total TEXT NOT NULL, note TEXT)"
            : "CREATE TABLE invoices (id BIGINT PRIMARY KEY, total numeric(10,2) NOT NULL, note TEXT)"
        _ = try db.execute(sql: create)
        _ = try db.execute(sql: "INSERT INTO invoices (id, total) VALUES (1, '9.91'), (2, '10.00'), (3, '8.94'), (4, '100.5'), (5, '10')")
    }

    @Test(arguments: Backend.allCases)
    func decimalPropertiesCompareAndOrderAsNumbers(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try Self.createInvoices(db, backend)
            let d = { (text: String) in Decimal(string: text)! }
            #expect(try Invoice.column(\.total) == .decimal(.column("total")))
            #expect(try Invoice.column(\.note) == .column("note"))
            let ascending = try Invoice.allInstances(orderedBy: [.ascending(\Invoice.total), .ascending(\Invoice.id)], in: db)
            #expect(ascending.map(\.id) == [3, 1, 2, 5, 4])
            #expect(ascending.map(\.total) == [d("8.94"), d("9.91"), 10, 10, d("100.5")])
            #expect(try Invoice.allInstances(orderedBy: [.descending(\Invoice.total), .ascending(\Invoice.id)], in: db)
                .map(\.id) == [4, 2, 5, 1, 3])
            // Comparisons through typed operands: the same rows on both backends.
            let total = try Invoice.column(\.total)
            #expect(try Invoice.instances(where: total.greaterThanOrEquals(Decimal(10)), orderedBy: [.ascending(\Invoice.id)], in: db)
                .map(\.id) == [2, 4, 5])
            #expect(try Invoice.instances(where: total.lessThan(d("9.91")), in: db).map(\.id) == [3])
            #expect(try Invoice.instances(where: total.equals(d("100.50")), in: db).map(\.id) == [4])
            #expect(try Invoice.instances(where: total.isIn([Decimal(10), d("8.940")]),
                                          orderedBy: [.ascending(\Invoice.id)], in: db).map(\.id) == [2, 3, 5])
            let between = total.between(.bind(.decimal(9)), and: .bind(.decimal(10)))
            #expect(try Invoice.instances(where: between, orderedBy: [.descending(\Invoice.id)], in: db).map(\.id) == [5, 2, 1])
            // An optional Decimal property is a Decimal too.
            #expect(try MaybeInvoice.column(\.total) == .decimal(.column("total")))
            #expect(try MaybeInvoice.allInstances(orderedBy: [.descending(\MaybeInvoice.total), .descending(\MaybeInvoice.id)], in: db)
                .map(\.id) == [4, 5, 2, 1, 3])
            #expect(try MaybeInvoice.instances(where: MaybeInvoice.column(\.total).greaterThan(d("9.91")), in: db).count == 3)
            // A raw clause keeps the backend's own rules (SQLite compares a TEXT column as text).
            let raw = try Invoice.instancesWhere("total >= ?", Decimal(10), orderedBy: [.ascending(\Invoice.id)], in: db).map(\.id)
            #expect(raw == (backend == .sqlite ? [1, 2, 3, 4, 5] : [2, 4, 5]))
            // A key path with no column mapping is a typed error naming it.
            do {
                _ = try UnmappedInvoice.column(\.total)
                Issue.record("an unmapped key path gave a column")
            } catch let error as DatabaseError {
                #expect("\(error)".contains("total"))
            }
            #expect(throws: DatabaseError.self) { try ModelOrdering.ascending(\UnmappedInvoice.total) }
        }
    }
}
