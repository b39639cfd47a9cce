/// How one backend spells SQL: placeholder style, identifier quoting, type names, upsert
/// syntax, RETURNING, boolean literals, LIKE semantics.
///
/// A dialect is data (capability flags and spellings), not code: one renderer
/// (the internal `SQLRenderer`) reads these flags. Each dialect value owns a cache of rendered SQL per
/// statement shape, so statements that differ only in their bind values render once.
public struct SQLDialect: Sendable, Hashable {
    /// The backend's name: "sqlite" or "postgres".
    public var name: String { storage.name }
    /// How bind parameters are spelled.
    public var placeholderStyle: SQLPlaceholderStyle { storage.placeholderStyle }
    /// Whether raw fragments may quote identifiers with backticks or brackets (SQLite), which
    /// the placeholder rewriter must then skip over.
    public var allowsBacktickAndBracketIdentifiers: Bool { storage.allowsBacktickAndBracketIdentifiers }
    /// Whether `$tag$ … $tag$` dollar-quoted strings exist (PostgreSQL), which the
    /// placeholder rewriter must then skip over.
    public var allowsDollarQuotedStrings: Bool { storage.allowsDollarQuotedStrings }
    /// The spelling of the boolean literals, true then false.
    public var booleanLiterals: (true: String, false: String) { storage.booleanLiterals }
    /// Whether INSERT/UPDATE/DELETE … RETURNING is available.
    public var supportsReturning: Bool { storage.supportsReturning }
    /// Whether INSERT … ON CONFLICT … DO NOTHING/DO UPDATE is available.
    public var supportsUpsert: Bool { storage.supportsUpsert }
    /// Whether an INSERT … SELECT followed by ON CONFLICT needs a WHERE clause on the SELECT
    /// (SQLite's parser otherwise reads ON CONFLICT as a join constraint).
    public var upsertSelectNeedsWhere: Bool { storage.upsertSelectNeedsWhere }
    /// How a case-insensitive LIKE is spelled.
    public var caseInsensitiveLike: SQLCaseInsensitiveLikeStyle { storage.caseInsensitiveLike }
    /// Whether the null-safe comparison is spelled `IS [NOT] DISTINCT FROM` (true) or
    /// SQLite's `IS NOT` / `IS` (false).
    public var supportsIsDistinctFrom: Bool { storage.supportsIsDistinctFrom }
    /// Whether OFFSET needs a LIMIT in front of it (SQLite: `LIMIT -1 OFFSET ?`).
    public var offsetRequiresLimit: Bool { storage.offsetRequiresLimit }
    /// The column definition that replaces type and PRIMARY KEY of an auto-increment key.
    public var autoIncrementPrimaryKey: String { storage.autoIncrementPrimaryKey }
    /// Whether primary-key columns must be declared NOT NULL explicitly to behave like
    /// PostgreSQL (SQLite lets a non-integer PRIMARY KEY hold NULL otherwise).
    public var primaryKeyNeedsExplicitNotNull: Bool { storage.primaryKeyNeedsExplicitNotNull }
    /// How blobs and UUIDs are spelled when a DDL default must inline them.
    public var binaryLiteralStyle: SQLBinaryLiteralStyle { storage.binaryLiteralStyle }
    /// The suffix appended to a date inlined in DDL (`+00` on PostgreSQL makes the UTC
    /// text unambiguous; SQLite stores the text as is).
    public var inlineDateSuffix: String { storage.inlineDateSuffix }
    /// The column type names.
    public var typeNames: SQLTypeNames { storage.typeNames }
    /// BEGIN statements for each ``TransactionKind``.
    public var beginStatements: SQLBeginStatements { storage.beginStatements }
    /// The collation added to columns declared ``ColumnType/decimal`` (SQLite:
    /// `unity_decimal`, registered by the driver, which compares decimal text as numbers),
    /// or nil when the type itself compares numerically (PostgreSQL's NUMERIC).
    public var decimalCollation: String? { storage.decimalCollation }
    /// Aggregates rendered under another name, by upper-case name (SQLite: `SUM` →
    /// `unity_sum`, `AVG` → `unity_avg`, exact decimal arithmetic registered by the driver).
    public var aggregateRenames: [String: String] { storage.aggregateRenames }
    /// Whether `DECLARE … CURSOR` / `FETCH` / `CLOSE` exist (PostgreSQL).
    public var supportsServerCursors: Bool { storage.supportsServerCursors }
    /// Whether `COPY … FROM STDIN` / `COPY (…) TO STDOUT` exist (PostgreSQL): bulk loads and
    /// exports stream rows instead of running one statement per row.
    public var supportsCopy: Bool { storage.supportsCopy }

