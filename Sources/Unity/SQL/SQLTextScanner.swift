import Foundation

/// Reads raw SQL text the way the engines do, as far as Unity needs to: which bytes are code
/// and which are inside quoted strings, quoted identifiers, comments and (PostgreSQL)
/// dollar-quoted strings. Placeholder rewriting and script checks both stand on it, so a `?`
/// or a `COMMIT` inside a string is never taken for code.
enum SQLTextScanner {
    /// When a quoted string, quoted identifier, comment or dollar-quoted string starts at
    /// `i`, the index just past its end (or `bytes.count` when it is unterminated);
    /// nil when `bytes[i]` is code.
    @inline(__always)
    static func endOfNonCode(_ bytes: [UInt8], at i: Int, dialect: SQLDialect) -> Int? {
        let n = bytes.count
        let b = bytes[i]
        func skip(until terminator: UInt8, from index: Int) -> Int {
            var j = index
            while j < n, bytes[j] != terminator { j += 1 }
            return min(j + 1, n)  // past the terminator (or the end when unterminated)
        }
        switch b {
        case UInt8(ascii: "'"), UInt8(ascii: "\""):
            // A doubled quote inside closes and reopens at once, which the caller's loop
            // handles by treating the second quote as a new quoted run.
            return skip(until: b, from: i + 1)
        case UInt8(ascii: "`") where dialect.allowsBacktickAndBracketIdentifiers:
            return skip(until: b, from: i + 1)
        case UInt8(ascii: "[") where dialect.allowsBacktickAndBracketIdentifiers:
            return skip(until: UInt8(ascii: "]"), from: i + 1)
        case UInt8(ascii: "-") where i + 1 < n && bytes[i + 1] == UInt8(ascii: "-"):
            return skip(until: UInt8(ascii: "\n"), from: i + 2)
        case UInt8(ascii: "/") where i + 1 < n && bytes[i + 1] == UInt8(ascii: "*"):
            // PostgreSQL nests block comments; SQLite does not, and there a nested opener is
            // just text, so depth is counted only on PostgreSQL.
            var depth = 1
            var j = i + 2
            while j < n, depth > 0 {
                if bytes[j] == UInt8(ascii: "*"), j + 1 < n, bytes[j + 1] == UInt8(ascii: "/") {
                    depth -= 1
                    j += 2
                } else if dialect.allowsDollarQuotedStrings, bytes[j] == UInt8(ascii: "/"), j + 1 < n, bytes[j + 1] == UInt8(ascii: "*") {
                    depth += 1
                    j += 2
                } else {
                    j += 1
                }
            }
            return j
        case UInt8(ascii: "$") where dialect.allowsDollarQuotedStrings && (i == 0 || !isIdentifierByte(bytes[i - 1])):
            // `$tag$ … $tag$`; `$1` (a positional parameter) is not a dollar quote.
            var j = i + 1
            if j < n, bytes[j] >= 0x30, bytes[j] <= 0x39 { return nil }
            while j < n, isIdentifierByte(bytes[j]) { j += 1 }
            guard j < n, bytes[j] == UInt8(ascii: "$") else { return nil }
            let tag = bytes[i...j]
            var k = j + 1
            while k + tag.count <= n {
                if bytes[k] == UInt8(ascii: "$"), bytes[k..<(k + tag.count)].elementsEqual(tag) {
                    return k + tag.count
                }
                k += 1
            }
            return n
        default:
            return nil
        }
    }

    @inline(__always)
    static func isIdentifierByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b >= 0x80
    }

    /// Splits a raw fragment at each placeholder `?` outside quoted text and comments:
    /// n placeholders give n + 1 pieces.
    static func splitAtPlaceholders(_ sql: String, dialect: SQLDialect) -> [String] {
        let bytes = Array(sql.utf8)
        var pieces: [String] = []
        var start = 0
        var i = 0
        while i < bytes.count {
            if let end = endOfNonCode(bytes, at: i, dialect: dialect) {
                i = end
            } else if bytes[i] == UInt8(ascii: "?") {
                pieces.append(String(decoding: bytes[start..<i], as: UTF8.self))
                i += 1
                start = i
            } else {
                i += 1
            }
        }
        pieces.append(String(decoding: bytes[start..<bytes.count], as: UTF8.self))
        return pieces
    }

    /// One statement of a script: its text and its first words, upper-cased.
    struct ScriptStatement: Equatable {
        /// The statement as written, without the `;` that ends it, trimmed.
        var text: String
        /// Its first two keywords (or fewer), upper-cased: enough to tell what kind it is.
        var leadingWords: [String]
    }

    /// Splits a script into its statements at the `;` that end them, as the engines do: a
    /// `;` inside quoted text or a comment does not end a statement, nor does one inside the
    /// `BEGIN … END` body of a `CREATE TRIGGER` (SQLite) or of a `BEGIN ATOMIC` function
    /// (PostgreSQL). Empty statements are left out.
    static func statements(in script: String, dialect: SQLDialect) -> [ScriptStatement] {
        let bytes = Array(script.utf8)
        let n = bytes.count
        var result: [ScriptStatement] = []
        var start = 0
        var words: [String] = []
        var isCreate = false
        var createsRoutine = false
        var blockDepth = 0

        func finish(at end: Int) {
            let text = String(decoding: bytes[start..<end], as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty || !words.isEmpty {
                result.append(ScriptStatement(text: text, leadingWords: Array(words.prefix(2))))
            }
            words.removeAll()
            isCreate = false
            createsRoutine = false
            blockDepth = 0
        }

        var i = 0
        while i < n {
            if let end = endOfNonCode(bytes, at: i, dialect: dialect) {
                i = end
                continue
            }
            let b = bytes[i]
            if b == UInt8(ascii: ";"), blockDepth == 0 {
                finish(at: i)
                i += 1
                start = i
                continue
            }
            guard isIdentifierByte(b), i == 0 || !isIdentifierByte(bytes[i - 1]) else {
                i += 1
                continue
            }
            var j = i
            while j < n, isIdentifierByte(bytes[j]) { j += 1 }
            let word = String(decoding: bytes[i..<j], as: UTF8.self).uppercased()
            if words.count < 2 { words.append(word) }
            if words.count == 1 { isCreate = word == "CREATE" }
            if isCreate {
                // Only a trigger or routine has a BEGIN … END body (`begin` may otherwise be
                // a column name); inside it, CASE … END nests like BEGIN … END.
                switch word {
                case "TRIGGER", "FUNCTION", "PROCEDURE": createsRoutine = true
                case "BEGIN" where createsRoutine: blockDepth += 1
                case "CASE" where blockDepth > 0: blockDepth += 1
                case "END" where blockDepth > 0: blockDepth -= 1
                default: break
                }
            }
            i = j
        }
        finish(at: n)
        return result
    }

    /// The first statement of `script` that begins, ends or abandons a transaction (BEGIN,
    /// START TRANSACTION, COMMIT, END, ROLLBACK other than ROLLBACK TO, ABORT), or nil.
    /// Savepoints are allowed: they nest inside the transaction that runs the script.
    static func firstTransactionControl(in script: String, dialect: SQLDialect) -> String? {
        for statement in statements(in: script, dialect: dialect) {
            guard let first = statement.leadingWords.first else { continue }
            switch first {
            case "BEGIN", "COMMIT", "END", "ABORT":
                return statement.text
            case "START" where statement.leadingWords.dropFirst().first == "TRANSACTION":
                return statement.text
            case "ROLLBACK" where statement.leadingWords.dropFirst().first != "TO":
                return statement.text
            default:
                continue
            }
        }
        return nil
    }
}
