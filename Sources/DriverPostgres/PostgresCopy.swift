import CLibPQ
import Foundation
import Unity

/// How a value is written in a binary COPY for one target column: the column's type (a
/// domain's base type), as far as the driver has a binary form for it.
enum PGCopyColumn {
    case int8, int4, int2, float8, float4, numeric, bool, text, bytea, timestamp, uuid, json, jsonb
    /// A type with no binary form here: only NULL is written; any other value sends the rest
    /// of the load as INSERTs.
    case other

    init(oid: Oid) {
        switch oid {
        case PGType.int8: self = .int8
        case PGType.int4: self = .int4
        case PGType.int2: self = .int2
        case PGType.float8: self = .float8
        case PGType.float4: self = .float4
        case PGType.numeric: self = .numeric
        case PGType.bool: self = .bool
        case PGType.text, PGType.varchar, PGType.bpchar: self = .text
        case PGType.bytea: self = .bytea
        case PGType.timestamptz, PGType.timestamp: self = .timestamp
        case PGType.uuid: self = .uuid
        case PGType.json: self = .json
        case PGType.jsonb: self = .jsonb
        default: self = .other
        }
    }
}

/// The body of a binary COPY (`PGCOPY` signature, tuples, trailer), built in one byte buffer
/// that is sent and emptied every 256 kB.
///
/// Each value is encoded as the server would store what the INSERT path binds: the same
/// 8-byte integers, IEEE doubles, microseconds since 2000, UUID bytes and JSON text, a
/// `Decimal` as the numeric its text makes, an integer or a double converted as PostgreSQL's
/// assignment casts convert them. Where that is not certain (a range the cast would refuse,
/// NaN, a NUL in text, a type without a binary form), ``append(_:as:)`` returns false and
/// the row goes through the INSERT path instead, which then stores or refuses it as always.
struct PGCopyBuffer {
    static let flushSize = 256 * 1024
    private(set) var bytes: [UInt8] = []

    init() {
        bytes.reserveCapacity(Self.flushSize + 64 * 1024)
    }

    /// The signature, flags and header extension length.
    mutating func appendHeader() {
        bytes.append(contentsOf: [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00])
        appendBE(UInt32(0))
        appendBE(UInt32(0))
    }

    /// The end-of-data marker.
    mutating func appendTrailer() { appendBE(Int16(-1)) }

    /// A tuple's field count.
    mutating func appendFieldCount(_ count: Int) { appendBE(Int16(truncatingIfNeeded: count)) }

    var count: Int { bytes.count }

    mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    /// Drops what was appended after `count` bytes (a row that could not be encoded).
    mutating func truncate(to count: Int) { bytes.removeSubrange(count...) }

    @inline(__always)
    mutating func appendBE<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    @inline(__always)
    private mutating func field<T: FixedWidthInteger>(_ value: T) {
        appendBE(Int32(MemoryLayout<T>.size))
        appendBE(value)
    }

    /// Appends text as UTF-8, or returns false when it holds a NUL (which the INSERT path
    /// refuses with its own error).
    private mutating func text(_ s: String, prefix: UInt8? = nil) -> Bool {
        let lengthAt = bytes.count
        appendBE(Int32(0))
        let start = bytes.count
        if let prefix { bytes.append(prefix) }
        bytes.append(contentsOf: s.utf8)
        guard !bytes[start...].contains(0), bytes.count - start <= Int(Int32.max) else {
            bytes.removeSubrange(lengthAt...)
            return false
        }
        let length = UInt32(bytes.count - start).bigEndian
        withUnsafeBytes(of: length) { raw in
            for i in 0..<4 { bytes[lengthAt + i] = raw[i] }
        }
        return true
    }