    /// The cache of rendered SQL per statement shape; not part of the dialect's identity.
    var cache: SQLRenderCache { storage.cache }

    /// Everything above, in one shared object: the renderer and every connection hold a
    /// dialect, and copying one reference costs a fraction of copying twenty fields.
    private let storage: Storage

    private final class Storage: Sendable {
        let name: String
        let placeholderStyle: SQLPlaceholderStyle
        let allowsBacktickAndBracketIdentifiers: Bool
        let allowsDollarQuotedStrings: Bool
        let booleanLiterals: (true: String, false: String)
        let supportsReturning: Bool
        let supportsUpsert: Bool
        let upsertSelectNeedsWhere: Bool
        let caseInsensitiveLike: SQLCaseInsensitiveLikeStyle
        let supportsIsDistinctFrom: Bool
        let offsetRequiresLimit: Bool
        let autoIncrementPrimaryKey: String
        let primaryKeyNeedsExplicitNotNull: Bool
        let binaryLiteralStyle: SQLBinaryLiteralStyle
        let inlineDateSuffix: String
        let typeNames: SQLTypeNames
        let beginStatements: SQLBeginStatements
        let decimalCollation: String?
        let aggregateRenames: [String: String]
        let supportsServerCursors: Bool
        let supportsCopy: Bool
        let cache: SQLRenderCache

        init(
            name: String,
            placeholderStyle: SQLPlaceholderStyle,
            allowsBacktickAndBracketIdentifiers: Bool,
            allowsDollarQuotedStrings: Bool,
            booleanLiterals: (true: String, false: String),
            supportsReturning: Bool,
            supportsUpsert: Bool,
            upsertSelectNeedsWhere: Bool,
            caseInsensitiveLike: SQLCaseInsensitiveLikeStyle,
            supportsIsDistinctFrom: Bool,
            offsetRequiresLimit: Bool,
            autoIncrementPrimaryKey: String,
            primaryKeyNeedsExplicitNotNull: Bool,
            binaryLiteralStyle: SQLBinaryLiteralStyle,
            inlineDateSuffix: String,
            typeNames: SQLTypeNames,
            beginStatements: SQLBeginStatements,
            decimalCollation: String?,
            aggregateRenames: [String: String],
            supportsServerCursors: Bool,
            supportsCopy: Bool,
            cache: SQLRenderCache
        ) {
            self.name = name
            self.placeholderStyle = placeholderStyle
            self.allowsBacktickAndBracketIdentifiers = allowsBacktickAndBracketIdentifiers
            self.allowsDollarQuotedStrings = allowsDollarQuotedStrings
            self.booleanLiterals = booleanLiterals
            self.supportsReturning = supportsReturning
            self.supportsUpsert = supportsUpsert
            self.upsertSelectNeedsWhere = upsertSelectNeedsWhere
            self.caseInsensitiveLike = caseInsensitiveLike
            self.supportsIsDistinctFrom = supportsIsDistinctFrom
            self.offsetRequiresLimit = offsetRequiresLimit
            self.autoIncrementPrimaryKey = autoIncrementPrimaryKey
            self.primaryKeyNeedsExplicitNotNull = primaryKeyNeedsExplicitNotNull
            self.binaryLiteralStyle = binaryLiteralStyle
            self.inlineDateSuffix = inlineDateSuffix
            self.typeNames = typeNames
            self.beginStatements = beginStatements
            self.decimalCollation = decimalCollation
            self.aggregateRenames = aggregateRenames
            self.supportsServerCursors = supportsServerCursors
            self.supportsCopy = supportsCopy
            self.cache = cache
        }
    }

