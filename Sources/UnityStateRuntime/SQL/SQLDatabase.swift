import Foundation
import Logging
import Unity

/// The state flavor's store on the core: SQLite or PostgreSQL through the same code.
///
/// Three tables, created once by the core's migrator (names under its `flavor:` prefix):
/// `unity_state_instances` (model, instance → status, time), `unity_state_values` (model,
/// instance, property → kind and one typed column: integer, real, text or bytes, with the write
/// time; the state flavor's article on stores has the table of value types), and, for
/// ``SQLHistoryDatabase``, `unity_state_history` (every write). Every `get` and `set` is one
/// statement on a primary key; `all(model:)` and ``instances(of:where:)`` are indexed queries.
///
/// `set` cannot throw (StateModel's interface): a write that fails is reported to ``onError``,
/// logged, kept as ``lastError``, and never half-applied. Writes that belong together go through
/// ``transaction(_:)``, which throws when any of them failed and then applies none. A read that
/// fails (a lost connection) is logged and reads as nil, so a property reads its default.
public class SQLDatabase: TimestampedDatabase, @unchecked Sendable {
    // Its members are `final`: SQLHistoryDatabase adds to them and overrides none, and no vtable
    // entry then moves when an internal helper changes (a stale incremental build of a dependent
    // module would call the wrong method).
    // @unchecked: the mutable state (`lastError`, `failures`, `onError`) is guarded by `lock`;
    // the core database is Sendable.

    /// The core database the values live in.
    public let database: Unity.Database

    let codec: StoredValueCodec
    let clock: @Sendable () -> Date
    let keepsHistory: Bool
    /// The multi-row statement texts buffered writes are sent with.
    let templates: PendingWriteTemplates
    /// The point reads of one value and of one status, rendered once from the AST; bound to
    /// (model, instance, property) and (model, instance).
    private let valueReadSQL: String
    private let statusReadSQL: String
    private let lock = NSLock()
    private var failures = 0
    /// The failed writes of the transactions running, per thread: a transaction throws for
    /// its own thread's failures only, and a nested one that threw (and was caught) leaves
    /// none of its failures to the enclosing one.
    private var transactionFailures: [ThreadKey: (count: Int, last: StateError?)] = [:]
    private var lastFailure: StateError?
    private var errorHandler: (@Sendable (StateError) -> Void)?
    private let logger = Logger(label: "unity.state")

    static let instancesTable = "unity_state_instances"
    static let valuesTable = "unity_state_values"
    static let historyTable = "unity_state_history"

    /// A store in `database`, its tables created when missing. Values that are not integers,
    /// floating-point numbers, strings, `Data` or dates are stored as `encoder` writes them;
    /// `clock` dates the writes made without a date (default: now).
    ///
    /// With `changeTriggers`, the store's migrations also install the core's change triggers
    /// on its tables (`Migration.observeChanges(of:)`), once: on PostgreSQL ``QueryResults``
    /// need them to follow commits made by other processes (and by other `Database` values);
    /// on SQLite they tell the store's commits apart from commits to other tables of the file.
    /// Every write to the store then also pays for the trigger (on PostgreSQL a `pg_notify`
    /// per statement), which is why it is off by default.
    public convenience init(_ database: Unity.Database, encoder: any GenericEncoder = JSONEncoder(),
                            decoder: any GenericDecoder = JSONDecoder(),
                            clock: @escaping @Sendable () -> Date = { Date() }, changeTriggers: Bool = false) throws {
        try self.init(database, encoder: encoder, decoder: decoder, clock: clock, history: false, changeTriggers: changeTriggers)
    }

    init(_ database: Unity.Database, encoder: any GenericEncoder, decoder: any GenericDecoder,
         clock: @escaping @Sendable () -> Date, history: Bool, changeTriggers: Bool) throws {
        self.database = database
        self.codec = StoredValueCodec(encoder: encoder, decoder: decoder)
        self.clock = clock
        self.keepsHistory = history
        self.templates = PendingWriteTemplates(dialect: database.dialect)
        let valueRead = try database.dialect.render(.select(Self.valueSelect(Path(model: 0, instance: 0, property: 0))))
        let statusRead = try database.dialect.render(.select(Self.statusSelect(model: 0, instance: 0)))
        // The cached texts are bound to the path's numbers in this order, and nothing else.
        guard valueRead.bindings == [.integer(0), .integer(0), .integer(0)], statusRead.bindings == [.integer(0), .integer(0)] else {
            throw StateError.store(.misuse("unexpected placeholders in the state store's point reads"))
        }
        self.valueReadSQL = valueRead.sql
        self.statusReadSQL = statusRead.sql
        var migrator = Migrator(migrations: Self.migrations(dialect: database.dialect, history: history,
                                                            changeTriggers: changeTriggers))
        migrator.ignoresOtherAppliedMigrations = true
        try migrator.migrate(database)
    }

