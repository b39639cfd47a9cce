extension SQLStatement {
    /// The tables this statement reads, as observation finds them: FROM, JOINs, subqueries (in
    /// FROM, IN, EXISTS, scalar subqueries) and compound members. Throws
    /// ``ObservationError/tablesUnknown(_:)`` for raw SQL, a raw FROM or JOIN, a raw fragment
    /// that may hold a subquery (its text says SELECT) or a statement that is not a SELECT,
    /// and ``ObservationError/noTables`` for a SELECT that reads no table.
    public func tablesRead() throws -> Set<String> {
        try ObservedTables.tables(in: self)
    }
}

/// The tables a statement reads, found by walking its AST.
enum ObservedTables {
    /// Every table `statement` reads: FROM, JOINs, subqueries (in FROM, IN, EXISTS, scalar
    /// subqueries), compound members. Throws ``ObservationError/tablesUnknown(_:)`` for raw
    /// SQL, a raw FROM or JOIN, or a raw fragment that may hold a subquery (its text says
    /// SELECT), and ``ObservationError/noTables`` for a statement that reads none.
    static func tables(in statement: SQLStatement) throws -> Set<String> {
        guard case .select(let select) = statement else {
            if case .raw(let fragment) = statement {
                throw ObservationError.tablesUnknown("the raw SQL \"\(abbreviated(fragment.sql))\"")
            }
            throw ObservationError.tablesUnknown("a statement that is not a SELECT")
        }
        var walker = Walker()
        try walker.walk(select)
        guard !walker.tables.isEmpty else { throw ObservationError.noTables }
        return walker.tables
    }

    static func abbreviated(_ sql: String) -> String {
        sql.count > 60 ? String(sql.prefix(57)) + "…" : sql
    }

    private struct Walker {
        var tables: Set<String> = []

        mutating func walk(_ select: SQLSelect) throws {
            for column in select.columns {
                if case .expression(let e, _) = column { try walk(e) }
            }
            if let from = select.from { try walk(from) }
            for join in select.joins {
                switch join {
                case .join(_, let source, let condition):
                    try walk(source)
                    if let condition { try walk(condition) }
                case .fragment(let fragment):
                    throw ObservationError.tablesUnknown("the raw join \"\(ObservedTables.abbreviated(fragment.sql))\"")
                }
            }
            if let condition = select.whereCondition { try walk(condition) }
            for e in select.groupBy { try walk(e) }
            if let having = select.having { try walk(having) }
            for member in select.compounds { try walk(member.select) }
            for ordering in select.orderBy { try walk(ordering.expression) }
        }

        mutating func walk(_ source: SQLTableSource) throws {
            switch source {
            case .table(let name, _): tables.insert(name)
            case .subquery(let select, _): try walk(select)
            case .fragment(let fragment):
                throw ObservationError.tablesUnknown("the raw FROM \"\(ObservedTables.abbreviated(fragment.sql))\"")
            }
        }

        mutating func walk(_ e: SQLExpression) throws {
            switch e {
            case .column, .allColumns, .bind, .literal, .countAll, .excluded:
                return
            case .unary(_, let a), .isNull(let a, _), .cast(let a, _), .decimal(let a), .codePointOrdered(let a):
                try walk(a)
            case .binary(let a, _, let b), .isDistinctFrom(let a, let b, _):
                try walk(a)
                try walk(b)
            case .and(let list), .or(let list):
                for item in list { try walk(item) }
            case .between(let a, let low, let high, _):
                try walk(a)
                try walk(low)
                try walk(high)
            case .like(let a, let pattern, let escape, _, _):
                try walk(a)
                try walk(pattern)
                if let escape { try walk(escape) }
            case .inList(let a, let list, _):
                try walk(a)
                for item in list { try walk(item) }
            case .inSubquery(let a, let select, _):
                try walk(a)
                try walk(select)
            case .exists(let select, _), .subquery(let select):
                try walk(select)
            case .function(_, let arguments, _):
                for item in arguments { try walk(item) }
            case .caseWhen(let branches, let otherwise):
                for branch in branches {
                    try walk(branch.condition)
                    try walk(branch.result)
                }
                if let otherwise { try walk(otherwise) }
            case .json(.extract(let document, _, _)), .json(.exists(let document, _)):
                try walk(document)
            case .json(.contains(let document, _, let value)):
                try walk(document)
                try walk(value)
            case .fullText(let search):
                // The index's table (SQLite's FTS5 table follows it by triggers, in the same
                // transaction).
                tables.insert(search.index.table)
            case .fragment(let fragment):
                // A fragment is a user's text: one that holds no SELECT reads no table.
                if containsSelect(fragment.sql) {
                    throw ObservationError.tablesUnknown("the raw fragment \"\(ObservedTables.abbreviated(fragment.sql))\"")
                }
            }
        }

        /// True when `sql` has the word SELECT outside quoted strings and identifiers.
        func containsSelect(_ sql: String) -> Bool {
            var quote: Character?
            var word = ""
            for ch in sql {
                if let q = quote {
                    if ch == q { quote = nil }
                    continue
                }
                if ch == "'" || ch == "\"" {
                    quote = ch
                    word = ""
                    continue
                }
                if ch.isLetter || ch == "_" {
                    word.append(ch)
                } else {
                    if word.lowercased() == "select" { return true }
                    word = ""
                }
            }
            return word.lowercased() == "select"
        }
    }
}
