import Foundation

/// The one SQL renderer: walks a statement and writes it in a dialect's spelling.
///
/// It runs in two modes over the very same code path, so that the SQL text and the order of
/// bind values can never disagree with the shape used as a cache key:
/// - `.text` writes SQL text and collects bind values;
/// - `.shape` writes nothing, collects the bind values, and hashes everything else the
///   text mode would have written (keywords by address, identifiers and inline literals by
///   bytes). Validation that only depends on what is hashed is skipped in this mode: a
///   cache hit means the same shape already rendered, and was validated, once.
struct SQLRenderer {
    enum Mode { case text, shape }

    let dialect: SQLDialect
    let mode: Mode
    private(set) var sql = ""
    private(set) var bindings: [DatabaseValue] = []
    private var shapeHash = SQLShapeHash()
    /// Inside DDL, values cannot be bound (PostgreSQL refuses parameters in utility
    /// statements), so bind values are spelled as literals there.
    private var inlineValues = false

    init(dialect: SQLDialect, mode: Mode) {
        self.dialect = dialect
        self.mode = mode
        if mode == .text { sql.reserveCapacity(256) }
    }

    var shapeKey: SQLShapeKey {
        shapeHash.finalize(bindingCount: bindings.count)
    }

    // MARK: Primitive writers

    private mutating func write(_ s: StaticString) {
        switch mode {
        case .text:
            s.withUTF8Buffer { sql.append(String(decoding: $0, as: UTF8.self)) }
        case .shape:
            if s.hasPointerRepresentation {
                shapeHash.combine(Int(bitPattern: s.utf8Start))
            } else {
                shapeHash.combine(s.unicodeScalar.value)
            }
        }
    }

    /// Writes text whose content matters to the shape (type names, inline literals).
    private mutating func writeText(_ s: String) {
        switch mode {
        case .text: sql.append(s)
        case .shape: shapeHash.combine(utf8: s)
        }
    }

    /// Adds a list's digest, made when the list was, to the shape in place of its items,
    /// after a marker that tells the kind of list.
    private mutating func hashDigest(_ marker: StaticString, _ digest: SQLShapeKey) {
        write(marker)
        shapeHash.combine(digest: digest)
    }

    private mutating func identifier(_ name: String) throws {
        switch mode {
        case .text:
            if name.isEmpty { throw DatabaseError.misuse("an SQL identifier (table, column, alias or index name) is empty; give it a name") }
            if name.utf8.contains(0) { throw DatabaseError.misuse("the SQL identifier \(dialect.quoteIdentifier(name)) contains a NUL character, which no database accepts") }
            if name.utf8.count > dialect.maxIdentifierBytes {
                throw DatabaseError.misuse(
                    "the SQL identifier \(dialect.quoteIdentifier(name)) is \(name.utf8.count) bytes long; Unity refuses identifiers over "
                        + "\(dialect.maxIdentifierBytes) bytes on every backend, because PostgreSQL would silently truncate it and two long names could collide")
            }
            sql.append(dialect.quoteIdentifier(name))
        case .shape:
            shapeHash.combine(utf8: name)
        }
    }

    private mutating func identifierList(_ names: [String]) throws {
        write("(")
        for (i, name) in names.enumerated() {
            if i > 0 { write(", ") }
            try identifier(name)
        }
        write(")")
    }

    private mutating func bind(_ value: DatabaseValue) throws {
        if case .json = value, let failure = JSONCoding.encodingFailure(in: value) {
            throw DatabaseError.misuse(failure)
        }
        if inlineValues { return try inlineLiteral(value) }
        bindings.append(value)
        guard mode == .text else { return }
        switch dialect.placeholderStyle {
        case .questionMark: sql.append("?")
        case .dollarNumbered: sql.append("$"); sql.append(String(bindings.count))
        }
    }

    // MARK: Statements

    mutating func render(_ statement: SQLStatement) throws {
        switch statement {
        case .begin, .commit, .rollback, .savepoint, .releaseSavepoint, .rollbackToSavepoint:
            throw DatabaseError.misuse("transaction control statements are rendered by SQLDialect.render(_:)")
        case .raw(let fragment): try self.fragment(fragment)
        case .select(let s): try select(s)
        case .insert(let s): try insert(s)
        case .update(let s): try update(s)
        case .delete(let s): try delete(s)
        case .createTable(let s): try createTable(s)
        case .dropTable(let s):
            write("DROP TABLE ")
            if s.ifExists { write("IF EXISTS ") }
            try identifier(s.name)
        case .createIndex(let s): try createIndex(s)
        case .dropIndex(let s):
            write("DROP INDEX ")
            if s.ifExists { write("IF EXISTS ") }
            try identifier(s.name)
        case .alterTable(let s): try alterTable(s)
        case .declareCursor(let name, let s):
            try requireServerCursors()
            write("DECLARE ")
            try identifier(name)
            write(" NO SCROLL CURSOR FOR ")
            try select(s)
        case .fetchCursor(let name, let count):
            try requireServerCursors()
            guard count > 0 else { throw DatabaseError.misuse("a cursor is fetched at least one row at a time, not \(count)") }
            write("FETCH FORWARD ")
            writeText(String(count))
            write(" FROM ")
            try identifier(name)
        case .closeCursor(let name):
            try requireServerCursors()
            write("CLOSE ")
            try identifier(name)
        case .fullTextIndex(let s):
            try fullTextIndex(s)
        case .copyFrom(let copy):
            try requireCopy()
            guard !copy.columns.isEmpty else { throw DatabaseError.misuse("a COPY into \(dialect.quoteIdentifier(copy.table)) needs at least one column") }
            write("COPY ")
            try identifier(copy.table)
            write(" ")
            try identifierList(copy.columns)
            write(" FROM STDIN (FORMAT binary)")
        case .createStagingTable(let staging):
            try requireCopy()
            guard !staging.columns.isEmpty else {
                throw DatabaseError.misuse("a staging table for \(dialect.quoteIdentifier(staging.source)) needs at least one column")
            }
            write("CREATE TEMPORARY TABLE ")
            try identifier(staging.name)
            write(" ON COMMIT DROP AS SELECT ")
            for (i, column) in staging.columns.enumerated() {
                if i > 0 { write(", ") }
                try identifier(column)
            }
            write(" FROM ")
            try identifier(staging.source)
            write(" WITH NO DATA")
        case .copyTo(let s):
            try requireCopy()
            let before = bindings.count
            write("COPY (")
            try select(s)
            write(") TO STDOUT (FORMAT binary)")
            if bindings.count != before {
                throw DatabaseError.misuse(
                    "COPY (SELECT …) TO STDOUT takes no bind parameters, and Unity never inlines a value: export a query with values through Connection.copyOut, which then reads it with a server-side cursor")
            }
        }
    }

