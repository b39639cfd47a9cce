import Foundation
import RawLibPQ

/// A thin owner of one libpq connection, used by the raw baseline and by the fixture.
final class RawPGConnection {
    /// The libpq handle.
    let handle: OpaquePointer

    /// Connects to `url`.
    init(url: String) throws {
        guard let handle = PQconnectdb(url) else { throw BenchError("libpq: out of memory") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw BenchError("cannot connect to PostgreSQL at \(url): \(message)")
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    /// The connection's last error message.
    var errorMessage: String { String(cString: PQerrorMessage(handle)) }

    /// Runs SQL (one or more statements, no parameters) and checks it succeeded.
    func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw BenchError("PostgreSQL: \(errorMessage) in \(sql)")
        }
    }

    /// The single integer result of `sql` (text format).
    func scalar(_ sql: String) throws -> Int64 {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK, PQntuples(result) == 1,
              let text = PQgetvalue(result, 0, 0), let value = Int64(String(cString: text))
        else { throw BenchError("PostgreSQL: \(errorMessage) in \(sql)") }
        return value
    }

    /// PostgreSQL's plan for `sql` with text `parameters` (types inferred), one line per node.
    func explain(_ sql: String, _ parameters: [String]) throws -> String {
        let pointers = parameters.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        let values: [UnsafePointer<CChar>?] = pointers.map { $0.map { UnsafePointer($0) } }
        guard let result = PQexecParams(handle, "EXPLAIN " + sql, Int32(values.count), nil, values, nil, nil, 0) else {
            throw BenchError("libpq: out of memory")
        }
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw BenchError("PostgreSQL: \(errorMessage) in EXPLAIN \(sql)") }
        return (0..<PQntuples(result)).map { String(cString: PQgetvalue(result, $0, 0)) }.joined(separator: " / ")
    }

    /// Prepares a named statement.
    func prepare(name: String, sql: String, types: [Oid]) throws {
        let result = PQprepare(handle, name, sql, Int32(types.count), types)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw BenchError("PostgreSQL: \(errorMessage) preparing \(sql)")
        }
    }

    /// Runs `COPY … FROM STDIN (FORMAT binary)` with the bytes of `copy`.
    func copyIn(_ sql: String, _ copy: PGBinaryCopy) throws {
        let start = PQexec(handle, sql)
        let status = PQresultStatus(start)
        PQclear(start)
        guard status == PGRES_COPY_IN else { throw BenchError("PostgreSQL: \(errorMessage) in \(sql)") }
        let bytes = copy.finish()
        let sent = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
        }
        guard sent == 1, PQputCopyEnd(handle, nil) == 1 else { throw BenchError("PostgreSQL: COPY failed: \(errorMessage)") }
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else {
                throw BenchError("PostgreSQL: COPY failed: \(errorMessage)")
            }
        }
    }
}

/// PostgreSQL type OIDs of the benchmark columns.
enum PGType {
    static let int8: Oid = 20
    static let text: Oid = 25
    static let float8: Oid = 701
    static let timestamptz: Oid = 1184
    static let bytea: Oid = 17
}

/// Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01.
let postgresEpochOffsetMicroseconds: Int64 = 946_684_800_000_000

/// Builds the body of a binary COPY (`PGCOPY` header, tuples, trailer).
struct PGBinaryCopy {
    private(set) var bytes: [UInt8] = []

    init(reservingCapacity capacity: Int = 0) {
        bytes.reserveCapacity(capacity + 21)
        bytes.append(contentsOf: [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00]) // PGCOPY\n\377\r\n\0
        appendInt32(0) // flags
        appendInt32(0) // header extension length
    }

    /// Starts a tuple of `fieldCount` fields.
    mutating func beginTuple(fieldCount: Int16) { appendInt16(fieldCount) }

    mutating func appendInt64Field(_ value: Int64) { appendInt32(8); appendInt64(value) }
    mutating func appendDoubleField(_ value: Double) { appendInt32(8); appendInt64(Int64(bitPattern: value.bitPattern)) }
    mutating func appendNullField() { appendInt32(-1) }

