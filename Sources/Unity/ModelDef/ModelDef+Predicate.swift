import Foundation

/// Foundation's `#Predicate` and `SortDescriptor` on SQL-first records: compiled to SQL (see
/// `PredicateSQL`), so they filter and order rows in the database with Swift's meaning.
///
/// A model maps its key paths to columns through generated row coding (`@RowCoded`) or a
/// hand-written `columnName(for:)`; a key path without a column throws
/// ``PredicateTranslationError`` naming it, before any SQL runs.
/// Each model type's schema, built once.
private let modelDefSchemas = BoundedCache<ObjectIdentifier, PredicateSchema>(capacity: 1_024)

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension ModelDef {
    /// The key path → column mapping that translated predicates use: the table, and the
    /// columns `columnName(for:)` names (a `Decimal` property compares as a number).
    public static var predicateSchema: PredicateSchema {
        modelDefSchemas.value(for: ObjectIdentifier(Self.self)) { makePredicateSchema() }
    }

    private static func makePredicateSchema() -> PredicateSchema {
        var schema = PredicateSchema(table: tableName)
        schema.missingColumnAdvice = "give \(Self.self) @RowCoded, or write columnName(for:)"
        if let coded = Self.self as? any RowEncodable.Type {
            schema.columnResolver = columnResolver(coded)
        }
        return schema
    }

    private static func columnResolver<Model: RowEncodable>(_ model: Model.Type) -> (AnyKeyPath) -> PredicateSchema.Column? {
        { keyPath in
            guard let partial = keyPath as? PartialKeyPath<Model>, let name = Model.columnName(for: partial) else { return nil }
            let valueType = type(of: keyPath).valueType
            return PredicateSchema.Column(name, isDecimal: valueType == Decimal.self || valueType == Decimal?.self)
        }
    }

    /// The models of the rows for which `predicate` holds, ordered by `orderBy`, at most
    /// `limit` of them: `try Thing.instances(matching: #Predicate<Thing> { $0.name != nil }, orderBy: [SortDescriptor(\.tid)])`.
    ///
    /// - Throws: ``PredicateTranslationError`` for what SQL cannot express (nothing runs then),
    ///   or a `DatabaseError`.
    public static func instances(matching predicate: Predicate<Self>, orderBy: [SortDescriptor<Self>] = [],
                                 limit: Int? = nil, in db: Database? = nil) throws -> [Self] {
        let schema = predicateSchema
        var query = select(where: try PredicateSQL.condition(predicate, schema: schema), [])
        query.orderBy = try PredicateSQL.ordering(orderBy, schema: schema)
        query.limit = limit
        return try fetchAll(query, in: db)
    }

    /// The number of rows for which `predicate` holds.
    public static func count(matching predicate: Predicate<Self>, in db: Database? = nil) throws -> Int {
        try countRows(where: try PredicateSQL.condition(predicate, schema: predicateSchema), in: db)
    }

    /// Deletes the rows for which `predicate` holds; returns how many went.
    @discardableResult
    public static func deleteAll(matching predicate: Predicate<Self>, in db: Database? = nil) throws -> Int {
        try deleteRows(where: try PredicateSQL.condition(predicate, schema: predicateSchema), in: db)
    }
}