    /// The most recent failed write, if any.
    public final var lastError: StateError? {
        lock.lock()
        defer { lock.unlock() }
        return lastFailure
    }

    /// Called with every write that failed outside a ``transaction(_:)`` (inside one, the
    /// transaction throws instead).
    public final var onError: (@Sendable (StateError) -> Void)? {
        get { lock.lock(); defer { lock.unlock() }; return errorHandler }
        set { lock.lock(); errorHandler = newValue; lock.unlock() }
    }

    // MARK: Schema

    static func migrations(dialect: SQLDialect, history: Bool, changeTriggers: Bool = false) -> [Migration] {
        let text: ColumnType = dialect.name == SQLDialect.postgres.name ? .custom("TEXT COLLATE \"C\"") : .text
        func valueColumns() -> [SQLColumnDefinition] {
            [
                SQLColumnDefinition("kind", .int64, notNull: true),
                SQLColumnDefinition("int_value", .int64),
                SQLColumnDefinition("real_value", .double),
                SQLColumnDefinition("text_value", text),
                SQLColumnDefinition("blob_value", .blob),
                SQLColumnDefinition("written_at", .double, notNull: true),
            ]
        }
        let key = [SQLColumnDefinition("model", .int64, notNull: true), SQLColumnDefinition("instance", .int64, notNull: true)]
        var migrations = [Migration(Migrator.flavorMigrationPrefix + "state/create", statements: [
            .createTable(SQLCreateTable(instancesTable, ifNotExists: true, columns: key + [
                SQLColumnDefinition("status", .int64, notNull: true),
                SQLColumnDefinition("written_at", .double, notNull: true),
            ], constraints: [.primaryKey(["model", "instance"])])),
            .createTable(SQLCreateTable(valuesTable, ifNotExists: true,
                                        columns: key + [SQLColumnDefinition("property", .int64, notNull: true)] + valueColumns(),
                                        constraints: [.primaryKey(["model", "instance", "property"])])),
            // Filters on one property of one model (instances(of:where:)).
            .createIndex(SQLCreateIndex("unity_state_values_by_property", on: valuesTable,
                                        columns: ["model", "property", "int_value"], ifNotExists: true)),
        ])]
        if history {
            migrations.append(Migration(Migrator.flavorMigrationPrefix + "state/history", statements: [
                .createTable(SQLCreateTable(historyTable, ifNotExists: true, columns: [
                    SQLColumnDefinition("seq", .int64, primaryKey: .autoIncrement),
                ] + key + [SQLColumnDefinition("property", .int64, notNull: true)] + valueColumns())),
                .createIndex(SQLCreateIndex("unity_state_history_by_path", on: historyTable,
                                            columns: ["model", "instance", "property", "written_at"], ifNotExists: true)),
                .createIndex(SQLCreateIndex("unity_state_history_by_status", on: historyTable,
                                            columns: ["model", "property", "instance", "written_at"], ifNotExists: true)),
            ]))
        }
        if changeTriggers {
            migrations.append(Migration.observeChanges(of: Array(observedTables).sorted(),
                                                       name: Migrator.flavorMigrationPrefix + "state/observe"))
        }
        return migrations
    }

    // MARK: Commits made elsewhere

    /// The tables a query of the store reads: the instances and their values (a history view
    /// reads the history, which the same writes fill).
    static let observedTables: Set<String> = [instancesTable, valuesTable]

    /// Calls `onChange` after each committed transaction that changed the store's tables, made
    /// through this store or any other (another process on the same SQLite file, any client of
    /// the same PostgreSQL database, another `Database` value), until the returned observer is
    /// cancelled or released. ``QueryResults`` follow the store this way. `onChange` comes on a
    /// thread of Unity's, or on the committing thread: it must return quickly and must not run
    /// a statement.
    ///
    /// - Throws: `ObservationError.missingChangeTrigger` on PostgreSQL when the store's tables
    ///   have no change trigger (open the store once with `changeTriggers: true`); the core's
    ///   `DatabaseError` when the watcher cannot start.
    public final func observeCommits(_ onChange: @escaping @Sendable () -> Void) throws -> DatabaseChangeObserver {
        try database.observeChanges(to: Self.observedTables) { _ in onChange() }
    }