    /// Appends `value` for a column of type `column`; false (appending nothing) when the
    /// INSERT path must store it.
    mutating func append(_ value: DatabaseValue, as column: PGCopyColumn) -> Bool {
        switch (value, column) {
        case (.null, _):
            appendBE(Int32(-1))
        case (.integer(let v), .int8):
            field(v)
        case (.integer(let v), .int4):
            guard let narrow = Int32(exactly: v) else { return false }
            field(narrow)
        case (.integer(let v), .int2):
            guard let narrow = Int16(exactly: v) else { return false }
            field(narrow)
        case (.integer(let v), .float8):
            field(Double(v).bitPattern)
        case (.integer(let v), .float4):
            field(Float(v).bitPattern)
        case (.integer(let v), .numeric):
            return numeric(String(v))
        case (.double(let v), .float8):
            guard !v.isNaN else { return false }
            field(v.bitPattern)
        case (.double(let v), .float4):
            // PostgreSQL's float8 → float4 refuses an overflow to infinity and an underflow to zero.
            let narrow = Float(v)
            guard !v.isNaN, narrow.isInfinite == v.isInfinite, narrow != 0 || v == 0 else { return false }
            field(narrow.bitPattern)
        case (.bool(let b), .bool):
            field(UInt8(b ? 1 : 0))
        case (.text(let s), .text), (.text(let s), .json):
            // (A `.json` value is bound as jsonb, so a `json` column stores jsonb's normalized
            // text: the INSERT path stores that one.)
            return text(s)
        case (.text(let s), .jsonb), (.json(let s), .jsonb):
            // jsonb's binary form: version 1, then the text.
            return text(s, prefix: 1)
        case (.decimal(let d), .numeric):
            guard !d.isNaN else { return false }
            return numeric(d.description)
        case (.blob(let data), .bytea):
            guard data.count <= Int(Int32.max) else { return false }
            appendBE(Int32(data.count))
            bytes.append(contentsOf: data)
        case (.date(let date), .timestamp):
            // As the INSERT path binds a timestamptz (the session's zone is UTC, so a
            // `timestamp` column stores the same microseconds), within the same range.
            guard let micros = DateText.microsecondsSinceReferenceDate(date) else { return false }
            let (since2000, overflow) = micros.addingReportingOverflow(DateText.postgresEpochToReferenceMicros)
            guard !overflow, since2000 >= -211_813_488_000_000_000, since2000 < 9_223_371_331_200_000_000 else { return false }
            field(since2000)
        case (.uuid(let u), .uuid):
            appendBE(Int32(16))
            withUnsafeBytes(of: u.uuid) { bytes.append(contentsOf: $0) }
        default:
            return false
        }
        return true
    }

    /// Appends the binary numeric that `numeric_in` makes of `text` (`-?digits[.digits]`):
    /// base-10000 digits, the weight of the first, the sign and the display scale (the
    /// number of digits written after the point). False for any other text.
    mutating func numeric(_ text: String) -> Bool {
        var utf8 = Substring(text).utf8[...]
        var negative = false
        if utf8.first == UInt8(ascii: "-") {
            negative = true
            utf8 = utf8.dropFirst()
        }
        let integerPart = utf8.prefix { $0 >= 48 && $0 <= 57 }
        var fraction = utf8[integerPart.endIndex...]
        if fraction.first == UInt8(ascii: ".") { fraction = fraction.dropFirst() } else if !fraction.isEmpty { return false }
        guard !integerPart.isEmpty || !fraction.isEmpty, fraction.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return false }
        let scale = fraction.count
        guard scale <= 0x3FFF else { return false }
        // Groups of four decimal digits, aligned on the point.
        let integerDigits = Array(integerPart.drop { $0 == 48 }).map { Int($0) - 48 }
        let fractionDigits = Array(fraction).map { Int($0) - 48 }
        let leading = (4 - integerDigits.count % 4) % 4
        let padded = [Int](repeating: 0, count: leading) + integerDigits
        var groups: [Int16] = []
        groups.reserveCapacity(padded.count / 4 + fractionDigits.count / 4 + 2)
        var i = 0
        while i < padded.count {
            var value = 0
            for k in 0..<4 { value = value * 10 + padded[i + k] }
            groups.append(Int16(value))
            i += 4
        }
        var weight = padded.count / 4 - 1
        var f = 0
        while f < fractionDigits.count {
            var value = 0
            for k in 0..<4 { value = value * 10 + (f + k < fractionDigits.count ? fractionDigits[f + k] : 0) }
            groups.append(Int16(value))
            f += 4
        }
        // Leading and trailing zero groups carry nothing (`make_result` drops them too).
        var start = 0
        while start < groups.count, groups[start] == 0 {
            start += 1
            weight -= 1
        }
        var end = groups.count
        while end > start, groups[end - 1] == 0 { end -= 1 }
        let digits = groups[start..<end]
        guard digits.count <= Int(Int16.max), weight >= Int(Int16.min), weight <= Int(Int16.max) else { return false }
        let isZero = digits.isEmpty
        appendBE(Int32(8 + 2 * digits.count))
        appendBE(Int16(digits.count))
        appendBE(Int16(isZero ? 0 : weight))
        appendBE(UInt16(negative && !isZero ? 0x4000 : 0x0000))
        appendBE(UInt16(scale))
        for digit in digits { appendBE(digit) }
        return true
    }
}

