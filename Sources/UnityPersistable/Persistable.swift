import Foundation
import Logging
import Unity

/// A record type stored in one table, in Tailor's active-record style. Structs and classes
/// both conform (a class writes `required init(databaseRow:)`).
///
/// ```swift
/// struct Hat: Persistable {
///     var id: Int?
///     var color: String
///     static var tableName: String { "hats" }
///     init(databaseRow: DatabaseRow) throws {
///         id = try databaseRow.read("id")
///         color = try databaseRow.read("color")
///     }
///     func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["color": color] }
/// }
/// let saved = Hat(color: "red").save()       // the saved copy, with its id
/// ```
///
/// The table has an integer primary key named `id` that the database assigns.
public protocol Persistable {
    /// The primary key; nil until the record is saved.
    var id: Int? { get }
    /// Builds a record from a fetched row. A row that throws here while a query fetches is
    /// logged and skipped (the `…OrThrow` fetches throw instead).
    init(databaseRow: DatabaseRow) throws
    /// Every persisted column but `id`, with its value; nil values are NULL.
    func valuesToPersist() -> [String: (any DatabaseValueConvertible)?]
    /// The table's name.
    static var tableName: String { get }
    /// The columns that hold `Decimal` values (none unless the type says). Dictionary filters,
    /// `filter(_:inList:)` and `order` on these columns compare and order them as numbers on
    /// every backend, even where the column is declared `TEXT` (SQLite, on a schema the flavor
    /// did not create). A `Decimal` value given to a filter is compared as a number on any column.
    static var decimalColumns: Set<String> { get }
}

/// Where the flavor logs what it skips or fails at when no database logger is at hand.
@usableFromInline let persistableLogger = Logger(label: "unity.persistable")

extension Persistable {
    /// A query for every record of this type: `Hat.query.filter(["color": "red"])`. A type may
    /// declare its own `static let query = Query<Hat>()`, as Tailor's examples do.
    public static var query: Query<Self> { Query<Self>() }

    /// No decimal columns unless the type lists them.
    public static var decimalColumns: Set<String> { [] }

    /// The name of a column in another table holding this type's id: the snake-cased type
    /// name followed by `_id` (`Hat` → `hat_id`, `StoreItem` → `store_item_id`).
    public static func foreignKeyName() -> String { modelName() + "_id" }

    /// The snake-cased type name (`StoreItem` → `store_item`), the model name of validations.
    public static func modelName() -> String { snakeCased(String(describing: Self.self)) }

    // MARK: Saving

    /// Saves the record (INSERT when it has no id, UPDATE of every column otherwise) and returns
    /// the saved copy: the values sent, plus the new id on insert, `created_at` filled when the
    /// mapping has it and it is nil, and `updated_at` set to now when the mapping has it. The row
    /// is not read back.
    ///
    /// An insert leaves nil columns out so that the table's defaults apply; an update writes
    /// them as NULL. Returns nil when saving fails, after logging why; ``saveOrThrow(_:)`` throws
    /// the error instead.
    @discardableResult
    public func save(_ database: Database? = nil) -> Self? {
        do {
            return try saveOrThrow(database)
        } catch {
            logger(for: database).error("save() of a \(Self.tableName) record failed: \(error)")
            return nil
        }
    }