    private func requireCopy() throws {
        guard dialect.supportsCopy else {
            throw DatabaseError.misuse("\(dialect.name) has no COPY statement; Connection.copy(into:columns:rows:) and copyOut run prepared INSERTs and a cursor there")
        }
    }

    private func requireServerCursors() throws {
        guard dialect.supportsServerCursors else {
            throw DatabaseError.misuse(
                "\(dialect.name) has no server-side cursors (DECLARE/FETCH/CLOSE); read large results with Connection.forEachRowInBatches or a cursor, which step the statement")
        }
    }

    // MARK: SELECT

    private mutating func select(_ s: SQLSelect) throws {
        try selectCore(s)
        for member in s.compounds {
            let m = member.select
            if !m.orderBy.isEmpty || m.limit != nil || m.offset != nil || !m.compounds.isEmpty {
                throw DatabaseError.misuse("a SELECT combined by \(member.op.rawValue) cannot have its own ORDER BY, LIMIT, OFFSET or compounds; put them on the first SELECT, where they apply to the whole result")
            }
            switch member.op {
            case .union: write(" UNION ")
            case .unionAll: write(" UNION ALL ")
            case .intersect: write(" INTERSECT ")
            case .except: write(" EXCEPT ")
            }
            try selectCore(m)
        }
        if !s.orderBy.isEmpty {
            write(" ORDER BY ")
            for (i, term) in s.orderBy.enumerated() {
                if i > 0 { write(", ") }
                try expression(term.expression)
                write(term.direction == .ascending ? " ASC" : " DESC")
                switch term.nulls {
                case .first: write(" NULLS FIRST")
                case .last: write(" NULLS LAST")
                case nil: break
                }
            }
        }
        if let limit = s.limit {
            // A literal, not a parameter: PostgreSQL plans a prepared statement with a bound
            // LIMIT for an unknown row count (a tenth of the table), finds that plan dearer than
            // one made for the value, and so plans the query again on every execution (about
            // 40 µs per query in unity-bench). The count is an `Int` from the AST, never text,
            // so writing it cannot inject anything; the OFFSET, which varies page by page,
            // stays bound so that paging reuses one statement.
            write(" LIMIT ")
            writeText(String(limit))
        } else if s.offset != nil, dialect.offsetRequiresLimit {
            write(" LIMIT -1")
        }
        if let offset = s.offset {
            write(" OFFSET ")
            try bind(.integer(Int64(offset)))
        }
    }

    private mutating func selectCore(_ s: SQLSelect) throws {
        write(s.distinct ? "SELECT DISTINCT " : "SELECT ")
        if mode == .shape, let digest = s.columnsDigest {
            // A list of plain columns, hashed when it was set (see `SQLSelect.columnsDigest`).
            hashDigest("plain select list", digest)
        } else {
            try selectList(s.columns)
        }
        if let from = s.from {
            write(" FROM ")
            try tableSource(from)
        } else if !s.joins.isEmpty {
            throw DatabaseError.misuse("a SELECT with joins needs a FROM table")
        }
        for join in s.joins {
            switch join {
            case .fragment(let f):
                write(" ")
                try fragment(f)
            case .join(let kind, let source, let condition):
                switch kind {
                case .inner: write(" INNER JOIN ")
                case .left: write(" LEFT JOIN ")
                case .right: write(" RIGHT JOIN ")
                case .full: write(" FULL JOIN ")
                case .cross: write(" CROSS JOIN ")
                }
                try tableSource(source)
                if let condition {
                    if kind == .cross { throw DatabaseError.misuse("a CROSS JOIN takes no ON condition; use an INNER JOIN to join on a condition") }
                    write(" ON ")
                    try expression(condition)
                } else if kind != .cross {
                    throw DatabaseError.misuse("\(kind.rawValue) needs an ON condition; use a CROSS JOIN for a join without one")
                }
            }
        }
        if let w = s.whereCondition {
            write(" WHERE ")
            try expression(w)
        }
        if !s.groupBy.isEmpty {
            write(" GROUP BY ")
            try expressionList(s.groupBy)
        }
        if let h = s.having {
            write(" HAVING ")
            try expression(h)
        }
    }

    private mutating func selectList(_ columns: [SQLSelectColumn]) throws {
        if columns.isEmpty { return write("*") }
        for (i, column) in columns.enumerated() {
            if i > 0 { write(", ") }
            switch column {
            case .all(let table):
                if let table {
                    try identifier(table)
                    write(".*")
                } else {
                    write("*")
                }
            case .expression(let e, let alias):
                try expression(e)
                if let alias {
                    write(" AS ")
                    try identifier(alias)
                }
            case .columns(let list):
                try columnList(list)
            }
        }
    }

    private mutating func columnList(_ list: SQLColumnList) throws {
        switch mode {
        case .shape:
            // The list's own hashes, made once (see ``SQLColumnList``).
            hashDigest("columns", list.digest)
        case .text:
            if list.names.isEmpty { throw DatabaseError.misuse("a column list is empty; list at least one column") }
            for (i, name) in list.names.enumerated() {
                if i > 0 { write(", ") }
                if let table = list.table {
                    try identifier(table)
                    write(".")
                }
                try identifier(name)
            }
        }
    }

