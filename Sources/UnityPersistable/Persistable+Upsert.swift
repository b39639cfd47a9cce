import Foundation
import Unity

/// Inserting records that may already be stored: insert-or-ignore and insert-or-update
/// (`INSERT … ON CONFLICT … DO NOTHING / DO UPDATE … RETURNING`), single and batch.
extension Persistable {
    /// Inserts the record, or leaves the row that already holds its key as it is, and returns
    /// the row as stored with what was done.
    ///
    /// ```swift
    /// let result = try Hat(id: 7, color: "red").insertOrIgnore()
    /// result.outcome   // .inserted, or .unchanged when id 7 was taken
    /// result.value     // the record as stored
    /// ```
    ///
    /// Every column is written, a nil one as NULL (unlike ``save(_:)``'s insert, which leaves it
    /// to the table's default), so the row inserted and the row updated hold the same values.
    /// Only a conflict on the key is ignored: a NOT NULL or CHECK failure, or a conflict on
    /// another unique key, still throws and writes nothing. Like ``save(_:)``, this runs no
    /// ``Validation``: validate first.
    ///
    /// - Parameters:
    ///   - columns: The columns of the primary key or a unique constraint; `id` by default.
    ///   - database: The database; the default database when nil.
    /// - Throws: the core's `DatabaseError`, or the error of `init(databaseRow:)`.
    @discardableResult
    public func insertOrIgnore(onConflict columns: [String] = ["id"], _ database: Database? = nil) throws -> Upserted<Self> {
        try Self.insertOrIgnoreAll([self], onConflict: columns, database)[0]
    }

    /// Inserts the record, or updates the row that already holds its key, and returns the row as
    /// stored with what was done.
    ///
    /// ```swift
    /// // Repaint hat 7 unless the stored one is gold:
    /// let result = try Hat(id: 7, color: "red")
    ///     .insertOrUpdate(where: Hat.query.filter("\"hats\".\"color\" <> ?", ["gold"]))
    /// result.outcome   // .inserted, .updated, or .unchanged when the condition declined
    /// ```
    ///
    /// - Parameters:
    ///   - columns: The columns of the primary key or a unique constraint; `id` by default.
    ///   - updated: The columns to update; nil for every written column except the key's, `id`
    ///     and `created_at`.
    ///   - existing: A query whose filters the stored row must match for the update to happen
    ///     (dictionary filters name columns with the table already; in a raw filter, write
    ///     `"hats"."color"`: PostgreSQL refuses an unqualified column there as ambiguous).
    ///   - database: The database; the default database when nil.
    /// - Throws: the core's `DatabaseError`, or the error of `init(databaseRow:)`.
    @discardableResult
    public func insertOrUpdate(onConflict columns: [String] = ["id"], updating updated: [String]? = nil,
                               where existing: Query<Self>? = nil, _ database: Database? = nil) throws -> Upserted<Self> {
        try Self.insertOrUpdateAll([self], onConflict: columns, updating: updated, where: existing, database)[0]
    }

    /// ``insertOrIgnore(onConflict:_:)`` for many records, in one transaction: the stored rows,
    /// in the order given. All or nothing.
    @discardableResult
    public static func insertOrIgnoreAll(_ records: [Self], onConflict columns: [String] = ["id"],
                                         _ database: Database? = nil) throws -> [Upserted<Self>] {
        try upsertAll(records, onConflict: columns, action: { _ in .ignore }, database)
    }

    /// ``insertOrUpdate(onConflict:updating:where:_:)`` for many records, in one transaction: the
    /// stored rows, in the order given. One statement per chunk that fits the bind-parameter
    /// limit; a record whose key came earlier in the batch starts a new one, so the batch means
    /// what upserting the records one by one would. All or nothing.
    @discardableResult
    public static func insertOrUpdateAll(_ records: [Self], onConflict columns: [String] = ["id"],
                                         updating updated: [String]? = nil, where existing: Query<Self>? = nil,
                                         _ database: Database? = nil) throws -> [Upserted<Self>] {
        var condition: SQLExpression?
        if let existing {
            guard existing.joins.isEmpty, existing.selectClause == nil else {
                throw DatabaseError.misuse("the condition of an upsert into \(tableName) is a query's filters only: it may not join or select")
            }
            condition = existing.filters.isEmpty ? nil : .all(existing.filters)
        }
        return try upsertAll(records, onConflict: columns, action: { written in
            let set = updated ?? written.filter { !columns.contains($0) && $0 != "id" && $0 != "created_at" }
            return .update(columns: set, where: condition)
        }, database)
    }

    /// Runs of records with the same columns (with or without an id), each one core upsert,
    /// in order, in one transaction.
    private static func upsertAll(_ records: [Self], onConflict target: [String],
                                  action: ([String]) -> UpsertAction, _ database: Database?) throws -> [Upserted<Self>] {
        if records.isEmpty { return [] }
        let db = try DefaultDatabase.resolve(database)
        var runs: [(columns: [String], rows: [[DatabaseValue]])] = []
        var previous: [String]?
        for record in records {
            let (persisted, values) = record.persistedColumns(columnsOfPrevious: previous)
            previous = persisted
            let columns = record.id == nil ? persisted : ["id"] + persisted
            let row = record.id.map { [.integer(Int64($0))] + values } ?? values
            if let last = runs.last, last.columns == columns {
                runs[runs.count - 1].rows.append(row)
            } else {
                runs.append((columns, [row]))
            }
        }
        return try db.write { conn in
            var results: [Upserted<Self>] = []
            results.reserveCapacity(records.count)
            for run in runs {
                // Records without an id cannot conflict on it: the database gives them one.
                let plain = target == ["id"] && !run.columns.contains("id")
                for stored in try conn.upsert(into: tableName, columns: run.columns, rows: run.rows,
                                              onConflict: plain ? [] : target, action: action(run.columns)) {
                    results.append(Upserted(try Self(databaseRow: DatabaseRow(row: stored.row)), outcome: stored.outcome))
                }
            }
            return results
        }
    }
}
