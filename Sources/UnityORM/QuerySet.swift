import Foundation

/// A query of one model (Amigo's `session.query(Dog.self)`): built up by chained calls,
/// run by ``all()``, ``count()`` or ``get(_:)``. Every filter and order is checked against the
/// mapping when the query runs; a bad one throws an ``ORMError`` and never reaches the database.
public struct QuerySet<T: AmigoModel> {
    let amigo: Amigo
    let executor: ORMExecutor
    var filters: [(text: String, arguments: [DatabaseValue])] = []
    /// `#Predicate` filters, each compiled against the model's schema and the query's alias.
    var predicates: [PredicateCondition] = []
    /// Conditions built by the core's expressions (JSON paths, full-text search).
    var expressionFilters: [ExpressionCondition] = []
    var orderings: [OrderTerm] = []
    var limitCount: Int?
    var offsetCount: Int?
    var related: [String] = []
    var following: (object: AmigoModel, relationship: String)?

    init(amigo: Amigo, executor: ORMExecutor) {
        self.amigo = amigo
        self.executor = executor
    }

    /// Keeps the objects the filter string selects (`"label = 'Foo'"`, `"dog.label != ?"` with
    /// arguments). Chained filters combine with AND.
    public func filter(_ predicate: String, _ arguments: any DatabaseValueConvertible...) -> QuerySet {
        var q = self
        q.filters.append((predicate, arguments.map(\.databaseValue)))
        return q
    }

    /// Orders by a column, or by a column across a foreign key (`"dog.label"`).
    public func orderBy(_ key: String, ascending: Bool = true) -> QuerySet {
        var q = self
        q.orderings.append(.path(key, ascending: ascending))
        return q
    }

    /// Keeps the objects for which `predicate` holds, compiled to SQL with Swift's meaning (nil
    /// is Swift's nil, so `$0.age != 3` keeps objects whose age is nil; strings compare by code
    /// point). Combines with AND with the other filters, string filters included.
    ///
    /// A key path the mapping gives no column (nor relationship) makes the query throw
    /// `PredicateTranslationError` naming it when it runs, before any SQL is sent; so does an
    /// expression SQL cannot mean (an arbitrary function, a regex, a type cast).
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func filter(_ predicate: Predicate<T>) -> QuerySet {
        var q = self
        q.predicates.append(PredicateCondition { schema, alias in try PredicateSQL.condition(predicate, schema: schema, alias: alias) })
        return q
    }

    /// Orders by Foundation's `SortDescriptor`s on mapped key paths, after the orders given
    /// before: nil sorts first in forward order and last in reverse, as Swift sorts it; strings
    /// by code point (the `.lexical` comparator; a localized one throws
    /// `PredicateTranslationError` when the query runs, as does a key path without a column).
    /// Across a foreign key, write the key path with a force unwrap,
    /// `SortDescriptor(\Person.dog!.label)`: an object without the related one sorts as nil
    /// (where Swift's own `sorted(using:)` would trap).
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func orderBy(_ descriptors: SortDescriptor<T>...) -> QuerySet {
        orderBy(descriptors)
    }

    /// Orders by an array of `SortDescriptor`s (see ``orderBy(_:)-(SortDescriptor<T>...)``).
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func orderBy(_ descriptors: [SortDescriptor<T>]) -> QuerySet {
        var q = self
        q.orderings.append(.descriptors(PredicateOrdering { schema, alias in try PredicateSQL.ordering(descriptors, schema: schema, alias: alias) }))
        return q
    }

    /// Returns at most `count` objects.
    public func limit(_ count: Int) -> QuerySet {
        var q = self
        q.limitCount = count
        return q
    }

    /// Skips the first `count` objects.
    public func offset(_ count: Int) -> QuerySet {
        var q = self
        q.offsetCount = count
        return q
    }

    /// Loads the objects the named foreign keys (or dotted paths of them) point to in the same
    /// query, by a join: no query per object.
    public func selectRelated(_ names: String...) -> QuerySet {
        var q = self
        q.related += names
        return q
    }

    /// Follows a relationship of `object`: `.using(d1).relationship("people")`.
    public func using(_ object: AmigoModel) -> QuerySetUsing<T> {
        QuerySetUsing(query: self, object: object)
    }

    // MARK: Running

