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

/// A bounded, thread-safe map from statement shape to rendered SQL text, one per dialect.
///
/// An `NSLock` guards it (not `Synchronization.Mutex`, which needs macOS 15 while the
/// package supports macOS 13). When full, an arbitrary entry is evicted: shapes come from
/// code, so a working set beyond the capacity means an application builds statements
/// dynamically, and any eviction order serves it as well as another.
final class SQLRenderCache: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [SQLShapeKey: String] = [:]
    private let capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    func lookup(_ key: SQLShapeKey) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return entries[key]
    }

    func store(_ key: SQLShapeKey, sql: String) {
        lock.lock()
        defer { lock.unlock() }
        if entries[key] == nil, entries.count >= capacity {
            entries.remove(at: entries.startIndex)
        }
        entries[key] = sql
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }
}
