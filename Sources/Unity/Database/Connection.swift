import Foundation
import Logging

/// A connection lent by a ``Database`` for the length of one `read`, `write` or
/// `transaction` closure. Everything a flavor does to the database goes through it.
///
/// It is not `Sendable` and must not escape its closure: the connection goes back to the pool
/// when the closure returns, and any cursor still open is closed then.
public final class Connection {
    let driverConnection: any DriverConnection
    /// The SQL dialect of this connection's backend.
    public let dialect: SQLDialect
    let configuration: DatabaseConfiguration
    /// The role this connection was checked out for.
    public let role: ConnectionRole
    private var savepointDepth = 0
    private var openCursors: [Weak] = []
    /// The async caller's cancellation, if any: checked before each statement so that a
    /// task cancelled between two statements does not start the next one.
    private let cancellation: CancellationControl?

    init(_ driverConnection: any DriverConnection, dialect: SQLDialect, role: ConnectionRole, configuration: DatabaseConfiguration, cancellation: CancellationControl? = nil) {
        self.driverConnection = driverConnection
        self.dialect = dialect
        self.role = role
        self.configuration = configuration
        self.cancellation = cancellation
    }

    /// Throws ``DatabaseError/cancelled(_:)`` once the task that borrowed this connection is
    /// cancelled. Rollbacks do not call it: undoing work must still run after a cancel.
    @inline(__always)
    private func checkCancelled(_ sql: String) throws {
        if let cancellation, cancellation.isCancelled {
            throw DatabaseError.cancelled(DatabaseErrorContext(message: "the task was cancelled", sql: sql))
        }
    }

    // MARK: Rendering

    /// Renders a statement in this connection's dialect.
    public func render(_ statement: SQLStatement) throws -> RenderedSQL {
        try dialect.render(statement)
    }

    @inline(__always)
    private func log(_ sql: String, _ bindings: [DatabaseValue]) {
        if configuration.echo {
            configuration.logger.info("\(sql)", metadata: bindings.isEmpty ? nil : ["bindings": "\(bindings.count)"])
        }
    }

    // MARK: Executing

    /// Runs a statement and returns the number of rows it changed.
    @discardableResult
    public func execute(_ statement: SQLStatement) throws -> Int {
        let rendered = try render(statement)
        return try execute(rendered)
    }

    /// Runs already-rendered SQL and returns the number of rows it changed.
    @discardableResult
    public func execute(_ rendered: RenderedSQL) throws -> Int {
        try checkCancelled(rendered.sql)
        return try run(rendered)
    }

    /// Logs and runs rendered SQL without the cancellation check.
    @inline(__always)
    private func run(_ rendered: RenderedSQL) throws -> Int {
        log(rendered.sql, rendered.bindings)
        return try driverConnection.execute(rendered.sql, bindings: rendered.bindings, onRow: nil)
    }

    /// Runs one raw SQL statement whose `?` placeholders take `bindings`; the dialect
    /// rewrites the placeholders (`$1…` on PostgreSQL) and leaves quoted text alone.
    @discardableResult
    public func execute(sql: String, _ bindings: [DatabaseValue] = []) throws -> Int {
        try execute(.raw(SQLFragment(sql, bindings)))
    }

    /// Runs a script of several raw statements with no bindings, as written (migrations).
    public func executeScript(_ sql: String) throws {
        try checkCancelled(sql)
        log(sql, [])
        try driverConnection.executeScript(sql)
    }

