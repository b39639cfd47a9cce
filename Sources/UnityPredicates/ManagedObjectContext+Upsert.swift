import Foundation
import Unity

/// Inserting values that may already be stored: insert-or-ignore and insert-or-update
/// (`INSERT … ON CONFLICT … DO NOTHING / DO UPDATE … RETURNING`).
extension ManagedObjectContext {
    /// Inserts each value, or leaves the row that already holds its key as it is; returns the
    /// objects as stored, with what was done, in the order given.
    ///
    /// ```swift
    /// let results = try context.insertOrIgnore([author], onConflict: [\PAuthor.email])
    /// results[0].outcome          // .inserted, or .unchanged when the email was taken
    /// try results[0].value.decode() // the row as stored
    /// ```
    ///
    /// Pending changes of the context are written first. The objects returned are read from the
    /// stored rows (RETURNING, or the existing row when it was left unchanged); objects fetched
    /// before the call keep the values they were read with, as after any other write. Only a
    /// conflict on the key is ignored: a NOT NULL or CHECK failure, or a conflict on another
    /// unique key, still throws, and the call writes nothing.
    ///
    /// - Parameters:
    ///   - values: The values to insert.
    ///   - keyPaths: The attributes of the primary key or a unique constraint; the model's key
    ///     attribute (``ManagedObjectConvertible/keyColumn``) when nil, which a model keyed by
    ///     the hidden `Z_PK` must name instead.
    /// - Throws: ``PredicatesError/unknownAttribute(entity:keyPath:)`` for a key path that is no
    ///   attribute, ``PredicatesError/wrongContext(_:)`` after the `perform` ended, and the
    ///   core's `DatabaseError` for what the database refuses.
    @discardableResult
    public func insertOrIgnore<PlainObject: ManagedObjectConvertible>(
        _ values: [PlainObject], onConflict keyPaths: [PartialKeyPath<PlainObject>]? = nil
    ) throws -> [Upserted<ManagedObject<PlainObject>>] {
        try upsert(values, onConflict: keyPaths, updating: nil, where: nil, ignoring: true)
    }

    /// Inserts each value, or updates the row that already holds its key; returns the objects
    /// as stored, with what was done, in the order given (see `insertOrIgnore(_:onConflict:)`).
    ///
    /// ```swift
    /// // Rename only authors whose stored name is still empty:
    /// try context.insertOrUpdate([author], onConflict: [\PAuthor.email], updating: [\PAuthor.name],
    ///                            where: \PAuthor.name == "")
    /// ```
    ///
    /// One statement per chunk that fits the bind-parameter limit; a value whose key came
    /// earlier in the batch starts a new one, so the batch means what upserting the values one
    /// by one would.
    ///
    /// - Parameters:
    ///   - values: The values to insert.
    ///   - keyPaths: The attributes of the primary key or a unique constraint (see
    ///     `insertOrIgnore(_:onConflict:)`).
    ///   - updated: The attributes to update; nil for every attribute but the key's.
    ///   - predicate: A condition on the stored row; the row is left unchanged when it does not
    ///     hold. (In a `.raw` predicate, name the column with the table, `"PAuthor"."name"`:
    ///     PostgreSQL refuses an unqualified column there as ambiguous.)
    /// - Throws: what `insertOrIgnore(_:onConflict:)` throws.
    @discardableResult
    public func insertOrUpdate<PlainObject: ManagedObjectConvertible>(
        _ values: [PlainObject], onConflict keyPaths: [PartialKeyPath<PlainObject>]? = nil,
        updating updated: [PartialKeyPath<PlainObject>]? = nil, where predicate: QueryPredicate? = nil
    ) throws -> [Upserted<ManagedObject<PlainObject>>] {
        try upsert(values, onConflict: keyPaths, updating: updated, where: predicate, ignoring: false)
    }

    /// `insertOrIgnore(_:onConflict:)` of one value.
    @discardableResult
    public func insertOrIgnore<PlainObject: ManagedObjectConvertible>(
        _ value: PlainObject, onConflict keyPaths: [PartialKeyPath<PlainObject>]? = nil
    ) throws -> Upserted<ManagedObject<PlainObject>> {
        try upsert([value], onConflict: keyPaths, updating: nil, where: nil, ignoring: true)[0]
    }

    /// `insertOrUpdate(_:onConflict:updating:where:)` of one value.
    @discardableResult
    public func insertOrUpdate<PlainObject: ManagedObjectConvertible>(
        _ value: PlainObject, onConflict keyPaths: [PartialKeyPath<PlainObject>]? = nil,
        updating updated: [PartialKeyPath<PlainObject>]? = nil, where predicate: QueryPredicate? = nil
    ) throws -> Upserted<ManagedObject<PlainObject>> {
        try upsert([value], onConflict: keyPaths, updating: updated, where: predicate, ignoring: false)[0]
    }

    private func upsert<PlainObject: ManagedObjectConvertible>(
        _ values: [PlainObject], onConflict keyPaths: [PartialKeyPath<PlainObject>]?,
        updating updatedKeyPaths: [PartialKeyPath<PlainObject>]?, where predicate: QueryPredicate?, ignoring: Bool
    ) throws -> [Upserted<ManagedObject<PlainObject>>] {
        try flush()
        if values.isEmpty { return [] }
        let description = EntityDescription<PlainObject>.shared
        let entity = PlainObject.entityName
        func columns(_ keyPaths: [PartialKeyPath<PlainObject>]) throws -> [String] {
            try keyPaths.map { keyPath in
                guard let name = description.columnByKeyPath[keyPath] else {
                    throw PredicatesError.unknownAttribute(entity: entity, keyPath: "\(keyPath)")
                }
                return name
            }
        }
        let target: [String]
        if let keyPaths {
            target = try columns(keyPaths)
        } else if description.keyAttributeIndex != nil {
            target = [PlainObject.keyColumn]
        } else {
            throw DatabaseError.misuse("\(entity) is keyed by the hidden \(PlainObject.keyColumn), which no value carries: name a unique attribute with onConflict:")
        }
        let names = description.attributes.map(\.name)
        let action: UpsertAction
        if ignoring {
            action = .ignore
        } else {
            let set = try updatedKeyPaths.map(columns) ?? names.filter { !target.contains($0) && $0 != PlainObject.keyColumn }
            action = .update(columns: set, where: try predicate?.expression(qualifier: entity, dialect: dialect))
        }
        let rows = values.map { value in description.attributes.map { $0.encode(value) } }
        // The select list of a fetch, so that rows become objects as fetched ones do.
        let returning = (names + (description.keyAttributeIndex == nil ? [PlainObject.keyColumn] : []))
            .map { SQLSelectColumn.expression(.column($0), alias: nil) }
        let stored = try connection.upsert(into: entity, columns: names, rows: rows, onConflict: target,
                                           action: action, returning: returning)
        let keyIndex = description.keyIndex
        return try description.attributes.withUnsafeBufferPointer { attributes in
            try stored.map { result in
                Upserted(try Self.object(PlainObject.self, result.row, self, attributes, keyIndex: keyIndex), outcome: result.outcome)
            }
        }
    }
}
