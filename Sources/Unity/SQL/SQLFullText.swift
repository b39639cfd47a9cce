import Foundation

/// How text is split into words and normalized for full-text search, on each backend.
public enum FullTextLanguage: String, Sendable, Hashable, CaseIterable {
    /// Words are lower-cased, nothing else: SQLite's `unicode61 remove_diacritics 0`
    /// tokenizer, PostgreSQL's `simple` configuration. The default: both backends match the
    /// same documents for the same query.
    case simple
    /// English stemming (`runs` finds `running`): SQLite's `porter unicode61
    /// remove_diacritics 0`, PostgreSQL's `english`. The stemmers differ (Porter against
    /// Snowball) and PostgreSQL also drops stop words (`the`, `a`, …) from documents and
    /// queries, so a few queries match different documents.
    case english

    /// The FTS5 `tokenize` option.
    var sqliteTokenizer: String {
        switch self {
        case .simple: return "unicode61 remove_diacritics 0"
        case .english: return "porter unicode61 remove_diacritics 0"
        }
    }

    /// The PostgreSQL text search configuration.
    var postgresConfiguration: String { rawValue }
}

/// A search query in Unity's one syntax, parsed into terms that every document must match.
///
/// - Words separated by spaces: all must occur (`swift data` finds documents with both).
/// - A word ending in `*` matches words that begin with it (`data*` finds `database`).
/// - Text in double quotes is a phrase: its words in this order, side by side
///   (`"exact words"`); a `*` right after the closing quote makes its last word a prefix.
///
/// Nothing else is syntax: `OR`, `NOT`, `NEAR`, `-word`, `+`, `(`, `:` and `^` are words or
/// punctuation, never the engines' operators, and a query is never a syntax error. A word
/// joined by punctuation (`e-mail`, `don't`) is a phrase of its parts. A term with no letter
/// or digit (`*`, `-`) is dropped; a query with no terms matches nothing.
public struct FullTextQuery: Sendable, Hashable {
    /// One term of a query.
    public struct Term: Sendable, Hashable {
        /// The term's text as the user wrote it, without quotes and without the `*`: the
        /// engines split it into words with their own tokenizers.
        public var text: String
        /// The words of ``text`` (letters and digits), as Unity splits them.
        public var words: [String]
        /// Whether the last word is a prefix.
        public var isPrefix: Bool
    }

    /// The terms, every one of which a document must match.
    public var terms: [Term]

    /// Parses a query written in Unity's syntax.
    public init(_ text: String) {
        var terms: [Term] = []
        func add(_ raw: Substring, prefix: Bool) {
            let words = FullTextQuery.words(of: raw)
            guard !words.isEmpty else { return }
            terms.append(Term(text: String(raw), words: words, isPrefix: prefix))
        }
        var rest = Substring(text)
        while let first = rest.first {
            if first == "\"" {
                rest = rest.dropFirst()
                let end = rest.firstIndex(of: "\"") ?? rest.endIndex
                let phrase = rest[rest.startIndex..<end]
                rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
                var prefix = false
                if rest.first == "*" {
                    prefix = true
                    rest = rest.dropFirst()
                }
                add(phrase, prefix: prefix)
            } else if first.isWhitespace {
                rest = rest.drop(while: \.isWhitespace)
            } else {
                let end = rest.firstIndex(where: { $0.isWhitespace || $0 == "\"" }) ?? rest.endIndex
                var word = rest[rest.startIndex..<end]
                rest = rest[end...]
                var prefix = false
                if word.hasSuffix("*") {
                    prefix = true
                    word = word.dropLast()
                    while word.hasSuffix("*") { word = word.dropLast() }
                }
                add(word, prefix: prefix)
            }
        }
        self.terms = terms
    }

