import Foundation

/// Inserting objects that may already be stored: insert-or-ignore and insert-or-update
/// (`INSERT … ON CONFLICT … DO NOTHING / DO UPDATE … RETURNING`).
extension AmigoSession {
    /// Inserts each object, or leaves the row that already holds its key as it is, in one
    /// savepoint of the session's transaction; returns what was done with each, in order.
    ///
    /// ```swift
    /// let outcomes = try session.insertOrIgnore([dog1, dog2], onConflict: ["label"])
    /// // [.inserted, .unchanged]; dog2 now holds the stored row's values
    /// ```
    ///
    /// Each object is written back with the row as stored afterwards: its generated key, and
    /// for a row left unchanged the stored values (the object then mirrors the database, as a
    /// fetch of it would). Only a conflict on the key is ignored: a NOT NULL or CHECK failure,
    /// or a conflict on another unique key, still throws, and the call writes nothing.
    ///
    /// - Parameters:
    ///   - objects: Objects of one mapped model. Unsaved ones with a generated key cannot
    ///     conflict on it: they are inserted (or conflict on the unique key named).
    ///   - columns: The property or column names of the primary key or a unique constraint;
    ///     the primary key when nil.
    /// - Throws: ``ORMError/unknownColumn(model:name:)`` for a name the model does not map,
    ///   ``ORMError/misuse(_:)`` for a model without a primary key and no columns named, and
    ///   the core's `DatabaseError` for what the database refuses.
    @discardableResult
    public func insertOrIgnore<T: AmigoModel>(_ objects: [T], onConflict columns: [String]? = nil) throws -> [UpsertOutcome] {
        try upsert(objects, onConflict: columns, updating: nil, where: nil, ignoring: true)
    }

    /// Inserts each object, or updates the row that already holds its key, in one savepoint of
    /// the session's transaction; returns what was done with each, in order. Each object is
    /// written back with the row as stored afterwards (see `insertOrIgnore(_:onConflict:)`).
    ///
    /// ```swift
    /// // Relabel only dogs that are not retired:
    /// try session.insertOrUpdate([dog], onConflict: ["tag"], updating: ["label"],
    ///                            where: session.query(Dog.self).filter("retired = false"))
    /// ```
    ///
    /// A batch runs one statement per chunk that fits the bind-parameter limit; an object whose
    /// key came earlier in the batch starts a new one, so the batch means what upserting the
    /// objects one by one would.
    ///
    /// - Parameters:
    ///   - objects: Objects of one mapped model.
    ///   - columns: The property or column names of the primary key or a unique constraint;
    ///     the primary key when nil.
    ///   - updated: The properties or columns to update; nil for every column but the key's and
    ///     the primary key.
    ///   - existing: A query of the model whose filters (strings or `#Predicate`) the stored
    ///     row must match for the update to happen; else it is left unchanged. It may not
    ///     follow a foreign key (`dog.label`) or a relationship.
    /// - Throws: what `insertOrIgnore(_:onConflict:)` throws.
    @discardableResult
    public func insertOrUpdate<T: AmigoModel>(_ objects: [T], onConflict columns: [String]? = nil, updating updated: [String]? = nil,
                                              where existing: QuerySet<T>? = nil) throws -> [UpsertOutcome] {
        try upsert(objects, onConflict: columns, updating: updated, where: existing, ignoring: false)
    }

    /// `insertOrIgnore(_:onConflict:)` of one object.
    @discardableResult
    public func insertOrIgnore<T: AmigoModel>(_ object: T, onConflict columns: [String]? = nil) throws -> UpsertOutcome {
        try upsert([object], onConflict: columns, updating: nil, where: nil, ignoring: true)[0]
    }

    /// `insertOrUpdate(_:onConflict:updating:where:)` of one object.
    @discardableResult
    public func insertOrUpdate<T: AmigoModel>(_ object: T, onConflict columns: [String]? = nil, updating updated: [String]? = nil,
                                              where existing: QuerySet<T>? = nil) throws -> UpsertOutcome {
        try upsert([object], onConflict: columns, updating: updated, where: existing, ignoring: false)[0]
    }

