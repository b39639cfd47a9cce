import Foundation

/// One unit of work for ``DBManager/executeStatements(_:in:)``: a model's save or delete
/// (``ModelDef/createSaveStatement()``, ``ModelDef/createDeleteStatement()``), or any
/// statement of your own.
///
/// It is a value (`Sendable`): build statements on any thread and hand them to one batch.
public struct ModelStatement: Sendable, Hashable {
    /// One step of the work: an insert that a batch may merge with its neighbours, or a
    /// statement that runs as it is.
    enum Step: Sendable, Hashable {
        case insert(BatchableInsert)
        case statement(SQLStatement)
    }

    let steps: [Step]

    init(steps: [Step]) {
        self.steps = steps
    }

    /// A statement of your own, built with the SQL AST.
    public init(_ statement: SQLStatement) {
        self.steps = [.statement(statement)]
    }

    /// A raw statement of your own with `?` placeholders, one per argument:
    /// `ModelStatement(sql: "UPDATE Thing SET name = ? WHERE tid = ?", "new", "tid1")`.
    public init(sql: String, _ arguments: any DatabaseValueConvertible...) {
        self.steps = [.statement(.raw(SQLFragment(sql, arguments.map(\.databaseValue))))]
    }

    /// The statement itself when it returns rows: a SELECT, an INSERT, UPDATE or DELETE with
    /// RETURNING, or a raw statement whose first word is SELECT, WITH, VALUES, PRAGMA, SHOW
    /// or EXPLAIN. Batches with a results handler hand back its rows.
    var query: SQLStatement? {
        guard steps.count == 1, case .statement(let statement) = steps[0] else { return nil }
        switch statement {
        case .select: return statement
        case .insert(let insert): return insert.returning.isEmpty ? nil : statement
        case .update(let update): return update.returning.isEmpty ? nil : statement
        case .delete(let delete): return delete.returning.isEmpty ? nil : statement
        case .raw(let fragment):
            let firstWord = fragment.sql.drop { !$0.isLetter }.prefix { $0.isLetter }.uppercased()
            return ["SELECT", "WITH", "VALUES", "PRAGMA", "SHOW", "EXPLAIN"].contains(firstWord) ? statement : nil
        default: return nil
        }
    }

    /// The SQL statements this runs, in order, as they would run one at a time (a batch may
    /// merge neighbouring inserts into one multi-row INSERT).
    public var sqlStatements: [SQLStatement] {
        steps.map { step in
            switch step {
            case .insert(let insert): return .insert(insert.insert(rows: [insert.values]))
            case .statement(let statement): return statement
            }
        }
    }
}

/// What a model's INSERT does when the row's key is already taken.
enum ConflictRule: Sendable, Hashable {
    /// Nothing: a conflict is an error (a model that declares no primary key).
    case none
    /// On the primary key `keys`: update the row, leave it, or replace it (see ``PrimaryAction``).
    case primary(keys: [String], action: PrimaryAction)
    /// A new model whose secondary key has a value: the row holding the secondary key is the
    /// duplicate, else the row holding the primary key; `syncable` leaves it as it is,
    /// otherwise its non-key columns are updated (its primary key stays).
    case secondary(primary: [String], secondary: [String], syncable: Bool)

    enum PrimaryAction: Sendable, Hashable {
        /// `ON CONFLICT (pk) DO UPDATE SET` every other column; columns the model leaves nil
        /// become NULL.
        case update
        /// `ON CONFLICT (pk) DO NOTHING`: a syncable type keeps the row it has.
        case ignore
        /// As `update`, but columns the model leaves nil take their default (`excluded`),
        /// as SQLite's `INSERT OR REPLACE` would leave them.
        case replace
    }
}

/// A one-row INSERT with its conflict rule, which a batch may merge with neighbouring
/// inserts of the same shape (table, columns, nil columns, rule) into a multi-row INSERT.
struct BatchableInsert: Sendable, Hashable {
    var table: String
    /// The columns inserted: every column of the model, except, when replacing, those whose
    /// values are nil (they take their default).
    var columns: [String]
    var values: [DatabaseValue]
    /// When replacing, the model's columns whose values are nil: not inserted, and set to
    /// their default (`excluded`) when an existing row is replaced. Empty otherwise.
    var nullColumns: [String]
    var conflict: ConflictRule
    /// A new model (not replacing): while its keys are free, a plain INSERT does what its
    /// conflict rule does, so a batch tries plain INSERTs first (see ``ModelBatchRunner``).
    var insertsPlainlyWhenKeysAreFree = false