extension PostgresConnection {
    var supportsCopy: Bool { true }

    /// Each column of the table named `$1` (quoted, as the COPY names it) with its type, a
    /// domain's base type in its place.
    static let copyColumnTypesSQL = """
        SELECT a.attname, CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END \
        FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
        WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
        """

    /// `$3` values of the sequence behind column `$2` of table `$1`, in the order taken.
    static let allocateIdsSQL =
        "SELECT nextval(pg_get_serial_sequence($1, $2)) FROM generate_series(1, CAST($3 AS bigint)) ORDER BY 1"

    func allocateSequenceValues(table: String, column: String, count: Int) throws -> [Int64]? {
        guard count > 0 else { return [] }
        var values: [Int64] = []
        values.reserveCapacity(count)
        var withoutSequence = false
        try execute(Self.allocateIdsSQL, bindings: [.text(Self.quoteIdentifier(table)), .text(column), .integer(Int64(count))]) { row in
            guard !withoutSequence, !row[0].isNull else {
                withoutSequence = true
                return
            }
            values.append(try row.decode(Int64.self, at: 0))
        }
        return withoutSequence || values.count != count ? nil : values
    }

    func copyIn(_ request: CopyInRequest, nextRow: (inout [DatabaseValue]) throws -> Bool) throws -> CopyInResult {
        let conn = try readyHandle()
        try flushPendingBegin(conn)
        guard PQtransactionStatus(conn) == PQTRANS_INTRANS else {
            throw DatabaseError.misuse("a COPY runs inside a transaction (Connection.copy opens one)")
        }
        runningBegin = nil
        let allColumns = (request.generatedIdColumn.map { [$0] } ?? []) + request.columns
        let table = Self.quoteIdentifier(request.table)

        // The column types and the ids, in one round trip.
        var typeByColumn: [String: Oid] = [:]
        var ids: [Int64] = []
        let idCount = request.generatedIdColumn == nil ? 0 : (request.rowCount ?? -1)
        if request.generatedIdColumn != nil, idCount < 0 {
            throw DatabaseError.misuse("a COPY that allocates ids needs the row count")
        }
        try runCatalogPipeline(conn, table: table, idColumn: request.generatedIdColumn, idCount: idCount,
                               types: &typeByColumn, ids: &ids)
        if request.generatedIdColumn != nil {
            guard ids.count == idCount else {
                throw DatabaseError.misuse(
                    "the column \(Self.quoteIdentifier(request.generatedIdColumn ?? "")) of \(table) takes its values from no sequence, so a COPY cannot allocate them")
            }
        }

        // Start the COPY: the server checks the table and columns now.
        let start = PQexec(conn, request.copySQL)
        guard let start, PQresultStatus(start) == PGRES_COPY_IN else {
            defer { PQclear(start) }
            if let start, PQresultStatus(start) == PGRES_COPY_OUT || PQresultStatus(start) == PGRES_COPY_BOTH {
                Self.drainResults(on: conn)
            }
            throw pgError(result: start, connection: conn, sql: request.copySQL)
        }
        PQclear(start)
        let columns = allColumns.map { PGCopyColumn(oid: typeByColumn[$0] ?? PGType.unknown) }

        var buffer = PGCopyBuffer()
        buffer.appendHeader()
        var values: [DatabaseValue] = []
        var written = 0
        var leftover: [DatabaseValue]?
        do {
            rows: while try nextRow(&values) {
                let rowStart = buffer.count
                let id: DatabaseValue? = request.generatedIdColumn == nil ? nil : .integer(ids[written])
                buffer.appendFieldCount(columns.count)
                var column = 0
                if let id {
                    if !buffer.append(id, as: columns[0]) {
                        buffer.truncate(to: rowStart)
                        leftover = [id] + values
                        break rows
                    }
                    column = 1
                }
                for value in values {
                    if !buffer.append(value, as: columns[column]) {
                        buffer.truncate(to: rowStart)
                        leftover = (id.map { [$0] } ?? []) + values
                        break rows
                    }
                    column += 1
                }
                written += 1
                if buffer.count >= PGCopyBuffer.flushSize {
                    try sendCopyData(buffer, on: conn, sql: request.copySQL)
                    buffer.removeAll()
                }
            }
            buffer.appendTrailer()
            try sendCopyData(buffer, on: conn, sql: request.copySQL)
        } catch {
            // The server discards the rows and aborts the transaction; the caller's error stands.
            _ = PQputCopyEnd(conn, "the rows' source failed")
            Self.drainResults(on: conn)
            throw error
        }
        var copied = try finishCopyIn(conn, sql: request.copySQL)

        if let first = leftover {
            // A value with no binary form for its column: it and every later row go the INSERT
            // way, so that each is stored (or refused) exactly as an INSERT stores it.
            var batch: [[DatabaseValue]] = [first]
            var next = written + 1
            func flush() throws {
                guard !batch.isEmpty else { return }
                copied += try executeBatch(request.insertSQL, bindingSets: batch)
                batch.removeAll(keepingCapacity: true)
            }
            while try nextRow(&values) {
                batch.append(request.generatedIdColumn == nil ? values : [.integer(ids[next])] + values)
                next += 1
                if batch.count >= 1_000 { try flush() }
            }
            try flush()
        } else if request.generatedIdColumn == nil {
            // Values the caller gave to an identity or serial column move its sequence past them,
            // as an INSERT's do. Ids taken from the sequence itself need nothing.
            try keepSequencesAhead(of: request.insertSQL)
        }
        return CopyInResult(rowCount: copied, generatedIds: ids)
    }