    // MARK: Failures

    /// Records a failed write: kept, counted (a transaction in progress sees the count move
    /// and throws), logged and handed to ``onError``.
    final func recordFailure(_ error: Error, path: Path) {
        let failure: StateError
        switch error {
        case let error as StateError: failure = error
        case let error as DatabaseError: failure = .store(error)
        default: failure = .valueCodingFailed(path: path, error: String(describing: error))
        }
        lock.lock()
        failures += 1
        lastFailure = failure
        if !buffers.isEmpty, buffers[ThreadKey.current] != nil {
            let count = transactionFailures[ThreadKey.current]?.count ?? 0
            transactionFailures[ThreadKey.current] = (count + 1, failure)
        }
        let handler = errorHandler
        lock.unlock()
        logger.error("state write to \(path) failed: \(failure)")
        handler?(failure)
    }

    /// This thread's transaction failures so far, and the last of them.
    private var threadFailures: (count: Int, last: StateError?) {
        get {
            lock.lock()
            defer { lock.unlock() }
            return transactionFailures[ThreadKey.current] ?? (0, nil)
        }
        set {
            lock.lock()
            transactionFailures[ThreadKey.current] = newValue.count == 0 ? nil : newValue
            lock.unlock()
        }
    }

    /// Runs `body` in one write transaction of the core database: every `set` inside joins
    /// it. When a write inside failed (or `body` throws), nothing of it is applied and this
    /// throws.
    ///
    /// A nested call is a savepoint: when it throws, only its own writes are undone.
    /// - Throws: The core's `DatabaseError` when the database refuses to begin the
    ///   transaction, to write the buffered writes or to commit; a ``StateError`` when a write
    ///   inside failed before the end (``StateError/store(_:)``,
    ///   ``StateError/valueCodingFailed(path:error:)``); or what `body` threw.
    public final func transaction<R>(_ body: () throws -> R) throws -> R {
        let thread = ThreadKey.current
        lock.lock()
        let outermost = buffers[thread] == nil
        if outermost { buffers[thread] = PendingWrites(date: clock().timeIntervalSinceReferenceDate) }
        lock.unlock()
        defer {
            if outermost {
                lock.lock()
                buffers[thread] = nil
                lock.unlock()
            }
        }
        // A nested transaction is a savepoint: the writes buffered before it go first, so that
        // what the buffer holds when it throws is its own, dropped with the savepoint.
        if !outermost { try flushBuffer() }
        let before = threadFailures
        return try database.write { _ in
            do {
                let result = try body()
                if outermost { try flushBuffer() }
                let after = threadFailures
                if after.count != before.count, let failure = after.last { throw failure }
                return result
            } catch {
                // Its writes and failures go with it: the enclosing transaction may go on.
                if !outermost { currentBuffer()?.removeAll() }
                threadFailures = before
                throw error
            }
        }
    }

    // MARK: Reading

    private static func pathCondition(_ path: Path, table: String? = nil) -> SQLExpression {
        .and([
            SQLExpression.column(table: table, name: "model").equals(Int64(path.model)),
            SQLExpression.column(table: table, name: "instance").equals(Int64(path.instance)),
            SQLExpression.column(table: table, name: "property").equals(Int64(path.property)),
        ])
    }

    static let valueColumnNames = ["kind", "int_value", "real_value", "text_value", "blob_value", "written_at"]

    /// Decodes the value columns of `row` starting at `offset` (kind first, written_at last).
    /// `marked`: the kind is stored as `-1 - kind` (a history row of a value other than a
    /// status at a status path, see ``PendingWrites/addValue(_:columns:when:history:isStatus:)``).
    final func decodeValue<Value>(_ type: Value.Type, row: Row, offset: Int = 0, marked: Bool = false) -> Timestamped<Value>? {
        guard case .integer(let stored) = row[offset],
              case let kind = marked ? -1 - stored : stored,
              let value = codec.decode(Value.self, kind: kind, integer: row[offset + 1], real: row[offset + 2],
                                       text: row[offset + 3], blob: row[offset + 4]),
              let date = Self.date(row[offset + 5]) else { return nil }
        return Timestamped(value: value, date: date)
    }