    /// Whether two inserts can share one multi-row statement. Names are compared by their
    /// exact bytes: `"é"` in NFC and in NFD are two tables to the database, though equal as
    /// Swift strings.
    func hasSameShape(as other: BatchableInsert) -> Bool {
        hasSameShape(as: other, conflict: other.conflict)
    }

    /// Whether `other`, with `conflict` for its rule, can share one statement with this one.
    func hasSameShape(as other: BatchableInsert, conflict otherConflict: ConflictRule) -> Bool {
        SQLTextKey.sameBytes(table, other.table)
            && Self.sameBytes(columns, other.columns)
            && Self.sameBytes(nullColumns, other.nullColumns)
            && conflict == otherConflict
    }

    private static func sameBytes(_ a: [String], _ b: [String]) -> Bool {
        guard a.count == b.count else { return false }
        // One list shared by both (a generated type's column list is): nothing to compare.
        let shared = a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
        return shared || zip(a, b).allSatisfy { SQLTextKey.sameBytes($0, $1) }
    }

    /// The values of `keys` (NULL for a key left nil).
    func keyValues(_ keys: [String]) -> [DatabaseValue] {
        keys.map { key in columns.firstIndex(of: key).map { values[$0] } ?? .null }
    }

    /// The key values that must not appear twice in one multi-row statement: PostgreSQL
    /// refuses to update a row twice in one statement, and a secondary-key run is resolved
    /// on the assumption that its keys are distinct. Tagged so that a primary and a
    /// secondary key with the same values stay apart.
    var distinctKeys: [[DatabaseValue]] {
        switch conflict {
        case .none: return []
        case .primary(let keys, _): return [keyValues(keys)]
        case .secondary(let primary, let secondary, _):
            return [[.integer(0)] + keyValues(primary), [.integer(1)] + keyValues(secondary)]
        }
    }

    /// Every column of the model, inserted or nil.
    var allColumns: [String] { columns + nullColumns }

    /// `SET` assignments for updating an existing row to this model's values: every column
    /// but `keeping`, nil ones to NULL.
    func assignments(keeping: [String]) -> [SQLAssignment] {
        var result: [SQLAssignment] = []
        for (i, column) in columns.enumerated() where !keeping.contains(column) {
            result.append(SQLAssignment(column, .bind(values[i])))
        }
        for column in nullColumns where !keeping.contains(column) {
            result.append(SQLAssignment(column, .literal(.null)))
        }
        return result
    }

    /// The INSERT for `rows` (each in `columns` order), with its ON CONFLICT clause (none for
    /// a secondary-key rule, which a batch resolves by looking the keys up first).
    func insert(rows: [[DatabaseValue]]) -> SQLInsert {
        insert(source: .values(rows.map { $0.map(SQLExpression.bind) }))
    }

    /// The same INSERT for `rows` rows of placeholders only: a batch renders it once per
    /// shape and row count and binds each chunk's values to it, row by row.
    func insertTemplate(rows: Int) -> SQLInsert {
        insert(source: SQLInsert(into: table, columns: columns, placeholderRows: rows).source)
    }

    private func insert(source: SQLInsertSource) -> SQLInsert {
        let base = SQLInsert(into: table, columns: columns, source: columns.isEmpty ? .defaultValues : source)
        guard case .primary(let keys, let action) = conflict else { return base }
        switch action {
        case .ignore:
            return base.onConflictDoNothing(keys)
        case .update, .replace:
            var updated: [SQLAssignment] = columns.filter { !keys.contains($0) }.map { SQLAssignment($0, .excluded($0)) }
            for column in nullColumns where !keys.contains(column) {
                updated.append(SQLAssignment(column, action == .replace ? .excluded(column) : .literal(.null)))
            }
            // Every column is in the key: "update" one key column to itself, so that the
            // statement still succeeds and RETURNING still yields the row.
            if updated.isEmpty, let first = keys.first { updated = [SQLAssignment(first, .excluded(first))] }
            return base.onConflict(keys, doUpdate: updated)
        }
    }
}

