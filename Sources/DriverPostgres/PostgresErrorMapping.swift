import CLibPQ
import Unity

/// The one place where PostgreSQL failures become `DatabaseError` cases.
enum PGErrorMapping {
    // libpq's PG_DIAG_* field codes are character macros; spelled out here.
    static let fieldSQLState = Int32(UInt8(ascii: "C"))
    static let fieldMessagePrimary = Int32(UInt8(ascii: "M"))
    static let fieldDetail = Int32(UInt8(ascii: "D"))
    static let fieldConstraint = Int32(UInt8(ascii: "n"))

    /// Maps a failed result (or, when `result` is nil, the connection's last error) to a
    /// `DatabaseError`, attaching `sql`.
    ///
    /// With `statementPrefix` (the prefix of the statement names a connection prepares), a
    /// 26000 (no such prepared statement), 42P05 (it exists already) or 08P01 (a Bind that
    /// does not fit it) about one of those names becomes `DatabaseError.misuse(_:)` naming
    /// the pooler setting: the server connection that answered is not the one the statement
    /// was prepared on, which is what a transaction-mode pooler does.
    static func error(result: OpaquePointer?, connection: OpaquePointer?, sql: String?, statementPrefix: String? = nil) -> DatabaseError {
        func field(_ code: Int32) -> String? {
            guard let result, let p = PQresultErrorField(result, code) else { return nil }
            return String(cString: p)
        }
        let state = field(fieldSQLState)
        var message = field(fieldMessagePrimary)
        if message == nil, let result, let p = PQresultErrorMessage(result) {
            message = String(cString: p)
        }
        if message?.isEmpty ?? true, let connection, let p = PQerrorMessage(connection) {
            message = String(cString: p)
        }
        let trimmed = (message ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let context = DatabaseErrorContext(
            message: trimmed.isEmpty ? "unknown PostgreSQL error" : trimmed,
            sql: sql,
            code: state,
            detail: field(fieldDetail),
            constraint: field(fieldConstraint)
        )
        let connectionBad = connection.map { PQstatus($0) == CONNECTION_BAD } ?? true
        if !connectionBad, let statementPrefix, let state, let misplaced = poolerMismatch(
            sqlState: state, message: trimmed, statementPrefix: statementPrefix, sql: sql) {
            return misplaced
        }
        return error(sqlState: state, context: context, connectionBad: connectionBad)
    }

    /// The typed error for a server that does not know (or knows otherwise) a statement this
    /// connection prepared, or nil when the failure is not about one of its names.
    static func poolerMismatch(sqlState: String, message: String, statementPrefix: String, sql: String?) -> DatabaseError? {
        guard sqlState == "26000" || sqlState == "42P05" || sqlState == "08P01",
              message.contains("prepared statement \"" + statementPrefix) else { return nil }
        return .misuse(
            "a statement this connection prepared is not on the server connection that answered (\(sqlState): \(message)): "
                + "the connection goes through a transaction-mode pooler (PgBouncer with pool_mode = transaction, or a "
                + "managed pooler like it), which moves it to another server connection between transactions, or "
                + "something ran DEALLOCATE or DISCARD ALL. Set DatabaseConfiguration.poolerMode = .transaction, or add "
                + "pooler=transaction to the connection URL, so that the driver keeps no prepared statements on the server"
                + (sql.map { "; the statement: \($0)" } ?? ""))
    }

    /// Maps a SQLSTATE to a `DatabaseError` case.
    static func error(sqlState: String?, context: DatabaseErrorContext, connectionBad: Bool) -> DatabaseError {
        // A broken connection wins over whatever the last statement said: the pool must
        // replace it. Errors libpq makes up itself (lost socket, …) carry no SQLSTATE.
        if connectionBad { return .connectionLost(context) }
        guard let state = sqlState else { return .other(context) }
        switch state {
        case "23505": return .constraintViolation(.unique, context)
        case "23503": return .constraintViolation(.foreignKey, context)
        case "23502": return .constraintViolation(.notNull, context)
        case "23514": return .constraintViolation(.check, context)
        case "42601": return .syntax(context)
        case "42P01": return .undefinedTable(context)
        case "42703": return .undefinedColumn(context)
        case "40001", "40P01":
            // A hot standby cancels a read whose snapshot or locks the replay needs.
            if context.message.contains("conflict with recovery") { return .recoveryConflict(context) }
            return .busy(context)
        case "55P03": return .busy(context)
        case "25006": return .readOnly(context)
        case "57014": return .cancelled(context)
        case "53100": return .diskFull(context)
        case "57P01", "57P02", "57P03": return .connectionLost(context)
        default:
            if state.hasPrefix("08") { return .connectionLost(context) }
            if state.hasPrefix("23") { return .constraintViolation(.other, context) }
            return .other(context)
        }
    }
}