    /// Creates a dialect. Each created dialect has its own rendered-SQL cache.
    public init(
        name: String, placeholderStyle: SQLPlaceholderStyle, allowsBacktickAndBracketIdentifiers: Bool,
        allowsDollarQuotedStrings: Bool, booleanLiterals: (true: String, false: String), supportsReturning: Bool,
        supportsUpsert: Bool, upsertSelectNeedsWhere: Bool, caseInsensitiveLike: SQLCaseInsensitiveLikeStyle,
        supportsIsDistinctFrom: Bool, offsetRequiresLimit: Bool, autoIncrementPrimaryKey: String,
        primaryKeyNeedsExplicitNotNull: Bool, binaryLiteralStyle: SQLBinaryLiteralStyle, inlineDateSuffix: String,
        typeNames: SQLTypeNames, beginStatements: SQLBeginStatements, decimalCollation: String? = nil,
        aggregateRenames: [String: String] = [:], supportsServerCursors: Bool = false, supportsCopy: Bool = false,
        cacheCapacity: Int = 1_000
    ) {
        storage = Storage(
            name: name,
            placeholderStyle: placeholderStyle,
            allowsBacktickAndBracketIdentifiers: allowsBacktickAndBracketIdentifiers,
            allowsDollarQuotedStrings: allowsDollarQuotedStrings,
            booleanLiterals: booleanLiterals,
            supportsReturning: supportsReturning,
            supportsUpsert: supportsUpsert,
            upsertSelectNeedsWhere: upsertSelectNeedsWhere,
            caseInsensitiveLike: caseInsensitiveLike,
            supportsIsDistinctFrom: supportsIsDistinctFrom,
            offsetRequiresLimit: offsetRequiresLimit,
            autoIncrementPrimaryKey: autoIncrementPrimaryKey,
            primaryKeyNeedsExplicitNotNull: primaryKeyNeedsExplicitNotNull,
            binaryLiteralStyle: binaryLiteralStyle,
            inlineDateSuffix: inlineDateSuffix,
            typeNames: typeNames,
            beginStatements: beginStatements,
            decimalCollation: decimalCollation,
            aggregateRenames: aggregateRenames,
            supportsServerCursors: supportsServerCursors,
            supportsCopy: supportsCopy,
            cache: SQLRenderCache(capacity: cacheCapacity))
    }

    /// SQLite's dialect (3.35 or later: RETURNING, upsert, NULLS FIRST/LAST, RIGHT/FULL JOIN
    /// from 3.39).
    public static let sqlite = SQLDialect(
        name: "sqlite", placeholderStyle: .questionMark, allowsBacktickAndBracketIdentifiers: true,
        allowsDollarQuotedStrings: false, booleanLiterals: ("1", "0"), supportsReturning: true, supportsUpsert: true,
        upsertSelectNeedsWhere: true, caseInsensitiveLike: .lowerBothSides, supportsIsDistinctFrom: false,
        offsetRequiresLimit: true, autoIncrementPrimaryKey: "INTEGER PRIMARY KEY AUTOINCREMENT",
        primaryKeyNeedsExplicitNotNull: true, binaryLiteralStyle: .sqliteHex, inlineDateSuffix: "",
        typeNames: SQLTypeNames(
            int64: "INTEGER", int32: "INTEGER", int16: "INTEGER", double: "REAL", float: "REAL", bool: "INTEGER",
            text: "TEXT", varchar: nil, blob: "BLOB", date: "TEXT", uuid: "BLOB", decimal: "TEXT", json: "TEXT"),
        beginStatements: SQLBeginStatements(
            deferred: "BEGIN DEFERRED TRANSACTION", immediate: "BEGIN IMMEDIATE TRANSACTION",
            readOnly: "BEGIN DEFERRED TRANSACTION"),
        decimalCollation: "unity_decimal",
        aggregateRenames: ["SUM": "unity_sum", "AVG": "unity_avg"])