    /// The objects, in the order asked for.
    ///
    /// - Throws: ``ORMError/filterSyntax(filter:position:message:)``,
    ///   ``ORMError/filterValue(filter:column:message:)`` or
    ///   ``ORMError/unknownColumn(model:name:)`` for a bad filter or order (before any SQL is
    ///   sent), ``ORMError/unknownRelationship(model:name:)`` for a relationship the model does
    ///   not declare, ``ORMError/conversion(model:column:message:)`` for a stored value the
    ///   property cannot hold, and the core's `DatabaseError` for what the database refuses.
    @inlinable
    public func all() throws -> [T] {
        // Typed here, in code specialized for the caller's T: every object was made by `T()`.
        try allObjects().map { unsafeDowncast($0, to: T.self) }
    }

    /// The objects of ``all()``, typed as the base class.
    @usableFromInline
    func allObjects() throws -> [AmigoModel] {
        let plan = try Plan(query: self)
        let select = plan.select(limit: limitCount, offset: offsetCount)
        // Objects are built as rows arrive (no array of rows in between); in a session the
        // caller waits while its connection's thread builds them.
        let materializer = plan.materializer
        let objects = try executor.run { conn in
            // Collected as the base class: appending to an array of the generic T would look up
            // `Array<T>`'s metadata for every row (this code is not specialized for T).
            var objects: [AmigoModel] = []
            try conn.forEachRow(.select(select)) { row in objects.append(try materializer.object(row)) }
            return objects
        }
        return objects
    }

    /// Streams the objects, in the order asked for: each row is decoded into an object and handed
    /// to `body` as it arrives, with no array of all the objects and at most one batch of rows
    /// (1,000) in memory: a server-side cursor on PostgreSQL (in the session's transaction, or
    /// in one of its own outside a session), the statement stepped on SQLite. `body` may run
    /// other queries meanwhile. An error `body` throws stops the stream and is rethrown; the
    /// session stays usable.
    public func forEach(_ body: (T) throws -> Void) throws {
        try stream { try body($0); return true }
    }

    /// Streams the objects like ``forEach(_:)`` while `body` returns true; returning false ends
    /// the stream early (the rest of the result set is discarded).
    public func stream(_ body: (T) throws -> Bool) throws {
        let plan = try Plan(query: self)
        let select = plan.select(limit: limitCount, offset: offsetCount)
        let materializer = plan.materializer
        do {
            try executor.run { conn in
                // In batches, not `forEachRow`: libpq would otherwise receive the whole result
                // before the first object reached `body` (a 1,000,000-row stream held 254 MB).
                // Not a row cursor either: between batches the connection is free, so `body`
                // may query (on PostgreSQL a row cursor holds the connection until its end).
                try conn.forEachRowInBatches(select) { row in
                    // Made by `T()`.
                    if try !body(unsafeDowncast(materializer.object(row), to: T.self)) { throw ORMStreamStop() }
                }
            }
        } catch is ORMStreamStop {
            return
        }
    }

    /// The number of objects the query selects, counted by the database.
    ///
    /// - Throws: the errors of ``all()`` for a bad filter, and the core's `DatabaseError`.
    public func count() throws -> Int {
        let plan = try Plan(query: self)
        var select: SQLSelect
        if limitCount != nil || offsetCount != nil {
            select = SQLSelect(from: nil).columns(.expression(.countAll))
            select.from = .subquery(plan.select(limit: limitCount, offset: offsetCount, keysOnly: true), alias: "counted")
        } else {
            select = plan.select(limit: nil, offset: nil).columns(.expression(.countAll))
            select.orderBy = []
        }
        let value = try executor.run { try $0.fetchValue(Int64.self, .select(select)) }
        return Int(value ?? 0)
    }

    /// The object whose primary key is `key`, or nil.
    ///
    /// - Throws: the errors of ``all()``.
    public func get(_ key: any DatabaseValueConvertible) throws -> T? {
        let model = try amigo.model(for: T.self)
        guard let pk = model.primaryKey else { throw ORMError.misuse("\(model.typeName) has no primary key") }
        return try filter("\(pk.label) = ?", key).limit(1).all().first
    }

    /// The first object in the order asked for, or nil.
    ///
    /// - Throws: the errors of ``all()``.
    public func first() throws -> T? { try limit(1).all().first }
}

/// `query.using(object)`: choose the relationship of `object` to follow.
public struct QuerySetUsing<T: AmigoModel> {
    let query: QuerySet<T>
    let object: AmigoModel

    /// The query restricted to the objects related to `object` through its relationship
    /// `name` (one-to-many, many-to-many, or a through model's rows).
    public func relationship(_ name: String) -> QuerySet<T> {
        var q = query
        q.following = (object, name)
        return q
    }