    /// ``save(_:)`` that throws what went wrong: the core's `DatabaseError` (a constraint
    /// violation, a missing table, …), ``PersistableError/recordNotFound(tableName:id:)`` for an
    /// update whose row is gone, or the error of `init(databaseRow:)` building the saved copy.
    ///
    /// The one statement a save runs commits by itself (it is atomic on its own, and skipping
    /// BEGIN and COMMIT saves two round trips on PostgreSQL); inside a `write` or `transaction`
    /// on the same thread it is part of that transaction.
    public func saveOrThrow(_ database: Database? = nil) throws -> Self {
        let db = try DefaultDatabase.resolve(database)
        let (columns, values) = persistedColumns()
        let table = Self.tableName
        let newId: Int
        if let id {
            let assignments = zip(columns, values).map { SQLAssignment($0.0, .bind($0.1)) }
            if !assignments.isEmpty {
                let update = SQLUpdate(table, set: assignments, where: .column("id").equals(.bind(.integer(Int64(id)))))
                let changed = try db.withConnection(role: .writer) { try $0.execute(.update(update)) }
                if changed == 0 { throw PersistableError.recordNotFound(tableName: table, id: id) }
            } else {
                let exists = try db.withConnection(role: .reader) {
                    try $0.fetchOne(.select(SQLSelect(from: table).columns(.expression(.column("id")))
                        .where(.column("id").equals(.bind(.integer(Int64(id)))))))
                }
                if exists == nil { throw PersistableError.recordNotFound(tableName: table, id: id) }
            }
            newId = id
        } else {
            var insertColumns: [String] = []
            var insertValues: [SQLExpression] = []
            for (column, value) in zip(columns, values) where !value.isNull {
                insertColumns.append(column)
                insertValues.append(.bind(value))
            }
            let insert = SQLInsert(into: table, columns: insertColumns,
                                   source: insertColumns.isEmpty ? .defaultValues : .values([insertValues]),
                                   returning: [.column("id")])
            let row = try db.withConnection(role: .writer) { try $0.fetchOne(.insert(insert)) }
            guard let row, let id = try? row.decode(Int.self, at: 0) else {
                throw PersistableError.missingInsertedId(tableName: table)
            }
            newId = id
        }
        let layout = RowLayout(columnNames: ["id"] + columns)
        return try Self(databaseRow: DatabaseRow(row: Row(layout: layout, values: [.integer(Int64(newId))] + values)))
    }

    /// The columns and values a save writes, sorted by column name (so every save of a type
    /// renders the same SQL), with the timestamps filled in.
    ///
    /// `columnsOfPrevious` is the column list of the record saved before this one in a batch:
    /// when this record names the same columns, that array is returned again (one array shared
    /// by the batch, which groups records by it cheaply) and no sort is needed.
    @inlinable
    func persistedColumns(columnsOfPrevious: [String]? = nil) -> ([String], [DatabaseValue]) {
        let mapping = valuesToPersist()
        var now: DatabaseValue?
        func value(_ column: String, _ given: (any DatabaseValueConvertible)?) -> DatabaseValue {
            let value: DatabaseValue = given?.databaseValue ?? .null
            guard column == "updated_at" || (column == "created_at" && value.isNull) else { return value }
            if let now { return now }
            // Whole microseconds: what both backends store, so the copy save() returns equals
            // what a later fetch reads.
            let date = DateText.microsecondsSinceReferenceDate(Date()).map {
                DateText.date(microsecondsSinceReferenceDate: $0)
            } ?? Date()
            now = .date(date)
            return .date(date)
        }
        if let columns = columnsOfPrevious, columns.count == mapping.count {
            // The dictionary is walked in its own order (no hashing) and each key is placed by
            // a scan of the known columns; any key not among them means another column set.
            // (Keys and values are read by index rather than as (key, value) pairs: copying a
            // pair holding an existential goes through the runtime's generic tuple witnesses.)
            var values = [DatabaseValue](repeating: .null, count: columns.count)
            var placed = 0
            let keys = mapping.keys, given = mapping.values
            var position = mapping.startIndex
            while position != mapping.endIndex {
                let column = keys[position]
                let length = column.utf8.count
                guard let index = columns.firstIndex(where: { $0.utf8.count == length && $0 == column }) else { break }
                values[index] = value(column, given[position])
                placed += 1
                mapping.formIndex(after: &position)
            }
            if placed == columns.count { return (columns, values) }
            now = nil
        }
        let columns = mapping.keys.sorted()
        var values: [DatabaseValue] = []
        values.reserveCapacity(columns.count)
        for column in columns { values.append(value(column, mapping[column] ?? nil)) }
        return (columns, values)
    }

    // MARK: Destroying

    /// Deletes the record's row. Returns false (after logging why) when that fails or the
    /// record has no id; ``destroyOrThrow(_:)`` throws instead.
    @discardableResult
    public func destroy(_ database: Database? = nil) -> Bool {
        do {
            try destroyOrThrow(database)
            return true
        } catch {
            logger(for: database).error("destroy() of a \(Self.tableName) record failed: \(error)")
            return false
        }
    }

