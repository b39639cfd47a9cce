import Foundation

/// The identity of a statement's shape: two 64-bit hashes of everything the renderer writes
/// except bind values, plus the number of bind values. Two independently salted hashes make
/// a false hit (two shapes colliding in 128 bits with equal binding counts) negligible.
struct SQLShapeKey: Hashable, Sendable {
    var primary: Int
    var secondary: Int
    var bindingCount: Int
}

/// The second hash of a statement's shape, beside the per-process seeded SipHash
/// (`Hasher`) that makes the first: a multiply-xorshift mix, several times cheaper. A false
/// cache hit needs both to collide; the seeded SipHash keeps that out of an attacker's reach
/// (identifiers may come from user input), and this independent mix makes an accidental
/// collision of the two as unlikely as of 128 random bits.
struct SQLShapeMixer {
    private var state: UInt64 = 0x5EED_CAFE_F00D_D00D

    @inline(__always)
    mutating func combine(_ word: UInt64) {
        state = (state ^ word) &* 0x9E37_79B9_7F4A_7C15
        state ^= state >> 31
    }

    @inline(__always)
    mutating func combine(_ value: Int) { combine(UInt64(bitPattern: Int64(value))) }

    @inline(__always)
    mutating func combine(_ value: UInt32) { combine(UInt64(value)) }

    /// Eight bytes at a time, then the tail with the length in its top byte.
    mutating func combine(bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset + 8 <= bytes.count {
            combine(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        combine(tail ^ (UInt64(truncatingIfNeeded: bytes.count) << 56))
    }

    /// The state through a final avalanche (MurmurHash3's), so every input bit moves every
    /// output bit.
    func finalize() -> Int {
        var h = state
        h ^= h >> 33
        h &*= 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h &*= 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return Int(bitPattern: UInt(h))
    }
}

/// The two independent hashes of a statement's shape (or of a list of names standing in one):
/// the per-process seeded SipHash and the ``SQLShapeMixer``, always fed the same words.
struct SQLShapeHash {
    private var primary = Hasher()
    private var secondary = SQLShapeMixer()

    init() {}

    /// A hash that starts from `salt`: one kind of digest never shares a value with another
    /// made from the same words.
    init(salt: UInt32) {
        combine(salt)
    }

    @inline(__always)
    mutating func combine(_ value: Int) {
        primary.combine(value)
        secondary.combine(value)
    }

    @inline(__always)
    mutating func combine(_ value: UInt32) {
        primary.combine(value)
        secondary.combine(value)
    }

    /// Adds a string by its UTF-8 bytes and their count. Bytes, not `String` hashing: two
    /// canonically equivalent names (`"é"` precomposed, or `e` and a combining accent) are
    /// equal `String`s and hash alike, yet they are different identifiers to a database, and
    /// the rendered SQL of one must never be served for the other.
    mutating func combine(utf8 s: String) {
        var copy = s
        copy.withUTF8 { buffer in
            primary.combine(bytes: UnsafeRawBufferPointer(buffer))
            secondary.combine(bytes: UnsafeRawBufferPointer(buffer))
        }
        combine(s.utf8.count)
    }

    /// Adds a name, or its absence, so that `nil` and `""` differ.
    mutating func combine(name: String?) {
        guard let name else { return combine(0 as UInt32) }
        combine(1 as UInt32)
        combine(utf8: name)
    }

    /// Adds a digest made beforehand (``SQLColumnList``, a plain select list) in place of
    /// what it stands for.
    mutating func combine(digest: SQLShapeKey) {
        primary.combine(digest.primary)
        secondary.combine(digest.secondary)
        combine(digest.bindingCount)
    }

    /// The key of everything combined, for a statement or list of `bindingCount` values.
    func finalize(bindingCount: Int) -> SQLShapeKey {
        SQLShapeKey(primary: primary.finalize(), secondary: secondary.finalize(), bindingCount: bindingCount)
    }
}

/// The rendered SQL text of each statement shape, one cache per dialect.
typealias SQLRenderCache = BoundedCache<SQLShapeKey, String>