    static func date(_ value: SQLValue) -> Date? {
        switch value {
        case .double(let seconds): return Date(timeIntervalSinceReferenceDate: seconds)
        case .integer(let seconds): return Date(timeIntervalSinceReferenceDate: Double(seconds))
        default: return nil
        }
    }

    /// Runs a read on the connection the current thread holds (inside a transaction) or on a
    /// reader; a failure is logged and read as nothing.
    final func read<T>(_ path: Path?, _ body: (Connection) throws -> T?) -> T? {
        flushBeforeRead()
        do {
            return try database.withConnection(role: .reader, body)
        } catch {
            logger.error("state read\(path.map { " of \($0)" } ?? "") failed: \(error)")
            return nil
        }
    }

    /// The value stored at `path` with the date it was written, from the store's tables; nil when
    /// none is stored (or it is not a `Value`).
    public final func get<Value: DatabaseValue>(_ path: Path) -> Timestamped<Value>? {
        // A status is in the instances table; any other value at a status path is a value.
        if path.isInstanceStatus, Value.self == InstanceStatus.self {
            guard let status = readStatus(model: path.model, instance: path.instance),
                  let value = status.value as? Value else { return nil }
            return Timestamped(value: value, date: status.date)
        }
        if let prefetched = prefetchedRows(), prefetched.covers(path) {
            return prefetched.values[PendingWrites.Key(model: path.model, instance: path.instance, property: path.property)]
                .flatMap { decodeValue(Value.self, row: $0, offset: 2) }
        }
        let statement = RenderedSQL(sql: valueReadSQL, bindings: [.integer(Int64(path.model)), .integer(Int64(path.instance)),
                                                                  .integer(Int64(path.property))])
        return read(path) { conn in
            try Self.fetchOne(statement, on: conn).flatMap { decodeValue(Value.self, row: $0) }
        }
    }

    /// The value columns of one path.
    private static func valueSelect(_ path: Path) -> SQLSelect {
        SQLSelect(from: valuesTable)
            .columns(valueColumnNames.map { .expression(.column($0), alias: nil) })
            .where(pathCondition(path))
    }

    /// The status and its date of one instance.
    private static func statusSelect(model: ModelKey, instance: InstanceKey) -> SQLSelect {
        SQLSelect(from: instancesTable)
            .columns(.expression(.column("status"), alias: nil), .expression(.column("written_at"), alias: nil))
            .where(.and([SQLExpression.column("model").equals(Int64(model)),
                         SQLExpression.column("instance").equals(Int64(instance))]))
    }

    /// The first row of an already rendered statement.
    private static func fetchOne(_ statement: RenderedSQL, on conn: Connection) throws -> Row? {
        var first: Row?
        try conn.forEachRow(statement) { row in
            if first == nil { first = row }
        }
        return first
    }

