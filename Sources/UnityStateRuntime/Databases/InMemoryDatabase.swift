import Foundation

/// A value of an exact type, so that a value written as one type is read only as that type
/// (`Int??` stays `.some(nil)`; no optional is flattened by a dynamic cast).
final class StoredValue<Value>: @unchecked Sendable {
    // @unchecked: immutable after init; the stores hand it out only under their lock.
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// A database that keeps the current value of every path in memory: for tests, previews and
/// small data sets. Safe to use from several threads (one lock).
///
/// Each value is kept with the date it was written, so that ``getEncodedHistory(until:)``
/// can export what changed after a date and ``insert(records:)`` can merge it into another
/// store, the later write of a path winning.
public final class InMemoryDatabase: Database, @unchecked Sendable {
    // @unchecked: `values`, `statuses` and `statusDates` are read and written only under `lock`.
    private let lock = NSLock()
    /// A value and when it was written.
    private struct Entry {
        /// A `StoredValue<V>`, or a `RecordValue` inserted from records and not yet read.
        let value: AnyObject
        let date: Date
    }
    private var values: [Path: Entry] = [:]
    /// The status of each instance, by model: what `all(model:)` lists without a scan of
    /// every path.
    private var statuses: [ModelKey: [InstanceKey: InstanceStatus]] = [:]
    /// When each status was written.
    private var statusDates: [Path: Date] = [:]
    private let clock: @Sendable () -> Date

    /// An empty database.
    public init() {
        self.clock = { Date() }
    }

    /// An empty database whose writes are dated by `clock` (the dates ``getEncodedHistory(until:)``
    /// exports).
    public init(clock: @escaping @Sendable () -> Date) {
        self.clock = clock
    }

    /// The value stored at `path`, from memory; nil when none is stored (or it is not a `Value`).
    public func get<Value: DatabaseValue>(_ path: Path) -> Value? {
        lock.lock()
        if path.isInstanceStatus, Value.self == InstanceStatus.self {
            defer { lock.unlock() }
            return statuses[path.model]?[path.instance] as? Value
        }
        // Any other value at a status path is kept apart from the status (as SQLiteStateDB).
        let entry = values[path]
        lock.unlock()
        guard let entry else { return nil }
        if let stored = entry.value as? StoredValue<Value> { return stored.value }
        // A value inserted from records: decoded as the type it is read as.
        guard let record = entry.value as? RecordValue else { return nil }
        do {
            return try record.data.decoded(Value.self, decoder: HistoryRecords.decoder())
        } catch {
            return nil
        }
    }

    /// Stores `value` at `path`, dated by the store's clock.
    public func set<Value: DatabaseValue>(_ value: Value, for path: Path) {
        let date = clock()
        lock.lock()
        defer { lock.unlock() }
        if path.isInstanceStatus, Value.self == InstanceStatus.self, let status = value as? InstanceStatus {
            statuses[path.model, default: [:]][path.instance] = status
            statusDates[path] = date
            return
        }
        // Any other value at a status path is stored beside the status, which it leaves as it
        // is (as SQLiteStateDB does), and read back as its own type.
        values[path] = Entry(value: StoredValue(value), date: date)
    }

    /// Calls `predicate` with every instance of `model` that has a stored status, from memory, and
    /// collects the non-nil results (in instance order).
    public func all<T>(model: ModelKey, where predicate: (InstanceKey, InstanceStatus) -> T?) -> [T] {
        lock.lock()
        let instances = statuses[model] ?? [:]
        lock.unlock()
        // The predicate may read the database (a filter over the model): call it unlocked.
        return instances.sorted { $0.key < $1.key }.compactMap { predicate($0.key, $0.value) }
    }

    /// Applies `body`'s writes, or, when it throws, puts every value back as it was before
    /// (writes made meanwhile by other threads are undone too: keep transactions short).
    public func transaction<R>(_ body: () throws -> R) throws -> R {
        lock.lock()
        let saved = (values, statuses, statusDates)
        lock.unlock()
        do {
            return try body()
        } catch {
            lock.lock()
            (values, statuses, statusDates) = saved
            lock.unlock()
            throw error
        }
    }

    // MARK: Export and import