    /// PostgreSQL's dialect (15 or later).
    public static let postgres = SQLDialect(
        name: "postgres", placeholderStyle: .dollarNumbered, allowsBacktickAndBracketIdentifiers: false,
        allowsDollarQuotedStrings: true, booleanLiterals: ("TRUE", "FALSE"), supportsReturning: true,
        supportsUpsert: true, upsertSelectNeedsWhere: false, caseInsensitiveLike: .ilike, supportsIsDistinctFrom: true,
        offsetRequiresLimit: false, autoIncrementPrimaryKey: "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        primaryKeyNeedsExplicitNotNull: false, binaryLiteralStyle: .postgresEscape, inlineDateSuffix: "+00",
        typeNames: SQLTypeNames(
            int64: "BIGINT", int32: "INTEGER", int16: "SMALLINT", double: "DOUBLE PRECISION", float: "DOUBLE PRECISION",
            bool: "BOOLEAN", text: "TEXT", varchar: "VARCHAR", blob: "BYTEA", date: "TIMESTAMPTZ", uuid: "UUID",
            decimal: "NUMERIC", json: "JSONB"),
        beginStatements: SQLBeginStatements(deferred: "BEGIN", immediate: "BEGIN", readOnly: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        supportsServerCursors: true, supportsCopy: true)

    /// The type name to write in `CAST(… AS type)`: ``typeName(_:)`` without the text
    /// collation (a collation cannot stand inside CAST).
    public func castTypeName(_ type: ColumnType) -> String {
        switch type {
        case .text: return typeNames.text
        case .varchar(let n):
            guard let varchar = typeNames.varchar else { return typeNames.text }
            return varchar + "(" + String(n) + ")"
        default: return typeName(type)
        }
    }

    /// The dialect's name for an abstract column type, as a column declares it: text and
    /// varchar columns carry ``textColumnCollation`` (`TEXT COLLATE "C"` on PostgreSQL).
    public func typeName(_ type: ColumnType) -> String {
        switch type {
        case .int64: return typeNames.int64
        case .int32: return typeNames.int32
        case .int16: return typeNames.int16
        case .double: return typeNames.double
        case .float: return typeNames.float
        case .bool: return typeNames.bool
        case .text, .varchar:
            let name = castTypeName(type)
            guard let collation = textColumnCollation else { return name }
            return name + " " + collation
        case .blob: return typeNames.blob
        case .date: return typeNames.date
        case .uuid: return typeNames.uuid
        case .decimal: return typeNames.decimal
        case .json: return typeNames.json
        case .custom(let name): return name
        }
    }

    /// Quotes an identifier: wrapped in `"`, with `"` inside doubled, so that any name —
    /// even `a"; DROP TABLE x; --` — is one identifier and never SQL.
    public func quoteIdentifier(_ name: String) -> String {
        if !name.utf8.contains(UInt8(ascii: "\"")) { return "\"" + name + "\"" }
        var out = "\""
        out.reserveCapacity(name.utf8.count + 2)
        for ch in name.unicodeScalars {
            if ch == "\"" { out.append("\"\"") } else { out.unicodeScalars.append(ch) }
        }
        out.append("\"")
        return out
    }

    /// Renders a statement to SQL text and its bind values.
    ///
    /// The SQL text is cached per statement shape (the statement with its bind values left
    /// out), so a statement that differs from an earlier one only in its values reuses the
    /// text. Throws ``DatabaseError/misuse(_:)`` for a statement that cannot be rendered: a
    /// raw fragment whose `?` count differs from its values, an empty SET list, a feature
    /// the dialect lacks, …
    public func render(_ statement: SQLStatement) throws -> RenderedSQL {
        if let control = transactionControlSQL(statement) { return RenderedSQL(sql: control, bindings: []) }
        var shape = SQLRenderer(dialect: self, mode: .shape)
        try shape.render(statement)
        let key = shape.shapeKey
        if let sql = cache.lookup(key) { return RenderedSQL(sql: sql, bindings: shape.bindings) }
        var text = SQLRenderer(dialect: self, mode: .text)
        try text.render(statement)
        cache.store(key, text.sql)
        return RenderedSQL(sql: text.sql, bindings: text.bindings)
    }

    /// Renders a statement without consulting or filling the shape cache (tests, benchmarks).
    public func renderUncached(_ statement: SQLStatement) throws -> RenderedSQL {
        if let control = transactionControlSQL(statement) { return RenderedSQL(sql: control, bindings: []) }
        var text = SQLRenderer(dialect: self, mode: .text)
        try text.render(statement)
        return RenderedSQL(sql: text.sql, bindings: text.bindings)
    }

    /// The number of statement shapes whose SQL is cached now.
    public var cachedShapeCount: Int { cache.count }

    private func transactionControlSQL(_ statement: SQLStatement) -> String? {
        switch statement {
        case .begin(let kind):
            switch kind {
            case .deferred: return beginStatements.deferred
            case .immediate: return beginStatements.immediate
            case .readOnly: return beginStatements.readOnly
            }
        case .commit: return "COMMIT"
        case .rollback: return "ROLLBACK"
        case .savepoint(let n): return "SAVEPOINT " + quoteIdentifier(n)
        case .releaseSavepoint(let n): return "RELEASE SAVEPOINT " + quoteIdentifier(n)
        case .rollbackToSavepoint(let n): return "ROLLBACK TO SAVEPOINT " + quoteIdentifier(n)
        default: return nil
        }
    }

    /// Two dialects are equal when they spell SQL the same way (their caches aside).
    public static func == (lhs: SQLDialect, rhs: SQLDialect) -> Bool {
        lhs.name == rhs.name && lhs.placeholderStyle == rhs.placeholderStyle
            && lhs.allowsBacktickAndBracketIdentifiers == rhs.allowsBacktickAndBracketIdentifiers
            && lhs.allowsDollarQuotedStrings == rhs.allowsDollarQuotedStrings
            && lhs.booleanLiterals == rhs.booleanLiterals && lhs.supportsReturning == rhs.supportsReturning
            && lhs.supportsUpsert == rhs.supportsUpsert && lhs.upsertSelectNeedsWhere == rhs.upsertSelectNeedsWhere
            && lhs.caseInsensitiveLike == rhs.caseInsensitiveLike
            && lhs.supportsIsDistinctFrom == rhs.supportsIsDistinctFrom
            && lhs.offsetRequiresLimit == rhs.offsetRequiresLimit
            && lhs.decimalCollation == rhs.decimalCollation && lhs.aggregateRenames == rhs.aggregateRenames
            && lhs.autoIncrementPrimaryKey == rhs.autoIncrementPrimaryKey
            && lhs.primaryKeyNeedsExplicitNotNull == rhs.primaryKeyNeedsExplicitNotNull
            && lhs.binaryLiteralStyle == rhs.binaryLiteralStyle && lhs.inlineDateSuffix == rhs.inlineDateSuffix
            && lhs.typeNames == rhs.typeNames && lhs.beginStatements == rhs.beginStatements
            && lhs.supportsServerCursors == rhs.supportsServerCursors && lhs.supportsCopy == rhs.supportsCopy
    }

    /// Hashes the dialect's name and type names (enough to spread distinct dialects).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(placeholderStyle)
        hasher.combine(typeNames)
    }
}