    /// The value stored at `path`, from the store's tables; nil when none is stored (or it is not a
    /// `Value`).
    public final func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        let found: Timestamped<Value>? = get(path)
        return found?.value
    }

    final func readStatus(model: ModelKey, instance: InstanceKey) -> Timestamped<InstanceStatus>? {
        if let prefetched = prefetchedRows(), prefetched.covers(Path(model: model, instance: instance)) {
            return prefetched.statuses[instance]
        }
        let statement = RenderedSQL(sql: statusReadSQL, bindings: [.integer(Int64(model)), .integer(Int64(instance))])
        return read(Path(model: model, instance: instance)) { conn in
            guard let row = try Self.fetchOne(statement, on: conn), case .integer(let raw) = row[0],
                  let status = UInt8(exactly: raw).flatMap(InstanceStatus.init(rawValue:)),
                  let date = Self.date(row[1]) else { return nil }
            return Timestamped(value: status, date: date)
        }
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, with the status
    /// and the date it was written, and collects the non-nil results (in instance order).
    public final func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        let select = SQLSelect(from: Self.instancesTable)
            .columns(.expression(.column("instance"), alias: nil), .expression(.column("status"), alias: nil),
                     .expression(.column("written_at"), alias: nil))
            .where(SQLExpression.column("model").equals(Int64(model)))
            .orderBy(SQLOrdering(.column("instance")))
        let rows: [(InstanceKey, InstanceStatus, Date)] = read(nil) { conn in
            var found: [(InstanceKey, InstanceStatus, Date)] = []
            try conn.forEachRow(.select(select)) { row in
                guard case .integer(let id) = row[0], case .integer(let raw) = row[1],
                      let status = UInt8(exactly: raw).flatMap(InstanceStatus.init(rawValue:)),
                      let date = Self.date(row[2]), let instance = Int(exactly: id) else { return }
                found.append((instance, status, date))
            }
            return found
        } ?? []
        // The predicate may read the database: called after the statement is done.
        return rows.compactMap { predicate($0.0, $0.1, $0.2) }
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, from the store's
    /// tables, and collects the non-nil results (in instance order).
    public final func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        all(model: model) { id, status, _ in predicate(id, status) }
    }

    // MARK: Writing

    /// Stores `value` at `path`, dated now by the store's clock (inside ``transaction(_:)``, by the
    /// transaction's start date). A write that fails goes to ``onError`` and ``lastError``; inside
    /// a transaction, the transaction throws.
    public final func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        set(value, for: path, at: nil)
    }

    /// Stores `value` at `path` as written at `date` (now when nil). A write older than the
    /// value stored changes nothing but the history: a late or repeated message never reverts
    /// a newer value. Inside ``transaction(_:)`` the write is buffered and goes to the database
    /// with the others as multi-row statements (before the next read, and at the end).
    public final func set<Value: DatabaseValue>(_ value: Value, for path: Path, at date: Date?) {
        do {
            let buffer = currentBuffer()
            // The writes of one transaction share its date, taken when it began.
            let when = date?.timeIntervalSinceReferenceDate ?? buffer?.date ?? clock().timeIntervalSinceReferenceDate
            let rows = buffer ?? PendingWrites(date: nil)
            // A status goes to the instances table; any other value at a status path is stored
            // beside it as a value (as SQLiteStateDB does), leaving the status as it is.
            let status = path.isInstanceStatus && Value.self == InstanceStatus.self ? value as? InstanceStatus : nil
            if let status {
                rows.addInstance(model: path.model, instance: path.instance, status: Int64(status.rawValue), when: when)
            }
            rows.addValue(path, columns: try codec.encode(value), when: when, history: keepsHistory, isStatus: status != nil)
            if buffer != nil { return }
            let plan = try rows.plan(templates: templates, history: keepsHistory)
            if plan.count == 1, case .statements(let sql, let bindingSets) = plan[0], bindingSets.count == 1 {
                // One statement: atomic by itself.
                _ = try database.withConnection(role: .writer) { try $0.execute(RenderedSQL(sql: sql, bindings: bindingSets[0])) }
            } else {
                try database.write { try PendingWriteStep.run(plan, templates: templates, on: $0) }
            }
        } catch {
            recordFailure(error, path: path)
        }
    }

    // MARK: Buffered writes in a transaction

    /// The calling thread (a transaction's body runs on the thread that called it).
    struct ThreadKey: Hashable {
        let id: pthread_t
        static var current: ThreadKey { ThreadKey(id: pthread_self()) }
        static func == (a: ThreadKey, b: ThreadKey) -> Bool { pthread_equal(a.id, b.id) != 0 }
        #if canImport(Darwin)
        static func bits(_ id: pthread_t) -> UInt { UInt(bitPattern: id) }
        #else
        static func bits(_ id: pthread_t) -> UInt { UInt(id) }
        #endif
        func hash(into hasher: inout Hasher) { hasher.combine(Self.bits(id)) }
    }

    /// The writes buffered by the transaction this thread runs, if any.
    private var buffers: [ThreadKey: PendingWrites] = [:]

    private final func currentBuffer() -> PendingWrites? {
        lock.lock()
        defer { lock.unlock() }
        return buffers.isEmpty ? nil : buffers[ThreadKey.current]
    }

    /// Sends this thread's buffered writes to the database (inside its transaction), so that
    /// a read sees them.
    final func flushBuffer() throws {
        guard let buffer = currentBuffer(), !buffer.isEmpty else { return }
        let plan = try buffer.plan(templates: templates, history: keepsHistory)
        buffer.removeAll()
        try database.withConnection(role: .writer) { try PendingWriteStep.run(plan, templates: templates, on: $0) }
    }

    /// Flushes before a read inside a transaction; a failure is recorded (the transaction
    /// then throws) and the read goes on.
    final func flushBeforeRead() {
        do {
            try flushBuffer()
        } catch {
            recordFailure(error, path: Path(model: 0, instance: 0, property: 0))
        }
    }

    // MARK: Reading many instances at once

    /// The rows of a range of instances of one model, read with two statements, that this
    /// thread's reads use instead of a statement per value (synchronization pages).
    final class PrefetchedRows {
        let model: ModelKey
        let range: ClosedRange<InstanceKey>
        /// Each value's row: instance, property, then the value columns.
        var values: [PendingWrites.Key: Row] = [:]
        var statuses: [InstanceKey: Timestamped<InstanceStatus>] = [:]

        init(model: ModelKey, range: ClosedRange<InstanceKey>) {
            self.model = model
            self.range = range
        }

        func covers(_ path: Path) -> Bool { path.model == model && range.contains(path.instance) }
    }

    private var prefetches: [ThreadKey: PrefetchedRows] = [:]

    private final func prefetchedRows() -> PrefetchedRows? {
        lock.lock()
        defer { lock.unlock() }
        return prefetches.isEmpty ? nil : prefetches[ThreadKey.current]
    }

    /// Runs `body` with every value and status of the instances `range` of `model` read
    /// ahead in two statements; reads inside `body` on this thread that fall in the range use
    /// them. (A value written meanwhile by another thread is not seen until `body` returns.)
    final func withPrefetchedInstances<R>(model: ModelKey, range: ClosedRange<InstanceKey>, _ body: () throws -> R) rethrows -> R {
        let rows = PrefetchedRows(model: model, range: range)
        let inRange: SQLExpression = .and([
            SQLExpression.column("model").equals(Int64(model)),
            .between(.column("instance"), low: .bind(.integer(Int64(range.lowerBound))),
                     high: .bind(.integer(Int64(range.upperBound))), negated: false),
        ])
        let values = SQLSelect(from: Self.valuesTable)
            .columns((["instance", "property"] + Self.valueColumnNames).map { .expression(.column($0), alias: nil) })
            .where(inRange)
        let statuses = SQLSelect(from: Self.instancesTable)
            .columns(.expression(.column("instance"), alias: nil), .expression(.column("status"), alias: nil),
                     .expression(.column("written_at"), alias: nil))
            .where(inRange)
        let loaded: Bool? = read(nil) { conn in
            try conn.forEachRow(.select(values)) { row in
                guard case .integer(let instance) = row[0], case .integer(let property) = row[1],
                      let i = Int(exactly: instance), let p = Int(exactly: property) else { return }
                rows.values[PendingWrites.Key(model: model, instance: i, property: p)] = row
            }
            try conn.forEachRow(.select(statuses)) { row in
                guard case .integer(let instance) = row[0], case .integer(let raw) = row[1], let i = Int(exactly: instance),
                      let status = UInt8(exactly: raw).flatMap(InstanceStatus.init(rawValue:)),
                      let date = Self.date(row[2]) else { return }
                rows.statuses[i] = Timestamped(value: status, date: date)
            }
            return true
        }
        // Without the rows (a failed read, logged), reads go to the database one by one.
        guard loaded == true else { return try body() }
        let thread = ThreadKey.current
        lock.lock()
        prefetches[thread] = rows
        lock.unlock()
        defer {
            lock.lock()
            prefetches[thread] = nil
            lock.unlock()
        }
        return try body()
    }

    // MARK: Filters in SQL

    /// A page of instance ids in one indexed query.
    public final func instanceKeys(of model: ModelKey, from start: InstanceKey, limit: Int) -> [InstanceKey] {
        guard limit > 0 else { return [] }
        let select = SQLSelect(from: Self.instancesTable)
            .columns(.expression(.column("instance"), alias: nil))
            .where(.and([SQLExpression.column("model").equals(Int64(model)),
                         SQLExpression.column("instance").greaterThanOrEquals(Int64(start))]))
            .orderBy(SQLOrdering(.column("instance")))
            .limit(limit)
        return readInstanceKeys(select)
    }

    /// The instance ids in the first column of `select`'s rows, in order.
    private final func readInstanceKeys(_ select: SQLSelect) -> [InstanceKey] {
        read(nil) { conn in
            var ids: [InstanceKey] = []
            try conn.forEachRow(.select(select)) { row in
                if case .integer(let id) = row[0], let instance = InstanceKey(exactly: id) { ids.append(instance) }
            }
            return ids
        } ?? []
    }

    /// The created instances of `model` whose value of `condition.property` satisfies it, in
    /// one indexed query, for integers, booleans, floating-point numbers, strings and dates
    /// (ordering comparisons) and for any value (equality, compared as stored). Other
    /// comparisons run in Swift (the protocol's default).
    public final func instances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey] {
        guard let columns = try? codec.encode(condition.value),
              let compared = Self.comparedColumn(columns, ordering: condition.comparison != .equal && condition.comparison != .notEqual) else {
            return defaultInstances(of: model, where: condition)
        }
        let op: SQLBinaryOperator
        switch condition.comparison {
        case .equal: op = .equal
        case .notEqual: op = .notEqual
        case .less: op = .less
        case .lessOrEqual: op = .lessOrEqual
        case .greater: op = .greater
        case .greaterOrEqual: op = .greaterOrEqual
        }
        let v = "v"
        let i = "i"
        // Same kind and the comparison on its column; a stored nil (kind 0) or a value of
        // another kind never matches an ordering, and matches `!=`.
        var matches: SQLExpression = .and([
            SQLExpression.column(table: v, name: "kind").equals(Int64(columns.kind.rawValue)),
            .binary(.column(table: v, name: compared.column), op, .bind(compared.value)),
        ])
        if condition.comparison == .notEqual {
            matches = .or([matches, .binary(.column(table: v, name: "kind"), .notEqual, .bind(.integer(columns.kind.rawValue)))])
        }
        if condition.defaultMatches {
            matches = .or([matches, .isNull(.column(table: v, name: "kind"), negated: false)])
        }
        let select = SQLSelect(from: Self.instancesTable, as: i)
            .columns(.expression(.column(table: i, name: "instance"), alias: nil))
            .join(.left, Self.valuesTable, as: v, on: .and([
                SQLExpression.column(table: v, name: "model").equals(SQLExpression.column(table: i, name: "model")),
                SQLExpression.column(table: v, name: "instance").equals(SQLExpression.column(table: i, name: "instance")),
                SQLExpression.column(table: v, name: "property").equals(Int64(condition.property)),
            ]))
            .where(.and([
                SQLExpression.column(table: i, name: "model").equals(Int64(model)),
                SQLExpression.column(table: i, name: "status").equals(Int64(InstanceStatus.created.rawValue)),
                matches,
            ]))
            .orderBy(SQLOrdering(.column(table: i, name: "instance")))
        return readInstanceKeys(select)
    }

    /// The protocol's evaluation in Swift, for conditions the SQL cannot express.
    private final func defaultInstances(of model: ModelKey, where condition: PropertyCondition) -> [InstanceKey] {
        all(model: model) { instance, status in
            guard status == .created else { return nil }
            return condition.matches(storedIn: self, at: Path(model: model, instance: instance, property: condition.property))
                ? instance : nil
        }
    }

    /// The column a comparison uses, and its bound value; nil when the value's kind has no
    /// order in SQL (an ordering on an encoded value, a nil, unsigned integers above Int64).
    private static func comparedColumn(_ columns: StoredValueCodec.Columns, ordering: Bool) -> (column: String, value: SQLValue)? {
        switch columns.kind {
        case .integer, .boolean: return ("int_value", columns.integer)
        case .unsigned:
            guard !ordering, case .integer(let bits) = columns.integer else { return nil }
            return ("int_value", .integer(bits))
        case .real, .date: return ("real_value", columns.real)
        case .text: return ("text_value", columns.text)
        case .bytes, .encoded: return ordering ? nil : ("blob_value", columns.blob)
        case .null: return nil
        }
    }
}

