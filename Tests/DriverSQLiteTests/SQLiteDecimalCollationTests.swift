@testable import DriverSQLite
import Testing

/// The `unity_decimal` collation's comparison of decimal text.
struct SQLiteDecimalCollationTests {
    func compare(_ a: String, _ b: String) -> Int32 {
        var a = a, b = b
        return a.withUTF8 { x in b.withUTF8 { y in unityDecimalCompare(x, y) } }
    }

    @Test func numeralsCompareAsNumbers() {
        #expect(compare("9.91", "25.86") == -1)
        #expect(compare("25.86", "9.91") == 1)
        #expect(compare("9.91", "9.910") == 0)
        #expect(compare("0", "-0.000") == 0)
        #expect(compare("-1", "-2") == 1)
        #expect(compare("-0.5", "0.1") == -1)
        #expect(compare("1e2", "99.5") == 1)
        #expect(compare("1E-2", "0.01") == 0)
        #expect(compare("+3", " 3 ") == 0)
        #expect(compare("0.000001", "0.00001") == -1)
        #expect(compare("12345678901234567890.1234567891", "12345678901234567890.1234567890") == 1)
        #expect(compare(".5", "0.5") == 0)
    }

    @Test func otherTextSortsAfterNumbersByBytes() {
        #expect(compare("abc", "1") == 1)
        #expect(compare("1", "abc") == -1)
        #expect(compare("abc", "abd") == -1)
        #expect(compare("ab", "abc") == -1)
        #expect(compare("", "") == 0)
        #expect(compare("1.2.3", "1") == 1)
        #expect(compare("1e", "1") == 1)
        #expect(compare("NaN", "9") == 1)
    }
}
