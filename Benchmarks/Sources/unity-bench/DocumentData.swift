import Foundation
import Unity

// The data of the `json-filter` and `fts-query` workloads: their tables, the generated rows,
// the queries, and what a correct subject returns. Everything here is deterministic, so every
// subject (and every process) reads and asks the same.

// MARK: - JSON documents (`json-filter`)

/// The JSON document in `bench_json.doc`: a string, an integer and a nested object (an
/// integer and an array of strings). Unity stores it as TEXT on SQLite and JSONB on
/// PostgreSQL; every subject decodes it into this struct with Foundation's JSON decoder.
struct BenchDocument: DatabaseJSONConvertible, Equatable, Sendable {
    /// The nested object.
    struct Meta: Codable, Equatable, Sendable {
        /// The indexed integer: about 25 documents share a bucket.
        var bucket: Int64
        /// One or two tags (`"t<k>"`); about 20 documents share a tag.
        var tags: [String]
    }

    /// `"doc-<id>"`.
    var name: String
    /// An integer that no query reads.
    var size: Int64
    /// The nested object.
    var meta: Meta
}

/// A row of `bench_json`, as every subject returns it.
struct BenchJSONRecord: Sendable, Equatable {
    var id: Int64
    var doc: BenchDocument
}

/// The generated `bench_json` table and the `json-filter` queries on it.
enum JSONData {
    /// The table.
    static let table = "bench_json"
    /// Rows each query returns at most.
    static let limit = 20
    /// The indexed path: `doc -> meta -> bucket`, as an integer.
    static let bucketPath: SQLJSONPath = ["meta", "bucket"]
    /// The expression index every subject's equality filter uses, as a user would declare it.
    static let bucketIndex = SQLJSONIndex("bench_json_bucket", on: table, column: "doc", path: bucketPath, as: .integer)
    /// PostgreSQL's index for containment (`@>`): GIN over the whole document. SQLite has no
    /// index that serves containment, so the containment case runs on PostgreSQL only.
    static var containmentIndex: SQLStatement {
        var index = SQLCreateIndex("bench_json_doc", on: table, columns: ["doc"], ifNotExists: true)
        index.method = .gin
        return .createIndex(index)
    }

    /// The number of buckets: about 25 documents each, so that a query's LIMIT cuts.
    static func bucketCount(tableRows: Int) -> Int64 { Int64(max(1, tableRows / 25)) }
    /// The number of tags: each document has two, so about 20 documents share one.
    static func tagCount(tableRows: Int) -> Int64 { Int64(max(1, tableRows / 10)) }

    /// The document of row `id` in a table of `tableRows` rows.
    static func document(id: Int64, tableRows: Int) -> BenchDocument {
        let tags = tagCount(tableRows: tableRows)
        let first = (id &* 31) % tags
        let second = (id &* 17 &+ 5) % tags
        return BenchDocument(
            name: "doc-\(id)", size: (id &* 37) % 1_000,
            meta: BenchDocument.Meta(bucket: (id &* 7_919) % bucketCount(tableRows: tableRows),
                                     tags: first == second ? ["t\(first)"] : ["t\(first)", "t\(second)"]))
    }

