/// The longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes); longer ones it truncates.
let maxIdentifierBytes = 63

/// A name the ORM derives (a table from a type's qualified name, a foreign-key column, an
/// index, a link table and its columns), kept within ``maxIdentifierBytes``: a longer one is cut
/// at a character boundary and ends in `_` and eight hex digits of a hash of the whole name, so
/// the same long name always gives the same short one and two long names that share their
/// first bytes still differ.
func derivedName(_ name: String) -> String {
    guard name.utf8.count > maxIdentifierBytes else { return name }
    let suffix = "_" + hashHex(name)
    var kept = ""
    var bytes = 0
    for character in name {
        let count = String(character).utf8.count
        if bytes + count + suffix.utf8.count > maxIdentifierBytes { break }
        kept.append(character)
        bytes += count
    }
    return kept + suffix
}

/// Eight hex digits of the 64-bit FNV-1a hash of `name`'s UTF-8 bytes (the upper half): stable
/// across runs and platforms, unlike Swift's seeded `Hasher`.
func hashHex(_ name: String) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in name.utf8 {
        hash ^= UInt64(byte)
        hash = hash &* 0x0000_0100_0000_01b3
    }
    let digits = String(hash >> 32, radix: 16)
    return String(repeating: "0", count: 8 - digits.count) + digits
}