/// ``SQLDatabase`` that also keeps every write, so that it can be read as it was at any time
/// (``HistoryDatabase/view(at:)``); the history is the table `unity_state_history`.
public final class SQLHistoryDatabase: SQLDatabase, HistoryDatabase, @unchecked Sendable {

    /// A history store in `database` (see ``SQLDatabase/init(_:encoder:decoder:clock:changeTriggers:)``).
    public convenience init(_ database: Unity.Database, encoder: any GenericEncoder = JSONEncoder(),
                            decoder: any GenericDecoder = JSONDecoder(),
                            clock: @escaping @Sendable () -> Date = { Date() }, changeTriggers: Bool = false) throws {
        try self.init(database, encoder: encoder, decoder: decoder, clock: clock, history: true, changeTriggers: changeTriggers)
    }

    /// The value `path` held at `date` (the current value when nil), with its write time; nil when
    /// it had none then.
    public func get<Value: DatabaseValue>(_ path: Path, at date: Date?) -> Timestamped<Value>? {
        guard let date else { return get(path) }
        // At a status path the statuses and the other values (their kind marked negative) are
        // two histories.
        let status = Value.self == InstanceStatus.self
        let marked = path.isInstanceStatus && !status
        var conditions: [SQLExpression] = [
            SQLExpression.column("model").equals(Int64(path.model)),
            SQLExpression.column("instance").equals(Int64(path.instance)),
            SQLExpression.column("property").equals(Int64(path.property)),
            .binary(.column("written_at"), .lessOrEqual, .bind(.double(date.timeIntervalSinceReferenceDate))),
        ]
        if path.isInstanceStatus {
            conditions.append(.binary(.column("kind"), marked ? .less : .greaterOrEqual, .bind(.integer(0))))
        }
        let select = SQLSelect(from: Self.historyTable)
            .columns(Self.valueColumnNames.map { .expression(.column($0), alias: nil) })
            .where(.and(conditions))
            .orderBy(SQLOrdering(.column("written_at"), .descending), SQLOrdering(.column("seq"), .descending))
            .limit(1)
        if path.isInstanceStatus, status {
            // Statuses are kept in the history like any value (kind 1).
            return read(path) { conn in
                guard let row = try conn.fetchOne(.select(select)),
                      let status: Timestamped<InstanceStatus> = decodeValue(InstanceStatus.self, row: row),
                      let value = status.value as? Value else { return nil }
                return Timestamped(value: value, date: status.date)
            }
        }
        return read(path) { conn in
            try conn.fetchOne(.select(select)).flatMap { decodeValue(Value.self, row: $0, marked: marked) }
        }
    }

