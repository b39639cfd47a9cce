import CSQLite
import Unity

/// SQLite result codes used by the error mapping. The extended codes are spelled out because
/// the C header builds them from macros (`SQLITE_CONSTRAINT | (8<<8)`) that Swift does not
/// import reliably.
enum SQLiteResultCode {
    static let error: Int32 = 1
    static let busy: Int32 = 5
    static let locked: Int32 = 6
    static let readOnly: Int32 = 8
    static let interrupt: Int32 = 9
    static let full: Int32 = 13
    static let cantOpen: Int32 = 14
    static let constraint: Int32 = 19

    static let constraintCheck: Int32 = 19 | (1 << 8)
    static let constraintForeignKey: Int32 = 19 | (3 << 8)
    static let constraintNotNull: Int32 = 19 | (5 << 8)
    static let constraintPrimaryKey: Int32 = 19 | (6 << 8)
    static let constraintUnique: Int32 = 19 | (8 << 8)
}

/// Maps an SQLite (extended) result code and message to the one Unity error type.
///
/// This is the only place where SQLite's codes become `DatabaseError` cases, so the same
/// fault is always reported the same way, whether it came from prepare, bind, step or exec.
func mapSQLiteError(code: Int32, message: String, sql: String?) -> DatabaseError {
    let context = DatabaseErrorContext(message: message, sql: sql, code: String(code))
    switch code {
    case SQLiteResultCode.constraintUnique, SQLiteResultCode.constraintPrimaryKey:
        return .constraintViolation(.unique, context)
    case SQLiteResultCode.constraintForeignKey:
        return .constraintViolation(.foreignKey, context)
    case SQLiteResultCode.constraintNotNull:
        return .constraintViolation(.notNull, context)
    case SQLiteResultCode.constraintCheck:
        var withName = context
        // SQLite names the failing CHECK constraint (or its expression) after the colon.
        if let range = message.range(of: "constraint failed: ") {
            withName.constraint = String(message[range.upperBound...])
        }
        return .constraintViolation(.check, withName)
    default:
        break
    }
    switch code & 0xFF {
    case SQLiteResultCode.constraint:
        return .constraintViolation(.other, context)
    case SQLiteResultCode.busy, SQLiteResultCode.locked:
        return .busy(context)
    case SQLiteResultCode.readOnly:
        return .readOnly(context)
    case SQLiteResultCode.interrupt:
        return .cancelled(context)
    case SQLiteResultCode.full:
        return .diskFull(context)
    case SQLiteResultCode.cantOpen:
        return .connectionFailed(context)
    case SQLiteResultCode.error:
        if message.hasPrefix("no such table") { return .undefinedTable(context) }
        if message.hasPrefix("no such column") { return .undefinedColumn(context) }
        if message.contains("syntax error") || message.contains("incomplete input")
            || message.hasPrefix("unrecognized token")
        {
            return .syntax(context)
        }
        return .other(context)
    default:
        return .other(context)
    }
}

/// The connection's current error message, or a fallback naming the code when SQLite has none.
func sqliteMessage(_ db: OpaquePointer?, code: Int32) -> String {
    if let db, let cMessage = sqlite3_errmsg(db) {
        return String(cString: cMessage)
    }
    if let cMessage = sqlite3_errstr(code) {
        return String(cString: cMessage)
    }
    return "SQLite error \(code)"
}
