import Foundation

/// The query calls with their `?` arguments in an array built at run time, as sModel's
/// `params:` took one: `Thing.instancesWhere("tid IN (?, ?, ?)", params: ids)`. Each element is
/// a bind parameter, one per `?`; a count that differs from the placeholders' is a
/// `DatabaseError.misuse` before anything runs. (The variadic forms take the arguments one
/// by one: an array passed there is one value, so `[String]` does not compile.)
extension ModelDef {
    /// ``instancesWhere(_:_:orderedBy:in:)`` with its arguments in an array.
    public static func instancesWhere(_ clause: String, params: [any DatabaseValueConvertible],
                                      orderedBy ordering: [ModelOrdering] = [], in db: Database? = nil) throws -> [Self] {
        try fetchAll(select(where: fragment(clause, params), ordering), in: db)
    }

    /// ``firstInstanceWhere(_:_:orderedBy:in:)`` with its arguments in an array.
    public static func firstInstanceWhere(_ clause: String, params: [any DatabaseValueConvertible],
                                          orderedBy ordering: [ModelOrdering] = [], in db: Database? = nil) throws -> Self? {
        try fetchFirst(select(where: fragment(clause, params), ordering), in: db)
    }

    /// ``instances(_:_:in:)`` (a full SELECT of your own) with its arguments in an array.
    public static func instances(_ query: String, params: [any DatabaseValueConvertible],
                                 in db: Database? = nil) throws -> [Self] {
        try fetchAll(statement: .raw(SQLFragment(query, params.map(\.databaseValue))), in: db)
    }

    /// ``countWhere(_:_:in:)`` with its arguments in an array.
    public static func countWhere(_ clause: String, params: [any DatabaseValueConvertible],
                                  in db: Database? = nil) throws -> Int {
        try countRows(where: fragment(clause, params), in: db)
    }

    /// ``numberOfInstancesWhere(_:_:in:)`` with its arguments in an array (nil: every row).
    public static func numberOfInstancesWhere(_ whereClause: String?, params: [any DatabaseValueConvertible],
                                              in db: Database? = nil) throws -> Int {
        try countRows(where: whereClause.map { fragment($0, params) }, in: db)
    }

    /// ``deleteWhere(_:_:in:)`` with its arguments in an array; returns how many rows went.
    @discardableResult
    public static func deleteWhere(_ whereClause: String, params: [any DatabaseValueConvertible],
                                   in db: Database? = nil) throws -> Int {
        try deleteRows(where: fragment(whereClause, params), in: db)
    }

    /// The model a row holds: the row of a query of your own (``DBManager/executeStatement(_:in:resultHandler:)``,
    /// a `Connection`'s `fetchAll`, a join whose columns are this model's) decoded as the
    /// flavor's own queries decode theirs (sModel's `init(fromSQL:)`). Columns the model does
    /// not have are ignored; `existsInDatabase` is true.
    ///
    /// - Throws: a `DatabaseError` naming the column when a column the model needs is missing,
    ///   NULL for a non-optional property, or of the wrong type.
    public static func model(from row: Row) throws -> Self {
        try decodeRow(row)
    }

    /// The model a dictionary from column name to value holds, as
    /// ``DBManager/resultDictionariesFromQuery(_:_:in:)`` returns them; see ``model(from:)-(Row)``.
    public static func model(from dictionary: [String: DatabaseValue]) throws -> Self {
        let names = dictionary.keys.sorted()
        return try decodeRow(Row(layout: RowLayout(columnNames: names), values: names.map { dictionary[$0] ?? .null }))
    }
}

extension DBManager {
    /// ``executeUpdateQuery(_:_:in:)`` with its arguments in an array built at run time.
    @discardableResult
    public static func executeUpdateQuery(_ query: String, params: [any DatabaseValueConvertible],
                                          in db: Database? = nil) throws -> Int {
        let statement = SQLStatement.raw(SQLFragment(query, params.map(\.databaseValue)))
        return try resolve(db).write { try $0.execute(statement) }
    }

    /// ``resultDictionariesFromQuery(_:_:in:)`` with its arguments in an array built at run time.
    public static func resultDictionariesFromQuery(_ query: String, params: [any DatabaseValueConvertible],
                                                   in db: Database? = nil) throws -> [[String: DatabaseValue]] {
        let statement = SQLStatement.raw(SQLFragment(query, params.map(\.databaseValue)))
        return try resolve(db).read { conn in
            try conn.fetchAll(statement).map { row in
                var dictionary: [String: DatabaseValue] = [:]
                for (name, value) in row.pairs { dictionary[name] = value }
                return dictionary
            }
        }
    }
}