    /// ``QuerySet/selectRelated(_:)`` before the relationship is named, in Amigo's order
    /// (`.using(w).selectRelated("exercise").relationship("exercises")`).
    public func selectRelated(_ names: String...) -> QuerySetUsing<T> {
        var q = query
        q.related += names
        return QuerySetUsing(query: q, object: object)
    }

    /// ``QuerySet/filter(_:_:)`` before the relationship is named.
    public func filter(_ predicate: String, _ arguments: any DatabaseValueConvertible...) -> QuerySetUsing<T> {
        var q = query
        q.filters.append((predicate, arguments.map(\.databaseValue)))
        return QuerySetUsing(query: q, object: object)
    }

    /// ``QuerySet/filter(_:)-(Predicate<T>)`` before the relationship is named.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func filter(_ predicate: Predicate<T>) -> QuerySetUsing<T> {
        QuerySetUsing(query: query.filter(predicate), object: object)
    }

    /// ``QuerySet/orderBy(_:)-(SortDescriptor<T>...)`` before the relationship is named.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func orderBy(_ descriptors: SortDescriptor<T>...) -> QuerySetUsing<T> {
        QuerySetUsing(query: query.orderBy(descriptors), object: object)
    }

    /// ``QuerySet/orderBy(_:ascending:)`` before the relationship is named.
    public func orderBy(_ key: String, ascending: Bool = true) -> QuerySetUsing<T> {
        QuerySetUsing(query: query.orderBy(key, ascending: ascending), object: object)
    }

    /// ``QuerySet/limit(_:)`` before the relationship is named.
    public func limit(_ count: Int) -> QuerySetUsing<T> {
        QuerySetUsing(query: query.limit(count), object: object)
    }

    /// ``QuerySet/offset(_:)`` before the relationship is named.
    public func offset(_ count: Int) -> QuerySetUsing<T> {
        QuerySetUsing(query: query.offset(count), object: object)
    }
}

/// A query resolved against the mapping: joins, columns, conditions.
struct Plan<T: AmigoModel> {
    let model: ORMModel
    /// The alias of the queried table: `t0`, or the table's own name where the condition is
    /// used outside a SELECT (an upsert's condition on the existing row).
    let root: String
    var joins: [SQLJoin] = []
    var joinAliases: [String: (alias: String, model: ORMModel)] = [:]
    var conditions: [SQLExpression] = []
    var orderings: [SQLOrdering] = []
    var columns: [SQLSelectColumn] = []
    /// For each selected related path: the foreign key column on the parent, the parent's
    /// position among the loaded objects, the model and the first column index.
    var relatedLoads: [(column: MappedColumn, parent: Int, model: ORMModel, start: Int)] = []

