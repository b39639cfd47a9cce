import CSQLite
import Foundation
import Unity

/// SQLite's `SQLITE_TRANSIENT` destructor: SQLite copies the bound bytes before the bind call
/// returns. The C macro is a cast of -1 to a function pointer, which Swift does not import.
@inline(__always)
var sqliteTransient: sqlite3_destructor_type {
    unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}

/// One prepared statement, either held by the connection's cache or prepared for a single use
/// because the cached one was busy in an open cursor.
final class SQLiteStatement {
    /// The statement handle; nil once finalized (after which nothing may step it). Unchecked
    /// for exclusive access: a statement is used by one thread at a time, and a cursor reads
    /// it for every row.
    @exclusivity(unchecked) private(set) var handle: OpaquePointer?
    /// The SQL text the statement was prepared from.
    let sql: String
    /// True while the statement is owned by the connection's cache. An evicted statement that
    /// is still in use is finalized when its user releases it.
    var isCached: Bool
    /// True while an `execute`, `executeBatch` or cursor is using the statement.
    var isInUse = false

    private var cachedLayout: RowLayout?
    private var layoutReprepareCount: Int32 = 0

    /// The bytes of the text, blob, date and UUID parameters of the current binding. They are
    /// bound with `SQLITE_STATIC`: SQLite reads them in place while the statement steps, so
    /// binding costs one copy into this buffer instead of a SQLite allocation, a copy and a
    /// free per value (a 100-row INSERT binds hundreds). The buffer belongs to the statement
    /// and is only rewritten by the next ``bind(_:db:)``, which replaces every binding, so it
    /// stays valid for as long as a cursor steps the statement.
    ///
    /// A cached statement keeps its buffer, so the buffer is bounded: a value longer than
    /// ``inlineValueLimit``, or one that no longer fits in ``maxParameterBytes``, is bound with
    /// `SQLITE_TRANSIENT` instead (for a value that long, SQLite's own copy costs little more).
    private var parameterBytes: UnsafeMutableRawPointer?
    private var parameterCapacity = 0

    /// The longest value copied into the parameter buffer.
    static let inlineValueLimit = 4_096
    /// The most bytes a statement's parameter buffer holds.
    static let maxParameterBytes = 256 * 1_024

    init(handle: OpaquePointer, sql: String, isCached: Bool) {
        self.handle = handle
        self.sql = sql
        self.isCached = isCached
    }

    deinit { parameterBytes?.deallocate() }

    /// The result columns. Built once per statement and rebuilt only when SQLite re-prepared
    /// the statement after a schema change (which can change the columns of `SELECT *`).
    /// Call it after the first `sqlite3_step`, since re-preparation happens inside step.
    func layout() -> RowLayout {
        guard let handle else { return RowLayout(columnNames: []) }
        let reprepares = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let cachedLayout, reprepares == layoutReprepareCount {
            return cachedLayout
        }
        let count = Int(sqlite3_column_count(handle))
        var names = [String]()
        names.reserveCapacity(count)
        for i in 0..<count {
            if let cName = sqlite3_column_name(handle, Int32(i)) {
                names.append(String(cString: cName))
            } else {
                names.append("?column?")
            }
        }
        let layout = RowLayout(columnNames: names)
        cachedLayout = layout
        layoutReprepareCount = reprepares
        return layout
    }

