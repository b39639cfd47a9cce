import Foundation

/// What a `perform` closure works with: one transaction on one connection.
///
/// Every call runs SQL at once (after writing the changes made with `encode`), so a
/// fetch sees the closure's own inserts and changes.
public final class ManagedObjectContext {
    @usableFromInline let connection: Connection
    let registry: SchemaRegistry
    /// Objects with changes not yet written, in the order first changed.
    private var changedObjects: [ObjectIdentifier: () -> SQLStatement?] = [:]
    private var changeOrder: [ObjectIdentifier] = []
    /// An error met where the API cannot throw (``ManagedObject/encode(_:_:)``), thrown by
    /// the next statement.
    var pendingError: (any Error)?
    /// Inserts of models keyed by their own attribute, run by the next flush: each model's
    /// INSERT text (rendered once per context from the AST) and the values bound to it.
    private var pendingInserts: [(sql: String, table: String, columns: [String], values: [DatabaseValue])] = []
    private var insertTexts: [ObjectIdentifier: (sql: String, columns: [String])] = [:]
    /// False once the `perform` that made this context has ended: every later use of the
    /// context or of its objects throws ``PredicatesError/wrongContext(_:)``.
    @usableFromInline var isActive = true
    /// The relation sets handed out by this context, held weakly: those still alive when the
    /// `perform` ends (kept by the caller) read their members then, so that iterating them
    /// later yields what the relation held, never a silent empty set.
    private var handedOutSets: [WeakSet] = []

    init(connection: Connection, registry: SchemaRegistry) {
        self.connection = connection
        self.registry = registry
        self.dialect = connection.dialect
    }

    func markChanged<T>(_ object: ManagedObject<T>) {
        let id = ObjectIdentifier(object)
        if changedObjects[id] == nil {
            changedObjects[id] = { object.takeUpdate() }
            changeOrder.append(id)
        }
    }

    /// Throws ``PredicatesError/wrongContext(_:)`` once the `perform` has ended.
    @inlinable
    func checkActive(_ entity: String? = nil) throws {
        guard isActive else { throw PredicatesError.endedContext(entity) }
    }

    /// Throws ``PredicatesError/wrongContext(_:)`` unless `object` belongs to this context
    /// and the context's `perform` is still running.
    func checkOwns<T>(_ object: ManagedObject<T>) throws {
        try checkActive()
        guard object.context === self else {
            throw PredicatesError.wrongContext(
                "this \(T.entityName) object belongs to another perform's context: fetch it again in this perform")
        }
        try object.context.checkActive(T.entityName)
    }

    /// Keeps a weak reference to `set` (see ``handedOutSets``).
    func track(_ set: any RelationSnapshot) {
        if handedOutSets.count >= 64 && handedOutSets.count.isMultiple(of: 64) {
            handedOutSets.removeAll { $0.set == nil }
        }
        handedOutSets.append(WeakSet(set))
    }

    /// Reads the members of every relation set still held by the caller (the `perform` is
    /// about to commit).
    func snapshotHandedOutSets() throws {
        let sets = handedOutSets
        handedOutSets = []
        for weak in sets { try weak.set?.takeSnapshot() }
    }

    /// Writes every pending change (called before each statement and when `perform` ends).
    @usableFromInline
    func flush() throws {
        try checkActive()
        if let error = pendingError {
            pendingError = nil
            throw error
        }
        if !pendingInserts.isEmpty {
            let inserts = pendingInserts
            pendingInserts = []
            // Runs of one model's inserts are one batch: one prepared statement on SQLite,
            // one pipeline on PostgreSQL, or one COPY there when the run is long enough.
            var start = inserts.startIndex
            while start < inserts.endIndex {
                let sql = inserts[start].sql
                var end = start + 1
                while end < inserts.endIndex, inserts[end].sql == sql { end += 1 }
                let copied = try connection.insertByCopyIfWorthwhile(
                    into: inserts[start].table, columns: inserts[start].columns, count: end - start
                ) { index, values in
                    values = inserts[start + index].values
                }
                if copied == nil {
                    try connection.executeBatch(sql, bindingSets: inserts[start..<end].map(\.values))
                }
                start = end
            }
        }
        if !changeOrder.isEmpty {
            let order = changeOrder
            let updates = changedObjects
            changeOrder = []
            changedObjects = [:]
            var statements: [SQLStatement] = []
            statements.reserveCapacity(order.count)
            for id in order { if let statement = updates[id]?() { statements.append(statement) } }
            // Consecutive updates of the same columns run as one batch (one prepared
            // statement on SQLite, one pipeline on PostgreSQL).
            if !statements.isEmpty { try connection.executeBatch(statements) }
        }
    }

