import CSQLite
import Foundation
import Unity

// Decimal on SQLite: the values are TEXT (their exact digits), and every connection registers
// what makes that TEXT behave as a number:
// - the collation `unity_decimal`, which Unity's AST puts on columns it declares `Decimal`,
//   so ORDER BY, comparisons (with bound values too), MIN/MAX, indexes and UNIQUE compare
//   numerically: '9.91' < '25.86', '9.91' = '9.910';
// - the aggregates `unity_sum` and `unity_avg`, which the dialect renders for SUM and AVG:
//   exact decimal arithmetic (SQLite has none of its own) on TEXT, and on REAL values through
//   their shortest decimal form, so 0.1 + 0.2 is 0.3.

/// A decimal numeral (`-12.50`, `+3`, `1e-5`) as sign, significant digits and exponent:
/// value = ±0.d₁d₂… × 10^exponent. Zero has no digits.
struct DecimalNumeral {
    var isNegative: Bool
    /// Significant digits (0–9), without leading or trailing zeros.
    var digits: [UInt8]
    var exponent: Int

    /// Parses `bytes` (surrounding ASCII spaces allowed); nil when they are not a numeral.
    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        var i = bytes.startIndex
        var end = bytes.endIndex
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        while i < end, isSpace(bytes[i]) { i += 1 }
        while end > i, isSpace(bytes[end - 1]) { end -= 1 }
        guard i < end else { return nil }
        var negative = false
        if bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
            negative = bytes[i] == UInt8(ascii: "-")
            i += 1
        }
        var all: [UInt8] = []
        var pointPosition: Int?
        var sawDigit = false
        while i < end {
            let b = bytes[i]
            if b >= 0x30 && b <= 0x39 {
                all.append(b - 0x30)
                sawDigit = true
            } else if b == UInt8(ascii: "."), pointPosition == nil {
                pointPosition = all.count
            } else {
                break
            }
            i += 1
        }
        guard sawDigit else { return nil }
        var exponent = 0
        if i < end, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            var expNegative = false
            if i < end, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") {
                expNegative = bytes[i] == UInt8(ascii: "-")
                i += 1
            }
            var sawExpDigit = false
            while i < end, bytes[i] >= 0x30 && bytes[i] <= 0x39 {
                // Clamped: beyond a million the comparison is decided anyway.
                exponent = min(exponent * 10 + Int(bytes[i] - 0x30), 1_000_000)
                sawExpDigit = true
                i += 1
            }
            guard sawExpDigit else { return nil }
            if expNegative { exponent = -exponent }
        }
        guard i == end else { return nil }
        var position = pointPosition ?? all.count
        var start = 0
        while start < all.count, all[start] == 0 {
            start += 1
            position -= 1
        }
        var stop = all.count
        while stop > start, all[stop - 1] == 0 { stop -= 1 }
        self.digits = Array(all[start..<stop])
        self.isNegative = negative && !digits.isEmpty
        self.exponent = digits.isEmpty ? 0 : position + exponent
    }

    /// -1, 0 or 1 as `a` is less than, equal to or greater than `b`, numerically.
    static func compare(_ a: DecimalNumeral, _ b: DecimalNumeral) -> Int32 {
        func sign(_ n: DecimalNumeral) -> Int { n.digits.isEmpty ? 0 : (n.isNegative ? -1 : 1) }
        let sa = sign(a), sb = sign(b)
        if sa != sb { return sa < sb ? -1 : 1 }
        if sa == 0 { return 0 }
        var magnitude: Int32 = 0
        if a.exponent != b.exponent {
            magnitude = a.exponent < b.exponent ? -1 : 1
        } else {
            for (x, y) in zip(a.digits, b.digits) where x != y {
                magnitude = x < y ? -1 : 1
                break
            }
            if magnitude == 0, a.digits.count != b.digits.count {
                magnitude = a.digits.count < b.digits.count ? -1 : 1
            }
        }
        return sa < 0 ? -magnitude : magnitude
    }
}

