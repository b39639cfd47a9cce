import Foundation

/// A record of the SQL-first flavor: a `Codable` struct whose coding keys are the columns of
/// one table that the application created with its own `.sql` files (see ``DBManager``).
///
/// ```swift
/// struct Thing: ModelDef {
///     var tid: String
///     var name: String?
///
///     static let tableName = "Thing"
///     var existsInDatabase = false
///     var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
///     var secondaryKeys: [any CodingKey] { [] }
///     static let syncable = false
/// }
///
/// try Thing(tid: "tid1", name: "thing 1").save()
/// let thing = try Thing.firstInstanceWhere("tid = ?", "tid1")
/// ```
///
/// Each stored property is a column, except `existsInDatabase`: rows read from the database
/// decode it as `true`, and saving never writes it. A model with hand-written `CodingKeys`
/// must keep a `existsInDatabase` case for that to work. Properties whose types are
/// ``DatabaseValueConvertible`` (numbers, strings, `Date`, `UUID`, `Decimal`, `Data`,
/// raw-value enums, optionals of those) are stored as such; any other `Codable` property is
/// stored as a JSON document.
public protocol ModelDef: Codable, Sendable {
    /// Kept for source compatibility with sModel models, which declare
    /// `typealias ModelType = Thing`. Unity uses `Self` everywhere and ignores it; it defaults
    /// to `Self` so that new models can leave it out.
    associatedtype ModelType = Self

    /// The name of the table that stores this model (quoted as written, so its case matters
    /// on PostgreSQL).
    static var tableName: String { get }

    /// True for a value read from the database or returned by ``save(in:)``; false for one
    /// made in code. Declare it `var existsInDatabase = false` (or `let`) so that the
    /// memberwise initializer does not need it. It decides whether ``save(in:)`` inserts a
    /// new row or updates the row with this model's primary key.
    var existsInDatabase: Bool { get }

    /// The coding keys of the primary key's columns (several for a composite key). Updates
    /// and deletes find the row by them.
    var primaryKeys: [any CodingKey] { get }

    /// The coding keys of the columns of one other unique key of the table (several for a
    /// composite key; empty when there is none). When a save breaks that key, the
    /// conflicting row is found (``ModelError/duplicate(existing:)``) or replaced
    /// (``syncable``) by these columns.
    var secondaryKeys: [any CodingKey] { get }

    /// When true, saving a model whose primary or secondary key is already taken replaces the
    /// row in the database instead of throwing ``ModelError/duplicate(existing:)``: a row
    /// with the same primary key is updated in place, and a different row holding the same
    /// secondary key is deleted first (as SQLite's `INSERT OR REPLACE` would do). Meant for
    /// tables that mirror a server, where the incoming copy always wins.
    /// ``DBManager/blindlyReplaceDuplicates`` does the same for every model type.
    static var syncable: Bool { get }
}

extension ModelDef {
    /// No secondary key unless the model declares one.
    public var secondaryKeys: [any CodingKey] { [] }

    /// Not syncable unless the model says so.
    public static var syncable: Bool { false }
}

/// A fault of the SQL-first flavor that carries a model.
public enum ModelError<Model: ModelDef>: Error, Sendable {
    /// A save broke a unique constraint (the primary key or the secondary key). `existing` is
    /// the row that is in the database now, found by the saved model's primary key or, failing
    /// that, its secondary key. Merge it with your copy and save again, or make the type
    /// ``ModelDef/syncable`` to have the incoming copy win.
    case duplicate(existing: Model)
}

extension ModelError: Equatable where Model: Equatable {}

extension ModelError: CustomStringConvertible {
    /// Says which table and which row.
    public var description: String {
        switch self {
        case .duplicate(let existing):
            return "a row of \(Model.tableName) with the same unique key already exists: \(existing)"
        }
    }
}

/// One ORDER BY term of a ``ModelDef`` query.
///
/// ```swift
/// try Thing.allInstances(orderedBy: [.descending("name"), .ascending("tid")])
/// ```
public struct ModelOrdering: Sendable, Hashable {
    /// The AST term it renders to.
    public var ordering: SQLOrdering