    /// Drops pending work (the transaction is over).
    func end() {
        isActive = false
        handedOutSets = []
        changeOrder = []
        changedObjects = [:]
        pendingInserts = []
    }

    /// The connection's dialect, kept: reading it through the connection copied the whole
    /// dialect (and retained its parts) for every request.
    @usableFromInline let dialect: SQLDialect

    /// The object for one fetched row: the attributes' values, then the key unless it is one
    /// of them (``EntityDescription/selectColumns``); `keyIndex` is the key's index in the row.
    /// `attributes` is the description's, borrowed for the whole fetch (no retain of it, nor of
    /// the row's values, per row).
    @inlinable
    static func object<T>(_ type: T.Type, _ row: Row, _ context: ManagedObjectContext,
                          _ attributes: UnsafeBufferPointer<Attribute<T>>, keyIndex: Int) throws -> ManagedObject<T> {
        try row.values.withUnsafeBufferPointer { values in
            let stored = keyIndex < values.count ? values[keyIndex] : .null
            let key: Int64
            if case .integer(let k) = stored {
                key = k
            } else if let k = Int64.fromDatabaseValue(stored) {
                key = k
            } else {
                throw PredicatesError.conversion(column: T.keyColumn, type: "Int64", value: stored)
            }
            // Decoded now, so the row's values are not kept (keeping them made the driver copy
            // its row buffer for every row).
            return ManagedObject(context: context, primaryKey: key, values: values, attributes: attributes)
        }
    }

    /// Calls `body` with every row of `request` as an object (the select list is the
    /// description's).
    @inlinable
    func forEachObject<T>(_ select: SQLSelect, _ description: EntityDescription<T>, _ body: (ManagedObject<T>) throws -> Void) throws {
        let keyIndex = description.keyIndex
        try description.attributes.withUnsafeBufferPointer { attributes in
            try connection.forEachRow(.select(select)) { row in
                try body(try Self.object(T.self, row, self, attributes, keyIndex: keyIndex))
            }
        }
    }

    // MARK: Writing

    /// Inserts `value` as a new object and returns it.
    ///
    /// A model keyed by the hidden `Z_PK` is inserted at once; a model keyed by one of its own
    /// attributes (``ManagedObjectConvertible/keyColumn``) waits and goes to the database in a
    /// batch before the context's next statement, which then throws its errors.
    /// - Throws: ``PredicatesError/wrongContext(_:)`` after the `perform` ended; the core's
    ///   `DatabaseError` for what the database refuses (`.constraintViolation(.unique, …)` for a
    ///   unique attribute's value stored already).
    @discardableResult
    public func insert<PlainObject: ManagedObjectConvertible>(_ value: PlainObject) throws -> ManagedObject<PlainObject> {
        let description = EntityDescription<PlainObject>.shared
        let attributes = description.attributes
        let values = attributes.map { $0.encode(value) }
        if let keyIndex = description.keyAttributeIndex {
            try checkActive()
            if let error = pendingError {
                pendingError = nil
                throw error
            }
            // The key is the model's own: the insert waits for the next statement, in a batch.
            guard let key = Int64.fromDatabaseValue(values[keyIndex]) else {
                throw PredicatesError.conversion(column: PlainObject.keyColumn, type: "Int64", value: values[keyIndex])
            }
            let model = ObjectIdentifier(PlainObject.self)
            let insert: (sql: String, columns: [String])
            if let known = insertTexts[model] {
                insert = known
            } else {
                let columns = attributes.map(\.name)
                insert = (try connection.render(.insert(SQLInsert(
                    into: PlainObject.entityName, columns: columns, placeholderRows: 1))).sql, columns)
                insertTexts[model] = insert
            }
            pendingInserts.append((insert.sql, PlainObject.entityName, insert.columns, values))
            return ManagedObject(context: self, primaryKey: key, values: values)
        }
        try flush()
        let insert = SQLInsert(into: PlainObject.entityName, columns: attributes.map(\.name),
                               source: attributes.isEmpty ? .defaultValues : .values([values.map { .bind($0) }]),
                               returning: [.expression(.column(PlainObject.keyColumn), alias: nil)])
        guard let row = try connection.fetchOne(.insert(insert)), let key = Int64.fromDatabaseValue(row[0]) else {
            throw DatabaseError.misuse("INSERT INTO \(PlainObject.entityName) returned no key")
        }
        return ManagedObject(context: self, primaryKey: key, values: values)
    }