    /// Runs many statements as fast as the backend allows: consecutive statements that render
    /// to the same SQL run as one batch (one reused prepared statement on SQLite, one pipeline
    /// on PostgreSQL). Returns the total number of rows changed. A batch is all-or-nothing on
    /// both backends: outside a transaction it runs in one of its own, inside one it is a
    /// savepoint's worth of work that the enclosing transaction commits or rolls back.
    @discardableResult
    public func executeBatch(_ statements: [SQLStatement]) throws -> Int {
        if driverConnection.transactionStatus == .idle {
            return try transaction(.immediate) { try $0.executeBatch(statements) }
        }
        var total = 0
        var currentSQL: String?
        var sets: [[DatabaseValue]] = []
        func flush() throws {
            guard let sql = currentSQL, !sets.isEmpty else { return }
            try checkCancelled(sql)
            log(sql, sets.count == 1 ? sets[0] : [])
            if sets.count == 1 {
                total += try driverConnection.execute(sql, bindings: sets[0], onRow: nil)
            } else {
                total += try driverConnection.executeBatch(sql, bindingSets: sets)
            }
            sets.removeAll(keepingCapacity: true)
        }
        for statement in statements {
            let rendered = try render(statement)
            // Byte comparison: canonically equivalent names (NFC/NFD) are different SQL.
            if currentSQL.map({ !SQLTextKey.sameBytes($0, rendered.sql) }) ?? true {
                try flush()
                currentSQL = rendered.sql
            }
            sets.append(rendered.bindings)
        }
        try flush()
        return total
    }

    /// Runs one SQL text once per binding set, as one batch, all-or-nothing like
    /// ``executeBatch(_:)-([SQLStatement])``. Returns the rows changed.
    @discardableResult
    public func executeBatch(_ rendered: String, bindingSets: [[DatabaseValue]]) throws -> Int {
        if driverConnection.transactionStatus == .idle {
            return try transaction(.immediate) { try $0.executeBatch(rendered, bindingSets: bindingSets) }
        }
        try checkCancelled(rendered)
        log(rendered, [])
        return try driverConnection.executeBatch(rendered, bindingSets: bindingSets)
    }

    // MARK: Fetching

    /// Calls `body` for each row of the statement's result, without collecting them.
    /// The row passed may share storage with the next one: keep it (it is a value) but do not
    /// rely on identity.
    public func forEachRow(_ statement: SQLStatement, _ body: (Row) throws -> Void) throws {
        let rendered = try render(statement)
        try forEachRow(rendered, body)
    }

    /// Calls `body` for each row of already-rendered SQL.
    public func forEachRow(_ rendered: RenderedSQL, _ body: (Row) throws -> Void) throws {
        try checkCancelled(rendered.sql)
        log(rendered.sql, rendered.bindings)
        // The driver calls `onRow` only during `execute`; the closure never outlives the call.
        try withoutActuallyEscaping(body) { onRow in
            _ = try driverConnection.execute(rendered.sql, bindings: rendered.bindings, onRow: onRow)
        }
    }

    /// All rows of a statement's result.
    public func fetchAll(_ statement: SQLStatement) throws -> [Row] {
        var rows: [Row] = []
        try forEachRow(statement) { rows.append($0) }
        return rows
    }

    /// All rows of a raw SQL query with `?` placeholders.
    public func fetchAll(sql: String, _ bindings: [DatabaseValue] = []) throws -> [Row] {
        try fetchAll(.raw(SQLFragment(sql, bindings)))
    }

    /// The first row of a statement's result, or nil. The caller should add a LIMIT when the
    /// result may be large; the rest of the result is discarded.
    public func fetchOne(_ statement: SQLStatement) throws -> Row? {
        var first: Row?
        try forEachRow(statement) { row in
            if first == nil { first = row }
        }
        return first
    }

    /// The first row of a raw SQL query, or nil.
    public func fetchOne(sql: String, _ bindings: [DatabaseValue] = []) throws -> Row? {
        try fetchOne(.raw(SQLFragment(sql, bindings)))
    }

    /// The first column of the first row as `T`, or nil when there is no row or it is NULL.
    public func fetchValue<T: DatabaseValueConvertible>(_ type: T.Type = T.self, _ statement: SQLStatement) throws -> T? {
        guard let row = try fetchOne(statement), row.count > 0, !row[0].isNull else { return nil }
        return try row.decode(T.self, at: 0)
    }

