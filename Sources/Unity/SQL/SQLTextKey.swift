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

    /// True when `a` and `b` are one representation: the same inline bytes of a small string,
    /// or the same storage (SQL text served again from a cache). They then hold the same
    /// bytes; false says nothing about the bytes.
    @inline(__always)
    public static func sameRepresentation(_ a: String, _ b: String) -> Bool {
        MemoryLayout<String>.size == MemoryLayout<(UInt, UInt)>.size
            && unsafeBitCast(a, to: (UInt, UInt).self) == unsafeBitCast(b, to: (UInt, UInt).self)
    }

    /// True when `a` and `b` have the same UTF-8 bytes (not merely canonically equivalent
    /// Unicode, which is what `a == b` asks).
    public static func sameBytes(_ a: String, _ b: String) -> Bool {
        // The common case of a batch, whose rows name the same columns, is answered without
        // touching the bytes.
        if sameRepresentation(a, b) { return true }
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

/// Checks on SQL text shared by the drivers.
public enum SQLText {
    /// Throws ``DatabaseError/misuse(_:)`` when `sql` contains a NUL character. The C APIs of
    /// both engines read SQL as a NUL-terminated string, so everything after it would be
    /// silently dropped (a migration file cut short, yet recorded as applied). Drivers call it
    /// before SQL text reaches the engine for the first time (on a statement cache miss and
    /// for every script).
    public static func refuseNUL(in sql: String) throws {
        guard let index = sql.utf8.firstIndex(of: 0) else { return }
        let offset = sql.utf8.distance(from: sql.utf8.startIndex, to: index)
        let before = String(decoding: sql.utf8[..<index].suffix(40), as: UTF8.self)
        throw DatabaseError.misuse(
            "the SQL text contains a NUL character at byte \(offset) (after \(before.debugDescription)); "
                + "the database would ignore everything after it, so nothing was run. Remove the NUL "
                + "(bind binary data as a value instead)")
    }

    /// The byte offset of the first NUL character in `sql`, or nil.
    public static func offsetOfNUL(in sql: String) -> Int? {
        sql.utf8.firstIndex(of: 0).map { sql.utf8.distance(from: sql.utf8.startIndex, to: $0) }
    }
}
