import Foundation

/// The database a benchmark runs against.
enum Backend: String, CaseIterable, Sendable, Codable {
    case sqlite
    case postgres
}

/// What a benchmark does. The raw values are the names used by `--only` and `--json`.
enum Workload: String, CaseIterable, Sendable, Codable {
    /// Insert `rows` records in one transaction.
    case insert
    /// Fetch every record of a `rows`-record table into model values.
    case fetch
    /// `rows` primary-key lookups in a 100,000-record table.
    case lookup
    /// `rows` filtered, ordered, limited queries over an indexed column.
    case query
    /// Update `rows` records one by one (by primary key) in one transaction.
    case update
    /// Delete `rows` records one by one (by primary key) in one transaction.
    case delete
    /// Fetch `rows` parents, each with its children, in a fixed number of queries.
    case oneToMany = "one-to-many"
    /// Stream `rows` records through a cursor without keeping them; peak memory is reported.
    case stream
    /// Save `rows` records made in code (not read first) in one transaction into a table that
    /// already holds the first `tableRows` of them: a batch of inserts and duplicates, each
    /// duplicate updating its row (sModel's save rules; `INSERT … ON CONFLICT DO UPDATE` raw).
    case upsert
    /// The same batch and table as `upsert`, through each flavor's insert-or-update call
    /// (`INSERT … ON CONFLICT DO UPDATE … RETURNING`, the rows as stored handed back); raw runs
    /// what it runs for `upsert`.
    case upsertBatch = "upsert-batch"
    /// `rows` primary-key lookups shared by `tasks` concurrent tasks through a pool of 8
    /// connections (a server's load); see `Concurrent.swift`.
    case concurrent
    /// `rows` filtered, ordered, limited queries on a value inside a JSON document column,
    /// through an expression index on that path (`SQLJSONIndex`); with
    /// ``WorkloadSpec/jsonContainment``, a containment test instead (PostgreSQL only: a GIN
    /// index), every matching row.
    /// See `DocumentData.swift`.
    case jsonFilter = "json-filter"
    /// `rows` full-text queries (a word, two words, a prefix, a phrase, in turn) over generated
    /// documents indexed by `FullTextIndex`, each returning the ten best matches by relevance.
    case ftsQuery = "fts-query"
}

/// The record every subject reads and writes: id, short text, real, date, nullable int, blob.
///
/// Subjects decode rows into this plain struct (GRDB through its `Codable` record conformance,
/// the raw baselines by hand) so that every subject pays for building the same model value.
struct BenchRecord: Sendable, Equatable, Codable {
    /// Column names (GRDB's `Codable` record support reads them).
    enum CodingKeys: String, CodingKey {
        case id, name, score, createdAt = "created_at", rank, payload
    }


    /// Primary key.
    var id: Int64
    /// Short text (`"name-<id>"`).
    var name: String
    /// A real number; indexed, used by the `query` workload.
    var score: Double
    /// A timestamp with millisecond precision (GRDB's storage precision).
    var createdAt: Date
    /// A nullable integer (NULL for every fifth record).
    var rank: Int64?
    /// 16 to 64 bytes.
    var payload: Data
}

/// A parent of the `one-to-many` workload.
struct BenchParent: Sendable, Equatable, Codable {
    /// Primary key.
    var id: Int64
    /// Short text.
    var name: String
}

/// A child of the `one-to-many` workload.
struct BenchChild: Sendable, Equatable, Codable {
    /// Column names.
    enum CodingKeys: String, CodingKey {
        case id, parentID = "parent_id", name, score
    }


    /// Primary key.
    var id: Int64
    /// The parent's id.
    var parentID: Int64
    /// Short text.
    var name: String
    /// A real number.
    var score: Double
}

/// A parent with its children, as the `one-to-many` workload returns it.
struct BenchParentWithChildren: Sendable {
    /// The parent.
    var parent: BenchParent
    /// Its children, in any order.
    var children: [BenchChild]
}

/// The deterministic data set: every subject reads and writes exactly these values.
enum BenchData {
    /// 2024-01-01 00:00:00 UTC, in milliseconds since 1970.
    static let baseMilliseconds: Int64 = 1_704_067_200_000