    /// The runs of letters and digits in `text` (Unicode letters, marks and numbers).
    static func words(of text: Substring) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let p = scalar.properties
            if p.isAlphabetic || p.numericType != nil || p.generalCategory == .nonspacingMark {
                current.append(scalar)
            } else if !current.isEmpty {
                words.append(String(current))
                current = String.UnicodeScalarView()
            }
        }
        if !current.isEmpty { words.append(String(current)) }
        return words
    }

    /// The query in FTS5's syntax: each term a quoted string (`"` doubled), a prefix term
    /// followed by `*`, all of them joined by spaces (FTS5's implicit AND).
    public var fts5Query: String {
        terms.map { term in
            var s = "\""
            for ch in term.text.unicodeScalars {
                if ch == "\"" { s += "\"\"" } else { s.unicodeScalars.append(ch) }
            }
            s += "\""
            return term.isPrefix ? s + "*" : s
        }.joined(separator: " ")
    }

    /// A prefix term in PostgreSQL's `to_tsquery` syntax: its words side by side (`<->`),
    /// the last one a prefix (`:*`). Words hold only letters, digits and marks, so quoting
    /// them in `'…'` cannot meet a quote.
    public static func tsqueryPrefix(_ term: Term) -> String {
        term.words.enumerated().map { i, w in
            "'" + w + "'" + (i == term.words.count - 1 ? ":*" : "")
        }.joined(separator: " <-> ")
    }
}

/// A full-text index over text columns of a table, and the expressions that search it.
///
/// On SQLite it is an FTS5 table `<table>_fts` whose content is the table's own rows
/// (external content), kept in sync by three triggers; on PostgreSQL, a GIN index on
/// `to_tsvector(configuration, columns)`. ``migration(_:)`` creates what the backend needs and
/// indexes the rows already there; ``matches(_:table:)``, ``relevance(_:table:)`` and
/// ``snippet(_:table:start:end:ellipsis:words:)`` build the expressions every flavor filters
/// and orders with.
///
/// ```swift
/// let search = FullTextIndex(table: "articles", columns: ["title", "body"])
/// _ = try Migrator(migrations: [search.migration("0003_article_search")]).migrate(db)
/// let found = SQLSelect(from: "articles")
///     .where(search.matches("swift \"data race\" concurr*"))
///     .orderBy(search.relevance("swift \"data race\" concurr*").desc)
/// ```
///
/// Names (table, columns, key) must be plain identifiers (letters, digits and `_`, not
/// starting with a digit): FTS5 writes some of them into SQL of its own.
public struct FullTextIndex: Sendable, Hashable {
    /// The table whose rows are searched.
    public var table: String
    /// The searched text columns.
    public var columns: [String]
    /// The table's integer primary key (FTS5's rowid), `id` by default.
    public var key: String
    /// How words are split and normalized.
    public var language: FullTextLanguage

    /// An index over `columns` of `table`, whose integer key is `key`.
    public init(table: String, columns: [String], key: String = "id", language: FullTextLanguage = .simple) {
        self.table = table
        self.columns = columns
        self.key = key
        self.language = language
    }

    /// The name of the FTS5 table (SQLite) or of the GIN index (PostgreSQL): `<table>_fts`.
    public var name: String { table + "_fts" }

    /// True for the rows that match `query` (Unity's syntax: see ``FullTextQuery``).
    /// `alias` is the name the searched table goes by in the query, when it is not its own.
    public func matches(_ query: String, table alias: String? = nil) -> SQLExpression {
        .fullText(SQLFullTextSearch(index: self, alias: alias, query: FullTextQuery(query), output: .matches))
    }

    /// How well a row matches `query`: higher is better (SQLite: minus FTS5's bm25; PostgreSQL:
    /// `ts_rank`), NULL for a row that does not match. Order by it descending. The scales
    /// differ between the backends, and so may the order of rows that match about equally.
    public func relevance(_ query: String, table alias: String? = nil) -> SQLExpression {
        .fullText(SQLFullTextSearch(index: self, alias: alias, query: FullTextQuery(query), output: .relevance))
    }

    /// A short excerpt of a matching row with the matched words between `start` and `end`
    /// (SQLite: FTS5's `snippet`; PostgreSQL: `ts_headline`). The excerpts differ between the
    /// backends (length, which fragment); the marked words are the query's on both. NULL for
    /// a row that does not match (SQLite) or the excerpt without marks (PostgreSQL).
    /// `start`, `end` and `ellipsis` must not hold `"` or `,`.
    public func snippet(_ query: String, table alias: String? = nil, start: String = "[", end: String = "]",
                        ellipsis: String = "…", words: Int = 12) -> SQLExpression {
        .fullText(SQLFullTextSearch(index: self, alias: alias, query: FullTextQuery(query),
                                    output: .snippet(start: start, end: end, ellipsis: ellipsis, words: words)))
    }

