import Foundation

/// A side of a comparison in a filter string.
enum FilterOperand {
    /// A column or a dotted path across foreign keys ("dog.label").
    case path(String, position: Int)
    /// A quoted string, a number, true/false.
    case literal(DatabaseValue, position: Int)
    /// `nil` / `NULL`.
    case null(position: Int)
    /// A `?` placeholder: the index of its argument.
    case placeholder(Int, position: Int)
}

/// A parsed filter: Amigo's NSPredicate-style strings (`label = 'Foo' AND id > 3`), parsed
/// here because Linux Foundation has no `NSPredicate(format:)`.
indirect enum FilterNode {
    case and(FilterNode, FilterNode)
    case or(FilterNode, FilterNode)
    case not(FilterNode)
    case compare(FilterOperand, SQLBinaryOperator, FilterOperand)
}

/// Parsed filters by their text: an app runs the same filter strings again and again (`get`
/// runs one per call), and parsing costs more than the query it builds. Only filters that
/// parse are kept; at most `limit` of them (then the cache starts over).
final class ParsedFilters: @unchecked Sendable {
    private let lock = NSLock()
    private var parsed: [String: (node: FilterNode, placeholders: Int)] = [:]
    private let limit = 512

    /// The parse of `text` (see ``FilterParser/parse()``).
    func parse(_ text: String) throws -> (node: FilterNode, placeholders: Int) {
        lock.lock()
        let known = parsed[text]
        lock.unlock()
        if let known { return known }
        var parser = FilterParser(text)
        let (node, count) = try parser.parse()
        lock.lock()
        if parsed.count >= limit { parsed.removeAll(keepingCapacity: true) }
        parsed[text] = (node, count)
        lock.unlock()
        return (node, count)
    }
}

/// Parses the filter language: columns and dotted paths, `= == != <> < <= =< > >= =>`,
/// `AND OR NOT` and `&& || !` (keywords case-insensitive, AND binding tighter than OR),
/// parentheses, strings in single or double quotes (a doubled quote or a backslash escapes
/// one), numbers, `true`/`false`, `nil`/`NULL`, and `?` placeholders.
struct FilterParser {
    enum Token: Equatable {
        case identifier(String)
        case string(String)
        case number(String)
        case op(String)
        case lparen, rparen, placeholder, and, or, not, end
    }

    let text: String
    private var tokens: [(Token, Int)] = []
    private var index = 0
    private var placeholderCount = 0

    init(_ text: String) { self.text = text }

    func error(_ position: Int, _ message: String) -> ORMError {
        .filterSyntax(filter: text, position: position, message: message)
    }

    mutating func parse() throws -> (FilterNode, placeholders: Int) {
        tokens = try tokenize()
        let node = try parseOr()
        let (token, position) = tokens[index]
        guard token == .end else { throw error(position, "unexpected \(describe(token)) after a complete condition") }
        return (node, placeholderCount)
    }

    private func describe(_ t: Token) -> String {
        switch t {
        case .identifier(let s): return "name \"\(s)\""
        case .string(let s): return "string '\(s)'"
        case .number(let s): return "number \(s)"
        case .op(let s): return "operator \(s)"
        case .lparen: return "\"(\""
        case .rparen: return "\")\""
        case .placeholder: return "\"?\""
        case .and: return "AND"
        case .or: return "OR"
        case .not: return "NOT"
        case .end: return "the end of the filter"
        }
    }