    mutating func appendTextField(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            appendInt32(Int32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func appendBytesField(_ value: Data) {
        appendInt32(Int32(value.count))
        bytes.append(contentsOf: value)
    }

    /// Appends a whole record (the `bench` columns, in order).
    mutating func appendRecord(_ record: BenchRecord) {
        beginTuple(fieldCount: 6)
        appendInt64Field(record.id)
        appendTextField(record.name)
        appendDoubleField(record.score)
        appendInt64Field(BenchData.milliseconds(record.createdAt) * 1_000 - postgresEpochOffsetMicroseconds)
        if let rank = record.rank { appendInt64Field(rank) } else { appendNullField() }
        appendBytesField(record.payload)
    }

    /// The complete body, with its trailer.
    func finish() -> [UInt8] {
        var result = bytes
        result.append(0xFF)
        result.append(0xFF)
        return result
    }

    private mutating func appendInt16(_ value: Int16) {
        let big = UInt16(bitPattern: value).bigEndian
        withUnsafeBytes(of: big) { bytes.append(contentsOf: $0) }
    }

    private mutating func appendInt32(_ value: Int32) {
        let big = UInt32(bitPattern: value).bigEndian
        withUnsafeBytes(of: big) { bytes.append(contentsOf: $0) }
    }

    private mutating func appendInt64(_ value: Int64) {
        let big = UInt64(bitPattern: value).bigEndian
        withUnsafeBytes(of: big) { bytes.append(contentsOf: $0) }
    }
}

/// Reads binary-format values out of a `PGresult`.
struct PGBinaryResult {
    /// The result.
    let result: OpaquePointer

    /// Number of rows.
    var rowCount: Int32 { PQntuples(result) }

    @inline(__always)
    func isNull(_ row: Int32, _ column: Int32) -> Bool { PQgetisnull(result, row, column) == 1 }

    @inline(__always)
    func int64(_ row: Int32, _ column: Int32) -> Int64 {
        guard let pointer = PQgetvalue(result, row, column) else { return 0 }
        return Int64(bigEndian: UnsafeRawPointer(pointer).loadUnaligned(as: Int64.self))
    }

    @inline(__always)
    func double(_ row: Int32, _ column: Int32) -> Double {
        Double(bitPattern: UInt64(bitPattern: int64(row, column)))
    }

    @inline(__always)
    func text(_ row: Int32, _ column: Int32) -> String {
        guard let pointer = PQgetvalue(result, row, column) else { return "" }
        let count = Int(PQgetlength(result, row, column))
        return UnsafeRawPointer(pointer).withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
    }

    @inline(__always)
    func data(_ row: Int32, _ column: Int32) -> Data {
        guard let pointer = PQgetvalue(result, row, column) else { return Data() }
        return Data(bytes: pointer, count: Int(PQgetlength(result, row, column)))
    }

    /// Decodes row `row`, whose first six columns are a record's (binary format).
    @inline(__always)
    func record(_ row: Int32) -> BenchRecord {
        let microseconds = int64(row, 3) + postgresEpochOffsetMicroseconds
        return BenchRecord(
            id: int64(row, 0), name: text(row, 1), score: double(row, 2),
            createdAt: Date(timeIntervalSince1970: Double(microseconds) / 1_000_000),
            rank: isNull(row, 4) ? nil : int64(row, 4), payload: data(row, 5))
    }
}

/// Binary parameter buffers for libpq's `PQsendQueryPrepared`/`PQexecPrepared`, reused from
/// row to row: one byte buffer, no per-value allocation.
struct PGParameters {
    private var buffer: [UInt8] = []
    private var offsets: [Int]
    private var lengths: [Int32]
    private var nulls: [Bool]
    private var pointers: [UnsafePointer<CChar>?]
    private let formats: [Int32]

    init(count: Int) {
        offsets = Array(repeating: 0, count: count)
        lengths = Array(repeating: 0, count: count)
        nulls = Array(repeating: false, count: count)
        pointers = Array(repeating: nil, count: count)
        formats = Array(repeating: 1, count: count)
        buffer.reserveCapacity(256)
    }

    /// Forgets the previous row's values.
    mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        buffer.append(0) // so every value's pointer is non-null, even an empty one
    }

    mutating func set(_ index: Int, int64 value: Int64) {
        offsets[index] = buffer.count
        lengths[index] = 8
        nulls[index] = false
        withUnsafeBytes(of: UInt64(bitPattern: value).bigEndian) { buffer.append(contentsOf: $0) }
    }

    mutating func set(_ index: Int, double value: Double) { set(index, int64: Int64(bitPattern: value.bitPattern)) }

    mutating func set(_ index: Int, text value: String) {
        offsets[index] = buffer.count
        nulls[index] = false
        var value = value
        value.withUTF8 { buffer.append(contentsOf: $0) }
        lengths[index] = Int32(buffer.count - offsets[index])
    }

    mutating func set(_ index: Int, bytes value: Data) {
        offsets[index] = buffer.count
        lengths[index] = Int32(value.count)
        nulls[index] = false
        buffer.append(contentsOf: value)
    }

    mutating func setNull(_ index: Int) {
        nulls[index] = true
        lengths[index] = 0
    }

    /// Sets parameters `first…first+5` to a record's columns.
    mutating func set(record: BenchRecord, first: Int = 0) {
        set(first, int64: record.id)
        set(first + 1, text: record.name)
        set(first + 2, double: record.score)
        set(first + 3, int64: BenchData.milliseconds(record.createdAt) * 1_000 - postgresEpochOffsetMicroseconds)
        if let rank = record.rank { set(first + 4, int64: rank) } else { setNull(first + 4) }
        set(first + 5, bytes: record.payload)
    }

    /// Calls `body` with libpq's values, lengths and formats arrays (all binary).
    mutating func withLibPQArrays<Result>(
        _ body: (UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<Int32>, UnsafePointer<Int32>) throws -> Result
    ) rethrows -> Result {
        try buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress!)
            for index in pointers.indices {
                pointers[index] = nulls[index] ? nil : (base + offsets[index]).assumingMemoryBound(to: CChar.self)
            }
            return try body(pointers, lengths, formats)
        }
    }
}