    init(query: QuerySet<T>, root: String = "t0") throws {
        let amigo = query.amigo
        model = try amigo.model(for: T.self)
        self.root = root
        for c in model.columns { columns.append(.expression(.column(root, c.name), alias: nil)) }
        if let (object, name) = query.following {
            let source = try amigo.model(for: type(of: object))
            guard let key = try source.savedKey(of: object) else {
                throw ORMError.misuse("the \(source.typeName) passed to using(...) is unsaved: add it to the session first")
            }
            switch try amigo.relationship(name, of: source) {
            case .oneToMany(_, let target, let fk):
                guard target === model else {
                    throw ORMError.misuse("\(source.typeName).\(name) leads to \(target.typeName): query(\(target.typeName).self)")
                }
                conditions.append(SQLExpression.column(root, fk.name).equals(.bind(key)))
            case .manyToMany(_, let target, let link, let through):
                if target === model, let pk = model.primaryKey {
                    // Each related object once, however many link rows (through rows) lead to it.
                    let linked = SQLSelect(from: link.name).columns(.expression(.column(link.targetColumn)))
                        .where(SQLExpression.column(link.sourceColumn).equals(.bind(key)))
                    conditions.append(.inSubquery(.column(root, pk.name), linked, negated: false))
                } else if let through, through.model === model {
                    conditions.append(SQLExpression.column(root, through.sourceKey.name).equals(.bind(key)))
                } else {
                    throw ORMError.misuse("\(source.typeName).\(name) leads to \(target.typeName)"
                        + (through.map { " (through \($0.model.typeName))" } ?? "") + ", not to \(model.typeName)")
                }
            }
        }
        for path in query.related {
            var parentIndex = 0
            var current = model
            var alias = root
            var walked: [String] = []
            for part in path.split(separator: ".").map(String.init) {
                guard let c = current.column(named: part), let ref = c.reference else {
                    throw ORMError.unknownRelationship(model: current.typeName, name: part)
                }
                walked.append(c.label.lowercased())
                let (nextAlias, isNew) = join(walked.joined(separator: "."), from: alias, column: c, to: ref)
                if isNew || !relatedLoads.contains(where: { $0.column === c && $0.parent == parentIndex }) {
                    let start = columns.count
                    for rc in ref.model.columns { columns.append(.expression(.column(nextAlias, rc.name), alias: nil)) }
                    relatedLoads.append((c, parentIndex, ref.model, start))
                }
                parentIndex = relatedLoads.firstIndex(where: { $0.column === c && $0.parent == parentIndex }).map { $0 + 1 } ?? 0
                current = ref.model
                alias = nextAlias
            }
        }
        for f in query.filters {
            let (node, count) = try amigo.parsedFilters.parse(f.text)
            guard count == f.arguments.count else {
                throw ORMError.filterSyntax(filter: f.text, position: 0,
                                            message: "it has \(count) \"?\" placeholder(s) but \(f.arguments.count) argument(s) were given")
            }
            conditions.append(try expression(node, filter: f.text, arguments: f.arguments))
        }
        let schema = amigo.predicateSchemas.schema(of: model)
        for p in query.predicates { conditions.append(try p.compile(schema, root)) }
        for e in query.expressionFilters { conditions.append(try e.compile(model, root)) }
        for o in query.orderings {
            switch o {
            case .path(let path, let ascending):
                let (expr, _) = try resolve(path)
                orderings.append(SQLOrdering(expr, ascending ? .ascending : .descending))
            case .descriptors(let descriptors):
                orderings += try descriptors.compile(schema, root)
            case .expression(let make):
                orderings.append(make(root))
            }
        }
    }

    /// Joins the table a foreign key points to (once per path); returns its alias.
    private mutating func join(_ path: String, from alias: String, column: MappedColumn,
                               to ref: (model: ORMModel, column: MappedColumn)) -> (String, Bool) {
        if let existing = joinAliases[path] { return (existing.alias, false) }
        let next = "t\(joinAliases.count + 1)"
        joins.append(SQLJoin(.left, .table(ref.model.tableName, alias: next),
                             on: SQLExpression.column(next, ref.column.name).equals(.column(alias, column.name))))
        joinAliases[path] = (next, ref.model)
        return (next, true)
    }

    /// The column a name or dotted path stands for, joining across foreign keys. A `Decimal`
    /// column is marked as one, so that it compares and orders as a number on SQLite whatever
    /// its declared type (a TEXT money column of a schema the ORM did not create).
    private mutating func resolve(_ path: String) throws -> (SQLExpression, MappedColumn) {
        let parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var current = model
        var alias = root
        var walked: [String] = []
        for (i, part) in parts.enumerated() {
            guard let c = current.column(named: part) else { throw ORMError.unknownColumn(model: model.typeName, name: path) }
            if i == parts.count - 1 {
                let column = SQLExpression.column(alias, c.name)
                return (c.columnType == .decimal ? .decimal(column) : column, c)
            }
            guard let ref = c.reference else { throw ORMError.unknownColumn(model: model.typeName, name: path) }
            walked.append(c.label.lowercased())
            alias = join(walked.joined(separator: "."), from: alias, column: c, to: ref).0
            current = ref.model
        }
        throw ORMError.unknownColumn(model: model.typeName, name: path)
    }

