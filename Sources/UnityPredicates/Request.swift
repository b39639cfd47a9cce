import Foundation

/// A fetch request as an immutable value:
/// `T.all.where(...).sort(\.name, ascending: true).limit(5).offset(10)`.
///
/// A later `where` replaces the earlier one (combine conditions with `&&`), as in Sworm;
/// `sort` appends. Strings sort in binary code-point order on every backend ("10" before
/// "2", "Z" before "a"); nil comes first in an ascending sort and last in a descending one.
public struct Request<PlainObject: ManagedObjectConvertible>: Sendable {
    @usableFromInline
    struct SortTerm: @unchecked Sendable {
        // @unchecked: the key path is immutable.
        let column: String?
        /// Described only for an error message: describing a key path is slow.
        let keyPath: AnyKeyPath
        let ascending: Bool
        /// The attribute is optional: where its NULLs go must be said.
        let nullable: Bool
        /// The attribute is stored as a Decimal: it sorts as a number whatever the column.
        let decimal: Bool
        /// A Foundation `SortDescriptor<PlainObject>`, compiled by the core for the request's table.
        let descriptor: (any Sendable)?

        @usableFromInline
        init(column: String?, keyPath: AnyKeyPath, ascending: Bool, nullable: Bool, decimal: Bool) {
            self.column = column
            self.keyPath = keyPath
            self.ascending = ascending
            self.nullable = nullable
            self.decimal = decimal
            self.descriptor = nil
        }

        /// An ordering built by the core's expressions (a search's relevance).
        init(ordering: QualifiedOrdering) {
            column = nil
            keyPath = \PlainObject.self
            ascending = false
            nullable = false
            decimal = false
            self.descriptor = ordering
        }

        @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
        init(descriptor: SortDescriptor<PlainObject>) {
            column = nil
            keyPath = \PlainObject.self
            ascending = descriptor.order == .forward
            nullable = false
            decimal = false
            self.descriptor = descriptor
        }
    }

    var predicate: QueryPredicate?
    @usableFromInline var sortTerms: [SortTerm] = []
    @usableFromInline var fetchLimit: Int?
    var fetchOffset: Int?

    /// Every object of the entity.
    public init() {}

    /// The request with `predicate` as its whole condition (replacing any earlier one).
    public func `where`(_ predicate: QueryPredicate) -> Request {
        var r = self
        r.predicate = predicate
        return r
    }

    /// The request with a raw SQL condition as its whole condition (replacing any earlier
    /// one): `where(raw: "price > ? AND name <> ?", 10, "x")`.
    public func `where`(raw sql: String, _ arguments: any SupportedAttributeType...) -> Request {
        var r = self
        r.predicate = QueryPredicate(.raw(sql, arguments.map { $0.encodeDatabaseValue() }))
        return r
    }

    /// The request sorted by `keyPath` after its earlier sorts.
    @inlinable
    public func sort<A: SupportedAttributeType>(_ keyPath: KeyPath<PlainObject, A>, ascending: Bool = true) -> Request
    where A.PrimitiveAttributeType: Comparable {
        var r = self
        r.sortTerms.append(SortTerm(column: PlainObject.columnName(keyPath), keyPath: keyPath, ascending: ascending,
                                     nullable: A.isOptionalAttribute,
                                     decimal: A.PrimitiveAttributeType.self == Decimal.self || A.PrimitiveAttributeType.self == Decimal?.self))
        return r
    }

    /// The request sorted by the optional attribute `keyPath` after its earlier sorts (nil
    /// first when ascending, last when descending).
    @inlinable
    public func sort<A: SupportedAttributeType>(_ keyPath: KeyPath<PlainObject, A?>, ascending: Bool = true) -> Request
    where A.PrimitiveAttributeType: Comparable {
        var r = self
        r.sortTerms.append(SortTerm(column: PlainObject.columnName(keyPath), keyPath: keyPath, ascending: ascending,
                                     nullable: true, decimal: A.PrimitiveAttributeType.self == Decimal.self))
        return r
    }

    /// At most `limit` objects.
    public func limit(_ limit: Int) -> Request {
        var r = self
        r.fetchLimit = limit
        return r
    }

    /// Skips the first `offset` objects.
    public func offset(_ offset: Int) -> Request {
        var r = self
        r.fetchOffset = offset
        return r
    }

    /// The WHERE condition for `dialect`, or nil.
    func condition(_ dialect: SQLDialect) throws -> SQLExpression? {
        try predicate?.expression(qualifier: PlainObject.entityName, dialect: dialect)
    }

    /// The SELECT of `columns` this request describes.
    @usableFromInline
    func select(_ columns: [SQLSelectColumn], dialect: SQLDialect, ordered: Bool = true) throws -> SQLSelect {
        let table = PlainObject.entityName
        var s = SQLSelect(from: table).columns(columns)
        if let c = try condition(dialect) { s = s.where(c) }
        if ordered {
            for term in sortTerms {
                if let ordering = term.descriptor as? QualifiedOrdering {
                    s.orderBy.append(ordering.make(table))
                    continue
                }
                if let descriptor = term.descriptor {
                    if #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) {
                        s.orderBy.append(try Self.ordering(descriptor))
                    }
                    continue
                }
                guard let column = term.column else {
                    throw PredicatesError.unknownAttribute(entity: table, keyPath: "\(term.keyPath)")
                }
                // Nil first when ascending, as Sworm (Core Data) and SQLite do; PostgreSQL
                // needs it said. Only for an optional attribute: on PostgreSQL an ascending
                // NULLS FIRST cannot walk a plain index, so a sorted, limited query over a
                // non-optional indexed column would sort every matching row instead.
                // A Decimal sorts as a number whatever its column's declared type.
                let sorted: SQLExpression = term.decimal ? .decimal(.column(table, column)) : .column(table, column)
                if term.nullable {
                    s.orderBy.append(term.ascending
                        ? SQLOrdering(sorted, .ascending, nulls: .first)
                        : SQLOrdering(sorted, .descending, nulls: .last))
                } else {
                    s.orderBy.append(SQLOrdering(sorted, term.ascending ? .ascending : .descending))
                }
            }
        }
        s.limit = fetchLimit
        s.offset = fetchOffset
        return s
    }
}

extension Request {
    /// The ORDER BY term of a stored `SortDescriptor`.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    static func ordering(_ stored: any Sendable) throws -> SQLOrdering {
        guard let descriptor = stored as? SortDescriptor<PlainObject>,
              let ordering = try PredicateSQL.ordering([descriptor], schema: PlainObject.predicateSchema).first else {
            throw PredicateTranslationError(expression: String(describing: stored), reason: "it is no SortDescriptor of \(PlainObject.self)")
        }
        return ordering
    }
}

extension ManagedObjectConvertible {
    /// A request for every object of the entity.
    public static var all: Request<Self> { Request() }
}