/// How bind parameters are spelled.
public enum SQLPlaceholderStyle: Sendable, Hashable {
    /// `?` (SQLite).
    case questionMark
    /// `$1`, `$2`, … numbered across the whole statement (PostgreSQL).
    case dollarNumbered
}

/// How a case-insensitive LIKE is spelled.
public enum SQLCaseInsensitiveLikeStyle: Sendable, Hashable {
    /// `x ILIKE p` (PostgreSQL).
    case ilike
    /// `lower(x) LIKE lower(p)` (SQLite, whose LIKE Unity makes case-sensitive).
    case lowerBothSides
}

extension SQLDialect {
    /// How inline string literals are spelled: PostgreSQL's dialect writes `E'…'` when the
    /// text holds a backslash, so a literal reads the same whatever the server's
    /// `standard_conforming_strings` says; other dialects write standard `'…'`.
    public var stringLiteralStyle: SQLStringLiteralStyle {
        name == "postgres" ? .escapeStringWhenBackslash : .standard
    }

    /// The longest identifier, in UTF-8 bytes, the renderer accepts: 63 on every dialect
    /// (PostgreSQL's limit, where a longer name is silently truncated), so a name works on
    /// both backends or on neither. Longer names are ``DatabaseError/misuse(_:)``.
    public var maxIdentifierBytes: Int { 63 }