    private mutating func expression(_ node: FilterNode, filter: String, arguments: [DatabaseValue]) throws -> SQLExpression {
        switch node {
        case .and(let l, let r):
            return .all([try expression(l, filter: filter, arguments: arguments), try expression(r, filter: filter, arguments: arguments)])
        case .or(let l, let r):
            return .any([try expression(l, filter: filter, arguments: arguments), try expression(r, filter: filter, arguments: arguments)])
        case .not(let inner):
            return .unary(.not, try expression(inner, filter: filter, arguments: arguments))
        case .compare(let left, let op, let right):
            var lc: MappedColumn?
            var rc: MappedColumn?
            var le: SQLExpression?
            var re: SQLExpression?
            if case .path(let p, _) = left { let (e, c) = try resolve(p); le = e; lc = c }
            if case .path(let p, _) = right { let (e, c) = try resolve(p); re = e; rc = c }
            func value(_ operand: FilterOperand, against column: MappedColumn?) throws -> SQLExpression? {
                let raw: DatabaseValue
                switch operand {
                case .path: return nil
                case .null: return .literal(.null)
                case .literal(let v, _): raw = v
                case .placeholder(let i, _): raw = arguments[i]
                }
                guard let column else { return .bind(raw) }
                guard let converted = convertLiteral(raw, to: column) else {
                    throw ORMError.filterValue(filter: filter, column: column.label,
                                               message: "is \(raw), which is not a value of its type \(column.columnType)")
                }
                return .bind(converted)
            }
            let l = try le ?? value(left, against: rc)
            let r = try re ?? value(right, against: lc)
            guard let l, let r else { throw ORMError.filterSyntax(filter: filter, position: 0, message: "a comparison lacks a side") }
            if case .literal(.null) = r { return op == .notEqual ? .isNull(l, negated: true) : .isNull(l, negated: false) }
            if case .literal(.null) = l { return op == .notEqual ? .isNull(r, negated: true) : .isNull(r, negated: false) }
            return .binary(l, op, r)
        }
    }

    func select(limit: Int?, offset: Int?, keysOnly: Bool = false) -> SQLSelect {
        var s = SQLSelect(from: model.tableName, as: root)
        s.columns = keysOnly ? [.expression(.literal(.integer(1)), alias: "one")] : columns
        s.joins = joins
        if !conditions.isEmpty { s.whereCondition = .all(conditions) }
        s.orderBy = orderings
        s.limit = limit
        s.offset = offset
        return s
    }

    /// Builds the objects of this plan's rows.
    var materializer: RowMaterializer {
        RowMaterializer(model: model, relatedLoads: relatedLoads, make: { T() })
    }
}

/// Builds objects from a plan's rows. Not generic: the code that runs for every row looks up no
/// generic metadata and copies no generic value (the ORM's generic code is not specialized for
/// the caller's model types).
///
/// `@unchecked Sendable`: immutable after init; `make` only creates a new object, and an
/// observation (``ORMObservation``) builds its objects on the consuming task.
final class RowMaterializer: @unchecked Sendable {
    let model: ORMModel
    let relatedLoads: [(column: MappedColumn, parent: Int, model: ORMModel, start: Int)]
    /// Makes an empty object of the queried type.
    let make: () -> AmigoModel

    init(model: ORMModel, relatedLoads: [(column: MappedColumn, parent: Int, model: ORMModel, start: Int)],
         make: @escaping () -> AmigoModel) {
        self.model = model
        self.relatedLoads = relatedLoads
        self.make = make
    }

    /// The object of one row, with the related objects `selectRelated` loaded.
    func object(_ row: Row) throws -> AmigoModel {
        let object = make()
        var index = 0
        for c in model.columns {
            try c.fill(row[index], into: object)
            index += 1
        }
        guard !relatedLoads.isEmpty else { return object }
        var loaded: [AmigoModel] = [object]
        for load in relatedLoads {
            let parent = loaded[load.parent]
            guard let pk = load.model.primaryKey, let pkIndex = load.model.columns.firstIndex(where: { $0 === pk }),
                  !row[load.start + pkIndex].isNull else {
                loaded.append(parent)
                continue
            }
            let related = load.model.type.init()
            for (i, c) in load.model.columns.enumerated() { try c.fill(row[load.start + i], into: related) }
            if case .toOne(_, let set, _)? = load.column.accessor {
                _ = set(parent, related)
                parent.keptForeignKeys[load.column.keptKey] = nil
            }
            loaded.append(related)
        }
        return object
    }
}

/// A `#Predicate` of a query, compiled when the query runs (the closure keeps the predicate's
/// type out of the query's stored properties, which every platform has).
struct PredicateCondition {
    let compile: (PredicateSchema, String) throws -> SQLExpression
}

/// `SortDescriptor`s of a query, compiled when the query runs.
struct PredicateOrdering {
    let compile: (PredicateSchema, String) throws -> [SQLOrdering]
}

/// One `orderBy` of a query: a column path, or `SortDescriptor`s.
enum OrderTerm {
    case path(String, ascending: Bool)
    case descriptors(PredicateOrdering)
    /// An ordering built by the core's expressions for the query's alias.
    case expression((String) -> SQLOrdering)
}

/// Thrown inside a stream to end it early; never leaves ``QuerySet/stream(_:)``.
private struct ORMStreamStop: Error {}