/// The `unity_decimal` collation: numerals compare as numbers and sort before any other text,
/// which compares by bytes.
func unityDecimalCompare(_ aBytes: UnsafeBufferPointer<UInt8>, _ bBytes: UnsafeBufferPointer<UInt8>) -> Int32 {
    switch (DecimalNumeral(aBytes), DecimalNumeral(bBytes)) {
    case (let a?, let b?):
        return DecimalNumeral.compare(a, b)
    case (.some, nil):
        return -1
    case (nil, .some):
        return 1
    case (nil, nil):
        let n = min(aBytes.count, bBytes.count)
        if n > 0, let pa = aBytes.baseAddress, let pb = bBytes.baseAddress {
            let c = memcmp(pa, pb, n)
            if c != 0 { return c < 0 ? -1 : 1 }
        }
        return aBytes.count == bBytes.count ? 0 : (aBytes.count < bBytes.count ? -1 : 1)
    }
}

/// The running state of one `unity_sum` / `unity_avg` group.
final class SQLiteDecimalAggregate {
    /// The sum of the values other than integers, and of integer sums that overflowed.
    var sum = Decimal(0)
    var count = 0
    var sawText = false
    var sawReal = false
    /// The sum of the integers since the last overflow (integers add at machine speed).
    var integerSum: Int64 = 0
    var integerOverflow = false
    /// SQLite's own double arithmetic, the answer for REAL values that `Decimal` cannot hold.
    var doubleSum = 0.0
    var decimalOutOfRange = false
    var error: String?

    static let posix = Locale(identifier: "en_US_POSIX")

    func add(_ value: OpaquePointer, function: String) {
        guard error == nil else { return }
        switch sqlite3_value_type(value) {
        case SQLITE_NULL:
            return
        case SQLITE_INTEGER:
            let i = sqlite3_value_int64(value)
            let (s, overflow) = integerSum.addingReportingOverflow(i)
            if overflow {
                addDecimal(Decimal(integerSum))
                integerSum = i
                integerOverflow = true
            } else {
                integerSum = s
            }
            doubleSum += Double(i)
        case SQLITE_FLOAT:
            let d = sqlite3_value_double(value)
            guard d.isFinite else {
                error = "\(function): \(d) has no decimal value"
                return
            }
            sawReal = true
            doubleSum += d
            // The shortest decimal form of the double: what was written, for a value that
            // came from decimal text (a NUMERIC column stores REAL).
            if d == d.rounded(), abs(d) < 9.0e15 {
                addDecimal(Decimal(Int64(d)))
            } else if let decimal = Decimal(string: "\(d)", locale: Self.posix) {
                addDecimal(decimal)
            } else {
                decimalOutOfRange = true
            }
        case SQLITE_TEXT:
            sawText = true
            let count = Int(sqlite3_value_bytes(value))
            guard let text = sqlite3_value_text(value) else {
                error = "\(function): the empty text is not a number"
                return
            }
            let buffer = UnsafeBufferPointer(start: text, count: count)
            let string = String(decoding: buffer, as: UTF8.self)
            // Exact or refused: `Decimal(string:)` would round digits past what Decimal holds.
            guard DecimalNumeral(buffer) != nil,
                  let decimal = DecimalText.exactDecimal(string.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                error = "\(function): the text \(string.debugDescription) is not a number (or not one Decimal holds)"
                return
            }
            doubleSum += Double(string) ?? 0
            addDecimal(decimal)
        default:
            error = "\(function): a blob is not a number"
            return
        }
        count += 1
    }

    private func addDecimal(_ value: Decimal) {
        var left = sum
        var right = value
        var result = Decimal()
        // A sum that needs more digits than Decimal holds would be rounded: refused instead,
        // as PostgreSQL's exact sum read back as Decimal is.
        switch NSDecimalAdd(&result, &left, &right, .plain) {
        case .overflow, .lossOfPrecision: decimalOutOfRange = true
        default: break
        }
        sum = result
    }