    private mutating func tableSource(_ source: SQLTableSource) throws {
        switch source {
        case .table(let name, let alias):
            try identifier(name)
            if let alias {
                write(" AS ")
                try identifier(alias)
            }
        case .subquery(let query, let alias):
            write("(")
            try select(query)
            write(") AS ")
            try identifier(alias)
        case .fragment(let f):
            try fragment(f)
        }
    }

    // MARK: INSERT, UPDATE, DELETE

    private mutating func insert(_ s: SQLInsert) throws {
        write("INSERT INTO ")
        try identifier(s.table)
        switch s.source {
        case .defaultValues:
            if !s.columns.isEmpty { throw DatabaseError.misuse("INSERT … DEFAULT VALUES into \(dialect.quoteIdentifier(s.table)) takes no column list") }
            write(" DEFAULT VALUES")
        case .values(let rows):
            if rows.isEmpty { throw DatabaseError.misuse("INSERT into \(dialect.quoteIdentifier(s.table)) has no rows; give at least one row or use DEFAULT VALUES") }
            if !s.columns.isEmpty {
                write(" ")
                try identifierList(s.columns)
            }
            write(" VALUES ")
            for (i, row) in rows.enumerated() {
                if !s.columns.isEmpty, row.count != s.columns.count {
                    throw DatabaseError.misuse("INSERT into \(dialect.quoteIdentifier(s.table)): row \(i + 1) has \(row.count) values for \(s.columns.count) columns")
                }
                if row.isEmpty { throw DatabaseError.misuse("INSERT into \(dialect.quoteIdentifier(s.table)): row \(i + 1) is empty") }
                if i > 0 { write(", ") }
                write("(")
                try expressionList(row)
                write(")")
            }
        case .select(var query):
            if !s.columns.isEmpty {
                write(" ")
                try identifierList(s.columns)
            }
            write(" ")
            if s.onConflict != nil, dialect.upsertSelectNeedsWhere, query.whereCondition == nil, query.compounds.isEmpty {
                query.whereCondition = .true
            }
            try select(query)
        }
        if let conflict = s.onConflict {
            guard dialect.supportsUpsert else { throw DatabaseError.misuse("the \(dialect.name) dialect has no INSERT … ON CONFLICT") }
            write(" ON CONFLICT")
            if !conflict.target.isEmpty {
                write(" ")
                try identifierList(conflict.target)
            }
            switch conflict.action {
            case .doNothing:
                write(" DO NOTHING")
            case .doUpdate(let assignments, let condition):
                if conflict.target.isEmpty {
                    throw DatabaseError.misuse("ON CONFLICT DO UPDATE on \(dialect.quoteIdentifier(s.table)) needs the conflict target columns (the unique key that conflicts)")
                }
                write(" DO UPDATE SET ")
                try assignmentList(assignments, table: s.table)
                if let condition {
                    write(" WHERE ")
                    try expression(condition)
                }
            }
        }
        try returning(s.returning)
    }

    private mutating func update(_ s: SQLUpdate) throws {
        write("UPDATE ")
        try identifier(s.table)
        write(" SET ")
        try assignmentList(s.assignments, table: s.table)
        if let w = s.whereCondition {
            write(" WHERE ")
            try expression(w)
        }
        try returning(s.returning)
    }

    private mutating func delete(_ s: SQLDelete) throws {
        write("DELETE FROM ")
        try identifier(s.table)
        if let w = s.whereCondition {
            write(" WHERE ")
            try expression(w)
        }
        try returning(s.returning)
    }

    private mutating func assignmentList(_ assignments: [SQLAssignment], table: String) throws {
        if assignments.isEmpty { throw DatabaseError.misuse("an UPDATE of \(dialect.quoteIdentifier(table)) sets no column; give at least one assignment") }
        for (i, a) in assignments.enumerated() {
            if i > 0 { write(", ") }
            try identifier(a.column)
            write(" = ")
            try expression(a.value)
        }
    }

    private mutating func returning(_ columns: [SQLSelectColumn]) throws {
        if columns.isEmpty { return }
        guard dialect.supportsReturning else { throw DatabaseError.misuse("the \(dialect.name) dialect has no RETURNING clause") }
        write(" RETURNING ")
        try selectList(columns)
    }

    // MARK: DDL

    private mutating func createTable(_ s: SQLCreateTable) throws {
        inlineValues = true
        defer { inlineValues = false }
        if s.columns.isEmpty { throw DatabaseError.misuse("CREATE TABLE \(dialect.quoteIdentifier(s.name)) has no columns") }
        if s.columns.filter({ $0.primaryKey != nil }).count > 1 {
            throw DatabaseError.misuse("CREATE TABLE \(dialect.quoteIdentifier(s.name)) marks several columns PRIMARY KEY; declare a composite key as a table constraint")
        }
        var primaryKeyColumns = Set<String>()
        for case .primaryKey(let columns, _) in s.constraints { primaryKeyColumns.formUnion(columns) }
        write("CREATE TABLE ")
        if s.ifNotExists { write("IF NOT EXISTS ") }
        try identifier(s.name)
        write(" (")
        for (i, column) in s.columns.enumerated() {
            if i > 0 { write(", ") }
            try columnDefinition(column, inTablePrimaryKey: primaryKeyColumns.contains(column.name))
        }
        for constraint in s.constraints {
            write(", ")
            try tableConstraint(constraint)
        }
        write(")")
    }

    /// A column's type in a definition, with the dialect's decimal collation for `.decimal`.
    private mutating func columnType(_ type: ColumnType) throws {
        writeText(dialect.typeName(type))
        if case .decimal = type, let collation = dialect.decimalCollation {
            write(" COLLATE ")
            try identifier(collation)
        }
    }

