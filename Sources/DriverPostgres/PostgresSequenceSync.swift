import CLibPQ
import Unity

/// How an INSERT that supplies values to identity or serial columns keeps their sequences
/// ahead of those values: one statement per such column, which moves the sequence to the
/// column's maximum when that maximum has reached it (and does nothing otherwise).
struct PGSequenceFix {
    /// Each sequence (as `pg_get_serial_sequence` names it) with the statement that moves it;
    /// empty when the INSERT supplies no identity or serial column.
    let steps: [(sequence: String, sql: String)]
}

extension PostgresConnection {
    /// The target of `INSERT INTO table [(columns)]`: the table's name parts as the server
    /// reads them (unquoted parts folded to lower case) and the column names, or nil columns
    /// when the statement names none (it fills the table's columns in order). Nil when `sql`
    /// is not an INSERT this can read, or inserts DEFAULT VALUES.
    static func insertTarget(_ sql: String) -> (table: [String], columns: [String]?)? {
        var scanner = PGIdentifierScanner(sql)
        guard scanner.keyword("INSERT"), scanner.keyword("INTO") else { return nil }
        var table: [String] = []
        repeat {
            guard let part = scanner.identifier() else { return nil }
            table.append(part)
        } while scanner.symbol(".")
        if scanner.keyword("AS") { _ = scanner.identifier() }
        guard scanner.symbol("(") else {
            return scanner.keyword("DEFAULT") ? nil : (table, nil)
        }
        // `INSERT INTO t (SELECT …)` is a query, not a column list.
        if scanner.peekKeyword("SELECT") || scanner.peekKeyword("WITH") || scanner.peekKeyword("VALUES") { return (table, nil) }
        var columns: [String] = []
        repeat {
            guard let column = scanner.identifier() else { return nil }
            columns.append(column)
        } while scanner.symbol(",")
        guard scanner.symbol(")") else { return nil }
        return (table, columns)
    }