    /// The most bind parameters one statement may carry. SQLite: its default limit, 32,766.
    /// PostgreSQL: 7,498, far below the protocol's 65,535, because libpq (15 and earlier)
    /// treats the server's description of a prepared statement's parameters as a corrupt
    /// message when it is over 30,000 bytes (4 bytes a parameter) and drops the connection
    /// ("lost synchronization with server"). The PostgreSQL driver refuses a statement with
    /// more parameters with ``DatabaseError/misuse(_:)`` before sending it, and Unity's own
    /// multi-row statements stay under this number.
    public var maxBindParameters: Int { name == "postgres" ? 7_498 : 32_766 }

    /// The collation clause declared with every text and varchar column (`COLLATE "C"` on
    /// PostgreSQL), so that such columns order and compare in binary code-point order
    /// whatever the server's locale, as SQLite's default BINARY collation does; nil to keep
    /// the engine's default.
    public var textColumnCollation: String? {
        name == "postgres" ? "COLLATE \"C\"" : nil
    }

    /// The collation that orders text by Unicode code point (`C` on PostgreSQL, `BINARY` on
    /// SQLite), used by ``SQLExpression/codePointOrdered(_:)``.
    public var codePointCollation: String { name == "postgres" ? "C" : "BINARY" }
}

/// How a dialect spells an inline string literal.
public enum SQLStringLiteralStyle: Sendable, Hashable {
    /// `'…'` with `'` doubled; a backslash is an ordinary character (SQLite, SQL standard).
    case standard
    /// PostgreSQL: `'…'` when the text has no backslash, else `E'…'` with `'` and `\`
    /// doubled, which reads the same whatever `standard_conforming_strings` says.
    case escapeStringWhenBackslash
}

/// How binary values are inlined in DDL.
public enum SQLBinaryLiteralStyle: Sendable, Hashable {
    /// `x'0a1b'`; UUIDs as their 16 bytes.
    case sqliteHex
    /// `'\x0a1b'` bytea escape; UUIDs as their canonical text.
    case postgresEscape
}

/// A dialect's name for each abstract ``ColumnType``.
public struct SQLTypeNames: Sendable, Hashable {
    /// `.int64`.
    public var int64: String
    /// `.int32`.
    public var int32: String
    /// `.int16`.
    public var int16: String
    /// `.double`.
    public var double: String
    /// `.float`.
    public var float: String
    /// `.bool`.
    public var bool: String
    /// `.text`.
    public var text: String
    /// `.varchar(n)` is spelled `varchar(n)`; nil spells it as ``text``.
    public var varchar: String?
    /// `.blob`.
    public var blob: String
    /// `.date`.
    public var date: String
    /// `.uuid`.
    public var uuid: String
    /// `.decimal`.
    public var decimal: String
    /// `.json`.
    public var json: String

