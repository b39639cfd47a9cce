import Foundation
import Unity

extension Query where Record: Sendable {
    /// The query's records now, and again after each committed transaction that changed a
    /// table the query reads (from this process, another process on the same SQLite file, or
    /// any client of the same PostgreSQL database): ``allOrThrow(_:)``, observed.
    ///
    /// ```swift
    /// for try await hats in try Query<Hat>().filter(["color": "red"]).order("id", .orderedAscending).observe() {
    ///     show(hats)
    /// }
    /// ```
    ///
    /// The tables are found in the query: its table and the tables of its typed joins
    /// (`join(_:fromColumn:toColumn:)`) and subqueries. A raw join (`join("LEFT JOIN …")`) or a
    /// raw filter with a subquery of its own must name every table the query reads in
    /// `tables`; without them the first `next()` throws `ObservationError.tablesUnknown`.
    ///
    /// The rows are compared before they become records, so an unchanged result is not
    /// delivered again. A row that `init(databaseRow:)` rejects ends the sequence with its
    /// error (as ``allOrThrow(_:)`` throws it); so does a database error. On PostgreSQL every
    /// table read needs the change trigger of `Migration.observeChanges(of:)`.
    ///
    /// - Parameters:
    ///   - tables: the tables to follow instead of those found in the query.
    ///   - database: the database, or nil for the default one.
    /// - Throws: `DatabaseError.misuse` when no database is given and there is no default one.
    public func observe(tables: Set<String>? = nil, _ database: Database? = nil) throws -> DatabaseObservation<[Record]> {
        let db = try DefaultDatabase.resolve(database)
        return db.observe(.select(statement), tables: tables, removeDuplicates: true) { rows in
            var records: [Record] = []
            records.reserveCapacity(rows.count)
            for row in rows { records.append(try Record(databaseRow: DatabaseRow(row: row))) }
            return records
        }
    }
}