    /// Sends one chunk of COPY data.
    private func sendCopyData(_ buffer: PGCopyBuffer, on conn: OpaquePointer, sql: String) throws {
        let sent = buffer.bytes.withUnsafeBufferPointer { raw in
            raw.withMemoryRebound(to: CChar.self) { PQputCopyData(conn, $0.baseAddress, Int32(raw.count)) }
        }
        guard sent == 1 else { throw pgError(result: nil, connection: conn, sql: sql) }
    }

    /// Ends the COPY and reads the server's answer: the number of rows, or its error (a
    /// constraint violation found at the end is the same error an INSERT reports).
    private func finishCopyIn(_ conn: OpaquePointer, sql: String) throws -> Int {
        guard PQputCopyEnd(conn, nil) == 1 else { throw pgError(result: nil, connection: conn, sql: sql) }
        var failure: DatabaseError?
        var rows = 0
        var answered = false
        while let result = PQgetResult(conn) {
            defer { PQclear(result) }
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK:
                answered = true
                // "COPY n".
                rows = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
            case PGRES_COPY_IN:
                // Still in COPY mode (the end was not taken): end it again, failing.
                _ = PQputCopyEnd(conn, "the COPY did not end")
            default:
                answered = true
                if failure == nil { failure = pgError(result: result, connection: conn, sql: sql) }
            }
        }
        if let failure { throw failure }
        guard answered else { throw pgError(result: nil, connection: conn, sql: sql) }
        return rows
    }

    /// Looks up the table's column types and (when `idColumn` is set) allocates `idCount`
    /// ids from its sequence, in one pipeline.
    private func runCatalogPipeline(
        _ conn: OpaquePointer, table: String, idColumn: String?, idCount: Int,
        types: inout [String: Oid], ids: inout [Int64]
    ) throws {
        guard PQenterPipelineMode(conn) == 1 else { throw pgError(result: nil, connection: conn, sql: Self.copyColumnTypesSQL) }
        var failure: DatabaseError?
        var foundTypes: [String: Oid] = [:]
        var foundIds: [Int64] = []
        var sent = Self.sendTextParameters(conn, Self.copyColumnTypesSQL, [table])
        if sent, let idColumn {
            sent = Self.sendTextParameters(conn, Self.allocateIdsSQL, [table, idColumn, String(idCount)])
        }
        sent = sent && PQpipelineSync(conn) == 1
        if sent {
            Self.readPipeline(conn) { position, result in
                switch PQresultStatus(result) {
                case PGRES_TUPLES_OK where position == 0:
                    for r in 0..<PQntuples(result) {
                        guard let name = PQgetvalue(result, r, 0), let type = PQgetvalue(result, r, 1),
                              let oid = Oid(String(cString: type)) else { continue }
                        foundTypes[String(cString: name)] = oid
                    }
                case PGRES_TUPLES_OK where position == 1:
                    foundIds.reserveCapacity(Int(PQntuples(result)))
                    for r in 0..<PQntuples(result) {
                        guard PQgetisnull(result, r, 0) == 0, let text = PQgetvalue(result, r, 0),
                              let id = Int64(String(cString: text)) else { continue }
                        foundIds.append(id)
                    }
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_PIPELINE_ABORTED:
                    return
                default:
                    if failure == nil {
                        failure = pgError(result: result, connection: conn,
                                          sql: position == 0 ? Self.copyColumnTypesSQL : Self.allocateIdsSQL)
                    }
                }
            }
        }
        if PQexitPipelineMode(conn) != 1, PQstatus(conn) != CONNECTION_BAD {
            Self.drainResults(on: conn)
            _ = PQexitPipelineMode(conn)
        }
        if let failure { throw failure }
        guard sent, PQstatus(conn) != CONNECTION_BAD else { throw pgError(result: nil, connection: conn, sql: Self.copyColumnTypesSQL) }
        types = foundTypes
        ids = foundIds
    }

    /// Queues `sql` with text parameters in the pipeline.
    private static func sendTextParameters(_ conn: OpaquePointer, _ sql: String, _ parameters: [String]) -> Bool {
        var storage = parameters.map { Array($0.utf8CString) }
        return storage.withUnsafeMutableBufferPointer { buffers in
            var pointers: [UnsafePointer<CChar>?] = []
            for index in buffers.indices {
                pointers.append(buffers[index].withUnsafeBufferPointer { $0.baseAddress })
            }
            return PQsendQueryParams(conn, sql, Int32(parameters.count), nil, pointers, nil, nil, 0) == 1
        }
    }

    func copyOut(_ request: CopyOutRequest, onRow: (Row) throws -> Void) throws -> Int? {
        let conn = try readyHandle()
        try flushPendingBegin(conn)
        runningBegin = nil
        let description = try describeUnnamed(request.selectSQL, types: [], on: conn)
        guard description.binaryResults else { return nil }
        let kinds = description.kinds
        let layout = description.layout

        let start = PQexec(conn, request.copySQL)
        guard let start, PQresultStatus(start) == PGRES_COPY_OUT else {
            defer { PQclear(start) }
            if let start, PQresultStatus(start) == PGRES_COPY_IN { _ = PQputCopyEnd(conn, "unexpected COPY FROM") }
            Self.drainResults(on: conn)
            throw pgError(result: start, connection: conn, sql: request.copySQL)
        }
        PQclear(start)
        // Nothing else may run on the connection while the rows stream.
        cursorOpen = true
        var parser = PGCopyOutParser(kinds: kinds, layout: layout)
        var rows = 0
        var failure: Error?
        while true {
            var chunk: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(conn, &chunk, 0)
            if length == -1 { break }
            guard length > 0, let chunk else {
                if failure == nil { failure = pgError(result: nil, connection: conn, sql: request.copySQL) }
                break
            }
            defer { PQfreemem(chunk) }
            guard failure == nil else { continue } // drain the rest after a failure
            do {
                try parser.feed(UnsafeRawBufferPointer(start: chunk, count: Int(length))) { row in
                    rows += 1
                    try onRow(row)
                }
            } catch {
                failure = error
            }
        }
        cursorOpen = false
        var serverFailure: DatabaseError?
        while let result = PQgetResult(conn) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, serverFailure == nil {
                serverFailure = pgError(result: result, connection: conn, sql: request.copySQL)
            }
            PQclear(result)
        }
        if let failure { throw failure }
        if let serverFailure { throw serverFailure }
        guard parser.ended else {
            throw DatabaseError.typeConversion(ConversionFailure(
                column: "", expectedType: "PostgreSQL binary COPY data", actual: "data that ended before its trailer"))
        }
        return rows
    }
}

