import Foundation

// Upserts of the SQL-first flavor: `INSERT … ON CONFLICT … DO NOTHING / DO UPDATE … RETURNING`,
// beside (not instead of) sModel's duplicate rules of `save()`, which stay as they are.

extension ModelDef {
    /// Inserts this model, or leaves the row that already holds its key as it is
    /// (`ON CONFLICT … DO NOTHING`), and returns the row as stored with what was done.
    ///
    /// ```swift
    /// let result = try Thing(tid: "tid1", name: "new").insertOrIgnore()
    /// result.outcome   // .inserted, or .unchanged when "tid1" was taken
    /// result.value     // the row as stored
    /// ```
    ///
    /// Only a conflict on the key is ignored: a NULL in a NOT NULL column, a failed CHECK or a
    /// conflict on another unique key still throws, and nothing is written.
    ///
    /// - Parameters:
    ///   - keys: The columns (coding keys' names) of the unique key that may conflict; the
    ///     primary key when nil.
    ///   - db: The database; the default database when nil.
    /// - Throws: ``DatabaseError`` (nothing written), or a decoding error.
    @discardableResult
    public func insertOrIgnore(onConflict keys: [String]? = nil, in db: Database? = nil) throws -> Upserted<Self> {
        try Self.insertOrIgnore([self], onConflict: keys, in: db)[0]
    }

    /// Inserts this model, or updates the row that already holds its key
    /// (`ON CONFLICT … DO UPDATE`), and returns the row as stored with what was done.
    ///
    /// ```swift
    /// // Update the name only while the stored row is not archived:
    /// let result = try Thing(tid: "tid1", name: "new")
    ///     .insertOrUpdate(updating: ["name"],
    ///                     where: .raw(#""Thing"."archived" = ?"#, [.bool(false)]))
    /// result.outcome   // .inserted, .updated, or .unchanged when the condition declined
    /// ```
    ///
    /// - Parameters:
    ///   - keys: The columns (coding keys' names) of the unique key that may conflict; the
    ///     primary key when nil.
    ///   - columns: The columns (coding keys' names) to update; nil for every column except the
    ///     conflict key's and the primary key's.
    ///   - condition: A condition on the existing row (a fragment such as
    ///     `.raw(#""Thing"."version" < ?"#, [.integer(3)])`, or an expression); the row is left
    ///     unchanged when it does not hold. Name the existing row's columns with the table name,
    ///     as above: PostgreSQL refuses an unqualified column there as ambiguous.
    ///   - db: The database; the default database when nil.
    /// - Throws: ``DatabaseError`` (nothing written), or a decoding error.
    @discardableResult
    public func insertOrUpdate(onConflict keys: [String]? = nil, updating columns: [String]? = nil,
                               where condition: SQLExpression? = nil, in db: Database? = nil) throws -> Upserted<Self> {
        try Self.insertOrUpdate([self], onConflict: keys, updating: columns, where: condition, in: db)[0]
    }

    /// Inserts each model or leaves the row holding its key as it is, in one transaction, and
    /// returns the rows as stored, in the order of `models` (see ``insertOrIgnore(onConflict:in:)``).
    ///
    /// One statement per chunk of rows that fits the bind-parameter limit; a model whose key
    /// came earlier in the batch starts a new statement, so the batch means what upserting the
    /// models one by one would. A failure writes nothing.
    @discardableResult
    public static func insertOrIgnore(_ models: [Self], onConflict keys: [String]? = nil,
                                      in db: Database? = nil) throws -> [Upserted<Self>] {
        try upsert(models, onConflict: keys, updating: nil, where: nil, ignoring: true, in: db)
    }

    /// Inserts each model or updates the row holding its key, in one transaction, and returns
    /// the rows as stored, in the order of `models` (see
    /// ``insertOrUpdate(onConflict:updating:where:in:)``).
    ///
    /// One statement per chunk of rows that fits the bind-parameter limit; a model whose key
    /// came earlier in the batch starts a new statement, so the batch means what upserting the
    /// models one by one would. A failure writes nothing.
    @discardableResult
    public static func insertOrUpdate(_ models: [Self], onConflict keys: [String]? = nil,
                                      updating columns: [String]? = nil, where condition: SQLExpression? = nil,
                                      in db: Database? = nil) throws -> [Upserted<Self>] {
        try upsert(models, onConflict: keys, updating: columns, where: condition, ignoring: false, in: db)
    }

    private static func upsert(_ models: [Self], onConflict keys: [String]?, updating updated: [String]?,
                               where condition: SQLExpression?, ignoring: Bool, in db: Database?) throws -> [Upserted<Self>] {
        guard let first = models.first else { return [] }
        let database = try DBManager.resolve(db)
        let firstColumns = try first.encodedColumns()
        if firstColumns.isEmpty {
            throw DatabaseError.misuse("\(Self.self) encodes no columns, so there is nothing to insert")
        }
        let primary = first.primaryKeys.map(\.stringValue)
        let target = keys ?? primary
        if target.isEmpty {
            throw DatabaseError.misuse("\(Self.self) declares no primaryKeys: name the unique key's columns with onConflict:")
        }
        try first.checkKeysAreColumns(target, firstColumns)
        var rows: [[DatabaseValue]] = [firstColumns.values]
        rows.reserveCapacity(models.count)
        for model in models.dropFirst() {
            let columns = try model.encodedColumns()
            guard columns.names == firstColumns.names else {
                throw DatabaseError.misuse("\(Self.self): a batch upsert needs every model to encode the same columns; \(columns.names) differs from \(firstColumns.names)")
            }
            rows.append(columns.values)
        }
        let action: UpsertAction
        if ignoring {
            action = .ignore
        } else {
            let named = updated
            if let named {
                try first.checkKeysAreColumns(named, firstColumns)
            }
            let set = named ?? firstColumns.names.filter { !target.contains($0) && !primary.contains($0) }
            action = .update(columns: set, where: condition)
        }
        return try database.write { conn in
            try conn.upsert(into: tableName, columns: firstColumns.names, rows: rows, onConflict: target, action: action)
                .map { Upserted(try decodeRow($0.row), outcome: $0.outcome) }
        }
    }
}