    /// Wraps an AST ordering term (any expression, NULLS FIRST/LAST, …).
    public init(_ ordering: SQLOrdering) {
        self.ordering = ordering
    }

    /// Ascending by the column called `column`.
    public static func ascending(_ column: String) -> ModelOrdering {
        ModelOrdering(SQLOrdering(.column(column), .ascending))
    }

    /// Descending by the column called `column`.
    public static func descending(_ column: String) -> ModelOrdering {
        ModelOrdering(SQLOrdering(.column(column), .descending))
    }

    /// Ascending by the column of a coding key.
    public static func ascending(_ key: any CodingKey) -> ModelOrdering { ascending(key.stringValue) }

    /// Descending by the column of a coding key.
    public static func descending(_ key: any CodingKey) -> ModelOrdering { descending(key.stringValue) }
}

// MARK: - Coding

/// The coding key that is a flag, never a column.
let existsInDatabaseKey = "existsInDatabase"

/// Built once: building it per row would allocate its dictionary for every row read.
let sharedModelRowDecoder = RowDecoder(defaultValues: [existsInDatabaseKey: .bool(true)])

/// Built once, for the same reason.
let sharedModelRowEncoder = RowEncoder(skippedKeys: [existsInDatabaseKey])

extension ModelDef {
    /// The encoder of every model: skips `existsInDatabase`.
    static var modelRowEncoder: RowEncoder { sharedModelRowEncoder }

    /// The decoder of every model: rows come from the database, so `existsInDatabase` is true.
    static var modelRowDecoder: RowDecoder { sharedModelRowDecoder }

    /// Decodes one row read from the table.
    static func decodeRow(_ row: Row) throws -> Self {
        try decodeModelRow(row)
    }

    /// This model's columns and values, in declaration order.
    func encodedColumns() throws -> [(column: String, value: DatabaseValue)] {
        try encodeModelColumns()
    }

    /// `col1 = ? AND col2 = ?` for the columns of `keys`, with this model's values; throws
    /// when a key is not one of the encoded columns.
    func keyCondition(_ keys: [any CodingKey], in pairs: [(column: String, value: DatabaseValue)]) throws -> SQLExpression {
        var conditions: [SQLExpression] = []
        for key in keys {
            let name = key.stringValue
            guard let pair = pairs.first(where: { $0.column == name }) else {
                throw DatabaseError.misuse(
                    "\(Self.self): key \(name) is not one of the encoded columns \(pairs.map(\.column))")
            }
            conditions.append(.binary(.column(name), .equal, .bind(pair.value)))
        }
        return .all(conditions)
    }

    /// The primary-key condition; throws when the model declares no primary key.
    func primaryKeyCondition(_ pairs: [(column: String, value: DatabaseValue)], for operation: String) throws -> SQLExpression {
        if primaryKeys.isEmpty {
            throw DatabaseError.misuse("\(Self.self) declares no primaryKeys, so it cannot \(operation): list the primary key's coding keys")
        }
        return try keyCondition(primaryKeys, in: pairs)
    }
}

// MARK: - Saving and deleting

extension ModelDef {
    /// Saves this model in `db` (the default database when nil) and returns the saved copy,
    /// as the database now holds it, with `existsInDatabase == true`.
    ///
    /// A model not yet in the database is inserted. A model read from the database is written
    /// back to the row with its primary key (inserted again if that row is gone). When the
    /// write breaks a unique constraint, it throws ``ModelError/duplicate(existing:)`` with the
    /// row that holds the key — unless ``syncable`` or ``DBManager/blindlyReplaceDuplicates``
    /// is true, in which case this model replaces that row. Other failures throw
    /// ``DatabaseError``.
    @discardableResult
    public func save(in db: Database? = nil) throws -> Self {
        let database = try DBManager.resolve(db)
        let replace = DBManager.replacesDuplicates(for: Self.self)
        let plan = try makeSavePlan(replacing: replace)
        let row: Row?
        do {
            row = try database.write { conn -> Row? in
                for statement in plan.before { try conn.execute(statement) }
                return try conn.fetchOne(.insert(plan.write.returning(.all)))
            }
        } catch let error as DatabaseError {
            guard case .constraintViolation(.unique, _) = error, !replace else { throw error }
            if let existing = try findConflictingRow(in: database, pairs: plan.pairs) {
                throw ModelError.duplicate(existing: existing)
            }
            throw error
        }
        guard let row else {
            throw DatabaseError.misuse("saving \(Self.self) returned no row from \(Self.tableName)")
        }
        return try Self.decodeRow(row)
    }