    private func tokenize() throws -> [(Token, Int)] {
        let chars = Array(text)
        var out: [(Token, Int)] = []
        var i = 0
        while i < chars.count {
            let c = chars[i]
            let start = i
            if c.isWhitespace { i += 1; continue }
            if c == "(" { out.append((.lparen, i)); i += 1; continue }
            if c == ")" { out.append((.rparen, i)); i += 1; continue }
            if c == "?" { out.append((.placeholder, i)); i += 1; continue }
            if c == "'" || c == "\"" {
                var s = ""
                i += 1
                var closed = false
                while i < chars.count {
                    let d = chars[i]
                    if d == "\\" && i + 1 < chars.count { s.append(chars[i + 1]); i += 2; continue }
                    if d == c {
                        if i + 1 < chars.count && chars[i + 1] == c { s.append(c); i += 2; continue }
                        closed = true
                        i += 1
                        break
                    }
                    s.append(d)
                    i += 1
                }
                guard closed else { throw error(start, "the string opened here is not closed") }
                out.append((.string(s), start))
                continue
            }
            if c.isNumber || (c == "-" && i + 1 < chars.count && chars[i + 1].isNumber && !(out.last.map { Self.endsOperand($0.0) } ?? false)) {
                var s = String(c)
                i += 1
                while i < chars.count, chars[i].isNumber || chars[i] == "." || chars[i] == "e" || chars[i] == "E"
                    || ((chars[i] == "-" || chars[i] == "+") && (chars[i - 1] == "e" || chars[i - 1] == "E")) {
                    s.append(chars[i])
                    i += 1
                }
                guard Double(s) != nil else { throw error(start, "\(s) is not a number") }
                out.append((.number(s), start))
                continue
            }
            if c.isLetter || c == "_" {
                var s = ""
                while i < chars.count, chars[i].isLetter || chars[i].isNumber || chars[i] == "_" || chars[i] == "." {
                    s.append(chars[i])
                    i += 1
                }
                if s.hasSuffix(".") || s.contains("..") { throw error(start, "\"\(s)\" is not a column path") }
                switch s.uppercased() {
                case "AND": out.append((.and, start))
                case "OR": out.append((.or, start))
                case "NOT": out.append((.not, start))
                default: out.append((.identifier(s), start))
                }
                continue
            }
            let two = i + 1 < chars.count ? String(chars[i...i + 1]) : ""
            switch two {
            case "&&": out.append((.and, i)); i += 2; continue
            case "||": out.append((.or, i)); i += 2; continue
            case "==", "!=", "<>", "<=", "=<", ">=", "=>": out.append((.op(two), i)); i += 2; continue
            default: break
            }
            switch c {
            case "=", "<", ">": out.append((.op(String(c)), i)); i += 1; continue
            case "!": out.append((.not, i)); i += 1; continue
            default: throw error(i, "unexpected character \"\(c)\"")
            }
        }
        out.append((.end, chars.count))
        return out
    }

    private static func endsOperand(_ t: Token) -> Bool {
        switch t {
        case .identifier, .string, .number, .rparen, .placeholder: return true
        default: return false
        }
    }