    /// True when `sql` starts with INSERT (a byte check, so other statements pay nothing).
    @inline(__always)
    static func mayInsert(_ sql: String) -> Bool {
        guard let first = sql.utf8.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x0D }) else { return false }
        return first == UInt8(ascii: "I") || first == UInt8(ascii: "i")
    }

    /// True when `sql` may create, change or drop a table (its first word is CREATE, ALTER or
    /// DROP): what was learned about tables' sequences is forgotten.
    static func mayChangeSchema(_ sql: String) -> Bool {
        guard let first = sql.utf8.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x0D }) else { return false }
        switch first | 0x20 {
        case UInt8(ascii: "c"), UInt8(ascii: "a"), UInt8(ascii: "d"):
            let word = sql.drop { $0.isWhitespace }.prefix { $0.isLetter }.uppercased()
            return word == "CREATE" || word == "ALTER" || word == "DROP"
        default:
            return false
        }
    }

    /// The catalog query that finds a table's identity and serial columns with their
    /// sequences, schema-qualified, by the table's name as the INSERT wrote it (`$1`). A
    /// sequence comes back only when this role may read the table and read and move the
    /// sequence: a role that may only insert explicit ids gets them stored, without the
    /// bookkeeping (which would otherwise fail its INSERT and, in a transaction, abort it).
    static let sequenceLookupSQL = """
        SELECT attname, qualified, CASE WHEN seq IS NOT NULL AND has_table_privilege(relid, 'SELECT') \
        AND has_sequence_privilege(seq, 'UPDATE') AND has_sequence_privilege(seq, 'SELECT, USAGE') THEN seq END \
        FROM (SELECT a.attname, c.oid AS relid, quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS qualified, \
        pg_get_serial_sequence(quote_ident(n.nspname) || '.' || quote_ident(c.relname), a.attname) AS seq \
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
        WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped AND (a.attidentity <> '' OR a.atthasdef)) AS s
        """

    /// The statement that moves sequence `$1` to the maximum of `column` in `table` (both
    /// already quoted) when that maximum is at or past the value the sequence would give next.
    static func sequenceFixSQL(table: String, column: String) -> String {
        "SELECT setval(CAST($1 AS regclass), m) FROM (SELECT max(\(column)) AS m FROM \(table)) AS x "
            + "WHERE m > COALESCE(pg_sequence_last_value(CAST($1 AS regclass)), "
            + "(SELECT seqstart - 1 FROM pg_sequence WHERE seqrelid = CAST($1 AS regclass)))"
    }

    /// After an INSERT ran: when it supplied values to identity or serial columns, moves their
    /// sequences past the largest value the table now holds, so that the next generated id
    /// does not collide (SQLite's AUTOINCREMENT does this by itself). What the INSERT's columns
    /// are is learned once per statement text and connection; an INSERT that supplies none of
    /// them pays nothing more.
    func keepSequencesAhead(of sql: String) throws {
        let fix: PGSequenceFix
        if let last = lastSequenceFix, SQLTextKey.sameRepresentation(last.sql, sql) {
            fix = last.fix
        } else if let known = sequenceFixes[sql] {
            fix = known
            lastSequenceFix = (sql, known)
        } else {
            fix = try lookUpSequenceFix(for: sql)
            sequenceFixes[sql] = fix
            lastSequenceFix = (sql, fix)
        }
        guard !fix.steps.isEmpty, let conn = handle else { return }
        for step in fix.steps {
            let result = step.sequence.withCString { value in
                var values: [UnsafePointer<CChar>?] = [value]
                return values.withUnsafeMutableBufferPointer { PQexecParams(conn, step.sql, 1, nil, $0.baseAddress, nil, nil, 0) }
            }
            defer { PQclear(result) }
            guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else {
                throw pgError(result: result, connection: conn, sql: step.sql)
            }
        }
    }

    /// Forgets what was learned about tables' sequences (a table may have changed).
    func forgetSequenceFixes() {
        if !sequenceFixes.isEmpty { sequenceFixes.removeAll() }
        lastSequenceFix = nil
    }

    /// Asks the catalog which of the INSERT's columns take their values from a sequence.
    private func lookUpSequenceFix(for sql: String) throws -> PGSequenceFix {
        guard let target = Self.insertTarget(sql), let conn = handle else { return PGSequenceFix(steps: []) }
        let tableName = target.table.map(Self.quoteIdentifier).joined(separator: ".")
        // Through a pooler, outside a transaction, the search path that resolves the name is
        // pinned in the same pipeline.
        let pins = transactionPooler && PQtransactionStatus(conn) == PQTRANS_IDLE
        var rows: [(column: String, table: String, sequence: String?)] = []
        var failure: DatabaseError?
        func collect(_ result: OpaquePointer) {
            for r in 0..<PQntuples(result) {
                func text(_ c: Int32) -> String? {
                    PQgetisnull(result, r, c) != 0 ? nil : PQgetvalue(result, r, c).map { String(cString: $0) }
                }
                if let column = text(0), let table = text(1) { rows.append((column, table, text(2))) }
            }
        }
        let ran: Bool = tableName.withCString { value in
            var values: [UnsafePointer<CChar>?] = [value]
            return values.withUnsafeMutableBufferPointer { buffer in
                if !pins {
                    let result = PQexecParams(conn, Self.sequenceLookupSQL, 1, nil, buffer.baseAddress, nil, nil, 0)
                    defer { PQclear(result) }
                    guard let result, PQresultStatus(result) == PGRES_TUPLES_OK else {
                        failure = pgError(result: result, connection: conn, sql: Self.sequenceLookupSQL)
                        return false
                    }
                    collect(result)
                    return true
                }
                guard PQenterPipelineMode(conn) == 1 else { return false }
                let sent = sendPin(on: conn)
                    && PQsendQueryParams(conn, Self.sequenceLookupSQL, 1, nil, buffer.baseAddress, nil, nil, 0) == 1
                    && PQpipelineSync(conn) == 1
                if sent {
                    Self.readPipeline(conn) { position, result in
                        switch PQresultStatus(result) {
                        case PGRES_TUPLES_OK where position == 1: collect(result)
                        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_PIPELINE_ABORTED: return
                        default: if failure == nil { failure = pgError(result: result, connection: conn, sql: Self.sequenceLookupSQL) }
                        }
                    }
                }
                if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
                    Self.drainResults(on: conn)
                    _ = PQexitPipelineMode(conn)
                }
                return sent
            }
        }
        if let failure { throw failure }
        guard ran else { throw pgError(result: nil, connection: conn, sql: Self.sequenceLookupSQL) }
        let supplied = target.columns.map(Set.init)
        let steps = rows.compactMap { row -> (sequence: String, sql: String)? in
            guard let sequence = row.sequence, supplied?.contains(row.column) ?? true else { return nil }
            return (sequence, Self.sequenceFixSQL(table: row.table, column: Self.quoteIdentifier(row.column)))
        }
        return PGSequenceFix(steps: steps)
    }
}