    /// Deletes the row with this model's primary key from `db` (the default database when
    /// nil). Returns false when there was no such row.
    @discardableResult
    public func delete(in db: Database? = nil) throws -> Bool {
        let database = try DBManager.resolve(db)
        let statement = try createDeleteStatement()
        let changed = try database.write { conn in
            try DBManager.executeStatementsReturningChanges([statement], on: conn)
        }
        return changed > 0
    }

    /// The statement that ``save(in:)`` would run, for ``DBManager/executeStatements(_:in:)``:
    /// an INSERT for a model not in the database, an INSERT … ON CONFLICT (primary key)
    /// DO UPDATE for one that is (update, or insert if the row is gone). For a ``syncable``
    /// type (or with ``DBManager/blindlyReplaceDuplicates``, as it is when this is called),
    /// every save replaces, as ``save(in:)`` does. In a batch a conflict is not turned into
    /// ``ModelError/duplicate(existing:)``: it fails the batch with ``DatabaseError``.
    public func createSaveStatement() throws -> ModelStatement {
        let plan = try makeSavePlan(replacing: DBManager.replacesDuplicates(for: Self.self))
        var steps = plan.before.map { ModelStatement.Step.statement($0) }
        steps.append(.insert(plan.batchable))
        return ModelStatement(steps: steps)
    }

    /// The statement that ``delete(in:)`` would run: DELETE by primary key.
    public func createDeleteStatement() throws -> ModelStatement {
        let pairs = try encodedColumns()
        let condition = try primaryKeyCondition(pairs, for: "be deleted")
        return ModelStatement(.delete(SQLDelete(from: Self.tableName, where: condition)))
    }

    func makeSavePlan(replacing: Bool) throws -> ModelSavePlan {
        let pairs = try encodedColumns()
        if pairs.isEmpty {
            throw DatabaseError.misuse("\(Self.self) encodes no columns, so there is nothing to save")
        }
        let columns = pairs.map(\.column)
        let primaryColumns = primaryKeys.map(\.stringValue)
        var before: [SQLStatement] = []
        var upsertKeys: [String]?
        if replacing || existsInDatabase {
            _ = try primaryKeyCondition(pairs, for: existsInDatabase ? "be updated" : "replace duplicates")
            upsertKeys = primaryColumns
        }
        if replacing, !secondaryKeys.isEmpty {
            // The incoming copy wins: the other row that holds the secondary key goes first.
            let secondary = try keyCondition(secondaryKeys, in: pairs)
            let primary = try keyCondition(primaryKeys, in: pairs)
            before.append(.delete(SQLDelete(from: Self.tableName, where: secondary && !primary)))
        }
        let batchable = BatchableInsert(
            table: Self.tableName, columns: columns, values: pairs.map(\.value), upsertKeys: upsertKeys)
        return ModelSavePlan(pairs: pairs, before: before, batchable: batchable)
    }

    /// The row that a failed save conflicted with: for a new model, the row with its primary
    /// key, else the row with its secondary key; for a model read from the database (whose
    /// own row cannot conflict on the primary key), the row with its secondary key.
    func findConflictingRow(in database: Database, pairs: [(column: String, value: DatabaseValue)]) throws -> Self? {
        var candidates: [SQLExpression] = []
        if !existsInDatabase, !primaryKeys.isEmpty {
            candidates.append(try keyCondition(primaryKeys, in: pairs))
        }
        if !secondaryKeys.isEmpty {
            var condition = try keyCondition(secondaryKeys, in: pairs)
            if existsInDatabase, !primaryKeys.isEmpty {
                condition = condition && !(try keyCondition(primaryKeys, in: pairs))
            }
            candidates.append(condition)
        }
        for condition in candidates {
            if let found = try Self.fetchFirst(SQLSelect(from: Self.tableName).where(condition), in: database) {
                return found
            }
        }
        return nil
    }
}