    private mutating func parseOr() throws -> FilterNode {
        var left = try parseAnd()
        while tokens[index].0 == .or {
            index += 1
            left = .or(left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws -> FilterNode {
        var left = try parseNot()
        while tokens[index].0 == .and {
            index += 1
            left = .and(left, try parseNot())
        }
        return left
    }

    private mutating func parseNot() throws -> FilterNode {
        if tokens[index].0 == .not {
            index += 1
            return .not(try parseNot())
        }
        if tokens[index].0 == .lparen {
            let open = tokens[index].1
            index += 1
            let inner = try parseOr()
            guard tokens[index].0 == .rparen else {
                throw error(tokens[index].1, "expected \")\" to close the \"(\" at position \(open), found \(describe(tokens[index].0))")
            }
            index += 1
            return inner
        }
        let left = try parseOperand()
        let (token, position) = tokens[index]
        guard case .op(let spelled) = token else {
            throw error(position, "expected a comparison operator (= != < <= > >=), found \(describe(token))")
        }
        index += 1
        let right = try parseOperand()
        let op: SQLBinaryOperator
        switch spelled {
        case "=", "==": op = .equal
        case "!=", "<>": op = .notEqual
        case "<": op = .less
        case "<=", "=<": op = .lessOrEqual
        case ">": op = .greater
        default: op = .greaterOrEqual
        }
        return .compare(left, op, right)
    }

    private mutating func parseOperand() throws -> FilterOperand {
        let (token, position) = tokens[index]
        index += 1
        switch token {
        case .identifier(let name):
            switch name.lowercased() {
            case "true", "yes": return .literal(.bool(true), position: position)
            case "false", "no": return .literal(.bool(false), position: position)
            case "nil", "null": return .null(position: position)
            default: return .path(name, position: position)
            }
        case .string(let s): return .literal(.text(s), position: position)
        case .number(let s):
            if let i = Int64(s) { return .literal(.integer(i), position: position) }
            if let d = Double(s) { return .literal(.double(d), position: position) }
            throw error(position, "\(s) is not a number")
        case .placeholder:
            placeholderCount += 1
            return .placeholder(placeholderCount - 1, position: position)
        default:
            throw error(position, "expected a column, a value or \"?\", found \(describe(token))")
        }
    }
}

/// Converts a literal of a filter to the type of the column it is compared with, so that
/// `id = "3"` and `objId = 'ABC…'` (a UUID column) compare as the column's type on both
/// backends. Nil when the literal cannot be such a value.
func convertLiteral(_ value: DatabaseValue, to column: MappedColumn) -> DatabaseValue? {
    if value.isNull { return .null }
    if column.codec == .uuidString { return column.codec.toStorage(value) }
    switch column.columnType {
    case .int64, .int32, .int16:
        switch value {
        case .integer: return value
        case .decimal(let d):
            if let i = Int64(exactly: NSDecimalNumber(decimal: d)) { return .integer(i) }
            return convertLiteral(.double(NSDecimalNumber(decimal: d).doubleValue), to: column)
        // A fraction is compared as a number (`id < 2.5`): both backends compare an integer
        // column with a double numerically.
        case .double(let d): return d.rounded() == d && abs(d) < 9.2e18 ? .integer(Int64(d)) : (d.isFinite ? value : nil)
        case .bool(let b): return .integer(b ? 1 : 0)
        case .text(let s):
            let trimmed = s.trimmingCharacters(in: .whitespaces)
            if let i = Int64(trimmed) { return .integer(i) }
            return Double(trimmed).flatMap { $0.isFinite ? convertLiteral(.double($0), to: column) : nil }
        default: return nil
        }
    case .double, .float:
        switch value {
        case .double: return value
        case .integer(let i): return .double(Double(i))
        case .decimal(let d): return .double(NSDecimalNumber(decimal: d).doubleValue)
        case .text(let s): return Double(s.trimmingCharacters(in: .whitespaces)).map { .double($0) }
        default: return nil
        }
    case .bool:
        switch value {
        case .bool: return value
        case .integer(let i) where i == 0 || i == 1: return .bool(i == 1)
        case .text(let s):
            switch s.lowercased() {
            case "true", "yes", "1": return .bool(true)
            case "false", "no", "0": return .bool(false)
            default: return nil
            }
        default: return nil
        }
    case .text, .varchar, .json:
        switch value {
        case .text: return value
        case .integer(let i): return .text(String(i))
        case .double(let d): return .text(String(d))
        case .bool(let b): return .text(b ? "true" : "false")
        default: return value
        }
    case .date:
        switch value {
        case .date: return value
        case .text(let s):
            if let d = DateText.parse(s) { return .date(d) }
            let f = ISO8601DateFormatter()
            f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            if let d = f.date(from: s) { return .date(d) }
            f.formatOptions = [.withInternetDateTime]
            return f.date(from: s).map { .date($0) }
        default: return nil
        }
    case .decimal:
        switch value {
        case .decimal: return value
        case .integer(let i): return .decimal(Decimal(i))
        case .double(let d): return DecimalText.shortestDecimal(d).map { .decimal($0) }
        case .text(let s): return DecimalText.exactDecimal(s).map { .decimal($0) }
        default: return nil
        }
    case .uuid:
        return UUID.fromDatabaseValue(value).map { .uuid($0) }
    case .blob:
        switch value {
        case .blob: return value
        default: return nil
        }
    case .custom:
        return value
    }
}