    /// The record with the given id (ids start at 1). `generation` 1 is the updated version
    /// written by the `update` workload.
    static func record(id: Int64, generation: Int64 = 0) -> BenchRecord {
        let milliseconds = baseMilliseconds + id * 1_001 + generation * 86_400_000
        let payloadCount = Int(id % 49) + 16
        var payload = Data(count: payloadCount)
        for index in 0..<payloadCount {
            payload[index] = UInt8(truncatingIfNeeded: id &+ Int64(index) &+ generation)
        }
        return BenchRecord(
            id: id,
            name: generation == 0 ? "name-\(id)" : "updated-\(id)",
            score: Double((id &* 7_919 &+ generation) % 100_000) / 100.0,
            createdAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000.0),
            rank: id % 5 == 0 ? nil : (id % 1_000) + generation,
            payload: payload
        )
    }

    /// Records 1...count. Memoized: the write workloads take their input from here, and
    /// making the input must not be timed (it would add the same constant to every subject's
    /// time and pull every ratio toward 1). The harness calls ``prepareInput(for:)`` before
    /// the clock starts; a later call with the same arguments returns the same array (copy on
    /// write makes that O(1)).
    static func records(count: Int, generation: Int64 = 0) -> [BenchRecord] {
        inputCache.records(count: count, generation: generation) {
            (0..<count).map { record(id: Int64($0) + 1, generation: generation) }
        }
    }

    /// Makes the input records of a write workload ahead of the timed part.
    static func prepareInput(for spec: WorkloadSpec) {
        switch spec.workload {
        case .insert, .delete:
            _ = records(count: spec.rows, generation: 0)
        case .update:
            _ = records(count: spec.rows, generation: 0)
            _ = records(count: spec.rows, generation: 1)
        case .upsert, .upsertBatch:
            _ = records(count: spec.tableRows, generation: 0)
            _ = records(count: spec.rows, generation: 1)
        case .ftsQuery:
            _ = SearchData.queries(spec)
        default:
            break
        }
    }

    private static let inputCache = InputCache()

    /// Milliseconds since 1970 of a date, rounded: the precision every subject keeps.
    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000.0).rounded())
    }

    /// The `score` lower bound used by the `index`-th query of the `query` workload.
    static func queryLowerBound(_ index: Int) -> Double {
        Double((index &* 104_729) % 99_000) / 100.0
    }

    /// The number of rows each query of the `query` workload returns at most.
    static let queryLimit = 20

    /// The id looked up by the `index`-th lookup in a table of `tableRows` records.
    static func lookupID(_ index: Int, tableRows: Int) -> Int64 {
        Int64((index &* 7_927) % max(tableRows, 1)) + 1
    }

    /// The `index`-th parent (ids start at 1).
    static func parent(id: Int64) -> BenchParent {
        BenchParent(id: id, name: "parent-\(id)")
    }

    /// The `index`-th child of parent `parentID` (ids are dense, starting at 1).
    static func child(parentID: Int64, index: Int64, childrenPerParent: Int64) -> BenchChild {
        let id = (parentID - 1) * childrenPerParent + index + 1
        return BenchChild(id: id, parentID: parentID, name: "child-\(id)", score: Double(id % 977) / 4.0)
    }
}

/// An order-independent checksum of values read or written, so subjects can be compared.
///
/// Each record hashes to a 64-bit FNV-1a value; records combine by wrapping addition, so the
/// order of rows does not matter (one-to-many children may come back in any order).
struct Checksum: Sendable, Equatable, CustomStringConvertible {
    /// Number of values folded in.
    private(set) var count: Int = 0
    /// The combined hash.
    private(set) var value: UInt64 = 0

    /// An empty checksum.
    init() {}

    /// A checksum reported by a child process.
    init(count: Int, value: UInt64) {
        self.count = count
        self.value = value
    }

    /// Folds in a record.
    mutating func add(_ record: BenchRecord) {
        var hasher = FNV1a()
        hasher.add(record.id)
        hasher.add(record.name)
        hasher.add(record.score.bitPattern)
        hasher.add(BenchData.milliseconds(record.createdAt))
        if let rank = record.rank { hasher.add(UInt8(1)); hasher.add(rank) } else { hasher.add(UInt8(0)) }
        hasher.add(record.payload)
        add(hash: hasher.value)
    }

    /// Folds in a parent with its children.
    mutating func add(_ parentWithChildren: BenchParentWithChildren) {
        var hasher = FNV1a()
        hasher.add(parentWithChildren.parent.id)
        hasher.add(parentWithChildren.parent.name)
        var children: UInt64 = 0
        for child in parentWithChildren.children {
            var childHasher = FNV1a()
            childHasher.add(child.id)
            childHasher.add(child.parentID)
            childHasher.add(child.name)
            childHasher.add(child.score.bitPattern)
            children &+= childHasher.value
        }
        hasher.add(children)
        hasher.add(Int64(parentWithChildren.children.count))
        add(hash: hasher.value)
    }

    /// Folds in a hash computed elsewhere.
    mutating func add(hash: UInt64) {
        count += 1
        value &+= hash
    }

    var description: String { "\(count) rows, checksum \(String(value, radix: 16))" }
}

/// 64-bit FNV-1a, deterministic across processes (unlike `Hasher`).
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }

    mutating func add(_ integer: Int64) { add(UInt64(bitPattern: integer)) }

    mutating func add(_ integer: UInt64) {
        var remaining = integer
        for _ in 0..<8 {
            add(byte: UInt8(truncatingIfNeeded: remaining))
            remaining >>= 8
        }
    }

    mutating func add(_ byte: UInt8) { add(byte: byte) }

    mutating func add(_ string: String) {
        for byte in string.utf8 { add(byte: byte) }
        add(byte: 0xff)
    }

    mutating func add(_ data: Data) {
        // Through the bytes themselves: `Data`'s own iterator cost several times the hashing.
        data.withUnsafeBytes { bytes in
            for byte in bytes { add(byte: byte) }
        }
        add(Int64(data.count))
    }
}

/// The memoized input of ``BenchData/records(count:generation:)``: the last few arrays made.
final class InputCache: @unchecked Sendable {
    // @unchecked: `entries` is only touched under `lock`.
    private let lock = NSLock()
    private var entries: [(count: Int, generation: Int64, records: [BenchRecord])] = []

    func records(count: Int, generation: Int64, make: () -> [BenchRecord]) -> [BenchRecord] {
        lock.lock()
        if let hit = entries.first(where: { $0.count == count && $0.generation == generation }) {
            lock.unlock()
            return hit.records
        }
        lock.unlock()
        let made = make()
        lock.lock()
        entries.append((count, generation, made))
        if entries.count > 4 { entries.removeFirst() }
        lock.unlock()
        return made
    }
}
