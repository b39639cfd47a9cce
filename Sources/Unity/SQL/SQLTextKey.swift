import Foundation

/// SQL text compared by its exact UTF-8 bytes: the key of prepared-statement caches and of
/// batch grouping.
///
/// Swift's `String` equality (and hashing) is canonical equivalence: a table named `"é"`
/// written as one scalar (NFC) equals one written as `e` + a combining accent (NFD). The
/// database sees two different names, so a cache keyed by `String` could run a statement
/// prepared for one table against the other. Two `SQLTextKey`s are equal only when their
/// bytes are.
public struct SQLTextKey: Hashable, Sendable {
    /// The SQL text.
    public let sql: String

    /// A key for `sql`.
    @inlinable
    public init(_ sql: String) {
        self.sql = sql
    }

    /// True when both texts have the same UTF-8 bytes.
    public static func == (lhs: SQLTextKey, rhs: SQLTextKey) -> Bool {
        SQLTextKey.sameBytes(lhs.sql, rhs.sql)
    }

    /// Hashes the UTF-8 bytes (and their count).
    public func hash(into hasher: inout Hasher) {
        var copy = sql
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(sql.utf8.count)
    }

    /// True when `a` and `b` have the same UTF-8 bytes (not merely canonically equivalent
    /// Unicode, which is what `a == b` asks).
    public static func sameBytes(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                guard let px = x.baseAddress, let py = y.baseAddress else { return x.count == y.count }
                return px == py || memcmp(px, py, x.count) == 0
            }
        }
    }
}