    /// Every value and status written after `date`, each with its path and write date, encoded
    /// for ``insert(records:)`` of another `InMemoryDatabase` (JSON).
    ///
    /// Each path is exported with its current value (the latest write; this store keeps no
    /// older ones). Values keep their exact type on the way through, nested optionals
    /// included: an `Int??` that is `.some(nil)` reads back as `.some(nil)`.
    /// - Parameter date: Only writes after this date; `.distantPast` (the default) for all.
    /// - Throws: ``StateError/valueCodingFailed(path:error:)`` when a value cannot be encoded.
    public func getEncodedHistory(until date: Date = .distantPast) throws(StateError) -> Data {
        lock.lock()
        let values = self.values, statuses = self.statuses, statusDates = self.statusDates
        lock.unlock()
        let encoder = HistoryRecords.encoder()
        var records: [HistoryRecord] = []
        for (model, instances) in statuses {
            for (instance, status) in instances {
                let path = Path(model: model, instance: instance)
                guard let written = statusDates[path], written > date else { continue }
                records.append(HistoryRecord(path: path, date: written, status: status, value: nil))
            }
        }
        for (path, entry) in values where entry.date > date {
            let value: PropertyValueData
            do {
                guard let exportable = entry.value as? any HistoryExportable else {
                    throw StateError.valueCodingFailed(path: path, error: "\(type(of: entry.value)) is not a stored value")
                }
                value = try exportable.recordValue(property: path.property, encoder: encoder)
            } catch let error as StateError {
                throw error
            } catch {
                throw .valueCodingFailed(path: path, error: String(describing: error))
            }
            records.append(HistoryRecord(path: path, date: entry.date, status: nil, value: value))
        }
        records.sort()
        return try MessageCoder(encoder: encoder, decoder: HistoryRecords.decoder()).encode(.history, records)
    }

    /// Merges records exported by ``getEncodedHistory(until:)``: each value and status is
    /// written with its own date, unless this store holds a later write of its path.
    ///
    /// The records are decoded before anything is written: data that is not such an export
    /// throws and changes nothing. A value keeps its encoded form until it is read, and is then
    /// decoded as the type it is read as (a value read as another type than it was written as
    /// reads as nothing, as on every store).
    /// - Throws: ``StateError/invalidDataSupplied`` for data that is not an export,
    ///   ``StateError/decodingFailed(error:)`` for an export that cannot be read.
    public func insert(records data: Data) throws(StateError) {
        let records = try MessageCoder(encoder: HistoryRecords.encoder(), decoder: HistoryRecords.decoder())
            .decode(.history, [HistoryRecord].self, from: data)
        for record in records where (record.status == nil) == (record.value == nil) {
            throw .decodingFailed(error: "a record at \(record.path) holds \(record.status == nil ? "neither a status nor a value" : "both a status and a value")")
        }
        lock.lock()
        defer { lock.unlock() }
        for record in records {
            let path = record.path
            if let status = record.status {
                if let current = statusDates[path], current > record.date { continue }
                statuses[path.model, default: [:]][path.instance] = status
                statusDates[path] = record.date
            } else if let value = record.value {
                if let current = values[path], current.date > record.date { continue }
                values[path] = Entry(value: RecordValue(value), date: record.date)
            }
        }
    }
}

// MARK: Records of an export

/// A stored value that can be exported, whatever its type.
private protocol HistoryExportable {
    func recordValue(property: PropertyKey, encoder: any GenericEncoder) throws -> PropertyValueData
}

extension StoredValue: HistoryExportable where Value: Encodable {
    fileprivate func recordValue(property: PropertyKey, encoder: any GenericEncoder) throws -> PropertyValueData {
        try PropertyValueData(property: property, value: value, date: nil, encoder: encoder)
    }
}

/// A value inserted from records, kept in its exported form until it is read as a type.
private final class RecordValue: HistoryExportable, @unchecked Sendable {
    // @unchecked: immutable after init.
    let data: PropertyValueData
    init(_ data: PropertyValueData) { self.data = data }

    func recordValue(property: PropertyKey, encoder: any GenericEncoder) throws -> PropertyValueData {
        data
    }
}

/// One write in an export: a path, when it was written, and the status or the value.
struct HistoryRecord: Codable, Comparable {
    let model: ModelKey
    let instance: InstanceKey
    let property: PropertyKey
    /// The write date's `timeIntervalSinceReferenceDate` as its bit pattern: every bit kept.
    let written: UInt64
    let status: InstanceStatus?
    let value: PropertyValueData?

    init(path: Path, date: Date, status: InstanceStatus?, value: PropertyValueData?) {
        model = path.model
        instance = path.instance
        property = path.property
        written = date.timeIntervalSinceReferenceDate.bitPattern
        self.status = status
        self.value = value
    }

    var path: Path { Path(model: model, instance: instance, property: property) }
    var date: Date { Date(timeIntervalSinceReferenceDate: Double(bitPattern: written)) }

    /// By date, then path, a status before a value of the same path.
    static func < (lhs: HistoryRecord, rhs: HistoryRecord) -> Bool {
        let l = (lhs.date, lhs.model, lhs.instance, lhs.property), r = (rhs.date, rhs.model, rhs.instance, rhs.property)
        if l != r { return l < r }
        return lhs.status != nil && rhs.status == nil
    }

    static func == (lhs: HistoryRecord, rhs: HistoryRecord) -> Bool {
        lhs.path == rhs.path && lhs.written == rhs.written && (lhs.status == nil) == (rhs.status == nil)
    }
}

/// The coders of an export: JSON, with doubles that JSON has no number for (infinities,
/// NaN) as strings, so that every `Double` and `Float` value can be exported.
enum HistoryRecords {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return decoder
    }
}
