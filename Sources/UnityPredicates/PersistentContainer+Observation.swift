import Foundation

extension PersistentContainer {
    /// The plain values of the objects `request` matches, in its order, now and again after
    /// each committed transaction that changed a table the request reads (from this process,
    /// another process on the same SQLite file, or any client of the same PostgreSQL database).
    ///
    /// ```swift
    /// for try await authors in try container.observe(Author.all.where(\Author.name != "Anon").sort(\.name)) {
    ///     show(authors)
    /// }
    /// ```
    ///
    /// Key-path conditions, `#Predicate` (`where(#Predicate<Author> { … })`) and
    /// `SortDescriptor` work as in a fetch; the tables are found in the request: the entity's
    /// table and those of the relations a condition follows (their link tables included).
    /// A raw condition (`where(raw:)`) with a subquery of its own must name every table it
    /// reads in `tables`; without them the first `next()` throws `ObservationError.tablesUnknown`.
    /// On PostgreSQL each table needs the change trigger of `Migration.observeChanges(of:)`.
    ///
    /// The rows are compared before they are decoded, so an unchanged result is not delivered
    /// again. A result holds values, not ``ManagedObject``s: an object belongs to one
    /// `perform`, a result outlives them all. A stored value the model cannot hold ends the
    /// sequence with its error.
    ///
    /// - Parameters:
    ///   - request: what to observe.
    ///   - tables: the tables to follow instead of those found in the request.
    /// - Throws: ``PredicatesError/unknownAttribute(entity:keyPath:)`` for a sort key path that
    ///   no attribute stores, `PredicateTranslationError` for a `#Predicate` or `SortDescriptor`
    ///   SQL cannot express, and ``PredicatesError/invalidRelation(_:)``, all at once (nothing is
    ///   observed then); the database factory's error and the migrator's. Each is given to
    ///   `logError` first.
    public func observe<PlainObject: ManagedObjectConvertible & Sendable>(_ request: Request<PlainObject>,
                                                                          tables: Set<String>? = nil) throws
        -> DatabaseObservation<[PlainObject]> {
        try logged {
            let db = try ready()
            let description = EntityDescription<PlainObject>.shared
            let select = try request.select(description.selectColumns, dialect: db.dialect)
            return db.observe(.select(select), tables: tables, removeDuplicates: true) { rows in
                try PlainObject.decodeRows(rows)
            }
        }
    }
}

extension ManagedObjectConvertible {
    /// The plain values of fetched rows (the attributes' columns in the description's order).
    static func decodeRows(_ rows: [Row]) throws -> [Self] {
        let description = EntityDescription<Self>.shared
        var objects: [Self] = []
        objects.reserveCapacity(rows.count)
        try description.attributes.withUnsafeBufferPointer { attributes in
            for row in rows {
                var object = Self()
                try row.values.withUnsafeBufferPointer { values in
                    try ManagedObject<Self>.decode(values, with: attributes, into: &object)
                }
                objects.append(object)
            }
        }
        return objects
    }
}