    /// Creates a table of type names.
    public init(int64: String, int32: String, int16: String, double: String, float: String, bool: String, text: String,
                varchar: String?, blob: String, date: String, uuid: String, decimal: String, json: String) {
        self.int64 = int64
        self.int32 = int32
        self.int16 = int16
        self.double = double
        self.float = float
        self.bool = bool
        self.text = text
        self.varchar = varchar
        self.blob = blob
        self.date = date
        self.uuid = uuid
        self.decimal = decimal
        self.json = json
    }
}

/// A dialect's BEGIN statement for each ``TransactionKind``.
public struct SQLBeginStatements: Sendable, Hashable {
    /// ``TransactionKind/deferred``.
    public var deferred: String
    /// ``TransactionKind/immediate``.
    public var immediate: String
    /// ``TransactionKind/readOnly``.
    public var readOnly: String
    /// Creates the statements.
    public init(deferred: String, immediate: String, readOnly: String) {
        self.deferred = deferred
        self.immediate = immediate
        self.readOnly = readOnly
    }
}

/// SQL text in a dialect's spelling, with the values for its placeholders in order.
public struct RenderedSQL: Sendable, Hashable {
    /// The SQL text.
    public var sql: String
    /// The bind values, one per placeholder.
    public var bindings: [DatabaseValue]
    /// Creates rendered SQL.
    public init(sql: String, bindings: [DatabaseValue]) {
        self.sql = sql
        self.bindings = bindings
    }
}

/// How a transaction begins.
public enum TransactionKind: Sendable, Hashable {
    /// Takes locks as statements need them.
    case deferred
    /// Takes the write lock at once (SQLite's BEGIN IMMEDIATE), so a writer never fails
    /// half-way for want of the lock.
    case immediate
    /// A read-only transaction that reads one snapshot: SQLite's deferred transaction,
    /// PostgreSQL's `REPEATABLE READ READ ONLY`. On both the snapshot is taken at the
    /// transaction's first statement, so a commit made between BEGIN and that statement is
    /// seen, and none made after it.
    case readOnly
}

/// A raw SQL fragment written by a user, with `?` placeholders and their values.
///
/// The renderer rewrites each `?` into the dialect's placeholder, leaving alone any `?`
/// inside quoted strings, quoted identifiers and comments. The number of `?` must equal
/// the number of values, or rendering throws ``DatabaseError/misuse(_:)``.
public struct SQLFragment: Sendable, Hashable {
    /// The text, with `?` placeholders.
    public var sql: String
    /// The values for the placeholders, in order.
    public var bindings: [DatabaseValue]
    /// Creates a fragment.
    public init(_ sql: String, _ bindings: [DatabaseValue] = []) {
        self.sql = sql
        self.bindings = bindings
    }
}

extension SQLDialect {
    /// How JSON documents are read: SQLite's JSON functions or PostgreSQL's `jsonb` operators.
    public var jsonStyle: SQLJSONStyle { name == "postgres" ? .postgresJSONB : .sqliteFunctions }
    /// How full-text search is spelled: FTS5 tables (SQLite) or `tsvector` / `tsquery`
    /// (PostgreSQL).
    public var fullTextStyle: SQLFullTextStyle { name == "postgres" ? .tsvector : .fts5 }
}

/// How a dialect reads JSON documents.
public enum SQLJSONStyle: Sendable, Hashable {
    /// `json_extract`, `json_type`, `->` and the driver's `unity_json_contains` (SQLite).
    case sqliteFunctions
    /// `->`, `->>`, `@>` and `jsonb_typeof` (PostgreSQL).
    case postgresJSONB
}

/// How a dialect searches text.
public enum SQLFullTextStyle: Sendable, Hashable {
    /// An FTS5 table beside the searched one (SQLite).
    case fts5
    /// `to_tsvector(…) @@ tsquery` with a GIN expression index (PostgreSQL).
    case tsvector
}