/// The rendered INSERT texts of a batch, one per shape and row count (most batches have
/// one shape and two counts: full chunks and the last one).
struct InsertTexts {
    private var entries: [(shape: BatchableInsert, rows: Int, sql: String)] = []

    /// The text of `shape`'s INSERT of `rows` placeholder rows.
    mutating func text(_ shape: BatchableInsert, rows: Int, on conn: Connection) throws -> String {
        if let entry = entries.first(where: { $0.rows == rows && $0.shape.hasSameShape(as: shape) }) {
            return entry.sql
        }
        let sql = try conn.render(.insert(shape.insertTemplate(rows: rows))).sql
        // Many shapes (a batch over many tables or nil patterns): keep the newest.
        if entries.count >= 32 { entries.removeFirst() }
        entries.append((shape, rows, sql))
        return sql
    }
}

/// Runs a list of model statements on one connection as fast as the backend allows, keeping
/// their order: runs of inserts of the same shape become multi-row INSERTs (with their
/// ON CONFLICT clause), and runs of other statements go through ``Connection/executeBatch(_:)``,
/// which reuses one prepared statement (or one pipeline) for neighbours with the same SQL.
/// Inserts of new models with a secondary key are resolved a run at a time: one SELECT finds
/// the rows that hold the run's keys, then the duplicates are updated (one pipelined
/// UPDATE shape) and the rest inserted (one multi-row INSERT).
struct ModelBatchRunner {
    /// The most bind parameters one statement may carry: SQLite's default
    /// SQLITE_MAX_VARIABLE_NUMBER is 32,766, PostgreSQL's wire protocol allows 65,535.
    let maxBindings: Int
    /// The most rows in one multi-row INSERT. Measured on SQLite (100,000 two-column rows):
    /// 50–250 rows per statement run about twice as fast as one row per statement, and
    /// larger statements (500, 2,000, 16,383 rows) are no faster, only longer to render.
    let maxRowsPerInsert: Int

    init(dialect: SQLDialect, maxRowsPerInsert: Int = 100) {
        self.maxBindings = dialect.maxBindParameters
        self.maxRowsPerInsert = maxRowsPerInsert
    }

    /// Runs `statements`; returns the number of rows changed.
    @discardableResult
    func run(_ statements: [ModelStatement], on conn: Connection) throws -> Int {
        var unused: [[Row]?] = []
        return try run(statements, on: conn, results: &unused, collecting: false)
    }

    /// Runs `statements` and sets `results` to one entry per statement: the rows of each
    /// query (``ModelStatement/isQuery``), nil for the others.
    @discardableResult
    func run(_ statements: [ModelStatement], on conn: Connection, results: inout [[Row]?]) throws -> Int {
        try run(statements, on: conn, results: &results, collecting: true)
    }

    /// The statements that run with the duplicate rules after a plain INSERT met a taken key,
    /// before plain INSERTs are tried again; on PostgreSQL also the statements of one
    /// optimistic attempt (one savepoint), so a duplicate found late in a batch costs at most
    /// this many statements run twice.
    static let statementsPerAttempt = 4096