    /// The statements that create the index on `dialect`'s backend and index the rows
    /// already in the table: on SQLite the FTS5 table, its three triggers and a rebuild; on
    /// PostgreSQL the GIN index.
    public func createStatements(for dialect: SQLDialect) -> [SQLStatement] {
        if dialect.name == SQLDialect.postgres.name {
            return [.fullTextIndex(SQLFullTextIndexStatement(self, .create))]
        }
        return [.create, .trigger(.insert), .trigger(.delete), .trigger(.update), .rebuild].map {
            .fullTextIndex(SQLFullTextIndexStatement(self, $0))
        }
    }

    /// The statements that remove the index (the triggers, the FTS5 table; the GIN index).
    public func dropStatements(for dialect: SQLDialect) -> [SQLStatement] {
        if dialect.name == SQLDialect.postgres.name {
            return [.dropIndex(SQLDropIndex(name, ifExists: true))]
        }
        return [.dropTrigger(.insert), .dropTrigger(.delete), .dropTrigger(.update), .dropTable].map {
            .fullTextIndex(SQLFullTextIndexStatement(self, $0))
        }
    }

    /// A migration that creates the index (``createStatements(for:)``) for the backend it runs
    /// on, rows already in the table included.
    public func migration(_ name: String) -> Migration {
        let index = self
        return Migration(name, checksum: "unity full-text index v1: " + description) { connection in
            for statement in index.createStatements(for: connection.dialect) { try connection.execute(statement) }
        }
    }

    /// Checks the names; throws ``DatabaseError/misuse(_:)`` for one that is not a plain identifier.
    func validate() throws {
        if columns.isEmpty { throw DatabaseError.misuse("the full-text index on \(table) has no columns; name the text columns to search") }
        for n in [table, key] + columns where !Self.isPlainIdentifier(n) {
            throw DatabaseError.misuse(
                "the full-text index on \(table) names \"\(n)\": use a plain identifier (letters, digits and _, not starting with a digit), which FTS5 writes into SQL of its own")
        }
    }

    static func isPlainIdentifier(_ s: String) -> Bool {
        guard let first = s.utf8.first, !(first >= 0x30 && first <= 0x39) else { return false }
        return s.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
        }
    }

    var description: String {
        "\(table)(\(columns.joined(separator: ","))) key \(key) language \(language.rawValue)"
    }
}

/// A full-text search of one row: see ``FullTextIndex/matches(_:table:)``.
public struct SQLFullTextSearch: Sendable, Hashable {
    /// What the expression yields.
    public enum Output: Sendable, Hashable {
        /// Whether the row matches.
        case matches
        /// How well it matches, higher is better.
        case relevance
        /// An excerpt with the matched words marked.
        case snippet(start: String, end: String, ellipsis: String, words: Int)
    }
    /// The index searched.
    public var index: FullTextIndex
    /// The name the searched table goes by in the query; nil: its own name.
    public var alias: String?
    /// The parsed query.
    public var query: FullTextQuery
    /// What the expression yields.
    public var output: Output

    /// A search of `index` for `query`.
    public init(index: FullTextIndex, alias: String?, query: FullTextQuery, output: Output) {
        self.index = index
        self.alias = alias
        self.query = query
        self.output = output
    }
}

/// One of the statements that create or drop a ``FullTextIndex``.
public struct SQLFullTextIndexStatement: Sendable, Hashable {
    /// Which statement.
    public enum Part: Sendable, Hashable {
        /// The FTS5 table (SQLite) or the GIN index (PostgreSQL).
        case create
        /// SQLite: a trigger that keeps the FTS5 table in step with the table.
        case trigger(Trigger)
        /// SQLite: indexes every row of the table again.
        case rebuild
        /// SQLite: drops a trigger.
        case dropTrigger(Trigger)
        /// SQLite: drops the FTS5 table.
        case dropTable
    }
    /// SQLite's triggers: after an insert (index the row), a delete (forget it) and an update
    /// of the key or a searched column (forget the old text, index the new).
    public enum Trigger: String, Sendable, Hashable {
        /// After INSERT.
        case insert = "ai"
        /// After DELETE.
        case delete = "ad"
        /// After UPDATE.
        case update = "au"
    }
    /// The index.
    public var index: FullTextIndex
    /// The statement.
    public var part: Part
    /// One statement of `index`.
    public init(_ index: FullTextIndex, _ part: Part) {
        self.index = index
        self.part = part
    }
}
