import Foundation

/// Converts dates to and from the text form Unity stores in SQLite: UTC
/// `YYYY-MM-DD HH:MM:SS.ffffff`, which sorts and compares correctly as text.
///
/// Hand-written rather than a `DateFormatter`, because formatters are slow, not thread-safe
/// to mutate, and round to milliseconds. All arithmetic is done in whole microseconds since
/// the reference date (2001-01-01), the unit `Date` itself is closest to, so a date that is
/// exact to the microsecond survives the round trip unchanged.
public enum DateText {
    /// Microseconds between 1970-01-01 and 2001-01-01.
    static let unixToReferenceMicros: Int64 = 978_307_200 * 1_000_000
    /// Microseconds between 2000-01-01 (PostgreSQL's epoch) and 2001-01-01.
    public static let postgresEpochToReferenceMicros: Int64 = 366 * 86_400 * 1_000_000

    /// The date's distance from the reference date, rounded to whole microseconds.
    /// Returns nil for dates too far away to count in 64-bit microseconds.
    @inlinable
    public static func microsecondsSinceReferenceDate(_ date: Date) -> Int64? {
        let micros = (date.timeIntervalSinceReferenceDate * 1_000_000).rounded()
        // ±2^63 are exact doubles: within them the conversion to Int64 cannot trap.
        guard micros.isFinite, micros >= -9_223_372_036_854_775_808.0, micros < 9_223_372_036_854_775_808.0 else { return nil }
        return Int64(micros)
    }

    /// The date that lies `micros` microseconds after the reference date.
    ///
    /// Within ±2^53 µs (about ±285 years) this is the double nearest to the exact value;
    /// beyond, the whole seconds are kept exact (a `Date` that far out cannot hold
    /// microseconds anyway), so a midnight equals ``date(daysSinceReferenceDate:)``'s.
    @inlinable
    public static func date(microsecondsSinceReferenceDate micros: Int64) -> Date {
        if micros > -9_007_199_254_740_992, micros < 9_007_199_254_740_992 {
            return Date(timeIntervalSinceReferenceDate: Double(micros) / 1_000_000)
        }
        let seconds = micros / 1_000_000
        let rest = micros % 1_000_000
        return Date(timeIntervalSinceReferenceDate: Double(seconds) + Double(rest) / 1_000_000)
    }