    /// Binds `values` to the statement's parameters, in order.
    ///
    /// Text, blobs, dates and UUIDs are copied into the statement's own parameter buffer and
    /// bound from there with `SQLITE_STATIC` (see `parameterBytes`): a Swift string's bytes
    /// are only guaranteed to stay put inside `withUTF8`, and a cursor keeps the statement
    /// bound long after this call returns, so they cannot be bound where they are.
    func bind(_ values: [DatabaseValue], db: OpaquePointer?) throws {
        guard let handle else { throw DatabaseError.misuse("the statement was finalized because its connection closed") }
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == values.count else {
            throw DatabaseError.misuse(
                "the statement has \(expected) parameter(s) but \(values.count) binding(s) were given: \(sql)")
        }
        let buffer = reserveParameterBytes(for: values, handle: handle)
        var used = 0
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let rc: Int32
            switch value {
            case .null:
                rc = sqlite3_bind_null(handle, index)
            case .integer(let v):
                rc = sqlite3_bind_int64(handle, index, v)
            case .double(let v):
                guard !v.isNaN else {
                    throw DatabaseError.misuse(
                        "binding \(index) is NaN, which SQLite would silently store as NULL; "
                            + "store NaN as NULL or as text explicitly: \(sql)")
                }
                rc = sqlite3_bind_double(handle, index, v)
            case .text(let s):
                rc = bindText(s, handle: handle, index: index, buffer: buffer, used: &used)
            case .json(let s):
                if let failure = JSONCoding.encodingFailure(in: value) {
                    throw DatabaseError.misuse(failure)
                }
                rc = bindText(s, handle: handle, index: index, buffer: buffer, used: &used)
            case .blob(let data):
                if data.isEmpty {
                    // A NULL pointer would bind SQL NULL; an empty blob must stay an empty blob.
                    rc = sqlite3_bind_zeroblob(handle, index, 0)
                } else if data.count <= Self.inlineValueLimit && used + data.count <= parameterCapacity {
                    let start = buffer + used
                    data.copyBytes(to: start.assumingMemoryBound(to: UInt8.self), count: data.count)
                    used += data.count
                    rc = sqlite3_bind_blob64(handle, index, start, UInt64(data.count), nil)
                } else {
                    rc = data.withUnsafeBytes { raw in
                        sqlite3_bind_blob64(handle, index, raw.baseAddress, UInt64(raw.count), sqliteTransient)
                    }
                }
            case .bool(let b):
                rc = sqlite3_bind_int64(handle, index, b ? 1 : 0)
            case .date(let date):
                // Dates are text `YYYY-MM-DD …`: years 0001–9999 read back equal; others are
                // refused rather than written in a form that cannot be read back.
                guard DateText.isInTextRange(date) else {
                    throw DatabaseError.misuse(
                        "binding \(index) is the date \(date.timeIntervalSinceReferenceDate)s from 2001, outside the years 0000–9999 "
                            + "that SQLite's date text holds: \(sql)")
                }
                if used + DateText.maxFormattedLength <= parameterCapacity {
                    // Formatted straight into the parameter buffer: no string per date.
                    let start = buffer + used
                    let count = DateText.format(date, into: start.assumingMemoryBound(to: UInt8.self))
                    used += count
                    rc = sqlite3_bind_text64(handle, index, start.assumingMemoryBound(to: CChar.self), UInt64(count), nil,
                                             UInt8(SQLITE_UTF8))
                } else {
                    rc = Self.bindTransientText(DateText.format(date), handle: handle, index: index)
                }
            case .uuid(let uuid):
                let size = MemoryLayout.size(ofValue: uuid.uuid)
                if used + size <= parameterCapacity {
                    let start = buffer + used
                    start.storeBytes(of: uuid.uuid, as: uuid_t.self)
                    used += size
                    rc = sqlite3_bind_blob64(handle, index, start, UInt64(size), nil)
                } else {
                    rc = withUnsafeBytes(of: uuid.uuid) { raw in
                        sqlite3_bind_blob64(handle, index, raw.baseAddress, UInt64(raw.count), sqliteTransient)
                    }
                }
            case .decimal(let decimal):
                guard !decimal.isNaN else {
                    throw DatabaseError.misuse("binding \(index) is Decimal.nan, which Unity does not store (as Double.nan): \(sql)")
                }
                // Its text is made here, so it is the one value SQLite copies itself.
                rc = Self.bindTransientText(decimal.description, handle: handle, index: index)
            }
            if rc != SQLITE_OK {
                throw mapSQLiteError(code: rc, message: sqliteMessage(db, code: rc), sql: sql)
            }
        }
    }

    /// Makes the parameter buffer hold the bytes `values` copy into it (see `parameterBytes`),
    /// up to ``maxParameterBytes``, and returns it. When it has to grow, the old bindings are
    /// cleared first, so that no parameter points into freed memory even if binding then fails.
    private func reserveParameterBytes(for values: [DatabaseValue], handle: OpaquePointer) -> UnsafeMutableRawPointer {
        var needed = 0
        for value in values {
            let size: Int
            switch value {
            case .text(let s), .json(let s): size = s.utf8.count
            case .blob(let data): size = data.count
            case .date: size = DateText.maxFormattedLength
            case .uuid(let uuid): size = MemoryLayout.size(ofValue: uuid.uuid)
            case .null, .integer, .double, .bool, .decimal: size = 0
            }
            if size <= Self.inlineValueLimit { needed += size }
        }
        needed = min(needed, Self.maxParameterBytes)
        if let parameterBytes, needed <= parameterCapacity { return parameterBytes }
        sqlite3_clear_bindings(handle)
        parameterBytes?.deallocate()
        // Grown by half again at least, so that a run of growing statements reallocates rarely.
        let capacity = min(max(needed, parameterCapacity + parameterCapacity / 2, 256), Self.maxParameterBytes)
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        parameterBytes = bytes
        parameterCapacity = capacity
        return bytes
    }

    /// Binds `text` from the parameter buffer at `used` (which it advances), or with
    /// `SQLITE_TRANSIENT` when it is empty or too long for the buffer.
    @inline(__always)
    private func bindText(_ text: String, handle: OpaquePointer, index: Int32, buffer: UnsafeMutableRawPointer,
                          used: inout Int) -> Int32 {
        let count = text.utf8.count
        guard count > 0, count <= Self.inlineValueLimit, used + count <= parameterCapacity else {
            return Self.bindTransientText(text, handle: handle, index: index)
        }
        let start = buffer + used
        var text = text
        let copied = text.withUTF8 { utf8 in
            guard let base = utf8.baseAddress else { return 0 }
            start.copyMemory(from: base, byteCount: utf8.count)
            return utf8.count
        }
        used += copied
        return sqlite3_bind_text64(handle, index, start.assumingMemoryBound(to: CChar.self), UInt64(copied), nil,
                                   UInt8(SQLITE_UTF8))
    }

    /// Binds `text` with `SQLITE_TRANSIENT`: SQLite copies it before returning.
    private static func bindTransientText(_ text: String, handle: OpaquePointer, index: Int32) -> Int32 {
        var text = text
        return text.withUTF8 { utf8 in
            // An empty buffer may have no address; a NULL pointer would bind SQL NULL.
            guard let base = utf8.baseAddress, utf8.count > 0 else {
                return sqlite3_bind_text64(handle, index, "", 0, sqliteTransient, UInt8(SQLITE_UTF8))
            }
            return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) { chars in
                sqlite3_bind_text64(handle, index, chars, UInt64(utf8.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
    }

    /// Overwrites `values` (one slot per column) with the current row's values, reading text
    /// and blobs straight from SQLite's buffers (with their byte lengths, so embedded NUL
    /// bytes survive). Writing in place skips the per-value capacity and uniqueness checks
    /// of `append`; if the caller kept the previous row, copy-on-write copies it first.
    ///
    /// Each column is fetched once with `sqlite3_column_value` and then read with the
    /// `sqlite3_value_*` accessors, which saves SQLite's per-call column lookup and error
    /// bookkeeping on every accessor. SQLite calls such a value "unprotected", which only
    /// matters when another thread could use the connection meanwhile; the pool hands a
    /// connection to one thread at a time, and the value is read before the next step.
    @inline(__always)
    static func readRow(_ handle: OpaquePointer, into values: UnsafeMutableBufferPointer<DatabaseValue>) {
        for i in values.indices {
            values[i] = readColumn(handle, Int32(truncatingIfNeeded: i))
        }
    }

    /// The value of column `i` of the current row.
    @inline(__always)
    static func readColumn(_ handle: OpaquePointer, _ i: Int32) -> DatabaseValue {
        guard let value = sqlite3_column_value(handle, i) else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT:
            return .double(sqlite3_value_double(value))
        case SQLITE_TEXT:
            // sqlite3_value_text first, then sqlite3_value_bytes, as SQLite documents.
            guard let text = sqlite3_value_text(value) else { return .text("") }
            let count = Int(sqlite3_value_bytes(value))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let blob = sqlite3_value_blob(value) else { return .blob(Data()) }
            return .blob(Data(bytes: blob, count: Int(sqlite3_value_bytes(value))))
        default:
            return .null
        }
    }

    /// Resets the statement and clears its bindings, so that it holds no lock and no copy of
    /// the bound values. Errors were already reported by the failing step.
    func reset() {
        guard let handle else { return }
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Finalizes the statement. Safe to call more than once.
    func finalize() {
        guard let handle else { return }
        sqlite3_finalize(handle)
        self.handle = nil
    }
}