    /// A batch that saves new models runs with plain INSERTs for them first: when no key is
    /// taken (the common case) that is all, at the speed of plain INSERTs (an
    /// `ON CONFLICT … DO UPDATE` costs PostgreSQL about half as much again per row). When an
    /// INSERT meets a taken key, the statements from that INSERT's first model on run with the
    /// duplicate rules, ``statementsPerAttempt`` of them, and then plain INSERTs are tried again.
    ///
    /// SQLite undoes a failed INSERT alone and keeps the transaction, so plain INSERTs run
    /// with no savepoint, and the rules pass starts at the INSERT that failed. (A savepoint
    /// per attempt would cost SQLite a sub-journal of every page the attempt touches again.)
    /// PostgreSQL aborts the transaction on a failure, so there each attempt of
    /// ``statementsPerAttempt`` statements runs in a savepoint, rolled back when one of its
    /// INSERTs meets a taken key, and then run with the rules.
    private func run(_ statements: [ModelStatement], on conn: Connection, results: inout [[Row]?],
                     collecting: Bool) throws -> Int {
        var texts = InsertTexts()
        var changed = 0
        let optimistic = statements.contains { statement in
            statement.steps.contains { step in
                if case .insert(let insert) = step { return insert.insertsPlainlyWhenKeysAreFree }
                return false
            }
        }
        guard optimistic else {
            try runPass(statements[...], on: conn, results: &results, collecting: collecting,
                        mode: .rules, texts: &texts, changed: &changed)
            return changed
        }
        var start = statements.startIndex
        if conn.undoesFailedStatementAlone {
            while start < statements.endIndex {
                let resultsBefore = results.count
                do {
                    try runPass(statements[start...], on: conn, results: &results, collecting: collecting,
                                mode: .plainInPlace, texts: &texts, changed: &changed)
                    return changed
                } catch let refused as PlainInsertRefused {
                    // Everything before the refused INSERT is done; its rows were undone.
                    if collecting { results.removeSubrange((resultsBefore + refused.statement - start)...) }
                    let end = min(statements.endIndex, refused.statement + Self.statementsPerAttempt)
                    try runPass(statements[refused.statement..<end], on: conn, results: &results, collecting: collecting,
                                mode: .rules, texts: &texts, changed: &changed)
                    start = end
                }
            }
            return changed
        }
        if statements.count > Self.statementsPerAttempt, let first = copyableInsert(statements[...], on: conn) {
            // A large batch of new models only: one COPY of all of them first. When a key is
            // taken, it is rolled back and the attempts below find where.
            do {
                var attempt: [[Row]?] = []
                var attemptChanged = 0
                let copied = try conn.transaction { conn in
                    try copyInserts(statements[...], first: first, on: conn, results: &attempt, collecting: collecting,
                                    changed: &attemptChanged)
                }
                if copied {
                    results.append(contentsOf: attempt)
                    return changed + attemptChanged
                }
            } catch let error as DatabaseError where Self.isRefusedPlainInsert(error) {}
        }
        while start < statements.endIndex {
            let end = min(statements.endIndex, start + Self.statementsPerAttempt)
            let segment = statements[start..<end]
            do {
                var attempt: [[Row]?] = []
                var attemptChanged = 0
                try conn.transaction { conn in
                    if try !copyPlainInserts(segment, on: conn, results: &attempt, collecting: collecting,
                                             changed: &attemptChanged) {
                        try runPass(segment, on: conn, results: &attempt, collecting: collecting,
                                    mode: .plain, texts: &texts, changed: &attemptChanged)
                    }
                }
                results.append(contentsOf: attempt)
                changed += attemptChanged
            } catch let error as DatabaseError where Self.isRefusedPlainInsert(error) {
                try runPass(segment, on: conn, results: &results, collecting: collecting,
                            mode: .rules, texts: &texts, changed: &changed)
            }
            start = end
        }
        return changed
    }

    /// Runs an attempt's statements as one COPY (PostgreSQL) when they are all new models'
    /// inserts of one shape that may run plainly, and enough of them for COPY to pay
    /// (``Connection/copyThreshold``): a COPY is a plain INSERT of every row, so a taken key
    /// fails it with the same error, and the caller runs the attempt with the rules instead.
    /// Returns false, having run nothing, otherwise.
    private func copyPlainInserts(_ statements: ArraySlice<ModelStatement>, on conn: Connection, results: inout [[Row]?],
                                  collecting: Bool, changed: inout Int) throws -> Bool {
        guard let first = copyableInsert(statements, on: conn) else { return false }
        return try copyInserts(statements, first: first, on: conn, results: &results, collecting: collecting, changed: &changed)
    }

    /// Runs `statements`, each one insert of the shape of `first` (see ``copyableInsert(_:on:)``),
    /// as one COPY; returns false, having run nothing, when the backend declines it.
    private func copyInserts(_ statements: ArraySlice<ModelStatement>, first: BatchableInsert, on conn: Connection,
                             results: inout [[Row]?], collecting: Bool, changed: inout Int) throws -> Bool {
        let start = statements.startIndex
        guard try conn.insertByCopyIfWorthwhile(into: first.table, columns: first.columns, count: statements.count,
                                                row: { index, values in
            // Checked by copyableInsert: every statement is one insert.
            if case .insert(let insert) = statements[start + index].steps[0] { values = insert.values }
        }) != nil else {
            return false
        }
        changed += statements.count
        if collecting { results.append(contentsOf: repeatElement(nil, count: statements.count)) }
        return true
    }