    /// The document as JSON text, keys sorted as Unity's encoder writes them.
    static func text(_ document: BenchDocument) -> String {
        let tags = document.meta.tags.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"meta":{"bucket":\#(document.meta.bucket),"tags":[\#(tags)]},"name":"\#(document.name)","size":\#(document.size)}"#
    }

    /// The bucket the `index`-th equality query asks for.
    static func bucket(forQuery index: Int, tableRows: Int) -> Int64 {
        Int64((index &* 104_729) % Int(bucketCount(tableRows: tableRows)))
    }

    /// The tag the `index`-th containment query asks for.
    static func tag(forQuery index: Int, tableRows: Int) -> String {
        "t\(Int64((index &* 7_919) % Int(tagCount(tableRows: tableRows))))"
    }

    /// `{"meta":{"tags":["t<k>"]}}`: the document that the containment query's rows contain.
    static func containmentJSON(tag: String) -> String { #"{"meta":{"tags":["\#(tag)"]}}"# }

    /// The checksum of a correct run of `spec`: per query, the first ``limit`` ids (ascending)
    /// of the documents in the bucket, or every document holding the tag.
    static func expected(_ spec: WorkloadSpec) -> Checksum {
        let rows = spec.tableRows
        var byKey: [String: [Int64]] = [:]
        for id in 1...Int64(max(rows, 1)) where rows > 0 {
            let document = document(id: id, tableRows: rows)
            if spec.jsonContainment {
                for tag in Set(document.meta.tags) { byKey[tag, default: []].append(id) }
            } else {
                byKey["\(document.meta.bucket)", default: []].append(id)
            }
        }
        var checksum = Checksum()
        for index in 0..<spec.rows {
            let key = spec.jsonContainment ? tag(forQuery: index, tableRows: rows) : "\(bucket(forQuery: index, tableRows: rows))"
            for id in (byKey[key] ?? []).prefix(spec.jsonContainment ? Int.max : limit) {
                checksum.add(BenchJSONRecord(id: id, doc: document(id: id, tableRows: rows)))
            }
        }
        return checksum
    }
}

extension Checksum {
    /// Folds in a row of `bench_json` (order-independent, as for records).
    mutating func add(_ record: BenchJSONRecord) {
        var hasher = FNV1a()
        hasher.add(record.id)
        hasher.add(record.doc.name)
        hasher.add(record.doc.size)
        hasher.add(record.doc.meta.bucket)
        for tag in record.doc.meta.tags { hasher.add(tag) }
        hasher.add(Int64(record.doc.meta.tags.count))
        add(hash: hasher.value)
    }

    /// Folds in the `position`-th result (from 0) of the `query`-th search: the position is
    /// part of the hash, so a subject that ranks differently returns another checksum.
    mutating func add(search record: BenchTextRecord, query: Int, position: Int) {
        var hasher = FNV1a()
        hasher.add(Int64(query))
        hasher.add(Int64(position))
        hasher.add(record.id)
        hasher.add(record.title)
        hasher.add(record.body)
        add(hash: hasher.value)
    }
}

// MARK: - Full-text documents (`fts-query`)

/// A row of `bench_text`, as every subject returns it.
struct BenchTextRecord: Sendable, Equatable {
    var id: Int64
    var title: String
    var body: String
}

/// The generated `bench_text` documents and the `fts-query` queries on them.
///
/// Words are made of syllables (a consonant and a vowel), lower-case ASCII, so both engines'
/// tokenizers (FTS5's `unicode61`, PostgreSQL's `simple`) read the same words. A body has
/// 20 to 40 words: a quarter of them from 50 common words, the rest from 1,950 others (each in
/// about 1% of the documents). A title has three words of three syllables, which no body word
/// is, so a phrase of body words never runs from the title into the body (which PostgreSQL
/// would find and FTS5 would not).
enum SearchData {
    /// The table.
    static let table = "bench_text"
    /// The full-text index on it, created by the fixture with the migration helper's statements.
    static let index = FullTextIndex(table: table, columns: ["title", "body"])
    /// Rows each query returns at most.
    static let limit = 10
    /// Body words; the first `commonWords` are the common ones.
    static let bodyWords: [String] = {
        (0..<2_000).map { index in
            let pair = (index &* 2_311) % (syllables.count * syllables.count)
            return syllables[pair / syllables.count] + syllables[pair % syllables.count]
        }
    }()
    /// Title words (three syllables).
    static let titleWords: [String] = {
        let count = syllables.count
        return (0..<500).map { index in
            let triple = (index &* 7_919) % (count * count * count)
            return syllables[triple / (count * count)] + syllables[(triple / count) % count] + syllables[triple % count]
        }
    }()
    static let commonWords = 50
    private static let syllables: [String] = {
        var syllables: [String] = []
        for consonant in "bdfgklmnprstvz" { for vowel in "aeiou" { syllables.append("\(consonant)\(vowel)") } }
        return syllables
    }()

    /// One generated document: its text and its words as indexes (title words after the body
    /// words: `bodyWords.count + i`).
    struct Document: Sendable {
        var title: String
        var body: String
        var titleWords: [Int]
        var bodyWords: [Int]
    }

    /// The document with the given id (ids start at 1).
    static func document(id: Int64) -> Document {
        var random = SplitMix64(seed: UInt64(bitPattern: id))
        let titles = (0..<3).map { _ in Int(random.next() % UInt64(titleWords.count)) }
        let length = 20 + Int(id % 21)
        let body = (0..<length).map { _ in
            if random.next() % 4 == 0 { return Int(random.next() % UInt64(commonWords)) }
            return commonWords + Int(random.next() % UInt64(bodyWords.count - commonWords))
        }
        return Document(title: titles.map { titleWords[$0] }.joined(separator: " "),
                        body: body.map { bodyWords[$0] }.joined(separator: " "),
                        titleWords: titles.map { bodyWords.count + $0 }, bodyWords: body)
    }

    /// The `index`-th query of a run over `tableRows` documents, in Unity's syntax (which the
    /// raw baselines turn into each engine's own): in turn one rare word, two rare words of one
    /// document, a three-letter prefix of a rare word, and a phrase of two adjacent words of one
    /// document (so that the last two kinds match at least one document).
    static func query(_ index: Int, tableRows: Int) -> SearchQuery {
        let rare = { (salt: Int) in bodyWords[commonWords + (index &* salt) % (bodyWords.count - commonWords)] }
        let document = document(id: Int64(1 + (index &* 7_919) % max(tableRows, 1)))
        switch index % 4 {
        case 0:
            return SearchQuery(kind: .word, words: [rare(37)])
        case 1:
            let rareWords = document.bodyWords.filter { $0 >= commonWords }
            let first = rareWords.first ?? document.bodyWords[0]
            let second = rareWords.last ?? document.bodyWords[document.bodyWords.count - 1]
            return SearchQuery(kind: .words, words: [bodyWords[first], bodyWords[second]])
        case 2:
            return SearchQuery(kind: .prefix, words: [String(rare(53).prefix(3))])
        default:
            let start = document.bodyWords.indices.dropLast().first { document.bodyWords[$0] >= commonWords } ?? 0
            return SearchQuery(kind: .phrase, words: [bodyWords[document.bodyWords[start]], bodyWords[document.bodyWords[start + 1]]])
        }
    }

    /// The queries of a run of `spec` (memoized, and made before the clock starts: see
    /// `BenchData.prepareInput`).
    static func queries(_ spec: WorkloadSpec) -> [SearchQuery] {
        SearchCorpus.cache.queries(count: spec.rows, tableRows: spec.tableRows)
    }

    /// The documents and an inverted index of a table of `tableRows` rows, made once (untimed:
    /// the harness asks for it before the clock starts) and kept for the checks.
    static func corpus(tableRows: Int) -> SearchCorpus { SearchCorpus.cache.corpus(tableRows: tableRows) }
}

/// A query of the `fts-query` workload.
struct SearchQuery: Sendable, Equatable {
    enum Kind: Sendable { case word, words, prefix, phrase }
    var kind: Kind
    var words: [String]
    /// The query in Unity's syntax (`FullTextQuery`), which for these queries is FTS5's too:
    /// `w`, `w1 w2`, `pre*`, `"w1 w2"`.
    let text: String
    /// The text raw libpq binds for its tsquery (see `BenchSchema.tsquery(_:)`).
    let postgresText: String

    init(kind: Kind, words: [String]) {
        self.kind = kind
        self.words = words
        switch kind {
        case .word, .words: text = words.joined(separator: " ")
        case .prefix: text = words[0] + "*"
        case .phrase: text = "\"" + words.joined(separator: " ") + "\""
        }
        postgresText = words.joined(separator: " ")
    }

    /// Whether a document with these words matches (the engines' rules for plain words).
    func matches(_ document: SearchData.Document) -> Bool {
        let tokens = (document.titleWords + document.bodyWords).map { token($0) }
        switch kind {
        case .word, .words: return words.allSatisfy { tokens.contains($0) }
        case .prefix: return tokens.contains { $0.hasPrefix(words[0]) }
        case .phrase:
            // Title and body are separate columns on SQLite; a body phrase cannot start in the title.
            let body = document.bodyWords.map { token($0) }
            return zip(body, body.dropFirst()).contains { $0 == words[0] && $1 == words[1] }
        }
    }

    private func token(_ index: Int) -> String {
        index < SearchData.bodyWords.count ? SearchData.bodyWords[index] : SearchData.titleWords[index - SearchData.bodyWords.count]
    }
}

/// The generated documents of one table size, with the number of documents that match a query.
final class SearchCorpus: @unchecked Sendable {
    // @unchecked: immutable after init.
    let documents: [SearchData.Document]
    /// Word → the ids of the documents holding it (ascending, once each).
    private let postings: [String: [Int64]]

    init(tableRows: Int) {
        documents = (0..<tableRows).map { SearchData.document(id: Int64($0) + 1) }
        var postings: [String: [Int64]] = [:]
        for (offset, document) in documents.enumerated() {
            let id = Int64(offset) + 1
            for word in Set(document.titleWords + document.bodyWords) {
                let text = word < SearchData.bodyWords.count ? SearchData.bodyWords[word] : SearchData.titleWords[word - SearchData.bodyWords.count]
                postings[text, default: []].append(id)
            }
        }
        self.postings = postings
    }

    /// The document with id `id`, nil outside the table.
    func document(_ id: Int64) -> SearchData.Document? {
        id >= 1 && id <= Int64(documents.count) ? documents[Int(id - 1)] : nil
    }

    /// The number of documents that match `query`.
    func matchCount(_ query: SearchQuery) -> Int {
        let candidates: Set<Int64>
        switch query.kind {
        case .prefix:
            candidates = Set(postings.filter { $0.key.hasPrefix(query.words[0]) }.values.joined())
        case .word, .words, .phrase:
            var sets = query.words.map { Set(postings[$0] ?? []) }
            var result = sets.removeFirst()
            for set in sets { result.formIntersection(set) }
            candidates = result
        }
        guard query.kind == .phrase else { return candidates.count }
        return candidates.filter { id in document(id).map(query.matches) ?? false }.count
    }

    /// Checks the ids each query of `spec` returned: every one a document that matches, no
    /// id twice, and as many as `min(limit, matches)`. Returns a description of the first
    /// fault, nil when all is well. (The order is the engine's ranking, which only the engine
    /// computes: the other subjects must return raw's order, id for id.)
    func check(_ results: [[Int64]], spec: WorkloadSpec) -> String? {
        guard results.count == spec.rows else { return "\(results.count) result lists for \(spec.rows) queries" }
        for (index, ids) in results.enumerated() {
            let query = SearchData.query(index, tableRows: spec.tableRows)
            if Set(ids).count != ids.count { return "query \(index) (\(query.text)) returned an id twice: \(ids)" }
            for id in ids {
                guard let document = document(id), query.matches(document) else {
                    return "query \(index) (\(query.text)) returned document \(id), which does not match"
                }
            }
            let expected = min(SearchData.limit, matchCount(query))
            if ids.count != expected {
                return "query \(index) (\(query.text)) returned \(ids.count) documents, expected \(expected)"
            }
        }
        return nil
    }

    static let cache = SearchCorpusCache()
}

/// The corpus of the last table size asked for.
final class SearchCorpusCache: @unchecked Sendable {
    // @unchecked: `last` is only touched under `lock`.
    private let lock = NSLock()
    private var last: (rows: Int, corpus: SearchCorpus)?
    private var lastQueries: (count: Int, rows: Int, queries: [SearchQuery])?

    func queries(count: Int, tableRows: Int) -> [SearchQuery] {
        lock.lock()
        defer { lock.unlock() }
        if let lastQueries, lastQueries.count == count, lastQueries.rows == tableRows { return lastQueries.queries }
        let queries = (0..<count).map { SearchData.query($0, tableRows: tableRows) }
        lastQueries = (count, tableRows, queries)
        return queries
    }

    func corpus(tableRows: Int) -> SearchCorpus {
        lock.lock()
        defer { lock.unlock() }
        if let last, last.rows == tableRows { return last.corpus }
        let corpus = SearchCorpus(tableRows: tableRows)
        last = (tableRows, corpus)
        return corpus
    }
}

/// SplitMix64: a small deterministic generator (the same numbers on every platform).
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

// MARK: - Schemas

extension BenchSchema {
    /// `bench_json` on SQLite (its index is made after the rows are in).
    static let jsonTableSQLite = """
        DROP TABLE IF EXISTS bench_json;
        CREATE TABLE bench_json (id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
        """
    /// `bench_text` on SQLite (dropping the table drops the triggers, not the FTS5 table).
    static let textTableSQLite = """
        DROP TABLE IF EXISTS bench_text_fts;
        DROP TABLE IF EXISTS bench_text;
        CREATE TABLE bench_text (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
        """
    /// `bench_json` on PostgreSQL.
    static let jsonTablePostgres = """
        DROP TABLE IF EXISTS bench_json;
        CREATE TABLE bench_json (id BIGINT PRIMARY KEY, doc JSONB NOT NULL);
        """
    /// `bench_text` on PostgreSQL.
    static let textTablePostgres = """
        DROP TABLE IF EXISTS bench_text;
        CREATE TABLE bench_text (id BIGINT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
        """

    /// The statements that index `bench_json` on `backend`, rendered by Unity's dialect: the
    /// `SQLJSONIndex` on the bucket (both), the GIN index for containment (PostgreSQL).
    static func jsonIndexes(_ backend: Backend) throws -> [String] {
        let dialect: SQLDialect = backend == .sqlite ? .sqlite : .postgres
        var statements = [JSONData.bucketIndex.statement]
        if backend == .postgres { statements.append(JSONData.containmentIndex) }
        return try statements.map { try dialect.renderUncached($0).sql }
    }

    /// What `FullTextIndex.migration` runs on `backend`: on SQLite the FTS5 table, its triggers
    /// and a rebuild; on PostgreSQL the GIN index.
    static func searchIndexes(_ backend: Backend) throws -> [String] {
        let dialect: SQLDialect = backend == .sqlite ? .sqlite : .postgres
        return try SearchData.index.createStatements(for: dialect).map { try dialect.renderUncached($0).sql }
    }

    // The raw baselines' hand-written SQL. An expression index serves only the expression it
    // holds, so raw spells the indexed path exactly as `SQLJSONIndex` renders it (checked by
    // the fixture's EXPLAIN: see `checkPlans`).

    /// SQLite: `doc`'s bucket as an integer, NULL unless it is a JSON number.
    static let sqliteBucket = #"CASE WHEN json_type(doc, '$."meta"."bucket"') IN ('integer', 'real') THEN json_extract(doc, '$."meta"."bucket"') END"#
    /// PostgreSQL: the same.
    static let postgresBucket = "CASE jsonb_typeof(doc -> 'meta' -> 'bucket') WHEN 'number' THEN CAST(doc -> 'meta' -> 'bucket' AS NUMERIC) END"
    /// The equality query (one parameter: the bucket).
    static let jsonFilterSQLite = "SELECT id, doc FROM bench_json WHERE \(sqliteBucket) = ? ORDER BY id LIMIT \(JSONData.limit)"
    static let jsonFilterPostgres = "SELECT id, doc FROM bench_json WHERE \(postgresBucket) = $1 ORDER BY id LIMIT \(JSONData.limit)"
    /// The containment query (PostgreSQL; one parameter: the JSON document contained).
    static let jsonContainsPostgres = "SELECT id, doc FROM bench_json WHERE doc @> $1::jsonb ORDER BY id"
    /// The search (SQLite, one parameter: the FTS5 query): the FTS5 table joined to its
    /// content table, best bm25 first (FTS5's bm25 is lower for a better match), ties by id.
    static let searchSQLite = """
        SELECT t.id, t.title, t.body FROM bench_text_fts JOIN bench_text t ON t.id = bench_text_fts.rowid
        WHERE bench_text_fts MATCH ? ORDER BY bm25(bench_text_fts), t.id LIMIT \(SearchData.limit)
        """
    /// The search (PostgreSQL): `$1` is the tsquery, built per kind by `tsquery(_:)`; the
    /// document expression is the GIN index's.
    static func searchPostgres(_ tsquery: String) -> String {
        let vector = "to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(body, ''))"
        return "SELECT id, title, body FROM bench_text WHERE \(vector) @@ \(tsquery) ORDER BY ts_rank(\(vector), \(tsquery)) DESC, id LIMIT \(SearchData.limit)"
    }
    /// A query's tsquery as a raw libpq user writes it, `$1` its text.
    static func tsquery(_ kind: SearchQuery.Kind) -> String {
        switch kind {
        case .word, .words: "plainto_tsquery('simple', $1)"
        case .prefix: "to_tsquery('simple', $1 || ':*')"
        case .phrase: "phraseto_tsquery('simple', $1)"
        }
    }
}

// MARK: - The core's statements

/// The `json-filter` and `fts-query` queries as the core's AST writes them: the `core`
/// subject runs these, and the fixtures EXPLAIN them to check that they use the indexes.
enum DocumentStatements {
    /// The rows of `bench_json` whose document's bucket is `bucket`, by id, at most ``JSONData/limit``.
    static func jsonFilter(bucket: Int64) -> SQLSelect {
        SQLSelect(from: JSONData.table).columns(.column("id"), .column("doc"))
            .where(SQLExpression.column("doc").jsonValue(at: JSONData.bucketPath, as: .integer).equals(bucket))
            .orderBy(SQLExpression.column("id").asc)
            .limit(JSONData.limit)
    }

    /// The rows of `bench_json` whose document holds the tag `tag`, by id (all of them: with
    /// `ORDER BY id LIMIT n` PostgreSQL may walk the primary key and test every row instead of
    /// asking the GIN index, since it cannot tell how rare a tag is).
    static func jsonContains(tag: String) -> SQLSelect {
        SQLSelect(from: JSONData.table).columns(.column("id"), .column("doc"))
            .where(SQLExpression.column("doc").jsonContains(json: JSONData.containmentJSON(tag: tag)))
            .orderBy(SQLExpression.column("id").asc)
    }

    /// The ``SearchData/limit`` best matches of `query` (Unity's syntax), ties by id.
    static func search(_ query: String) -> SQLSelect {
        SQLSelect(from: SearchData.table).columns(.column("id"), .column("title"), .column("body"))
            .where(SearchData.index.matches(query))
            .orderBy(SearchData.index.relevance(query).desc, SQLExpression.column("id").asc)
            .limit(SearchData.limit)
    }
}