/// Reads binary COPY data as it arrives: the header, then tuples, each decoded as a result
/// row of the query's column types, until the trailer.
struct PGCopyOutParser {
    let kinds: [PGColumnKind]
    let layout: RowLayout
    private var pending: [UInt8] = []
    private var headerRead = false
    private(set) var ended = false
    private var values: [DatabaseValue]

    init(kinds: [PGColumnKind], layout: RowLayout) {
        self.kinds = kinds
        self.layout = layout
        values = [DatabaseValue](repeating: .null, count: kinds.count)
    }

    private static func malformed(_ detail: String) -> DatabaseError {
        .typeConversion(ConversionFailure(column: "", expectedType: "PostgreSQL binary COPY data", actual: detail))
    }

    mutating func feed(_ chunk: UnsafeRawBufferPointer, onRow: (Row) throws -> Void) throws {
        pending.append(contentsOf: chunk)
        var consumed = 0
        try pending.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            let total = raw.count
            func int32(_ at: Int) -> Int32 { Int32(bigEndian: base.loadUnaligned(fromByteOffset: at, as: Int32.self)) }
            func int16(_ at: Int) -> Int16 { Int16(bigEndian: base.loadUnaligned(fromByteOffset: at, as: Int16.self)) }
            if !headerRead {
                guard total >= 19 else { return }
                let signature: [UInt8] = [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00]
                guard Array(raw[0..<11]) == signature else { throw Self.malformed("a missing PGCOPY signature") }
                let extensionLength = Int(int32(15))
                guard extensionLength >= 0 else { throw Self.malformed("a negative header extension") }
                guard total >= 19 + extensionLength else { return }
                consumed = 19 + extensionLength
                headerRead = true
            }
            tuples: while consumed + 2 <= total, !ended {
                let fieldCount = Int(int16(consumed))
                if fieldCount == -1 {
                    consumed += 2
                    ended = true
                    break
                }
                guard fieldCount == kinds.count else {
                    throw Self.malformed("a row of \(fieldCount) values for \(kinds.count) columns")
                }
                var at = consumed + 2
                for c in 0..<fieldCount {
                    guard at + 4 <= total else { break tuples }
                    let length = Int(int32(at))
                    at += 4
                    if length < 0 {
                        values[c] = .null
                        continue
                    }
                    guard at + length <= total else { break tuples }
                    values[c] = try PGValueDecoder.decodeBinary(kinds[c], base + at, length, column: layout.columnNames[c])
                    at += length
                }
                consumed = at
                try onRow(Row(layout: layout, values: values))
            }
        }
        if consumed > 0 { pending.removeSubrange(0..<consumed) }
    }
}