    /// Midnight (UTC) of the day `days` days after 2001-01-01. Exact for every 32-bit day
    /// count (PostgreSQL's whole `date` range), with no integer arithmetic that could overflow.
    @inlinable
    public static func date(daysSinceReferenceDate days: Int64) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(days) * 86_400)
    }

    /// True when ``format(_:)`` writes the date as four-digit-year text that ``parse(_:)``
    /// reads back equal and that sorts as the dates do: years 0000 through 9999
    /// (0000-01-01 00:00:00 up to 10000-01-01 exclusive, microseconds rounded), which
    /// includes `Date.distantPast` (0000-12-30) and `Date.distantFuture` (4001-01-01).
    public static func isInTextRange(_ date: Date) -> Bool {
        guard let micros = microsecondsSinceReferenceDate(date) else { return false }
        return micros >= -63_145_526_400_000_000 && micros < 252_423_993_600_000_000
    }

    /// The most bytes ``format(_:into:)`` writes: a `-`, a year of up to 8 digits, then 22.
    public static let maxFormattedLength = 32

    /// Formats a date as UTC `YYYY-MM-DD HH:MM:SS.ffffff`.
    public static func format(_ date: Date) -> String {
        String(unsafeUninitializedCapacity: maxFormattedLength) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return format(date, into: base)
        }
    }

    /// Writes ``format(_:)``'s text as UTF-8 into `buffer`, which must hold
    /// ``maxFormattedLength`` bytes, and returns the number written: a driver binds dates
    /// from a stack buffer this way, with no string allocated per value.
    public static func format(_ date: Date, into buffer: UnsafeMutablePointer<UInt8>) -> Int {
        var count = 0
        @inline(__always) func put(_ byte: UInt8) {
            buffer[count] = byte
            count += 1
        }
        guard let refMicros = microsecondsSinceReferenceDate(date) else {
            let clamped: StaticString = date.timeIntervalSinceReferenceDate > 0 ? "9999-12-31 23:59:59.999999" : "0001-01-01 00:00:00.000000"
            clamped.withUTF8Buffer { for byte in $0 { put(byte) } }
            return count
        }
        // Days from the reference date, then from 1970 (11,323 days earlier): no sum of
        // microseconds that could overflow for dates near the ends of the 64-bit range.
        let perDay: Int64 = 86_400_000_000
        var days = refMicros / perDay
        var rem = refMicros % perDay
        if rem < 0 { rem += perDay; days -= 1 }
        let (y, m, d) = civil(fromDays: days + 11_323)
        let secOfDay = rem / 1_000_000
        let frac = rem % 1_000_000
        var year = y
        if year < 0 { put(UInt8(ascii: "-")); year = -year }
        writeDigits(buffer, &count, year, width: 4)
        put(UInt8(ascii: "-"))
        writeDigits(buffer, &count, m, width: 2)
        put(UInt8(ascii: "-"))
        writeDigits(buffer, &count, d, width: 2)
        put(UInt8(ascii: " "))
        writeDigits(buffer, &count, secOfDay / 3600, width: 2)
        put(UInt8(ascii: ":"))
        writeDigits(buffer, &count, (secOfDay / 60) % 60, width: 2)
        put(UInt8(ascii: ":"))
        writeDigits(buffer, &count, secOfDay % 60, width: 2)
        put(UInt8(ascii: "."))
        writeDigits(buffer, &count, frac, width: 6)
        return count
    }

    /// Parses `YYYY-MM-DD` (years of 4 to 9 digits, a leading `-` or a trailing ` BC`),
    /// optionally followed by ` HH:MM[:SS[.f…]]` (or `T` as the separator) and a `Z` or
    /// `±HH[:MM[:SS]]` / `±HHMM[SS]` offset. Text without an offset is UTC.
    /// Returns nil for anything else, and never traps.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// Parses the UTF-8 bytes of a date text; see ``parse(_:)``.
    public static func parse(utf8 s: UnsafeBufferPointer<UInt8>) -> Date? {
        if s.count == 26, let date = parseCanonical(s) { return date }
        return parseGeneral(s)
    }

    /// The text Unity itself writes, `YYYY-MM-DD HH:MM:SS.ffffff`, read with fixed offsets:
    /// every date column of every row goes through here, so it is kept to straight-line code.
    @inline(__always)
    static func parseCanonical(_ s: UnsafeBufferPointer<UInt8>) -> Date? {
        guard s[4] == 45, s[7] == 45, s[10] == 32, s[13] == 58, s[16] == 58, s[19] == 46 else { return nil }
        // A byte outside '0'...'9' leaves a value above 9 once 48 is subtracted (wrapping for
        // bytes below '0'): collect them all in `invalid` and check once.
        var invalid: UInt8 = 0
        @inline(__always) func d(_ k: Int) -> Int64 {
            let v = s[k] &- 48
            invalid |= v > 9 ? 1 : 0
            return Int64(v)
        }
        let year = d(0) * 1000 + d(1) * 100 + d(2) * 10 + d(3)
        let month = d(5) * 10 + d(6)
        let day = d(8) * 10 + d(9)
        let hour = d(11) * 10 + d(12)
        let minute = d(14) * 10 + d(15)
        let second = d(17) * 10 + d(18)
        let micro = ((d(20) * 10 + d(21)) * 10 + d(22)) * 1000 + (d(23) * 10 + d(24)) * 10 + d(25)
        guard invalid == 0, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        let unixSeconds = days(fromCivil: year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        return date(microsecondsSinceReferenceDate: unixSeconds * 1_000_000 + micro - unixToReferenceMicros)
    }

    /// Reads what PostgreSQL's ISO output and other writers print: a year of 4 to 9 digits
    /// (optionally negative, for astronomical years), `-MM-DD`, an optional time with any
    /// number of fraction digits (microseconds kept, the rest dropped), an optional `Z` or
    /// offset `±HH`, `±HH:MM`, `±HH:MM:SS`, `±HHMM` or `±HHMMSS`, and an optional ` BC` era
    /// (year N BC is astronomical year 1 − N). Arithmetic is checked: nil, never a trap.
    static func parseGeneral(_ s: UnsafeBufferPointer<UInt8>) -> Date? {
        var i = 0
        var n = s.count
        // PostgreSQL puts the era last: `0044-03-15 BC`, `0044-03-15 12:00:00+00 BC`.
        var beforeChrist = false
        if n >= 3, s[n - 3] == UInt8(ascii: " "), s[n - 2] == UInt8(ascii: "B"), s[n - 1] == UInt8(ascii: "C") {
            beforeChrist = true
            n -= 3
        }
        func digits(_ count: Int) -> Int64? {
            guard i + count <= n else { return nil }
            var v: Int64 = 0
            for k in 0..<count {
                let c = s[i + k]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int64(c - 48)
            }
            i += count
            return v
        }
        func isDigit(_ k: Int) -> Bool { k < n && s[k] >= 48 && s[k] <= 57 }
        func expect(_ c: UInt8) -> Bool {
            guard i < n, s[i] == c else { return false }
            i += 1
            return true
        }
        var negativeYear = false
        if i < n, s[i] == UInt8(ascii: "-") { negativeYear = true; i += 1 }
        var yearDigits = 0
        while isDigit(i + yearDigits) { yearDigits += 1 }
        guard (4...9).contains(yearDigits), var year = digits(yearDigits), expect(UInt8(ascii: "-")),
              let month = digits(2), expect(UInt8(ascii: "-")),
              let day = digits(2),
              (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        if negativeYear { year = -year }
        if beforeChrist {
            guard !negativeYear, year >= 1 else { return nil }
            year = 1 - year
        }
        var hour: Int64 = 0, minute: Int64 = 0, second: Int64 = 0, micro: Int64 = 0
        var offsetSeconds: Int64 = 0
        if i < n, s[i] == UInt8(ascii: " ") || s[i] == UInt8(ascii: "T") {
            i += 1
            guard let h = digits(2), expect(UInt8(ascii: ":")), let mi = digits(2) else { return nil }
            hour = h; minute = mi
            if expect(UInt8(ascii: ":")) {
                guard let se = digits(2) else { return nil }
                second = se
                if expect(UInt8(ascii: ".")) {
                    var scale: Int64 = 100_000
                    var any = false
                    while i < n, s[i] >= 48, s[i] <= 57 {
                        micro += Int64(s[i] - 48) * scale
                        scale /= 10
                        i += 1
                        any = true
                    }
                    guard any else { return nil }
                }
            }
            guard hour < 24, minute < 60, second < 61 else { return nil }
        }
        if i < n {
            let c = s[i]
            if c == UInt8(ascii: "Z") {
                i += 1
            } else if c == UInt8(ascii: "+") || c == UInt8(ascii: "-") {
                i += 1
                guard let oh = digits(2) else { return nil }
                var om: Int64 = 0, os: Int64 = 0
                if expect(UInt8(ascii: ":")) {
                    guard let m = digits(2) else { return nil }
                    om = m
                    if expect(UInt8(ascii: ":")) {
                        guard let sec = digits(2) else { return nil }
                        os = sec
                    }
                } else if isDigit(i) {
                    guard let m = digits(2) else { return nil }
                    om = m
                    if isDigit(i) {
                        guard let sec = digits(2) else { return nil }
                        os = sec
                    }
                }
                guard oh <= 15, om < 60, os < 60 else { return nil }
                offsetSeconds = (oh * 3600 + om * 60 + os) * (c == UInt8(ascii: "+") ? 1 : -1)
            }
        }
        guard i == n else { return nil }
        // A 9-digit year is at most ~3.7e11 days, ~3.2e16 seconds: seconds never overflow.
        let days = days(fromCivil: year, month, day)
        let unixSeconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        let refSeconds = unixSeconds - unixToReferenceMicros / 1_000_000
        let (scaled, overflow) = refSeconds.multipliedReportingOverflow(by: 1_000_000)
        if !overflow {
            let (refMicros, overflow2) = scaled.addingReportingOverflow(micro)
            if !overflow2 { return date(microsecondsSinceReferenceDate: refMicros) }
        }
        // Beyond 64-bit microseconds (about ±292,000 years): whole seconds, as a `Date` that
        // far out holds nothing finer.
        return Date(timeIntervalSinceReferenceDate: Double(refSeconds) + Double(micro) / 1_000_000)
    }

    /// Writes `value` (not negative) in decimal, zero-padded to `width` digits, at most 8 digits
    /// (the least significant ones), at `buffer[count]`, and advances `count`.
    @inline(__always)
    private static func writeDigits(_ buffer: UnsafeMutablePointer<UInt8>, _ count: inout Int, _ value: Int64, width: Int) {
        var digits = 1
        var limit: Int64 = 10
        while digits < 8, value >= limit {
            digits += 1
            limit &*= 10
        }
        let w = max(width, digits)
        var v = value
        var pos = count + w - 1
        while pos >= count {
            buffer[pos] = UInt8(truncatingIfNeeded: 48 + v % 10)
            v /= 10
            pos -= 1
        }
        count += w
    }

    // Howard Hinnant's days/civil algorithms (proleptic Gregorian calendar).
    static func days(fromCivil y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (m + 9) % 12
        let doy = (153 * mp + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