    /// Sets the aggregate's result: `average` divides by the count.
    func finish(_ context: OpaquePointer, average: Bool, function: String) {
        if let error {
            sqlite3_result_error(context, error, -1)
            return
        }
        guard count > 0 else {
            sqlite3_result_null(context)
            return
        }
        if !sawText && !sawReal && !average {
            // Integers only: an integer, as SQLite's SUM.
            if integerOverflow {
                sqlite3_result_error(context, "integer overflow", -1)
            } else {
                sqlite3_result_int64(context, integerSum)
            }
            return
        }
        var value = sum
        if integerSum != 0 {
            var integers = Decimal(integerSum)
            var total = Decimal()
            switch NSDecimalAdd(&total, &value, &integers, .plain) {
            case .overflow, .lossOfPrecision: decimalOutOfRange = true
            default: break
            }
            value = total
        }
        if average {
            var divisor = Decimal(count)
            var quotient = Decimal()
            if NSDecimalDivide(&quotient, &value, &divisor, .plain) == .overflow { decimalOutOfRange = true }
            value = quotient
        }
        if sawText {
            guard !decimalOutOfRange else {
                sqlite3_result_error(context, "\(function): the result is beyond what Decimal holds", -1)
                return
            }
            // Decimal text: exact digits, read back as Decimal.
            let text = value.description
            sqlite3_result_text(context, text, -1, sqliteTransient)
            return
        }
        // Numbers only (REAL among them): a REAL, rounded once from the exact decimal result.
        if decimalOutOfRange {
            sqlite3_result_double(context, average ? doubleSum / Double(count) : doubleSum)
        } else {
            sqlite3_result_double(context, Double(value.description) ?? (average ? doubleSum / Double(count) : doubleSum))
        }
    }
}

/// The state of the group `context` aggregates, created on first use.
private func aggregateState(_ context: OpaquePointer?, create: Bool) -> SQLiteDecimalAggregate? {
    let size = Int32(MemoryLayout<UnsafeMutableRawPointer?>.size)
    guard let raw = sqlite3_aggregate_context(context, create ? size : 0) else { return nil }
    let slot = raw.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    if let existing = slot.pointee {
        return Unmanaged<SQLiteDecimalAggregate>.fromOpaque(existing).takeUnretainedValue()
    }
    guard create else { return nil }
    let state = SQLiteDecimalAggregate()
    slot.pointee = Unmanaged.passRetained(state).toOpaque()
    return state
}

/// Takes the group's state back from SQLite (releasing it).
private func takeAggregateState(_ context: OpaquePointer?) -> SQLiteDecimalAggregate? {
    guard let raw = sqlite3_aggregate_context(context, 0) else { return nil }
    let slot = raw.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
    guard let existing = slot.pointee else { return nil }
    slot.pointee = nil
    return Unmanaged<SQLiteDecimalAggregate>.fromOpaque(existing).takeRetainedValue()
}

private func sumStep(_ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?) {
    guard count == 1, let value = values?[0], let state = aggregateState(context, create: true) else { return }
    state.add(value, function: "unity_sum")
}

private func sumFinal(_ context: OpaquePointer?) {
    guard let context else { return }
    guard let state = takeAggregateState(context) else { return sqlite3_result_null(context) }
    state.finish(context, average: false, function: "unity_sum")
}

private func avgStep(_ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?) {
    guard count == 1, let value = values?[0], let state = aggregateState(context, create: true) else { return }
    state.add(value, function: "unity_avg")
}

private func avgFinal(_ context: OpaquePointer?) {
    guard let context else { return }
    guard let state = takeAggregateState(context) else { return sqlite3_result_null(context) }
    state.finish(context, average: true, function: "unity_avg")
}

private func decimalCollation(_: UnsafeMutableRawPointer?, _ aCount: Int32, _ a: UnsafeRawPointer?,
                              _ bCount: Int32, _ b: UnsafeRawPointer?) -> Int32 {
    let aBytes = UnsafeBufferPointer(start: a?.assumingMemoryBound(to: UInt8.self), count: a == nil ? 0 : Int(aCount))
    let bBytes = UnsafeBufferPointer(start: b?.assumingMemoryBound(to: UInt8.self), count: b == nil ? 0 : Int(bCount))
    return unityDecimalCompare(aBytes, bBytes)
}

/// Registers the `unity_decimal` collation and the `unity_sum` / `unity_avg` aggregates on
/// a connection; returns SQLite's result code.
func registerDecimalSupport(_ db: OpaquePointer) -> Int32 {
    var rc = sqlite3_create_collation_v2(db, "unity_decimal", SQLITE_UTF8, nil, decimalCollation, nil)
    guard rc == SQLITE_OK else { return rc }
    let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC
    rc = sqlite3_create_function_v2(db, "unity_sum", 1, flags, nil, nil, sumStep, sumFinal, nil)
    guard rc == SQLITE_OK else { return rc }
    return sqlite3_create_function_v2(db, "unity_avg", 1, flags, nil, nil, avgStep, avgFinal, nil)
}