    private mutating func columnDefinition(_ c: SQLColumnDefinition, inTablePrimaryKey: Bool) throws {
        try identifier(c.name)
        write(" ")
        var notNull = c.notNull
        switch c.primaryKey {
        case .autoIncrement:
            writeText(dialect.autoIncrementPrimaryKey)
        case .plain:
            try columnType(c.type)
            write(" PRIMARY KEY")
            if dialect.primaryKeyNeedsExplicitNotNull { notNull = true }
        case nil:
            try columnType(c.type)
            if inTablePrimaryKey, dialect.primaryKeyNeedsExplicitNotNull { notNull = true }
        }
        if notNull { write(" NOT NULL") }
        if c.unique { write(" UNIQUE") }
        if let d = c.defaultValue {
            write(" DEFAULT ")
            switch d {
            case .literal, .bind:
                try expression(d)
            default:
                write("(")
                try expression(d)
                write(")")
            }
        }
        if let check = c.check {
            write(" CHECK (")
            try expression(check)
            write(")")
        }
        if let r = c.references { try reference(r) }
    }

    private mutating func tableConstraint(_ constraint: SQLTableConstraint) throws {
        func name(_ n: String?, _ r: inout SQLRenderer) throws {
            guard let n else { return }
            r.write("CONSTRAINT ")
            try r.identifier(n)
            r.write(" ")
        }
        switch constraint {
        case .primaryKey(let columns, let n):
            try name(n, &self)
            write("PRIMARY KEY ")
            try identifierList(columns)
        case .unique(let columns, let n):
            try name(n, &self)
            write("UNIQUE ")
            try identifierList(columns)
        case .check(let condition, let n):
            try name(n, &self)
            write("CHECK (")
            try expression(condition)
            write(")")
        case .foreignKey(let columns, let r, let n):
            try name(n, &self)
            write("FOREIGN KEY ")
            try identifierList(columns)
            try reference(r)
        }
    }

    private mutating func reference(_ r: SQLForeignKeyReference) throws {
        write(" REFERENCES ")
        try identifier(r.table)
        if !r.columns.isEmpty {
            write(" ")
            try identifierList(r.columns)
        }
        if let action = r.onDelete {
            write(" ON DELETE ")
            referentialAction(action)
        }
        if let action = r.onUpdate {
            write(" ON UPDATE ")
            referentialAction(action)
        }
    }

    private mutating func referentialAction(_ action: SQLForeignKeyAction) {
        switch action {
        case .cascade: write("CASCADE")
        case .setNull: write("SET NULL")
        case .setDefault: write("SET DEFAULT")
        case .restrict: write("RESTRICT")
        case .noAction: write("NO ACTION")
        }
    }

    private mutating func createIndex(_ s: SQLCreateIndex) throws {
        inlineValues = true
        defer { inlineValues = false }
        if s.columns.isEmpty, s.expressions.isEmpty {
            throw DatabaseError.misuse("CREATE INDEX \(dialect.quoteIdentifier(s.name)) has no columns")
        }
        write(s.unique ? "CREATE UNIQUE INDEX " : "CREATE INDEX ")
        if s.ifNotExists { write("IF NOT EXISTS ") }
        try identifier(s.name)
        write(" ON ")
        try identifier(s.table)
        if let method = s.method {
            guard dialect.fullTextStyle == .tsvector else {
                throw DatabaseError.misuse("CREATE INDEX \(dialect.quoteIdentifier(s.name)) asks for USING \(method.rawValue), which \(dialect.name) does not have")
            }
            write(" USING ")
            writeText(method.rawValue)
        }
        write(" (")
        for (i, name) in s.columns.enumerated() {
            if i > 0 { write(", ") }
            try identifier(name)
        }
        for (i, e) in s.expressions.enumerated() {
            if i > 0 || !s.columns.isEmpty { write(", ") }
            // Parenthesized: PostgreSQL takes a bare expression only when it is a function call.
            write("(")
            try expression(e)
            write(")")
        }
        write(")")
        if let w = s.whereCondition {
            write(" WHERE ")
            try expression(w)
        }
    }

    private mutating func alterTable(_ s: SQLAlterTable) throws {
        inlineValues = true
        defer { inlineValues = false }
        write("ALTER TABLE ")
        try identifier(s.table)
        switch s.change {
        case .addColumn(let c):
            write(" ADD COLUMN ")
            try columnDefinition(c, inTablePrimaryKey: false)
        case .renameTo(let name):
            write(" RENAME TO ")
            try identifier(name)
        case .renameColumn(let old, let new):
            write(" RENAME COLUMN ")
            try identifier(old)
            write(" TO ")
            try identifier(new)
        case .dropColumn(let name):
            write(" DROP COLUMN ")
            try identifier(name)
        }
    }

    // MARK: Expressions

    private mutating func expressionList(_ list: [SQLExpression]) throws {
        for (i, e) in list.enumerated() {
            if i > 0 { write(", ") }
            try expression(e)
        }
    }

    /// Whether an expression renders as one token-like unit that never needs parentheses.
    private static func isAtomic(_ e: SQLExpression) -> Bool {
        switch e {
        case .column, .allColumns, .bind, .literal, .subquery, .function, .countAll, .caseWhen, .cast, .excluded:
            return true
        case .decimal(let x), .codePointOrdered(let x):
            // `x COLLATE c` binds tighter than every operator, so an atomic x stays atomic.
            return isAtomic(x)
        case .unary, .binary, .and, .or, .isNull, .isDistinctFrom, .between, .like, .inList, .inSubquery, .exists, .fragment,
             .json, .fullText:
            return false
        }
    }

    /// Writes an operand of an operator: parenthesized unless atomic.
    private mutating func operand(_ e: SQLExpression) throws {
        if Self.isAtomic(e) { return try expression(e) }
        write("(")
        try expression(e)
        write(")")
    }

