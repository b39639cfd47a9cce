import Foundation

/// Typed column access for models whose conformance maps key paths to columns (`@RowCoded`,
/// or a hand-written `columnName(for:)`): the flavor knows each property's type, so a
/// `Decimal` property compares and orders as a number on every backend, whatever type the
/// column was declared with (a money column declared `TEXT` on SQLite included).
extension ModelDef where Self: RowEncodable {
    /// The column of the property at `keyPath`, as an operand for conditions and orderings:
    /// `try Invoice.column(\.total).greaterThanOrEquals(Decimal(10))`. A `Decimal` (or `Decimal?`) property is
    /// wrapped in `SQLExpression.decimal`, so SQLite compares it with the decimal collation;
    /// PostgreSQL's `numeric` compares as a number already.
    ///
    /// - Throws: `DatabaseError.misuse` naming the key path when the model maps no column for
    ///   it (a computed property, or a conformance without `columnName(for:)`).
    public static func column<Value>(_ keyPath: KeyPath<Self, Value>) throws -> SQLExpression {
        guard let name = columnName(for: keyPath) else {
            throw DatabaseError.misuse(
                "\(Self.self) maps no column for the key path \(keyPath): use @RowCoded, or write columnName(for:)")
        }
        let column = SQLExpression.column(name)
        return Value.self == Decimal.self || Value.self == Decimal?.self ? .decimal(column) : column
    }
}

extension ModelOrdering {
    /// Ascending by the column of a property (see ``ModelDef/column(_:)``): a `Decimal`
    /// property orders as a number on every backend.
    public static func ascending<Model: ModelDef & RowEncodable, Value>(_ keyPath: KeyPath<Model, Value>) throws -> ModelOrdering {
        ModelOrdering(SQLOrdering(try Model.column(keyPath), .ascending))
    }

    /// Descending by the column of a property (see ``ModelDef/column(_:)``).
    public static func descending<Model: ModelDef & RowEncodable, Value>(_ keyPath: KeyPath<Model, Value>) throws -> ModelOrdering {
        ModelOrdering(SQLOrdering(try Model.column(keyPath), .descending))
    }
}