    /// Calls `predicate` with every instance of `model` that had a status at `date` (now when nil),
    /// with that status and its write date, and collects the non-nil results.
    public func all<T>(model: ModelKey, at date: Date?, where predicate: (InstanceKey, InstanceStatus, Date) -> T?) -> [T] {
        guard let date else { return all(model: model, where: predicate) }
        let select = SQLSelect(from: Self.historyTable)
            .columns((["instance"] + Self.valueColumnNames).map { .expression(.column($0), alias: nil) })
            .where(.and([
                SQLExpression.column("model").equals(Int64(model)),
                SQLExpression.column("property").equals(Int64(PropertyKey.instanceId)),
                .binary(.column("kind"), .greaterOrEqual, .bind(.integer(0))),
                .binary(.column("written_at"), .lessOrEqual, .bind(.double(date.timeIntervalSinceReferenceDate))),
            ]))
            .orderBy(SQLOrdering(.column("instance")), SQLOrdering(.column("written_at")), SQLOrdering(.column("seq")))
        // The last status of each instance at `date` (rows come in instance, time order).
        let latest: [(InstanceKey, Timestamped<InstanceStatus>)] = read(nil) { conn in
            var found: [(InstanceKey, Timestamped<InstanceStatus>)] = []
            try conn.forEachRow(.select(select)) { row in
                guard case .integer(let id) = row[0], let instance = Int(exactly: id),
                      let status: Timestamped<InstanceStatus> = decodeValue(InstanceStatus.self, row: row, offset: 1) else { return }
                if let last = found.last, last.0 == instance { found[found.count - 1] = (instance, status) } else { found.append((instance, status)) }
            }
            return found
        } ?? []
        return latest.compactMap { predicate($0.0, $0.1.value, $0.1.date) }
    }

    /// The time of the latest write to `path`, whatever its type.
    func latestWriteDate(_ path: Path) -> Date? {
        let select = SQLSelect(from: Self.historyTable)
            .columns(.expression(.function(name: "MAX", arguments: [.column("written_at")], distinct: false), alias: nil))
            .where(.and([
                SQLExpression.column("model").equals(Int64(path.model)),
                SQLExpression.column("instance").equals(Int64(path.instance)),
                SQLExpression.column("property").equals(Int64(path.property)),
            ]))
        return read(path) { conn in try conn.fetchOne(.select(select)).flatMap { Self.date($0[0]) } }
    }
}