    /// Deletes `object`, applying its relations' delete rules (cascade, deny; nullify drops
    /// the links).
    /// - Throws: ``PredicatesError/wrongContext(_:)`` for an object of another `perform`;
    ///   ``PredicatesError/deleteDenied(entity:relation:)`` when a `.deny` relation holds an
    ///   object (nothing is deleted).
    public func delete<PlainObject: ManagedObjectConvertible>(_ object: ManagedObject<PlainObject>) throws {
        try checkOwns(object)
        try flush()
        try connection.transaction { _ in
            var visited: Set<String> = []
            try deleteRow(entity: PlainObject.entityName, key: object.primaryKey, visited: &visited)
        }
    }

    /// Deletes every object the request matches, one by one with their delete rules.
    ///
    /// - Throws: what ``delete(_:)-(ManagedObject<PlainObject>)`` throws, and
    ///   ``PredicatesError/unknownAttribute(entity:keyPath:)`` for a key path no attribute
    ///   stores, `PredicateTranslationError` for a `#Predicate` or `SortDescriptor` that SQL
    ///   cannot express (nothing is written then).
    public func delete<PlainObject: ManagedObjectConvertible>(_ request: Request<PlainObject>) throws {
        // The request is compiled before anything is written: one that cannot be (a key path
        // without a column, a predicate SQL cannot express) throws with the database untouched.
        if registry.entities[PlainObject.entityName]?.relations.isEmpty ?? true,
           registry.incomingForeignKeys(PlainObject.entityName).isEmpty {
            // No delete rules to apply: one statement.
            let condition = try deleteCondition(request)
            try flush()
            _ = try connection.execute(.delete(SQLDelete(from: PlainObject.entityName, where: condition)))
            return
        }
        let select = try request.select([.expression(.column(PlainObject.entityName, PlainObject.keyColumn), alias: nil)], dialect: dialect)
        try flush()
        let keys = try connection.fetchAll(.select(select)).compactMap { Int64.fromDatabaseValue($0[0]) }
        try connection.transaction { _ in
            var visited: Set<String> = []
            for key in keys { try deleteRow(entity: PlainObject.entityName, key: key, visited: &visited) }
        }
    }

