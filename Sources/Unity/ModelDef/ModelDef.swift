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
/// must keep an `existsInDatabase` case for that to work. Properties whose types are
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
    /// composite key; empty when there is none), such as an id a server gave the row. When a
    /// new model's secondary key has a value, a save looks for the row holding it before the
    /// one holding the primary key (see ``save(in:)``).
    var secondaryKeys: [any CodingKey] { get }

    /// How a save of a new model treats a row that already has its key (sModel's words: "If
    /// true, the data already in the database will remain unchanged. If false, the non-key
    /// data in the database will be updated with the object being inserted."). Either way
    /// ``save(in:)`` then throws ``ModelError/duplicate(existing:)`` with the row as it is,
    /// and a batch goes on. ``DBManager/blindlyReplaceDuplicates`` overrides both: the saved
    /// copy replaces the row.
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
    /// A save of a new model found a row with its secondary or primary key. `existing` is that
    /// row as it is in the database now: already updated with the saved model's values for a
    /// type that is not ``ModelDef/syncable``, as it was for one that is. (A model read from
    /// the database whose update takes another row's secondary key: that row, and nothing
    /// was written.)
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
    func encodedColumns() throws -> ModelColumns {
        try encodeModelColumns()
    }

    /// `col1 = ? AND col2 = ?` for the columns of `keys`, with this model's values; throws
    /// when a key is not one of the encoded columns.
    func keyCondition(_ keys: [any CodingKey], in columns: ModelColumns) throws -> SQLExpression {
        var conditions: [SQLExpression] = []
        for key in keys {
            let name = key.stringValue
            guard let value = columns.value(of: name) else {
                throw DatabaseError.misuse(
                    "\(Self.self): key \(name) is not one of the encoded columns \(columns.names)")
            }
            conditions.append(.binary(.column(name), .equal, .bind(value)))
        }
        return .all(conditions)
    }

    /// The primary-key condition; throws when the model declares no primary key.
    func primaryKeyCondition(_ columns: ModelColumns, for operation: String) throws -> SQLExpression {
        if primaryKeys.isEmpty {
            throw DatabaseError.misuse("\(Self.self) declares no primaryKeys, so it cannot \(operation): list the primary key's coding keys")
        }
        return try keyCondition(primaryKeys, in: columns)
    }
}

// MARK: - Saving and deleting

/// What a save found, decided inside its transaction.
enum SaveOutcome<Model: ModelDef> {
    /// Inserted, updated by its own primary key, or replaced: the row as stored.
    case saved(Model)
    /// The key was taken: the row as it is now (updated, or left as it was).
    case duplicate(Model)
}

extension ModelDef {
    /// Saves this model in `db` (the default database when nil) and returns the saved copy,
    /// as the database now holds it, with `existsInDatabase == true`.
    ///
    /// A model read from the database (`existsInDatabase`) is written back to the row with its
    /// primary key (inserted again if that row is gone). A model made in code is inserted,
    /// unless a row already has its key, as sModel does it:
    ///
    /// - The duplicate is the row holding this model's secondary key (when it has one and its
    ///   value is not nil), else the row holding its primary key.
    /// - Not ``syncable`` (the default): that row's columns other than its primary key are
    ///   updated with this model's values (it keeps its own primary key when it matched on the
    ///   secondary key; nil values become NULL), the update is committed, and
    ///   ``ModelError/duplicate(existing:)`` is thrown with the row as it now is.
    /// - ``syncable``: the row stays as it is, and ``ModelError/duplicate(existing:)`` carries it.
    /// - With ``DBManager/blindlyReplaceDuplicates``: the stored row becomes this model (a
    ///   column it leaves nil takes its default, as with SQLite's `INSERT OR REPLACE`; another
    ///   row holding its secondary key is deleted) and nothing is thrown.
    ///
    /// Any other failure throws ``DatabaseError`` (or a decoding error) and leaves nothing
    /// committed: the row is read back and decoded inside the save's transaction.
    @discardableResult
    public func save(in db: Database? = nil) throws -> Self {
        let database = try DBManager.resolve(db)
        let plan = try makeSavePlan()
        let outcome: SaveOutcome<Self>
        do {
            outcome = try database.write { conn in try save(plan, on: conn) }
        } catch let error as DatabaseError {
            // A model read from the database whose update takes a secondary key that another
            // row holds: nothing was written; name that row.
            guard case .constraintViolation(.unique, _) = error, existsInDatabase, !plan.replaces,
                  let existing = try findSecondaryHolder(in: database, columns: plan.columns) else { throw error }
            throw ModelError.duplicate(existing: existing)
        }
        switch outcome {
        case .saved(let model): return model
        case .duplicate(let existing): throw ModelError.duplicate(existing: existing)
        }
    }