    /// Writes an operand of AND/OR. Comparisons and predicates bind tighter than AND and OR
    /// on every backend, so they go bare; nested AND/OR, NOT and raw fragments (whose text
    /// is unknown) are parenthesized.
    private mutating func logicalOperand(_ e: SQLExpression) throws {
        switch e {
        case .and, .or, .fragment, .unary(.not, _):
            write("(")
            try expression(e)
            write(")")
        default:
            try expression(e)
        }
    }

    private mutating func expression(_ e: SQLExpression) throws {
        switch e {
        case .column(let table, let name):
            if let table {
                try identifier(table)
                write(".")
            }
            try identifier(name)
        case .allColumns(let table):
            if let table {
                try identifier(table)
                write(".*")
            } else {
                write("*")
            }
        case .bind(let value):
            try bind(value)
        case .literal(let literal):
            try self.literal(literal)
        case .unary(let op, let x):
            switch op {
            case .not: write("NOT ")
            case .negate: write("-")
            }
            try operand(x)
        case .binary(let lhs, let op, let rhs):
            try operand(lhs)
            switch op {
            case .equal: write(" = ")
            case .notEqual: write(" <> ")
            case .less: write(" < ")
            case .lessOrEqual: write(" <= ")
            case .greater: write(" > ")
            case .greaterOrEqual: write(" >= ")
            case .add: write(" + ")
            case .subtract: write(" - ")
            case .multiply: write(" * ")
            case .divide: write(" / ")
            case .modulo: write(" % ")
            case .concat: write(" || ")
            }
            try operand(rhs)
        case .and(let terms):
            if terms.isEmpty { return write("1 = 1") }
            for (i, t) in terms.enumerated() {
                if i > 0 { write(" AND ") }
                try logicalOperand(t)
            }
        case .or(let terms):
            if terms.isEmpty { return write("1 = 0") }
            for (i, t) in terms.enumerated() {
                if i > 0 { write(" OR ") }
                try logicalOperand(t)
            }
        case .isNull(let x, let negated):
            try operand(x)
            write(negated ? " IS NOT NULL" : " IS NULL")
        case .isDistinctFrom(let lhs, let rhs, let negated):
            try operand(lhs)
            if dialect.supportsIsDistinctFrom {
                write(negated ? " IS NOT DISTINCT FROM " : " IS DISTINCT FROM ")
            } else {
                write(negated ? " IS " : " IS NOT ")
            }
            try operand(rhs)
        case .between(let x, let low, let high, let negated):
            try operand(x)
            write(negated ? " NOT BETWEEN " : " BETWEEN ")
            try operand(low)
            write(" AND ")
            try operand(high)
        case .like(let x, let pattern, let escape, let caseInsensitive, let negated):
            if caseInsensitive, dialect.caseInsensitiveLike == .lowerBothSides {
                write("lower(")
                try expression(x)
                write(negated ? ") NOT LIKE lower(" : ") LIKE lower(")
                try expression(pattern)
                write(")")
            } else {
                try operand(x)
                if caseInsensitive {
                    write(negated ? " NOT ILIKE " : " ILIKE ")
                } else {
                    write(negated ? " NOT LIKE " : " LIKE ")
                }
                try operand(pattern)
            }
            if let escape {
                write(" ESCAPE ")
                try operand(escape)
            }
        case .inList(let x, let list, let negated):
            // An empty list matches nothing; `x IN ()` is a syntax error on PostgreSQL.
            if list.isEmpty { return write(negated ? "1 = 1" : "1 = 0") }
            try operand(x)
            write(negated ? " NOT IN (" : " IN (")
            try expressionList(list)
            write(")")
        case .inSubquery(let x, let query, let negated):
            try operand(x)
            write(negated ? " NOT IN (" : " IN (")
            try select(query)
            write(")")
        case .exists(let query, let negated):
            write(negated ? "NOT EXISTS (" : "EXISTS (")
            try select(query)
            write(")")
        case .subquery(let query):
            write("(")
            try select(query)
            write(")")
        case .function(let name, let arguments, let distinct):
            if arguments.count == 1, !dialect.aggregateRenames.isEmpty,
               let renamed = dialect.aggregateRenames[name.uppercased()] {
                try functionName(renamed)
            } else {
                try functionName(name)
            }
            write(distinct ? "(DISTINCT " : "(")
            try expressionList(arguments)
            write(")")
        case .countAll:
            write("COUNT(*)")
        case .caseWhen(let branches, let otherwise):
            if branches.isEmpty { throw DatabaseError.misuse("a CASE expression needs at least one WHEN branch") }
            write("CASE")
            for b in branches {
                write(" WHEN ")
                try expression(b.condition)
                write(" THEN ")
                try expression(b.result)
            }
            if let otherwise {
                write(" ELSE ")
                try expression(otherwise)
            }
            write(" END")
        case .cast(let x, let type):
            write("CAST(")
            try expression(x)
            write(" AS ")
            writeText(dialect.castTypeName(type))
            write(")")
        case .excluded(let column):
            write("excluded.")
            try identifier(column)
        case .fragment(let f):
            try fragment(f)
        case .decimal(let x):
            guard let collation = dialect.decimalCollation else { return try expression(x) }
            try operand(x)
            write(" COLLATE ")
            try identifier(collation)
        case .codePointOrdered(let x):
            try operand(x)
            write(" COLLATE ")
            try identifier(dialect.codePointCollation)
        case .json(let operation):
            try json(operation)
        case .fullText(let search):
            try fullText(search)
        }
    }