// MARK: - Queries

extension ModelDef {
    /// Every row of the table, in the order given (unspecified when `orderedBy` is empty).
    public static func allInstances(orderedBy ordering: [ModelOrdering] = [], in db: Database? = nil) throws -> [Self] {
        try fetchAll(select(where: nil, ordering), in: db)
    }

    /// The rows that match a raw WHERE clause with `?` placeholders, one per argument:
    /// `Thing.instancesWhere("tid in (?, ?)", "tid1", "tid2")`. The placeholders become the
    /// backend's own (`$1…` on PostgreSQL); `?` inside quoted text is left alone. Every
    /// argument is a bind parameter, never SQL.
    public static func instancesWhere(_ clause: String, _ arguments: any DatabaseValueConvertible...,
                                      orderedBy ordering: [ModelOrdering] = [], in db: Database? = nil) throws -> [Self] {
        try fetchAll(select(where: fragment(clause, arguments), ordering), in: db)
    }

    /// The first row that matches a raw WHERE clause (see ``instancesWhere(_:_:orderedBy:in:)``),
    /// or nil: `Thing.firstInstanceWhere("tid = ?", "tid1")`.
    public static func firstInstanceWhere(_ clause: String, _ arguments: any DatabaseValueConvertible...,
                                          orderedBy ordering: [ModelOrdering] = [], in db: Database? = nil) throws -> Self? {
        try fetchFirst(select(where: fragment(clause, arguments), ordering), in: db)
    }

    /// The number of rows of the table.
    public static func count(in db: Database? = nil) throws -> Int {
        try countRows(where: nil, in: db)
    }

    /// The number of rows that match a raw WHERE clause with `?` placeholders.
    public static func countWhere(_ clause: String, _ arguments: any DatabaseValueConvertible...,
                                  in db: Database? = nil) throws -> Int {
        try countRows(where: fragment(clause, arguments), in: db)
    }

    /// The models of the rows of any SELECT (joins, subqueries, …) whose columns are this
    /// model's columns.
    public static func instances(_ query: SQLSelect, in db: Database? = nil) throws -> [Self] {
        try fetchAll(query, in: db)
    }

    static func fragment(_ clause: String, _ arguments: [any DatabaseValueConvertible]) -> SQLExpression {
        .fragment(SQLFragment(clause, arguments.map(\.databaseValue)))
    }

    static func select(where condition: SQLExpression?, _ ordering: [ModelOrdering]) -> SQLSelect {
        SQLSelect(from: .table(tableName, alias: nil), where: condition, orderBy: ordering.map(\.ordering))
    }

    static func fetchAll(_ query: SQLSelect, in db: Database?) throws -> [Self] {
        let statement = SQLStatement.select(query)
        return try DBManager.resolve(db).readStatement(statement) { conn in
            var models: [Self] = []
            let decode = makeModelRowsDecoder()
            try conn.forEachRow(statement) { row in models.append(try decode(row)) }
            return models
        }
    }

    static func fetchFirst(_ query: SQLSelect, in db: Database?) throws -> Self? {
        var limited = query
        limited.limit = 1
        guard let row = try DBManager.resolve(db).fetchOne(.select(limited)) else { return nil }
        return try decodeRow(row)
    }

    static func countRows(where condition: SQLExpression?, in db: Database?) throws -> Int {
        let query = SQLSelect(columns: [.expression(.countAll, alias: "count")], from: .table(tableName, alias: nil),
                              where: condition)
        let statement = SQLStatement.select(query)
        let count = try DBManager.resolve(db).readStatement(statement) { try $0.fetchValue(Int64.self, statement) }
        return Int(count ?? 0)
    }
}

/// What a save runs: statements before the write (replace mode: delete the other row that
/// holds the secondary key), then the INSERT (or upsert on the primary key).
struct ModelSavePlan {
    var pairs: [(column: String, value: DatabaseValue)]
    var before: [SQLStatement]
    var batchable: BatchableInsert
    var write: SQLInsert { batchable.insert(rows: [batchable.values]) }
}