    /// Deletes every object the request matches in one statement and returns how many; as
    /// in Sworm, only for entities without relations (no delete rules to apply). Sort,
    /// limit and offset are honoured through a subquery. Foreign-key columns of other models'
    /// relations that point at the deleted rows are cleared first, one UPDATE each.
    ///
    /// - Throws: ``PredicatesError/unknownAttribute(entity:keyPath:)`` for a key path no
    ///   attribute stores, `PredicateTranslationError` for a `#Predicate` or `SortDescriptor`
    ///   that SQL cannot express (nothing is written then); the core's `DatabaseError` for what
    ///   the database refuses.
    @discardableResult
    public func batchDelete<PlainObject: ManagedObjectConvertible>(_ request: Request<PlainObject>) throws -> Int
    where PlainObject.Relations == Void {
        let table = PlainObject.entityName
        // Compiled before anything is written (see delete(_:)).
        let condition = try deleteCondition(request)
        let incoming = registry.incomingForeignKeys(table)
        if incoming.isEmpty {
            try flush()
            return try connection.execute(.delete(SQLDelete(from: table, where: condition)))
        }
        let keys = try request.select([.expression(.column(table, PlainObject.keyColumn), alias: nil)], dialect: dialect)
        try flush()
        return try connection.transaction { conn in
            for fk in incoming {
                _ = try conn.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .literal(.null))],
                                                       where: SQLExpression.column(fk.column).isIn(keys))))
            }
            return try conn.execute(.delete(SQLDelete(from: table, where: condition)))
        }
    }

    /// The request's condition for a DELETE: limit and offset through a subquery of keys.
    private func deleteCondition<PlainObject: ManagedObjectConvertible>(_ request: Request<PlainObject>) throws -> SQLExpression? {
        let table = PlainObject.entityName
        if request.fetchLimit != nil || request.fetchOffset != nil {
            let keys = try request.select([.expression(.column(table, PlainObject.keyColumn), alias: nil)], dialect: dialect)
            return SQLExpression.column(table, PlainObject.keyColumn).isIn(keys)
        }
        return try request.condition(dialect)
    }

    private func deleteRow(entity: String, key: Int64, visited: inout Set<String>) throws {
        guard visited.insert("\(entity)#\(key)").inserted else { return }
        for r in registry.entities[entity]?.relations ?? [] {
            let storage = registry.storage(source: entity, r)
            switch r.deleteRule {
            case .nullify:
                continue // a link table's ON DELETE CASCADE drops the links; columns below
            case .deny:
                if try relatedCount(storage, owner: key) > 0 {
                    throw PredicatesError.deleteDenied(entity: entity, relation: r.name)
                }
            case .cascade:
                for target in try relatedKeys(storage, owner: key, ordered: false) {
                    try deleteRow(entity: r.destinationEntity, key: target, visited: &visited)
                }
            }
        }
        // Foreign-key columns that point at the row are cleared (the nullify rule), whatever
        // the column's own ON DELETE says (a schema the flavor did not create may say nothing).
        for fk in registry.incomingForeignKeys(entity) {
            _ = try connection.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .literal(.null))],
                                                         where: .column(fk.column).equals(.bind(.integer(key))))))
        }
        let keyColumn = registry.entities[entity]?.keyColumn ?? hiddenKeyColumn
        _ = try connection.execute(.delete(SQLDelete(from: entity, where: .column(keyColumn).equals(.bind(.integer(key))))))
    }

    // MARK: Reading

    /// The objects the request matches, in its order.
    ///
    /// - Throws: ``PredicatesError/unknownAttribute(entity:keyPath:)`` for a key path in the
    ///   request that no attribute stores; `PredicateTranslationError` for a `#Predicate` or
    ///   `SortDescriptor` that SQL cannot express (before any SQL runs); the core's
    ///   `DatabaseError` when the database refuses the query.
    // This, forEach(_:_:) and what they call are inlinable so that a client's fetch is
    // specialized for its model: as generic code, allocating each object looked up its type's
    // metadata.
    @inlinable
    public func fetch<PlainObject: ManagedObjectConvertible>(_ request: Request<PlainObject>) throws -> [ManagedObject<PlainObject>] {
        let description = EntityDescription<PlainObject>.shared
        let select = try request.select(description.selectColumns, dialect: dialect)
        try flush()
        var result: [ManagedObject<PlainObject>] = []
        if let limit = request.fetchLimit { result.reserveCapacity(min(limit, 1024)) }
        try forEachObject(select, description) { result.append($0) }
        return result
    }

    /// One attribute of the objects the request matches (only that column is read).
    public func fetch<PlainObject: ManagedObjectConvertible, A: SupportedAttributeType>(_ request: Request<PlainObject>, _ keyPath: KeyPath<PlainObject, A>) throws -> [A] {
        try flush()
        let attribute = try PlainObject.attribute(keyPath)
        let select = try request.select([.expression(.column(PlainObject.entityName, attribute.name), alias: nil)], dialect: dialect)
        var result: [A] = []
        try connection.forEachRow(.select(select)) { row in
            result.append(try A.decode(databaseValue: row[0], column: attribute.name))
        }
        return result
    }

    /// Calls `body` with each object the request matches, in its order, as the rows arrive
    /// (nothing is kept: for large results). At most 1,000 rows are held at a time, through
    /// a server-side cursor on PostgreSQL; `body` may use the context (fetch, insert, encode)
    /// between objects.
    ///
    /// - Throws: the errors of ``fetch(_:)``, and what `body` throws (which ends the stream).
    @inlinable
    public func forEach<PlainObject: ManagedObjectConvertible>(_ request: Request<PlainObject>, _ body: (ManagedObject<PlainObject>) throws -> Void) throws {
        let description = EntityDescription<PlainObject>.shared
        let select = try request.select(description.selectColumns, dialect: dialect)
        try flush()
        let keyIndex = description.keyIndex
        try description.attributes.withUnsafeBufferPointer { attributes in
            try connection.forEachRowInBatches(select) { row in
                try body(try Self.object(PlainObject.self, row, self, attributes, keyIndex: keyIndex))
            }
        }
    }

    /// The first object the request matches, or nil.
    public func fetchOne<PlainObject: ManagedObjectConvertible>(_ request: Request<PlainObject>) throws -> ManagedObject<PlainObject>? {
        try fetch(request.limit(1)).first
    }

    /// One attribute of the first object the request matches, or nil.
    public func fetchOne<PlainObject: ManagedObjectConvertible, A: SupportedAttributeType>(_ request: Request<PlainObject>, _ keyPath: KeyPath<PlainObject, A>) throws -> A? {
        try fetch(request.limit(1), keyPath).first
    }

    /// How many objects the request matches (limit and offset included).
    ///
    /// - Throws: the errors of ``fetch(_:)``.
    public func count<PlainObject: ManagedObjectConvertible>(of request: Request<PlainObject>) throws -> Int {
        var select: SQLSelect
        if request.fetchLimit != nil || request.fetchOffset != nil {
            let inner = try request.select([.expression(.column(PlainObject.entityName, PlainObject.keyColumn), alias: nil)],
                                           dialect: dialect, ordered: false)
            select = SQLSelect(from: .subquery(inner, alias: "counted")).columns(.expression(.countAll))
        } else {
            select = SQLSelect(from: PlainObject.entityName).columns(.expression(.countAll))
            if let c = try request.condition(dialect) { select = select.where(c) }
        }
        try flush()
        guard let row = try connection.fetchOne(.select(select)), let n = Int64.fromDatabaseValue(row[0]) else { return 0 }
        return Int(n)
    }

    // MARK: Relations

    /// The keys of the objects `owner` is related to through `storage`.
    func relatedKeys(_ storage: RelationStorage, owner: Int64, ordered: Bool) throws -> [Int64] {
        let select: SQLSelect
        switch storage {
        case .link(let link):
            var s = SQLSelect(from: link.table).columns(.column(link.targetColumn))
                .where(.column(link.ownerColumn).equals(.bind(.integer(owner))))
            if ordered { s = s.orderBy(SQLOrdering(.column(link.positionColumn)), SQLOrdering(.column(link.targetColumn))) }
            select = s
        case .foreignKey(let fk) where fk.ownerHoldsColumn:
            select = SQLSelect(from: fk.table).columns(.column(fk.column))
                .where(SQLExpression.column(fk.tableKey).equals(.bind(.integer(owner))) && .isNull(.column(fk.column), negated: true))
        case .foreignKey(let fk):
            select = SQLSelect(from: fk.table).columns(.column(fk.tableKey))
                .where(.column(fk.column).equals(.bind(.integer(owner))))
                .orderBy(SQLOrdering(.column(fk.tableKey)))
        }
        return try connection.fetchAll(.select(select)).compactMap { Int64.fromDatabaseValue($0[0]) }
    }

    /// How many objects `owner` is related to through `storage`.
    func relatedCount(_ storage: RelationStorage, owner: Int64) throws -> Int {
        let select: SQLSelect
        switch storage {
        case .link(let link):
            select = SQLSelect(from: link.table).columns(.expression(.countAll))
                .where(.column(link.ownerColumn).equals(.bind(.integer(owner))))
        case .foreignKey(let fk) where fk.ownerHoldsColumn:
            select = SQLSelect(from: fk.table).columns(.expression(.countAll))
                .where(SQLExpression.column(fk.tableKey).equals(.bind(.integer(owner))) && .isNull(.column(fk.column), negated: true))
        case .foreignKey(let fk):
            select = SQLSelect(from: fk.table).columns(.expression(.countAll))
                .where(.column(fk.column).equals(.bind(.integer(owner))))
        }
        guard let row = try connection.fetchOne(.select(select)), let n = Int64.fromDatabaseValue(row[0]) else { return 0 }
        return Int(n)
    }

    /// The objects `owner` is related to through `storage`: in list order for an ordered
    /// relation, else by key.
    func related<D: ManagedObjectConvertible>(_ type: D.Type, _ storage: RelationStorage, owner: Int64, ordered: Bool) throws -> [ManagedObject<D>] {
        try flush()
        var select = SQLSelect(from: D.entityName).columns(EntityDescription<D>.shared.selectColumns)
        let key = SQLExpression.column(D.entityName, D.keyColumn)
        switch storage {
        case .link(let link):
            select = select
                .join(.inner, link.table, on: SQLExpression.column(link.table, link.targetColumn).equals(key))
                .where(SQLExpression.column(link.table, link.ownerColumn).equals(.bind(.integer(owner))))
            select = select.orderBy(
                ordered ? SQLOrdering(.column(link.table, link.positionColumn)) : SQLOrdering(key), SQLOrdering(key))
        case .foreignKey(let fk) where fk.ownerHoldsColumn:
            let target = SQLSelect(from: fk.table).columns(.column(fk.column))
                .where(.column(fk.tableKey).equals(.bind(.integer(owner))))
            select = select.where(key.isIn(target)).orderBy(SQLOrdering(key))
        case .foreignKey(let fk):
            select = select.where(SQLExpression.column(D.entityName, fk.column).equals(.bind(.integer(owner))))
                .orderBy(SQLOrdering(key))
        }
        var result: [ManagedObject<D>] = []
        try forEachObject(select, EntityDescription<D>.shared) { result.append($0) }
        return result
    }

    /// Links `owner` to `target` through relation `r` of `source`. `replacing` (a to-one
    /// set) first drops the owner's current link; a to-one inverse first drops the target's.
    func link(source: String, _ r: RelationDeclaration, _ storage: RelationStorage, owner: Int64, target: Int64?, replacing: Bool) throws {
        try flush()
        let inverseKind = registry.inverseKind(source: source, r)
        switch storage {
        case .link(let link):
            try connection.transaction { conn in
                let ownerIs = SQLExpression.column(link.ownerColumn).equals(.bind(.integer(owner)))
                if replacing {
                    _ = try conn.execute(.delete(SQLDelete(from: link.table, where: ownerIs)))
                }
                guard let target else { return }
                let targetIs = SQLExpression.column(link.targetColumn).equals(.bind(.integer(target)))
                let existing = SQLSelect(from: link.table).columns(.expression(.countAll)).where(ownerIs && targetIs)
                if let row = try conn.fetchOne(.select(existing)), let n = Int64.fromDatabaseValue(row[0]), n > 0 { return }
                if inverseKind == .toOne {
                    _ = try conn.execute(.delete(SQLDelete(from: link.table, where: targetIs)))
                }
                let position = try nextPosition(conn, link.table, link.positionColumn, where: ownerIs)
                let targetPosition = try nextPosition(conn, link.table, link.targetPositionColumn, where: targetIs)
                _ = try conn.execute(.insert(SQLInsert(into: link.table, values: [
                    link.ownerColumn: .integer(owner), link.targetColumn: .integer(target),
                    link.positionColumn: .integer(position), link.targetPositionColumn: .integer(targetPosition),
                ])))
            }
        case .foreignKey(let fk) where fk.ownerHoldsColumn:
            // The owner's own column holds the link: one UPDATE replaces it.
            try connection.transaction { conn in
                if let target, inverseKind == .toOne {
                    // A one-to-one: the target leaves its previous owner.
                    _ = try conn.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .literal(.null))], where:
                        SQLExpression.column(fk.column).equals(.bind(.integer(target)))
                            && SQLExpression.column(fk.tableKey).notEquals(.bind(.integer(owner))))))
                }
                _ = try conn.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .bind(target.map { .integer($0) } ?? .null))],
                                                       where: .column(fk.tableKey).equals(.bind(.integer(owner))))))
            }
        case .foreignKey(let fk):
            // The target's column holds the link: setting it moves the target from its
            // previous owner.
            try connection.transaction { conn in
                if replacing {
                    _ = try conn.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .literal(.null))],
                                                           where: .column(fk.column).equals(.bind(.integer(owner))))))
                }
                guard let target else { return }
                _ = try conn.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .bind(.integer(owner)))],
                                                       where: .column(fk.tableKey).equals(.bind(.integer(target))))))
            }
        }
    }

    private func nextPosition(_ conn: Connection, _ table: String, _ column: String, where condition: SQLExpression) throws -> Int64 {
        let select = SQLSelect(from: table).columns(.expression(.max(.column(column)))).where(condition)
        let current = try conn.fetchOne(.select(select)).flatMap { Int64.fromDatabaseValue($0[0]) } ?? 0
        return current + 1
    }

    /// Drops the link between `owner` and `target` (nothing when they are not linked).
    func unlink(_ storage: RelationStorage, owner: Int64, target: Int64) throws {
        try flush()
        switch storage {
        case .link(let link):
            _ = try connection.execute(.delete(SQLDelete(from: link.table, where:
                SQLExpression.column(link.ownerColumn).equals(.bind(.integer(owner)))
                    && SQLExpression.column(link.targetColumn).equals(.bind(.integer(target))))))
        case .foreignKey(let fk):
            let (row, pointee) = fk.ownerHoldsColumn ? (owner, target) : (target, owner)
            _ = try connection.execute(.update(SQLUpdate(fk.table, set: [SQLAssignment(fk.column, .literal(.null))], where:
                SQLExpression.column(fk.tableKey).equals(.bind(.integer(row)))
                    && SQLExpression.column(fk.column).equals(.bind(.integer(pointee))))))
        }
    }
}