    private mutating func functionName(_ name: String) throws {
        if mode == .text {
            let utf8 = name.utf8
            let valid = !utf8.isEmpty && utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x2E
            } && !(utf8.first.map { $0 >= 0x30 && $0 <= 0x39 } ?? true)
            if !valid {
                throw DatabaseError.misuse("\"\(name)\" is not a valid SQL function name: use letters, digits, '_' and '.' only, not starting with a digit")
            }
        }
        writeText(name)
    }

    private mutating func literal(_ literal: SQLLiteral) throws {
        switch literal {
        case .null: write("NULL")
        case .bool(let b): writeText(b ? dialect.booleanLiterals.true : dialect.booleanLiterals.false)
        case .default: write("DEFAULT")
        case .currentTimestamp: write("CURRENT_TIMESTAMP")
        case .integer(let i): writeText(String(i))
        case .double(let d):
            guard d.isFinite else { throw DatabaseError.misuse("the non-finite number \(d) cannot be written as an SQL literal; bind it as a value instead") }
            writeText(String(d))
        case .string(let s): writeText(quoteString(s))
        }
    }

    /// Spells a value as an inline literal (DDL only).
    private mutating func inlineLiteral(_ value: DatabaseValue) throws {
        switch value {
        case .null: write("NULL")
        case .integer(let i): writeText(String(i))
        case .double(let d): try literal(.double(d))
        case .bool(let b): try literal(.bool(b))
        case .text(let s), .json(let s): writeText(quoteString(s))
        case .decimal(let d): writeText(quoteString(d.description))
        case .date(let d): writeText(quoteString(DateText.format(d) + dialect.inlineDateSuffix))
        case .uuid(let u):
            switch dialect.binaryLiteralStyle {
            case .sqliteHex: writeText(Self.hexLiteral(withUnsafeBytes(of: u.uuid) { Data($0) }))
            case .postgresEscape: writeText(quoteString(u.uuidString.lowercased()))
            }
        case .blob(let data):
            switch dialect.binaryLiteralStyle {
            case .sqliteHex: writeText(Self.hexLiteral(data))
            case .postgresEscape: writeText(quoteString("\\x" + Self.hex(data)))
            }
        }
    }

    /// An inline string literal in the dialect's style; see ``SQLStringLiteralStyle``.
    private func quoteString(_ s: String) -> String {
        Self.quoteString(s, style: dialect.stringLiteralStyle)
    }

    /// `'…'` with quotes doubled, or (PostgreSQL, when the text holds a backslash) `E'…'`
    /// with quotes and backslashes doubled: safe whatever `standard_conforming_strings` says.
    /// Works on UTF-8 bytes, not `Character`s, so a quote followed by a combining mark is
    /// still doubled (Foundation's `replacingOccurrences` would skip it).
    static func quoteString(_ s: String, style: SQLStringLiteralStyle) -> String {
        let escapeBackslashes = style == .escapeStringWhenBackslash && s.utf8.contains(UInt8(ascii: "\\"))
        var out = [UInt8]()
        out.reserveCapacity(s.utf8.count + 3)
        if escapeBackslashes { out.append(UInt8(ascii: "E")) }
        out.append(UInt8(ascii: "'"))
        for byte in s.utf8 {
            out.append(byte)
            if byte == UInt8(ascii: "'") || (escapeBackslashes && byte == UInt8(ascii: "\\")) { out.append(byte) }
        }
        out.append(UInt8(ascii: "'"))
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(data.count * 2)
        for byte in data {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexLiteral(_ data: Data) -> String { "x'" + hex(data) + "'" }

    // MARK: Raw fragments

    private mutating func fragment(_ f: SQLFragment) throws {
        if mode == .shape {
            // The text and the number of values identify the rendering; the scan that
            // validated them ran when this shape was first rendered.
            shapeHash.combine(utf8: f.sql)
            shapeHash.combine(f.bindings.count)
            for value in f.bindings { try bind(value) }
            return
        }
        let pieces = SQLTextScanner.splitAtPlaceholders(f.sql, dialect: dialect)
        let placeholderCount = pieces.count - 1
        if placeholderCount != f.bindings.count {
            throw DatabaseError.misuse("the raw SQL fragment \"\(f.sql)\" has \(placeholderCount) '?' placeholder(s) but \(f.bindings.count) value(s) were given; give one value per '?'")
        }
        sql.append(pieces[0])
        for (value, piece) in zip(f.bindings, pieces.dropFirst()) {
            try bind(value)
            sql.append(piece)
        }
    }
}

// MARK: - JSON documents and full-text search

extension SQLRenderer {
    /// A JSON path as SQLite spells it, validated and written as a string literal (so that an
    /// expression index on it matches the queries on it).
    private mutating func sqlitePath(_ path: SQLJSONPath) throws {
        if mode == .text { try path.validate() }
        writeText(quoteString(path.description))
    }

    /// `document -> 'a' -> 0 …` (PostgreSQL): each key a validated string literal, each index
    /// an integer literal; `->>` for the last step when `lastAsText`.
    private mutating func postgresChain(_ document: SQLExpression, _ path: SQLJSONPath, lastAsText: Bool) throws {
        if mode == .text { try path.validate() }
        try operand(document)
        if path.elements.isEmpty, lastAsText { return write(" #>> '{}'") }
        for (i, element) in path.elements.enumerated() {
            write(lastAsText && i == path.elements.count - 1 ? " ->> " : " -> ")
            switch element {
            case .key(let k): writeText(quoteString(k))
            case .index(let n): writeText(String(n))
            }
        }
    }

    /// `json_type(document, 'path')`.
    private mutating func sqliteJSONFunction(_ name: StaticString, _ document: SQLExpression, _ path: SQLJSONPath) throws {
        write(name)
        write("(")
        try expression(document)
        write(", ")
        try sqlitePath(path)
        write(")")
    }

    mutating func json(_ operation: SQLJSONOperation) throws {
        switch dialect.jsonStyle {
        case .sqliteFunctions:
            switch operation {
            case .extract(let d, let p, let type):
                switch type {
                case .text, .string:
                    write("CASE ")
                    try sqliteJSONFunction("json_type", d, p)
                    write(" WHEN 'text' THEN ")
                    try sqliteJSONFunction("json_extract", d, p)
                    if type == .text {
                        // `->` spells true, false and numbers as JSON does ("1.50" stays so).
                        write(" WHEN 'null' THEN NULL ELSE ")
                        try operand(d)
                        write(" -> ")
                        try sqlitePath(p)
                    }
                    write(" END")
                case .integer, .double, .decimal:
                    write("CASE WHEN ")
                    try sqliteJSONFunction("json_type", d, p)
                    write(" IN ('integer', 'real') THEN ")
                    if type == .decimal {
                        // The number's own digits, compared by the decimal collation.
                        try operand(d)
                        write(" -> ")
                        try sqlitePath(p)
                    } else {
                        try sqliteJSONFunction("json_extract", d, p)
                    }
                    write(" END")
                case .bool:
                    write("CASE ")
                    try sqliteJSONFunction("json_type", d, p)
                    write(" WHEN 'true' THEN ")
                    writeText(dialect.booleanLiterals.true)
                    write(" WHEN 'false' THEN ")
                    writeText(dialect.booleanLiterals.false)
                    write(" END")
                }
            case .contains(let d, let p, let value):
                write("unity_json_contains(")
                if p.elements.isEmpty {
                    try expression(d)
                } else {
                    try operand(d)
                    write(" -> ")
                    try sqlitePath(p)
                }
                write(", ")
                try expression(value)
                write(")")
            case .exists(let d, let p):
                try sqliteJSONFunction("json_type", d, p)
                write(" IS NOT NULL")
            }
        case .postgresJSONB:
            switch operation {
            case .extract(let d, let p, let type):
                let (typeName, castTo): (StaticString, StaticString?) = switch type {
                case .text: ("", nil)
                case .string: ("string", nil)
                case .integer, .decimal: ("number", "NUMERIC")
                case .double: ("number", "DOUBLE PRECISION")
                case .bool: ("boolean", "BOOLEAN")
                }
                if type == .text { return try postgresChain(d, p, lastAsText: true) }
                write("CASE jsonb_typeof(")
                try postgresChain(d, p, lastAsText: false)
                write(") WHEN '")
                write(typeName)
                write("' THEN ")
                if let castTo {
                    write("CAST(")
                    try postgresChain(d, p, lastAsText: false)
                    write(" AS ")
                    write(castTo)
                    write(")")
                } else {
                    write("(")
                    try postgresChain(d, p, lastAsText: false)
                    write(") #>> '{}'")
                }
                write(" END")
            case .contains(let d, let p, let value):
                try postgresChain(d, p, lastAsText: false)
                write(" @> ")
                try operand(value)
            case .exists(let d, let p):
                // Not `?`: it also finds a string element of an array (`'["k"]' ? 'k'`),
                // which a path on SQLite does not.
                write("(")
                try postgresChain(d, p, lastAsText: false)
                write(") IS NOT NULL")
            }
        }
    }

    // MARK: Full-text search

    /// `coalesce("t"."a", '') || ' ' || coalesce("t"."b", '')`: the searched text (PostgreSQL).
    private mutating func fullTextDocumentText(_ index: FullTextIndex, qualifier: String?) throws {
        for (i, column) in index.columns.enumerated() {
            if i > 0 { write(" || ' ' || ") }
            write("coalesce(")
            if let qualifier {
                try identifier(qualifier)
                write(".")
            }
            try identifier(column)
            write(", '')")
        }
    }

    /// `to_tsvector('simple', text)`, the very expression the GIN index holds.
    private mutating func fullTextVector(_ index: FullTextIndex, qualifier: String?) throws {
        write("to_tsvector(")
        writeText(quoteString(index.language.postgresConfiguration))
        write(", ")
        try fullTextDocumentText(index, qualifier: qualifier)
        write(")")
    }

    /// The query as a `tsquery`: each term through PostgreSQL's own parser
    /// (`phraseto_tsquery`, which reads plain text, never syntax), prefix terms through
    /// `to_tsquery` with words Unity split (letters and digits only), joined by `&&`.
    private mutating func fullTextTSQuery(_ search: SQLFullTextSearch) throws {
        let configuration = quoteString(search.index.language.postgresConfiguration)
        write("(")
        for (i, term) in search.query.terms.enumerated() {
            if i > 0 { write(" && ") }
            if term.isPrefix {
                write("to_tsquery(")
                writeText(configuration)
                write(", ")
                try bind(.text(FullTextQuery.tsqueryPrefix(term)))
            } else {
                write("phraseto_tsquery(")
                writeText(configuration)
                write(", ")
                try bind(.text(term.text))
            }
            write(")")
        }
        write(")")
    }

    /// ` FROM idx WHERE idx MATCH ?`: the FTS5 search every full-text node runs on SQLite.
    private mutating func fts5Search(_ search: SQLFullTextSearch) throws {
        write(" FROM ")
        try identifier(search.index.name)
        write(" WHERE ")
        try identifier(search.index.name)
        write(" MATCH ")
        try bind(.text(search.query.fts5Query))
    }

    /// `table.key`: the searched row's key, which is the FTS5 table's rowid.
    private mutating func fts5RowKey(_ search: SQLFullTextSearch, qualifier: String) throws {
        try identifier(qualifier)
        write(".")
        try identifier(search.index.key)
    }

    mutating func fullText(_ search: SQLFullTextSearch) throws {
        let index = search.index
        if mode == .text { try index.validate() }
        let qualifier = search.alias ?? index.table
        guard !search.query.terms.isEmpty else {
            // A query without a word matches nothing, on both backends alike.
            switch search.output {
            case .matches: return write("1 = 0")
            case .relevance, .snippet: return write("NULL")
            }
        }
        // In both modes: the markers and the length are bound, so they are not in the shape and
        // a cached shape does not vouch for them.
        if case .snippet(let start, let end, let ellipsis, let words) = search.output {
            guard (1...64).contains(words) else {
                throw DatabaseError.misuse("a full-text snippet of \(words) words: ask for 1 to 64 (FTS5's limit)")
            }
            for marker in [start, end, ellipsis] where marker.contains("\"") || marker.contains(",") {
                throw DatabaseError.misuse("the snippet marker \(marker.debugDescription) holds \" or ,, which ts_headline's options cannot carry; choose another")
            }
        }
        switch dialect.fullTextStyle {
        case .fts5:
            switch search.output {
            case .matches:
                try fts5RowKey(search, qualifier: qualifier)
                write(" IN (SELECT rowid")
                try fts5Search(search)
                write(")")
            case .relevance:
                // Every matching row's rank is asked for (ORDER BY): the ranks of all matches
                // are computed once, in a subquery that SQLite keeps whole (its LIMIT stops the
                // flattening) and looks up by rowid through an automatic index. A correlated
                // bm25 per row would run the search again for each row: the square of the
                // number of matches.
                write("(SELECT \"unity_fts_rank\".\"r\" FROM (SELECT rowid AS \"rid\", -bm25(")
                try identifier(index.name)
                write(") AS \"r\"")
                try fts5Search(search)
                write(" LIMIT -1) AS \"unity_fts_rank\" WHERE \"unity_fts_rank\".\"rid\" = ")
                try fts5RowKey(search, qualifier: qualifier)
                write(")")
            case .snippet(let start, let end, let ellipsis, let words):
                // Asked for the rows a query returns (usually a page): one search each.
                write("(SELECT snippet(")
                try identifier(index.name)
                write(", -1, ")
                try bind(.text(start))
                write(", ")
                try bind(.text(end))
                write(", ")
                try bind(.text(ellipsis))
                write(", ")
                try bind(.integer(Int64(words)))
                write(")")
                try fts5Search(search)
                write(" AND rowid = ")
                try fts5RowKey(search, qualifier: qualifier)
                write(")")
            }
        case .tsvector:
            switch search.output {
            case .matches:
                try fullTextVector(index, qualifier: qualifier)
                write(" @@ ")
                try fullTextTSQuery(search)
            case .relevance:
                write("ts_rank(")
                try fullTextVector(index, qualifier: qualifier)
                write(", ")
                try fullTextTSQuery(search)
                write(")")
            case .snippet(let start, let end, let ellipsis, let words):
                write("ts_headline(")
                writeText(quoteString(index.language.postgresConfiguration))
                write(", ")
                try fullTextDocumentText(index, qualifier: qualifier)
                write(", ")
                try fullTextTSQuery(search)
                write(", ")
                let minWords = max(1, words / 2)
                try bind(.text("StartSel=\"\(start)\", StopSel=\"\(end)\", FragmentDelimiter=\"\(ellipsis)\", "
                    + "MaxWords=\(max(words, minWords + 1)), MinWords=\(minWords), MaxFragments=1"))
                write(")")
            }
        }
    }

    mutating func fullTextIndex(_ s: SQLFullTextIndexStatement) throws {
        let index = s.index
        if mode == .text { try index.validate() }
        switch dialect.fullTextStyle {
        case .tsvector:
            guard case .create = s.part else {
                throw DatabaseError.misuse("PostgreSQL's full-text index is one GIN index; use FullTextIndex.createStatements(for:), which has no triggers there")
            }
            inlineValues = true
            defer { inlineValues = false }
            write("CREATE INDEX IF NOT EXISTS ")
            try identifier(index.name)
            write(" ON ")
            try identifier(index.table)
            write(" USING GIN ((")
            try fullTextVector(index, qualifier: nil)
            write("))")
        case .fts5:
            switch s.part {
            case .create:
                write("CREATE VIRTUAL TABLE IF NOT EXISTS ")
                try identifier(index.name)
                write(" USING fts5(")
                for column in index.columns {
                    try identifier(column)
                    write(", ")
                }
                write("content=")
                writeText(quoteString(index.table))
                write(", content_rowid=")
                writeText(quoteString(index.key))
                write(", tokenize=")
                writeText(quoteString(index.language.sqliteTokenizer))
                write(")")
            case .trigger(let trigger):
                write("CREATE TRIGGER IF NOT EXISTS ")
                try identifier(index.name + "_" + trigger.rawValue)
                switch trigger {
                case .insert: write(" AFTER INSERT ON ")
                case .delete: write(" AFTER DELETE ON ")
                case .update:
                    write(" AFTER UPDATE OF ")
                    try identifier(index.key)
                    for column in index.columns {
                        write(", ")
                        try identifier(column)
                    }
                    write(" ON ")
                }
                try identifier(index.table)
                write(" BEGIN ")
                if trigger != .insert {
                    try fullTextTriggerInsert(index, row: "old", delete: true)
                    write("; ")
                }
                if trigger != .delete {
                    try fullTextTriggerInsert(index, row: "new", delete: false)
                    write("; ")
                }
                write("END")
            case .rebuild:
                write("INSERT INTO ")
                try identifier(index.name)
                write(" (")
                try identifier(index.name)
                write(") VALUES ('rebuild')")
            case .dropTrigger(let trigger):
                write("DROP TRIGGER IF EXISTS ")
                try identifier(index.name + "_" + trigger.rawValue)
            case .dropTable:
                write("DROP TABLE IF EXISTS ")
                try identifier(index.name)
            }
        }
    }

    /// `INSERT INTO fts (rowid, cols) VALUES (new.key, new.cols)`, or with `'delete'` first.
    private mutating func fullTextTriggerInsert(_ index: FullTextIndex, row: StaticString, delete: Bool) throws {
        write("INSERT INTO ")
        try identifier(index.name)
        write(" (")
        if delete {
            try identifier(index.name)
            write(", ")
        }
        write("rowid")
        for column in index.columns {
            write(", ")
            try identifier(column)
        }
        write(delete ? ") VALUES ('delete', " : ") VALUES (")
        write(row)
        write(".")
        try identifier(index.key)
        for column in index.columns {
            write(", ")
            write(row)
            write(".")
            try identifier(column)
        }
        write(")")
    }
}