    /// The first column of the first row of a raw query as `T`, or nil.
    public func fetchValue<T: DatabaseValueConvertible>(_ type: T.Type = T.self, sql: String, _ bindings: [DatabaseValue] = []) throws -> T? {
        try fetchValue(T.self, .raw(SQLFragment(sql, bindings)))
    }

    /// Opens a cursor that streams the statement's rows one at a time, for results too large
    /// to hold in memory. While it is open the connection runs nothing else; it is closed at
    /// the end of the rows, by ``RowCursor/close()``, or when the closure that lent this
    /// connection returns.
    public func cursor(_ statement: SQLStatement) throws -> RowCursor {
        let rendered = try render(statement)
        try checkCancelled(rendered.sql)
        log(rendered.sql, rendered.bindings)
        let cursor = RowCursor(try driverConnection.openCursor(rendered.sql, bindings: rendered.bindings))
        openCursors.removeAll { $0.cursor == nil }
        openCursors.append(Weak(cursor))
        return cursor
    }

    /// Opens a cursor over a raw SQL query.
    public func cursor(sql: String, _ bindings: [DatabaseValue] = []) throws -> RowCursor {
        try cursor(.raw(SQLFragment(sql, bindings)))
    }

    // MARK: Transactions

    /// True while a transaction is open on this connection.
    public var isInTransaction: Bool { driverConnection.transactionStatus != .idle }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    /// Called inside another transaction it becomes a savepoint, so an inner failure undoes
    /// only the inner work.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: (Connection) throws -> T) throws -> T {
        if driverConnection.transactionStatus == .idle {
            try execute(.begin(kind))
            let result: T
            do {
                result = try body(self)
            } catch {
                rollbackQuietly()
                throw error
            }
            do {
                try execute(.commit)
            } catch {
                rollbackQuietly()
                throw error
            }
            return result
        }
        savepointDepth += 1
        let name = "unity_sp_\(savepointDepth)"
        defer { savepointDepth -= 1 }
        try execute(.savepoint(name))
        let result: T
        do {
            result = try body(self)
        } catch {
            // Undo the inner work and drop the savepoint; the outer transaction lives on.
            _ = try? executeUnchecked(.rollbackToSavepoint(name))
            _ = try? executeUnchecked(.releaseSavepoint(name))
            throw error
        }
        try execute(.releaseSavepoint(name))
        return result
    }

    private func rollbackQuietly() {
        if driverConnection.transactionStatus != .idle {
            _ = try? executeUnchecked(.rollback)
        }
    }

    /// Runs a statement that must run even after a cancel (the undo of a transaction).
    private func executeUnchecked(_ statement: SQLStatement) throws -> Int {
        try run(render(statement))
    }

    /// True while a cursor opened on this connection has rows left: the connection is busy
    /// streaming them and must not be lent to a nested call.
    var hasOpenCursors: Bool {
        openCursors.contains { $0.cursor?.isOpen ?? false }
    }

    func closeOpenCursors() {
        for w in openCursors { w.cursor?.close() }
        openCursors.removeAll()
    }

    private struct Weak {
        weak var cursor: RowCursor?
        init(_ c: RowCursor) { cursor = c }
    }
}

/// A forward-only stream of rows, opened by ``Connection/cursor(_:)``.
public final class RowCursor {
    private let base: any DriverCursor
    private var finished = false

    init(_ base: any DriverCursor) { self.base = base }

    /// False once the rows are exhausted or the cursor is closed.
    var isOpen: Bool { !finished }

    /// The result columns.
    public var layout: RowLayout { base.layout }

    /// The next row, or nil at the end.
    public func next() throws -> Row? {
        if finished { return nil }
        do {
            if let row = try base.next() { return row }
        } catch {
            close()
            throw error
        }
        finished = true
        return nil
    }

    /// Calls `body` for each remaining row.
    public func forEach(_ body: (Row) throws -> Void) throws {
        while let row = try next() { try body(row) }
    }

    /// Stops early and frees the statement. Safe to call more than once.
    public func close() {
        if !finished {
            finished = true
            base.close()
        }
    }

    deinit { close() }
}