    /// The first insert of `statements` when all of them are one insert each of a new model
    /// that may run plainly, all of one shape, and enough of them for COPY to pay on this
    /// backend; nil otherwise.
    private func copyableInsert(_ statements: ArraySlice<ModelStatement>, on conn: Connection) -> BatchableInsert? {
        guard statements.count >= Connection.copyThreshold, conn.dialect.supportsCopy,
              let firstStatement = statements.first, firstStatement.steps.count == 1,
              case .insert(let first) = firstStatement.steps[0], first.insertsPlainlyWhenKeysAreFree,
              !first.columns.isEmpty else { return nil }
        for statement in statements {
            guard statement.steps.count == 1, case .insert(let insert) = statement.steps[0],
                  insert.insertsPlainlyWhenKeysAreFree,
                  insert.hasSameShape(as: first, conflict: insert.conflict) else { return nil }
        }
        return first
    }

    /// A taken key, or a NOT NULL column left nil by a model whose key is taken (the database
    /// checks NOT NULL first): the rules pass sorts them out, and meets a real NOT NULL error
    /// again.
    private static func isRefusedPlainInsert(_ error: DatabaseError) -> Bool {
        switch error {
        case .constraintViolation(.unique, _), .constraintViolation(.notNull, _): return true
        default: return false
        }
    }

    /// How a pass runs the inserts of new models.
    private enum PassMode {
        /// With their duplicate rules.
        case rules
        /// As plain INSERTs; the caller runs the pass in a savepoint.
        case plain
        /// As plain INSERTs, each run at once with no savepoint: one that meets a taken key
        /// is undone alone (SQLite) and the pass throws ``PlainInsertRefused``.
        case plainInPlace
    }

    /// A plain INSERT met a taken key and was undone alone: the statements before
    /// `statement` (an index into the batch) are done, the rest are not.
    private struct PlainInsertRefused: Error {
        let statement: Int
    }