/// Reads identifiers, keywords and symbols from the start of a SQL statement, as PostgreSQL
/// reads them: unquoted names fold to lower case, quoted ones keep their case and `""`.
struct PGIdentifierScanner {
    private let scalars: [Unicode.Scalar]
    private var index = 0

    init(_ sql: String) {
        scalars = Array(sql.unicodeScalars.prefix(4096))
    }

    private mutating func skipSpace() {
        while index < scalars.count, scalars[index].properties.isWhitespace { index += 1 }
    }

    private static func isNameStart(_ s: Unicode.Scalar) -> Bool {
        s == "_" || s.properties.isAlphabetic
    }

    private static func isNamePart(_ s: Unicode.Scalar) -> Bool {
        isNameStart(s) || s == "$" || ("0"..."9").contains(s)
    }

    /// Consumes `word` (any case) when it comes next as a whole word.
    mutating func keyword(_ word: String) -> Bool {
        guard peekKeyword(word) else { return false }
        skipSpace()
        index += word.unicodeScalars.count
        return true
    }

    /// Whether `word` (any case) comes next as a whole word.
    mutating func peekKeyword(_ word: String) -> Bool {
        skipSpace()
        let expected = Array(word.uppercased().unicodeScalars)
        guard index + expected.count <= scalars.count else { return false }
        for (offset, scalar) in expected.enumerated() where String(scalars[index + offset]).uppercased() != String(scalar) {
            return false
        }
        let after = index + expected.count
        return after == scalars.count || !Self.isNamePart(scalars[after])
    }

    /// Consumes `symbol` when it comes next.
    mutating func symbol(_ symbol: Unicode.Scalar) -> Bool {
        skipSpace()
        guard index < scalars.count, scalars[index] == symbol else { return false }
        index += 1
        return true
    }

    /// Reads one identifier, quoted or not.
    mutating func identifier() -> String? {
        skipSpace()
        guard index < scalars.count else { return nil }
        if scalars[index] == "\"" {
            var name = String.UnicodeScalarView()
            index += 1
            while index < scalars.count {
                if scalars[index] == "\"" {
                    if index + 1 < scalars.count, scalars[index + 1] == "\"" {
                        name.append("\"")
                        index += 2
                        continue
                    }
                    index += 1
                    return name.isEmpty ? nil : String(name)
                }
                name.append(scalars[index])
                index += 1
            }
            return nil
        }
        guard Self.isNameStart(scalars[index]) else { return nil }
        var name = String.UnicodeScalarView()
        while index < scalars.count, Self.isNamePart(scalars[index]) {
            name.append(scalars[index])
            index += 1
        }
        // PostgreSQL folds unquoted names to lower case (ASCII letters only).
        return String(String(name).map { $0.isASCII ? Character($0.lowercased()) : $0 })
    }
}
