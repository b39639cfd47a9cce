import Foundation

/// PostgreSQL's `jsonb @>` containment, in Swift: what SQLite's driver registers as
/// `unity_json_contains`, so that ``SQLExpression/jsonContains(_:at:)`` answers alike on both
/// backends.
public enum JSONContainment {
    /// A parsed JSON value.
    enum Value: Equatable {
        case null
        case bool(Bool)
        case number(String)
        case string(String)
        case array([Value])
        case object([String: Value])
    }

    /// Whether the JSON text `document` contains the JSON text `value`, as PostgreSQL's `@>`
    /// means it; nil when either is not JSON.
    ///
    /// An object contains an object whose every member it has with a value that contains that
    /// member's value; an array contains an array whose every element is contained in one of
    /// its elements; scalars contain equal scalars (numbers compared as numbers: `1.0`
    /// equals `1`); and, as the one exception to matching structures, an array at the top
    /// contains a scalar that is one of its elements.
    public static func contains(document: String, value: String) -> Bool? {
        guard let d = parse(document), let v = parse(value) else { return nil }
        if case .array(let elements) = d, !isContainer(v) {
            return elements.contains { equalScalars($0, v) }
        }
        return contains(d, v)
    }

    static func isContainer(_ v: Value) -> Bool {
        switch v {
        case .array, .object: return true
        default: return false
        }
    }

    static func contains(_ d: Value, _ v: Value) -> Bool {
        switch (d, v) {
        case (.object(let dm), .object(let vm)):
            return vm.allSatisfy { key, inner in dm[key].map { contains($0, inner) } ?? false }
        case (.array(let de), .array(let ve)):
            return ve.allSatisfy { inner in de.contains { contains($0, inner) } }
        default:
            return equalScalars(d, v)
        }
    }

    static func equalScalars(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x), .number(let y)):
            if x == y { return true }
            if let dx = Decimal(string: x, locale: Locale(identifier: "en_US_POSIX")),
               let dy = Decimal(string: y, locale: Locale(identifier: "en_US_POSIX")), !dx.isNaN, !dy.isNaN {
                return dx == dy
            }
            return Double(x).flatMap { dx in Double(y).map { dx == $0 } } ?? false
        default: return false
        }
    }

    /// Parses JSON text; nil when it is not one JSON value (whitespace around it allowed).
    static func parse(_ text: String) -> Value? {
        var parser = Parser(bytes: Array(text.utf8))
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipWhitespace()
        return parser.index == parser.bytes.count ? value : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func literal(_ word: String) -> Bool {
            let w = Array(word.utf8)
            guard index + w.count <= bytes.count, Array(bytes[index..<index + w.count]) == w else { return false }
            index += w.count
            return true
        }

        mutating func value(depth: Int) -> Value? {
            guard depth < 1_000 else { return nil }
            skipWhitespace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "\""): return string().map(Value.string)
            case UInt8(ascii: "["):
                index += 1
                var elements: [Value] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                while true {
                    guard let element = value(depth: depth + 1) else { return nil }
                    elements.append(element)
                    skipWhitespace()
                    guard index < bytes.count else { return nil }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                    return nil
                }
            case UInt8(ascii: "{"):
                index += 1
                var members: [String: Value] = [:]
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                    index += 1
                    guard let member = value(depth: depth + 1) else { return nil }
                    members[key] = member  // the last of duplicate keys wins, as in jsonb
                    skipWhitespace()
                    guard index < bytes.count else { return nil }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                    return nil
                }
            default:
                return number()
            }
        }

        mutating func number() -> Value? {
            let start = index
            while index < bytes.count, Self.isNumberByte(bytes[index]) { index += 1 }
            guard index > start else { return nil }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard Double(text) != nil else { return nil }
            return .number(text)
        }

        static func isNumberByte(_ b: UInt8) -> Bool {
            (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") || b == UInt8(ascii: ".")
                || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var v: UInt32 = 0
            for b in bytes[index..<index + 4] {
                v <<= 4
                switch b {
                case 0x30...0x39: v |= UInt32(b - 0x30)
                case 0x41...0x46: v |= UInt32(b - 0x41 + 10)
                case 0x61...0x66: v |= UInt32(b - 0x61 + 10)
                default: return nil
                }
            }
            index += 4
            return v
        }

        mutating func string() -> String? {
            index += 1  // the opening quote
            var out = [UInt8]()
            while index < bytes.count {
                let b = bytes[index]
                index += 1
                switch b {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let e = bytes[index]
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var code = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(code) {
                            guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { return nil }
                        out.append(contentsOf: Array(String(scalar).utf8))
                    default: return nil
                    }
                default:
                    out.append(b)
                }
            }
            return nil
        }
    }
}