    private func runPass(_ statements: ArraySlice<ModelStatement>, on conn: Connection, results: inout [[Row]?],
                         collecting: Bool, mode: PassMode, texts: inout InsertTexts, changed: inout Int) throws {
        let plainInserts = mode != .rules
        // Statements waiting to run, in order. At most one of the two lists holds any: other
        // statements, or chunks of one INSERT text with their values (consecutive chunks of
        // one text run as one batch: one prepared statement, or one pipeline).
        var pending: [SQLStatement] = []
        var pendingText: String?
        var pendingValues: [[DatabaseValue]] = []
        var group: BatchableInsert?
        /// Where the group's first model is in the batch, and whether the group runs plainly.
        var groupStart = statements.startIndex
        var groupIsPlain = false
        var rows: [[DatabaseValue]] = []
        var keysInGroup = Set<[DatabaseValue]>()

        func flushPending() throws {
            if !pending.isEmpty {
                changed += try conn.executeBatch(pending)
                pending.removeAll(keepingCapacity: true)
            }
            if let sql = pendingText, !pendingValues.isEmpty {
                changed += try conn.executeBatch(sql, bindingSets: pendingValues)
                pendingValues.removeAll(keepingCapacity: true)
            }
            pendingText = nil
        }
        func append(_ statement: SQLStatement) throws {
            if pendingText != nil { try flushPending() }
            pending.append(statement)
        }
        func append(_ shape: BatchableInsert, rows: [[DatabaseValue]]) throws {
            let sql = try texts.text(shape, rows: rows.count, on: conn)
            if !pending.isEmpty || pendingText.map({ !SQLTextKey.sameBytes($0, sql) }) ?? false {
                try flushPending()
            }
            pendingText = sql
            pendingValues.append(Self.rowMajor(rows, columns: shape.columns.count))
        }
        func flushGroup() throws {
            guard let first = group, !rows.isEmpty else { return }
            if case .secondary(let primary, let secondary, let syncable) = first.conflict {
                try flushPending()
                changed += try resolveSecondaryRun(first, rows: rows, primary: primary, secondary: secondary,
                                                   syncable: syncable, on: conn)
            } else if case .primary(let keys, .ignore) = first.conflict, rows.contains(where: { $0.contains(.null) }) {
                // A syncable type keeps the row it has, but ON CONFLICT DO NOTHING cannot keep
                // it when the model leaves a NOT NULL column nil (NOT NULL is checked first):
                // leave out the models whose key is taken.
                try flushPending()
                let free = try rowsWithFreeKeys(first, rows: rows, keys: keys, on: conn)
                if !free.isEmpty { try append(first, rows: free) }
            } else if groupIsPlain && mode == .plainInPlace {
                try flushPending()
                let sql = try texts.text(first, rows: rows.count, on: conn)
                let values = Self.rowMajor(rows, columns: first.columns.count)
                guard let count = try conn.executeRecoverably(sql, bindings: values, recoverable: Self.isRefusedPlainInsert) else {
                    throw PlainInsertRefused(statement: groupStart)
                }
                changed += count
            } else {
                try append(first, rows: rows)
            }
            group = nil
            rows.removeAll(keepingCapacity: true)
            keysInGroup.removeAll(keepingCapacity: true)
        }

        for index in statements.indices {
            let statement = statements[index]
            if collecting {
                if let query = statement.query {
                    try flushGroup()
                    try flushPending()
                    results.append(try conn.fetchAll(query))
                    continue
                }
                results.append(nil)
            }
            for step in statement.steps {
                switch step {
                case .statement(let sql):
                    try flushGroup()
                    try append(sql)
                case .insert(let insert):
                    // Tried plainly, an insert has no conflict rule (and no keys to keep apart).
                    let plain = plainInserts && insert.insertsPlainlyWhenKeysAreFree
                    let keys = plain ? [] : insert.distinctKeys
                    // A secondary-key run's lookup binds every key twice more; a primary-key
                    // run's lookup (syncable models with nil values) binds its key twice.
                    var keyBindings = 0
                    for key in keys { keyBindings += 2 * key.count }
                    let perRow = insert.columns.count + keyBindings
                    // An insert of DEFAULT VALUES has no multi-row form.
                    let rowLimit = insert.columns.isEmpty ? 1 : max(1, min(maxRowsPerInsert, maxBindings / max(1, perRow)))
                    if let current = group {
                        var fits = rows.count < rowLimit
                            && current.hasSameShape(as: insert, conflict: plain ? .none : insert.conflict)
                        for key in keys where fits && keysInGroup.contains(key) { fits = false }
                        if !fits { try flushGroup() }
                    }
                    if group == nil {
                        group = insert
                        groupStart = index
                        groupIsPlain = plain
                        if plain { group?.conflict = .none }
                    }
                    rows.append(insert.values)
                    for key in keys { keysInGroup.insert(key) }
                }
            }
            // Memory stays bounded: a run of chunks goes to the database every 64.
            if pending.count + pendingValues.count >= 64 { try flushPending() }
        }
        try flushGroup()
        try flushPending()
    }

    /// The values of `rows` one after the other, as a text of placeholder rows binds them.
    private static func rowMajor(_ rows: [[DatabaseValue]], columns: Int) -> [DatabaseValue] {
        var values: [DatabaseValue] = []
        values.reserveCapacity(rows.count * columns)
        for row in rows { values.append(contentsOf: row) }
        return values
    }

    /// The rows of a run (same shape, no key twice) whose primary key no stored row holds:
    /// one SELECT, whose CASE names the model each stored row matches, so no stored value is
    /// compared in Swift (a key may read back in another form than it was bound).
    private func rowsWithFreeKeys(_ shape: BatchableInsert, rows: [[DatabaseValue]], keys: [String],
                                  on conn: Connection) throws -> [[DatabaseValue]] {
        func condition(_ row: [DatabaseValue]) -> SQLExpression {
            .all(keys.map { key in
                let value = shape.columns.firstIndex(of: key).map { row[$0] } ?? .null
                return .binary(.column(key), .equal, .bind(value))
            })
        }
        let match = SQLExpression.caseWhen(
            rows.indices.map { SQLCaseBranch(when: condition(rows[$0]), then: .literal(.integer(Int64($0)))) },
            else: nil)
        let lookup = SQLSelect(columns: [.expression(match, alias: "unity_pk")], from: .table(shape.table, alias: nil),
                               where: .any(rows.map(condition)))
        var taken = Set<Int>()
        try conn.forEachRow(.select(lookup)) { row in
            if let index = try row.decodeIfPresent(Int.self, column: "unity_pk") { taken.insert(index) }
        }
        return rows.indices.filter { !taken.contains($0) }.map { rows[$0] }
    }

