import Foundation

/// Case and accent folding that gives the same answer on every backend, whatever the
/// server's locale: `"Café"`, `"CAFE"` and `"cafe"` all fold to `"cafe"`, `"Ω"` to `"ω"`,
/// `"Я"` to `"я"`.
///
/// Neither engine folds non-ASCII text the same way out of the box (SQLite's `lower()` folds
/// ASCII only; PostgreSQL's depends on the database's collation), so Unity carries its own
/// table: every letter of the Latin, Greek and Cyrillic blocks is mapped to the lower-case
/// form of its base letter, and combining marks (U+0300–U+036F) are dropped. The same table
/// drives the SQLite driver's `unity_fold(x)` function and PostgreSQL's built-in
/// `translate(x, from, to)`, so both backends fold a stored value identically; use
/// ``expression(_:for:)`` to fold a column in a query and ``fold(_:)`` for the value it is
/// compared with.
///
/// Letters whose folded form is more than one character (`ß`, ligatures) are left as they
/// are: a one-to-one table is what `translate` can express.
public enum TextFolding {
    /// The SQL function the SQLite driver registers on every connection.
    public static let sqliteFunctionName = "unity_fold"

    /// Scalar → folded scalar (nil: dropped).
    static let table: [UInt32: Unicode.Scalar?] = {
        var map: [UInt32: Unicode.Scalar?] = [:]
        let ranges: [ClosedRange<UInt32>] = [
            0x41...0x5A, 0xC0...0x24F, 0x370...0x3FF, 0x400...0x52F, 0x1E00...0x1EFF, 0x1F00...0x1FFF,
        ]
        for range in ranges {
            for value in range {
                guard let scalar = Unicode.Scalar(value) else { continue }
                let decomposed = String(scalar).decomposedStringWithCanonicalMapping.unicodeScalars
                guard let base = decomposed.first else { continue }
                let lower = String(base).lowercased().unicodeScalars
                guard lower.count == 1, let folded = lower.first, folded != scalar else { continue }
                map[value] = folded
            }
        }
        for value in UInt32(0x300)...UInt32(0x36F) { map[value] = .some(nil) }
        return map
    }()

    /// The `from` and `to` arguments of PostgreSQL's `translate` that apply the table: the
    /// mapped scalars first, then the dropped ones (which `translate` deletes, having no
    /// counterpart in `to`).
    public static let translateArguments: (from: String, to: String) = {
        var from = String.UnicodeScalarView()
        var to = String.UnicodeScalarView()
        var dropped = String.UnicodeScalarView()
        for key in table.keys.sorted() {
            guard let scalar = Unicode.Scalar(key), let target = table[key] else { continue }
            if let target {
                from.append(scalar)
                to.append(target)
            } else {
                dropped.append(scalar)
            }
        }
        from.append(contentsOf: dropped)
        return (String(from), String(to))
    }()

    /// `text` folded: each scalar replaced by its table entry.
    public static func fold(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if scalar.value < 0x41 || (scalar.value > 0x5A && scalar.value < 0xC0) {
                out.append(scalar)
            } else if let entry = table[scalar.value] {
                if let entry { out.append(entry) }
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// `x` folded by the database: `unity_fold(x)` on SQLite, `translate(x, from, to)` (with
    /// the table as bound arguments) on PostgreSQL.
    public static func expression(_ x: SQLExpression, for dialect: SQLDialect) -> SQLExpression {
        if dialect.name == SQLDialect.sqlite.name {
            return .function(name: sqliteFunctionName, arguments: [x], distinct: false)
        }
        let args = translateArguments
        return .function(name: "translate", arguments: [x, .bind(.text(args.from)), .bind(.text(args.to))], distinct: false)
    }
}