    private func upsert<T: AmigoModel>(_ objects: [T], onConflict names: [String]?, updating updatedNames: [String]?,
                                       where existing: QuerySet<T>?, ignoring: Bool) throws -> [UpsertOutcome] {
        if objects.isEmpty { return [] }
        let model = try amigo.model(for: T.self)
        func columnNames(_ names: [String]) throws -> [String] {
            try names.map { name in
                guard let c = model.column(named: name) else { throw ORMError.unknownColumn(model: model.typeName, name: name) }
                return c.name
            }
        }
        let target: [String]
        if let names {
            target = try columnNames(names)
        } else if let pk = model.primaryKey {
            target = [pk.name]
        } else {
            throw ORMError.misuse("\(model.typeName) has no primary key: name the unique key's columns with onConflict:")
        }
        let updated = try updatedNames.map(columnNames)
        var condition: SQLExpression?
        if let existing {
            guard existing.related.isEmpty, existing.following == nil else {
                throw ORMError.misuse("the condition of an upsert into \(model.tableName) is a filter of its own columns: it may not select related objects or follow a relationship")
            }
            let plan = try Plan(query: existing, root: model.tableName)
            guard plan.joins.isEmpty else {
                throw ORMError.misuse("the condition of an upsert into \(model.tableName) may not follow a foreign key (a dotted path)")
            }
            condition = plan.conditions.isEmpty ? nil : .all(plan.conditions)
        }
        return try write { conn in
            let writer = ORMWriter(amigo: amigo, conn: conn)
            var visiting = Set<ObjectIdentifier>()
            for o in objects { try writer.saveRelated(of: o, model: model, visiting: &visiting) }
            // Runs of objects that write the same columns (with or without a generated key).
            var runs: [(columns: [String], objects: [AmigoModel], rows: [[DatabaseValue]])] = []
            for o in objects {
                let key = try model.savedKey(of: o)
                let generated = key == nil && model.primaryKey.map { $0.reference == nil && [.int64, .int32, .int16].contains($0.columnType) } == true
                let (columns, values) = try writer.values(of: o, model: model, includeKey: !generated)
                if let last = runs.last, last.columns == columns {
                    runs[runs.count - 1].objects.append(o)
                    runs[runs.count - 1].rows.append(values)
                } else {
                    runs.append((columns, [o], [values]))
                }
            }
            var outcomes: [UpsertOutcome] = []
            outcomes.reserveCapacity(objects.count)
            let primary = model.primaryKey?.name
            for run in runs {
                let stored: [UpsertedRow]
                if target.contains(where: { !run.columns.contains($0) }) {
                    // Objects whose generated key is the target cannot conflict on it.
                    guard let primary, target == [primary] else {
                        throw ORMError.misuse("an upsert into \(model.tableName) names conflict columns \(target) that the objects do not write")
                    }
                    stored = try conn.upsert(into: model.tableName, columns: run.columns, rows: run.rows,
                                             onConflict: [], action: .ignore)
                } else {
                    let action: UpsertAction = ignoring ? .ignore
                        : .update(columns: updated ?? run.columns.filter { !target.contains($0) && $0 != primary }, where: condition)
                    stored = try conn.upsert(into: model.tableName, columns: run.columns, rows: run.rows,
                                             onConflict: target, action: action)
                }
                for (o, result) in zip(run.objects, stored) {
                    try refresh(o, model: model, from: result.row)
                    try writer.maintainLinks(of: o, model: model)
                    outcomes.append(result.outcome)
                }
            }
            return outcomes
        }
    }

    /// Writes a stored row back into `object`: value properties take the stored values; a
    /// to-one property keeps its related object when that object's key is the stored one, and
    /// otherwise lets it go and keeps the stored id (as a fetch does).
    private func refresh(_ object: AmigoModel, model: ORMModel, from row: Row) throws {
        for c in model.columns {
            let stored = row[c.name] ?? .null
            if case .toOne(let get, let set, _)? = c.accessor {
                if let related = get(object), let ref = c.reference, try ref.column.storedValue(of: related) == stored {
                    continue
                }
                if get(object) != nil { _ = set(object, nil) }
                object.keptForeignKeys[c.keptKey] = stored.isNull ? nil : stored
                continue
            }
            try c.assign(stored, to: object)
        }
    }
}
