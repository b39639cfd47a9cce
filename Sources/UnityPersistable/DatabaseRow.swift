import Foundation
import Unity

/// A point in time, as Tailor's models spell it. Unity stores every `Date` through the core's
/// value mapping (TIMESTAMPTZ on PostgreSQL, UTC text on SQLite), so Tailor's own `Timestamp`
/// type is Foundation's `Date` here.
public typealias Timestamp = Date

/// Tailor's name for a value that can be persisted in a column: the core's
/// `DatabaseValueConvertible`.
public typealias DatabaseValuePersistable = DatabaseValueConvertible

/// The errors of the active-record flavor. Database faults stay the core's `DatabaseError`.
public enum PersistableError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A row read asked for a column the result set does not have.
    case missingField(name: String)
    /// A column's value cannot be read as the Swift type asked for.
    case fieldType(name: String, actualType: String, desiredType: String)
    /// `save()` updated a record whose row is gone (no row has its id any more).
    case recordNotFound(tableName: String, id: Int)
    /// `destroy()` (or another call that needs a saved record) was given a record without an id.
    case notSaved(tableName: String)
    /// The database did not hand back the id of a row just inserted.
    case missingInsertedId(tableName: String)

    /// A sentence that says what went wrong and what to do.
    public var description: String {
        switch self {
        case .missingField(let name):
            return "no column named \(name) in the row: select it, or read it with the optional form of read(_:)"
        case let .fieldType(name, actual, desired):
            return "column \(name) holds \(actual), which cannot be read as \(desired): change the property's type or the column's"
        case let .recordNotFound(table, id):
            return "no row in \(table) has id \(id) any more (was it destroyed?): nothing was saved"
        case .notSaved(let table):
            return "the \(table) record has no id: save it before calling this"
        case .missingInsertedId(let table):
            return "the insert into \(table) did not return an id: the table needs an integer primary key named id"
        }
    }
}

/// One fetched row, handed to `init(databaseRow:)`.
///
/// It wraps the core's `Row` without copying it into a dictionary: `read("color")` finds the
/// column through the result set's shared layout, exactly as `Row.decode(_:column:)` does, so
/// building a record costs what reading the core's rows costs.
///
/// ```swift
/// init(databaseRow: DatabaseRow) throws {
///     self.id = try databaseRow.read("id")              // Int?: nil for NULL or a missing column
///     self.color = try databaseRow.read("color")        // String: throws when missing or NULL
/// }
/// ```
public struct DatabaseRow: Sendable {
    /// The core's row this wraps.
    public let row: Row

    /// Wraps a fetched row.
    @inlinable
    public init(row: Row) { self.row = row }

    /// A row built from column names and values (for tests and hand-made records).
    public init(data: [String: DatabaseValue]) {
        let keys = data.keys.sorted()
        self.row = Row(layout: RowLayout(columnNames: keys), values: keys.map { data[$0] ?? .null })
    }

    /// The value of `column` as `T`, the type inferred from where the result goes.
    ///
    /// Throws ``PersistableError/missingField(name:)`` when the row has no such column and
    /// ``PersistableError/fieldType(name:actualType:desiredType:)`` when the value (NULL
    /// included) is not a `T`.
    ///
    /// A read into an optional property picks the optional form of `read(_:)` instead.
    @inlinable @_disfavoredOverload
    public func read<T: DatabaseValueConvertible>(_ column: String) throws -> T {
        guard let index = row.layout.index(of: column), index < row.values.count else {
            throw PersistableError.missingField(name: column)
        }
        let value = row.values[index]
        if let result = T.fromDatabaseValue(value) { return result }
        throw PersistableError.fieldType(name: column, actualType: value.kindName, desiredType: String(describing: T.self))
    }

    /// The value of `column` as `T`, or nil when the row has no such column, holds NULL or holds
    /// the empty string (as Tailor's optional read). A value that is there but is not a `T` still
    /// throws ``PersistableError/fieldType(name:actualType:desiredType:)``: it is never silently
    /// turned into nil.
    @inlinable
    public func read<T: DatabaseValueConvertible>(_ column: String) throws -> T? {
        guard let index = row.layout.index(of: column), index < row.values.count else { return nil }
        let value = row.values[index]
        switch value {
        case .null: return nil
        case .text(let s) where s.isEmpty: return nil
        default: break
        }
        if let result = T.fromDatabaseValue(value) { return result }
        throw PersistableError.fieldType(name: column, actualType: value.kindName, desiredType: String(describing: T.self))
    }

    /// The raw value of `column`, or nil when the row has no such column.
    public subscript(column: String) -> DatabaseValue? { row[column] }
}