    /// Deletes the record's row; throws ``PersistableError/notSaved(tableName:)`` for a record
    /// without an id, and the core's `DatabaseError` when the delete fails. Returns how many
    /// rows were deleted (0 when the row was already gone).
    @discardableResult
    public func destroyOrThrow(_ database: Database? = nil) throws -> Int {
        guard let id else { throw PersistableError.notSaved(tableName: Self.tableName) }
        let db = try DefaultDatabase.resolve(database)
        let delete = SQLDelete(from: Self.tableName, where: .column("id").equals(.bind(.integer(Int64(id)))))
        return try db.withConnection(role: .writer) { try $0.execute(.delete(delete)) }
    }

    // MARK: Relationships

    /// The records of another table whose foreign key holds this record's id:
    /// `let orders: Query<Order> = hat.toMany()` is the orders whose `hat_id` is the hat's id.
    /// `foreignKey` names the column when it is not ``foreignKeyName()``. An unsaved record has
    /// no related records.
    public func toMany<Other: Persistable>(foreignKey: String? = nil) -> Query<Other> {
        let column = foreignKey ?? Self.foreignKeyName()
        let qualified = SQLExpression.column(Other.tableName, column)
        guard let id else { return Query<Other>().filter(.inList(qualified, [], negated: false)) }
        return Query<Other>().filter(qualified.equals(.bind(.integer(Int64(id)))))
    }

    /// The records of a third table joined to the records of `query`:
    /// `let customers: Query<Customer> = hat.toMany(through: orders)` renders
    /// `SELECT customers.* FROM customers INNER JOIN orders ON orders.customer_id = customers.id
    /// WHERE orders.hat_id = ?`.
    ///
    /// With `joinToMany: false` (the default) the intermediary table holds the foreign key
    /// (`foreignKey`, or the result type's ``foreignKeyName()``); with `true` the result table
    /// holds it (`foreignKey`, or the intermediary type's ``foreignKeyName()``), giving
    /// `INNER JOIN orders ON orders.id = customers.order_id`.
    public func toMany<Intermediary: Persistable, Other: Persistable>(
        through query: Query<Intermediary>, foreignKey: String? = nil, joinToMany: Bool = false
    ) -> Query<Other> {
        let joined: Query<Other>
        if joinToMany {
            joined = Query<Other>().join(Intermediary.self, fromColumn: "id",
                                         toColumn: foreignKey ?? Intermediary.foreignKeyName())
        } else {
            joined = Query<Other>().join(Intermediary.self, fromColumn: foreignKey ?? Other.foreignKeyName(),
                                         toColumn: "id")
        }
        return joined.merging(joinsAndFiltersOf: query)
    }

    func logger(for database: Database?) -> Logger {
        (database ?? DefaultDatabase.current)?.configuration.logger ?? persistableLogger
    }
}

/// Two records are equal when they are saved rows of the same table with the same id. Two
/// unsaved records (nil ids) are never equal.
public func == <L: Persistable, R: Persistable>(lhs: L, rhs: R) -> Bool {
    guard let l = lhs.id, let r = rhs.id else { return false }
    return L.tableName == R.tableName && l == r
}

/// The negation of ``==(_:_:)`` for records.
public func != <L: Persistable, R: Persistable>(lhs: L, rhs: R) -> Bool {
    !(lhs == rhs)
}

/// `brimSize` → `brim_size`, `DarkBlue` → `dark_blue`, `HTTPCode` → `http_code`.
func snakeCased(_ name: String) -> String {
    let chars = Array(name)
    var out = ""
    out.reserveCapacity(chars.count + 4)
    for (i, ch) in chars.enumerated() {
        if ch.isUppercase {
            if i > 0 {
                let previous = chars[i - 1]
                let nextIsLower = i + 1 < chars.count && chars[i + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    out.append("_")
                }
            }
            out.append(contentsOf: ch.lowercased())
        } else {
            out.append(ch)
        }
    }
    return out
}