    /// Saves a run of new models with secondary keys (same shape, no primary or secondary key
    /// twice) as if one at a time: for each, the row holding its secondary key is the
    /// duplicate, else the row holding its primary key; a duplicate is updated (all columns
    /// but the primary key) unless `syncable`; the others are inserted. One SELECT reads which
    /// existing rows hold the run's keys (a CASE names the model each matches, so no stored
    /// value is compared in Swift), the simulation replays the saves in order, then the
    /// updates run (they only touch rows that existed before the run) and the inserts follow.
    private func resolveSecondaryRun(_ shape: BatchableInsert, rows: [[DatabaseValue]], primary: [String],
                                     secondary: [String], syncable: Bool, on conn: Connection) throws -> Int {
        func condition(_ keys: [String], _ row: [DatabaseValue]) -> SQLExpression {
            .all(keys.map { key in
                let value = shape.columns.firstIndex(of: key).map { row[$0] } ?? .null
                return .binary(.column(key), .equal, .bind(value))
            })
        }
        let secondaryCase = SQLExpression.caseWhen(
            rows.indices.map { SQLCaseBranch(when: condition(secondary, rows[$0]), then: .literal(.integer(Int64($0)))) },
            else: nil)
        let primaryCase = SQLExpression.caseWhen(
            rows.indices.map { SQLCaseBranch(when: condition(primary, rows[$0]), then: .literal(.integer(Int64($0)))) },
            else: nil)
        let lookup = SQLSelect(
            columns: primary.map { .column($0) } + [.expression(secondaryCase, alias: "unity_sk"),
                                                    .expression(primaryCase, alias: "unity_pk")],
            from: .table(shape.table, alias: nil),
            where: .any(rows.flatMap { [condition(secondary, $0), condition(primary, $0)] }))

        // The existing rows that hold a key of the run: their primary key as stored, the
        // model whose secondary key they hold now, and the model whose primary key they have.
        var existingKey: [[DatabaseValue]] = []
        var holdsSecondaryOf: [Int?] = []
        var hasPrimaryOf: [Int?] = []
        try conn.forEachRow(.select(lookup)) { row in
            existingKey.append(Array(row.values.prefix(primary.count)))
            holdsSecondaryOf.append(try row.decodeIfPresent(Int.self, column: "unity_sk"))
            hasPrimaryOf.append(try row.decodeIfPresent(Int.self, column: "unity_pk"))
        }

        var updates: [SQLStatement] = []
        var inserts: [[DatabaseValue]] = []
        for (index, row) in rows.enumerated() {
            let match = holdsSecondaryOf.firstIndex(of: index) ?? hasPrimaryOf.firstIndex(of: index)
            guard let match else {
                inserts.append(row)
                continue
            }
            if syncable { continue }
            // Matched on its primary key, the row takes this model's secondary key: the row
            // that held it before (another model of the run) no longer holds it.
            if holdsSecondaryOf[match] != index {
                holdsSecondaryOf[match] = index
            }
            let target = SQLExpression.all(zip(primary, existingKey[match]).map { .binary(.column($0), .equal, .bind($1)) })
            let shaped = BatchableInsert(table: shape.table, columns: shape.columns, values: row,
                                         nullColumns: shape.nullColumns, conflict: shape.conflict)
            let assignments = shaped.assignments(keeping: primary)
            if !assignments.isEmpty {
                updates.append(.update(SQLUpdate(shape.table, set: assignments, where: target)))
            }
        }
        var changed = 0
        if !updates.isEmpty { changed += try conn.executeBatch(updates) }
        if !inserts.isEmpty {
            var plain = shape
            plain.conflict = .none
            changed += try conn.execute(.insert(plain.insert(rows: inserts)))
        }
        return changed
    }
}

extension DBManager {
    /// Runs `statements` on `conn` in its current transaction; returns the rows changed.
    static func executeStatementsReturningChanges(_ statements: [ModelStatement], on conn: Connection) throws -> Int {
        try ModelBatchRunner(dialect: conn.dialect).run(statements, on: conn)
    }
}