    /// The body of ``save(in:)``, inside its transaction on `conn`.
    private func save(_ plan: ModelSavePlan, on conn: Connection) throws -> SaveOutcome<Self> {
        for statement in plan.before { try conn.execute(statement) }
        let insert = plan.batchable
        func decoded(_ row: Row?) throws -> Self {
            guard let row else {
                throw DatabaseError.misuse("saving \(Self.self) returned no row from \(Self.tableName)")
            }
            return try Self.decodeRow(row)
        }
        func fetch(_ condition: SQLExpression) throws -> Row? {
            try conn.fetchOne(.select(SQLSelect(from: Self.tableName).where(condition).limit(1)))
        }
        /// The duplicate `row` (found by `condition`), updated unless syncable.
        func duplicate(_ row: Row, keeping keptColumns: [String], syncable: Bool) throws -> SaveOutcome<Self> {
            if syncable { return .duplicate(try Self.decodeRow(row)) }
            let primary = primaryKeys.map(\.stringValue)
            var target: [SQLExpression] = []
            for column in primary {
                guard let value = row[column] else {
                    throw DatabaseError.misuse("\(Self.tableName) has no column \(column) (a primary key of \(Self.self))")
                }
                target.append(.binary(.column(column), .equal, .bind(value)))
            }
            let assignments = insert.assignments(keeping: primary + keptColumns)
            if assignments.isEmpty { return .duplicate(try Self.decodeRow(row)) }
            let update = SQLUpdate(Self.tableName, set: assignments, where: .all(target)).returning(.all)
            return .duplicate(try decoded(try conn.fetchOne(.update(update))))
        }

        switch insert.conflict {
        case .none:
            return .saved(try decoded(try conn.fetchOne(.insert(insert.insert(rows: [insert.values]).returning(.all)))))
        case .primary(let keys, let action):
            if existsInDatabase || action == .replace {
                return .saved(try decoded(try conn.fetchOne(.insert(insert.insert(rows: [insert.values]).returning(.all)))))
            }
            // A NOT NULL column left nil fails the INSERT before its key conflict is seen, so a
            // model with nil values looks for its duplicate first (a syncable type must get
            // `duplicate`, not the NOT NULL error, and leave the row as it is).
            if insert.values.contains(.null),
               let existing = try fetch(try keyCondition(primaryKeys, in: plan.columns)) {
                return try duplicate(existing, keeping: [], syncable: action == .ignore)
            }
            let attempt = insert.insert(rows: [insert.values]).onConflictDoNothing(keys).returning(.all)
            if let row = try conn.fetchOne(.insert(attempt)) { return .saved(try Self.decodeRow(row)) }
            guard let existing = try fetch(try keyCondition(primaryKeys, in: plan.columns)) else {
                throw DatabaseError.misuse("saving \(Self.self): its primary key conflicted, but no row of \(Self.tableName) has it")
            }
            return try duplicate(existing, keeping: [], syncable: action == .ignore)
        case .secondary(_, let secondary, let syncable):
            if let existing = try fetch(try keyCondition(secondaryKeys, in: plan.columns)) {
                return try duplicate(existing, keeping: secondary, syncable: syncable)
            }
            if insert.values.contains(.null),
               let existing = try fetch(try keyCondition(primaryKeys, in: plan.columns)) {
                return try duplicate(existing, keeping: [], syncable: syncable)
            }
            let attempt = insert.insert(rows: [insert.values])
                .onConflictDoNothing(primaryKeys.map(\.stringValue)).returning(.all)
            if let row = try conn.fetchOne(.insert(attempt)) { return .saved(try Self.decodeRow(row)) }
            guard let existing = try fetch(try keyCondition(primaryKeys, in: plan.columns)) else {
                throw DatabaseError.misuse("saving \(Self.self): its primary key conflicted, but no row of \(Self.tableName) has it")
            }
            return try duplicate(existing, keeping: [], syncable: syncable)
        }
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

    /// The statement that ``save(in:)`` would run, for ``DBManager/executeStatements(_:in:)``,
    /// with the same rules for duplicates, except that a batch never throws
    /// ``ModelError/duplicate(existing:)``: a duplicate (also of a row saved earlier in the
    /// same batch) is updated, or left as it is for a ``syncable`` type, or replaced with
    /// ``DBManager/blindlyReplaceDuplicates`` (as it is when this is called), and the batch
    /// goes on. Any other error (NOT NULL, CHECK, foreign key, another unique key) rolls the
    /// whole batch back.
    public func createSaveStatement() throws -> ModelStatement {
        let plan = try makeSavePlan()
        if plan.before.isEmpty { return ModelStatement(steps: [.insert(plan.batchable)]) }
        var steps = plan.before.map { ModelStatement.Step.statement($0) }
        steps.append(.insert(plan.batchable))
        return ModelStatement(steps: steps)
    }

    /// The statement that ``delete(in:)`` would run: DELETE by primary key.
    public func createDeleteStatement() throws -> ModelStatement {
        let condition = try primaryKeyCondition(try encodedColumns(), for: "be deleted")
        return ModelStatement(.delete(SQLDelete(from: Self.tableName, where: condition)))
    }

    func makeSavePlan() throws -> ModelSavePlan {
        let replacing = DBManager.blindlyReplaceDuplicates
        let encoded = try encodedColumns()
        if encoded.isEmpty {
            throw DatabaseError.misuse("\(Self.self) encodes no columns, so there is nothing to save")
        }
        let primaryColumns = primaryKeys.map(\.stringValue)
        let secondaryColumns = secondaryKeys.map(\.stringValue)
        var before: [SQLStatement] = []
        let conflict: ConflictRule
        let secondaryValues = secondaryColumns.map { encoded.value(of: $0) ?? .null }
        let hasSecondaryValue = !secondaryColumns.isEmpty && !secondaryValues.contains(.null)
        if replacing || existsInDatabase {
            if primaryColumns.isEmpty {
                _ = try primaryKeyCondition(encoded, for: existsInDatabase ? "be updated" : "replace duplicates")
            }
            try checkKeysAreColumns(primaryColumns, encoded)
            conflict = .primary(keys: primaryColumns, action: replacing ? .replace : .update)
            if replacing, hasSecondaryValue {
                // The incoming copy wins: the other row that holds the secondary key goes first.
                let secondary = try keyCondition(secondaryKeys, in: encoded)
                let primary = try keyCondition(primaryKeys, in: encoded)
                before.append(.delete(SQLDelete(from: Self.tableName, where: secondary && !primary)))
            }
        } else if primaryColumns.isEmpty {
            conflict = .none
        } else if hasSecondaryValue {
            try checkKeysAreColumns(secondaryColumns + primaryColumns, encoded)
            conflict = .secondary(primary: primaryColumns, secondary: secondaryColumns, syncable: Self.syncable)
        } else {
            try checkKeysAreColumns(primaryColumns, encoded)
            conflict = .primary(keys: primaryColumns, action: Self.syncable ? .ignore : .update)
        }
        var columns: [String]
        var values: [DatabaseValue]
        var nullColumns: [String] = []
        if replacing {
            columns = []
            values = []
            columns.reserveCapacity(encoded.names.count)
            values.reserveCapacity(encoded.names.count)
            // Replacing, a nil column is left out so that it takes its default, as SQLite's
            // INSERT OR REPLACE would leave it. Otherwise it is written as NULL: leaving it out
            // too would give rows with different nil columns different shapes, and a batch
            // could no longer merge them into multi-row INSERTs.
            for (column, value) in zip(encoded.names, encoded.values) {
                if case .null = value {
                    nullColumns.append(column)
                } else {
                    columns.append(column)
                    values.append(value)
                }
            }
        } else {
            // As encoded: a generated type's column list is shared, not copied.
            columns = encoded.names
            values = encoded.values
        }
        var batchable = BatchableInsert(table: Self.tableName, columns: columns, values: values,
                                        nullColumns: nullColumns, conflict: conflict)
        batchable.insertsPlainlyWhenKeysAreFree = !replacing && !existsInDatabase
        return ModelSavePlan(columns: encoded, before: before, batchable: batchable, replaces: replacing)
    }

    /// Throws when a key is not one of the encoded columns (without building a condition: this
    /// runs once per row of a batch).
    func checkKeysAreColumns(_ keys: [String], _ columns: ModelColumns) throws {
        for key in keys where !columns.contains(key) {
            throw DatabaseError.misuse("\(Self.self): key \(key) is not one of the encoded columns \(columns.names)")
        }
    }

    /// Another row that holds this model's secondary key (for a model read from the database
    /// whose update broke that key).
    func findSecondaryHolder(in database: Database, columns: ModelColumns) throws -> Self? {
        guard !secondaryKeys.isEmpty else { return nil }
        var condition = try keyCondition(secondaryKeys, in: columns)
        if !primaryKeys.isEmpty {
            condition = condition && !(try keyCondition(primaryKeys, in: columns))
        }
        return try Self.fetchFirst(SQLSelect(from: Self.tableName).where(condition), in: database)
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
        return try DBManager.resolve(db).readStatement(statement) { conn in try decodeModelRows(statement, on: conn) }
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
/// holds the secondary key), then the INSERT with its conflict rule.
struct ModelSavePlan {
    /// The model's encoded columns and values.
    var columns: ModelColumns
    var before: [SQLStatement]
    var batchable: BatchableInsert
    /// Whether ``DBManager/blindlyReplaceDuplicates`` was on when it was made.
    var replaces: Bool
}
