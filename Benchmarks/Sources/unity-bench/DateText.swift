import Foundation

/// Hand-written conversions between milliseconds since 1970 (UTC) and the text SQLite stores,
/// `YYYY-MM-DD HH:MM:SS.ffffff` (Unity's storage format). The raw SQLite baseline uses these so
/// it pays no `DateFormatter` cost: it is the fastest reasonable C-style code.
enum DateText {
    /// The number of bytes of the text form.
    static let length = 26

    /// Writes the text form of `milliseconds` into `buffer` (at least ``length`` bytes).
    static func write(milliseconds: Int64, into buffer: UnsafeMutablePointer<UInt8>) {
        var days = milliseconds / 86_400_000
        var msOfDay = milliseconds % 86_400_000
        if msOfDay < 0 { msOfDay += 86_400_000; days -= 1 }
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        let hour = msOfDay / 3_600_000
        let minute = (msOfDay / 60_000) % 60
        let second = (msOfDay / 1_000) % 60
        let micro = (msOfDay % 1_000) * 1_000

        func put(_ value: Int64, _ width: Int, at offset: Int) {
            var remaining = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                buffer[index] = UInt8(48 + remaining % 10)
                remaining /= 10
            }
        }
        put(year, 4, at: 0); buffer[4] = 45 // -
        put(month, 2, at: 5); buffer[7] = 45
        put(day, 2, at: 8); buffer[10] = 32 // space
        put(hour, 2, at: 11); buffer[13] = 58 // :
        put(minute, 2, at: 14); buffer[16] = 58
        put(second, 2, at: 17); buffer[19] = 46 // .
        put(micro, 6, at: 20)
    }

    /// The text form of `milliseconds` as a `String`.
    static func string(milliseconds: Int64) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
            write(milliseconds: milliseconds, into: buffer.baseAddress!)
            return String(decoding: buffer, as: UTF8.self)
        }
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.f…]` (any number of fraction digits; kept to the
    /// millisecond) into milliseconds since 1970, or nil when the text has another shape.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        if bytes.count == length, let value = parseFixed(bytes) { return value }
        return parseGeneral(bytes)
    }

    /// The 26-byte form this benchmark writes, read at fixed offsets: the baseline should be as
    /// fast as a hand-written reader can be (Unity's own reader does the same).
    @inline(__always)
    static func parseFixed(_ s: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard s[4] == 45, s[7] == 45, s[10] == 32, s[13] == 58, s[16] == 58, s[19] == 46 else { return nil }
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
        let millis = d(20) * 100 + d(21) * 10 + d(22)
        _ = d(23) + d(24) + d(25)
        guard invalid == 0 else { return nil }
        return milliseconds(year, month, day, hour, minute, second, millis)
    }

    static func parseGeneral(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count >= 19 else { return nil }
        func number(_ offset: Int, _ width: Int) -> Int64? {
            var value: Int64 = 0
            for index in offset..<(offset + width) {
                let digit = Int64(bytes[index]) - 48
                guard digit >= 0, digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
              let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var millis: Int64 = 0
        if bytes.count > 20, bytes[19] == 46 {
            var scale: Int64 = 100
            for index in 20..<bytes.count {
                let digit = Int64(bytes[index]) - 48
                guard digit >= 0, digit <= 9 else { return nil }
                millis += digit * scale
                scale /= 10
            }
        }
        return milliseconds(year, month, day, hour, minute, second, millis)
    }

    /// Milliseconds since 1970 of a UTC civil date and time (Howard Hinnant's days_from_civil).
    @inline(__always)
    static func milliseconds(_ year: Int64, _ month: Int64, _ day: Int64, _ hour: Int64, _ minute: Int64,
                             _ second: Int64, _ millis: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1_000 + millis
    }
}
