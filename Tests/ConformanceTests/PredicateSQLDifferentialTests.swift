import Foundation
import Testing
import Unity
import UnityRowCoding

/// Generated predicates, evaluated by Swift and by SQL over the same stored objects, must keep
/// the same objects in the same order, on both backends. The predicates are built at run time
/// from Foundation's `PredicateExpressions` (the same trees `#Predicate` expands to; literals
/// of this size would take minutes to type-check), nested up to depth 4, over objects with
/// NULLs, empty strings, Unicode in NFC, negative and boundary numbers, decimals past a
/// double's precision and dates before 1970, and a JSON document (a `PredicateJSONMapped`
/// `Codable` property) whose members the predicates read through key paths, nested object and
/// absent keys included. Strings outside NFC are the documented
/// difference (Swift compares canonical equivalents as equal, SQL compares code points) and
/// have a test of their own.
@Suite("#Predicate: Swift and SQL agree on generated predicates")
struct PredicateSQLDifferentialTests {
    @RowCoded
    struct PdSample: ModelDef {
        var id: Int
        var big: Int          // boundary values: compared, never computed with
        var small: Int        // -50...50: arithmetic
        var maybe: Int?
        var text: String
        var note: String?
        var real: Double
        var money: Decimal
        var flag: Bool
        var when: Date
        var doc: PdDoc
        var existsInDatabase = false
        static let tableName = "pd_sample"
        var primaryKeys: [any CodingKey] { [CodingKeys.id] }
    }

    /// An object inside the document.
    struct PdInner: Codable, Sendable, Equatable, PredicateJSONMapped {
        var k: Int
        static var predicateJSONKeys: [PartialKeyPath<PdInner>: String] { [\.k: "k"] }
    }

    /// The JSON document of each sample: every translated member type, a renamed key, optionals
    /// (absent when nil) and a nested object.
    struct PdDoc: Codable, Sendable, Equatable, PredicateJSONMapped {
        var s: String
        var n: Int?
        var d: Double
        var b: Bool
        var m: Decimal
        var t: Date
        var inner: PdInner?
        enum CodingKeys: String, CodingKey { case s = "label", n, d, b, m, t, inner }
        static var predicateJSONKeys: [PartialKeyPath<PdDoc>: String] {
            [\.s: "label", \.n: "n", \.d: "d", \.b: "b", \.m: "m", \.t: "t", \.inner: "inner"]
        }
    }

    /// A small deterministic generator (SplitMix64), so a failure can be replayed by seed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let bigs: [Int] = [Int.min, Int.min + 1, -1_000_000_007, -1, 0, 1, 2, 1_000_000_007, Int.max - 1, Int.max]
    static let texts: [String] = ["", "a", "A", "ab", "abc", "b", "B", "zz", "a%b", "a_b", "\\", "caf\u{00E9}", "\u{00C9}cole",
                                  "na\u{00EF}ve", "\u{65E5}\u{672C}", "\u{1F600}", " ", "a b", "Z", "\u{00FC}ber"]
    static let reals: [Double] = [-1e300, -2.5, -1, -0.0, 0, 0.1, 0.5, 1, 3.25, 1e-300, 1e300]
    static let moneys: [Decimal] = ["-12345678901234567890.12", "-1", "0", "0.01", "9.91", "10", "10.00", "10.5",
                                    "12345678901234567890.12", "12345678901234567890.13", "99999999999999999999999999999999999"]
        .compactMap { Decimal(string: $0) }
    static let dates: [Date] = [-2_208_988_800, -86_400, -1, 0, 1, 86_400, 951_782_400, 1_700_000_000.5]
        .map { Date(timeIntervalSince1970: $0) }

    static func samples(count: Int, seed: UInt64) -> [PdSample] {
        var g = Generator(state: seed)
        return (1...count).map { id in
            PdSample(id: id, big: bigs.randomElement(using: &g)!, small: Int.random(in: -50...50, using: &g),
                     maybe: Bool.random(using: &g) ? nil : Int.random(in: -5...5, using: &g),
                     text: texts.randomElement(using: &g)!,
                     note: Int.random(in: 0..<4, using: &g) == 0 ? nil : texts.randomElement(using: &g)!,
                     real: reals.randomElement(using: &g)!, money: moneys.randomElement(using: &g)!,
                     flag: Bool.random(using: &g), when: dates.randomElement(using: &g)!,
                     doc: PdDoc(s: texts.randomElement(using: &g)!, n: Bool.random(using: &g) ? nil : Int.random(in: -3...3, using: &g),
                                d: reals.randomElement(using: &g)!, b: Bool.random(using: &g), m: moneys.randomElement(using: &g)!,
                                t: dates.randomElement(using: &g)!,
                                inner: Int.random(in: 0..<3, using: &g) == 0 ? nil : PdInner(k: Int.random(in: -3...3, using: &g))))
        }
    }

    typealias V = PredicateExpressions.Variable<PdSample>
    typealias Condition = any StandardPredicateExpression<Bool>

    /// Builds random conditions over `v`.
    struct Builder {
        var g: Generator
        let v: V

        mutating func pick<T>(_ items: [T]) -> T { items.randomElement(using: &g)! }

        func key<T>(_ path: KeyPath<PdSample, T> & Sendable) -> PredicateExpressions.KeyPath<V, T> {
            PredicateExpressions.KeyPath(root: v, keyPath: path)
        }

        /// A member of the JSON document: `$0.doc.<path>`.
        func doc<T>(_ path: KeyPath<PdDoc, T> & Sendable) -> PredicateExpressions.KeyPath<PredicateExpressions.KeyPath<V, PdDoc>, T> {
            PredicateExpressions.KeyPath(root: key(\.doc), keyPath: path)
        }

        static func value<T>(_ x: T) -> PredicateExpressions.Value<T> { PredicateExpressions.Value(x) }

        mutating func comparisonOp() -> PredicateExpressions.ComparisonOperator {
            pick([.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual])
        }

        mutating func compare<L: StandardPredicateExpression, R: StandardPredicateExpression>(_ l: L, _ r: R) -> Condition
        where L.Output: Comparable, L.Output == R.Output {
            switch Int.random(in: 0..<3, using: &g) {
            case 0: return PredicateExpressions.Equal(lhs: l, rhs: r)
            case 1: return PredicateExpressions.NotEqual(lhs: l, rhs: r)
            default: return PredicateExpressions.Comparison(lhs: l, rhs: r, op: comparisonOp())
            }
        }

        mutating func leaf() -> Condition {
            switch Int.random(in: 0..<24, using: &g) {
            case 0: return compare(key(\.big), Self.value(pick(PredicateSQLDifferentialTests.bigs)))
            case 1: return compare(key(\.small), Self.value(Int.random(in: -60...60, using: &g)))
            case 2:
                let k = Self.value(Int?.some(Int.random(in: -5...5, using: &g)))
                return Bool.random(using: &g) ? PredicateExpressions.Equal(lhs: key(\.maybe), rhs: k)
                    : PredicateExpressions.NotEqual(lhs: key(\.maybe), rhs: k)
            case 3:
                return Bool.random(using: &g) ? PredicateExpressions.Equal(lhs: key(\.maybe), rhs: PredicateExpressions.NilLiteral<Int>())
                    : PredicateExpressions.NotEqual(lhs: key(\.maybe), rhs: PredicateExpressions.NilLiteral<Int>())
            case 4:
                let coalesced = PredicateExpressions.NilCoalesce(lhs: key(\.maybe), rhs: Self.value(Int.random(in: -5...5, using: &g)))
                return compare(coalesced, Self.value(Int.random(in: -5...5, using: &g)))
            case 5: return compare(key(\.text), Self.value(pick(PredicateSQLDifferentialTests.texts)))
            case 6:
                let needle = String(pick(PredicateSQLDifferentialTests.texts).prefix(Int.random(in: 0...2, using: &g)))
                return Bool.random(using: &g) ? PredicateExpressions.CollectionContainsCollection(base: key(\.text), other: Self.value(needle))
                    : PredicateExpressions.SequenceStartsWith(base: key(\.text), prefix: Self.value(needle))
            case 7:
                let k = Self.value(Optional(pick(PredicateSQLDifferentialTests.texts)))
                return Bool.random(using: &g) ? PredicateExpressions.Equal(lhs: key(\.note), rhs: k)
                    : PredicateExpressions.NotEqual(lhs: key(\.note), rhs: k)
            case 8: return compare(key(\.real), Self.value(pick(PredicateSQLDifferentialTests.reals)))
            case 9: return compare(key(\.money), Self.value(pick(PredicateSQLDifferentialTests.moneys)))
            case 10: return compare(key(\.when), Self.value(pick(PredicateSQLDifferentialTests.dates)))
            case 11: return key(\.flag)
            case 12:
                let list = (0..<Int.random(in: 0...4, using: &g)).map { _ in Int.random(in: -50...50, using: &g) }
                return PredicateExpressions.SequenceContains(sequence: Self.value(list), element: key(\.small))
            case 13:
                let a = Int.random(in: -50...50, using: &g), b = Int.random(in: -50...50, using: &g)
                let range = PredicateExpressions.ClosedRange(lower: Self.value(min(a, b)), upper: Self.value(max(a, b)))
                return PredicateExpressions.RangeExpressionContains(range: range, element: key(\.small))
            case 14:
                let sum = PredicateExpressions.Arithmetic(lhs: key(\.small), rhs: Self.value(Int.random(in: -9...9, using: &g)),
                                                          op: pick([.add, .subtract, .multiply]))
                return compare(sum, Self.value(Int.random(in: -100...100, using: &g)))
            case 16: return compare(doc(\.s), Self.value(pick(PredicateSQLDifferentialTests.texts)))
            case 17:
                let k = Self.value(Bool.random(using: &g) ? nil : Int?.some(Int.random(in: -3...3, using: &g)))
                return Bool.random(using: &g) ? PredicateExpressions.Equal(lhs: doc(\.n), rhs: k)
                    : PredicateExpressions.NotEqual(lhs: doc(\.n), rhs: k)
            case 18: return compare(doc(\.d), Self.value(pick(PredicateSQLDifferentialTests.reals)))
            case 19: return doc(\.b)
            case 20: return compare(doc(\.m), Self.value(pick(PredicateSQLDifferentialTests.moneys)))
            case 21: return compare(doc(\.t), Self.value(pick(PredicateSQLDifferentialTests.dates)))
            case 22:
                // `$0.doc.inner?.k == k` (or `!=`): nil when the object is absent.
                let k = Self.value(Int?.some(Int.random(in: -3...3, using: &g)))
                let member = PredicateExpressions.OptionalFlatMap(doc(\.inner)) { inner in
                    PredicateExpressions.KeyPath(root: inner, keyPath: \PdInner.k)
                }
                return Bool.random(using: &g) ? PredicateExpressions.Equal(lhs: member, rhs: k)
                    : PredicateExpressions.NotEqual(lhs: member, rhs: k)
            case 23:
                let absent = PredicateExpressions.NilLiteral<PdInner>()
                return Bool.random(using: &g) ? PredicateExpressions.Equal(lhs: doc(\.inner), rhs: absent)
                    : PredicateExpressions.NotEqual(lhs: doc(\.inner), rhs: absent)
            default:
                let remainder = PredicateExpressions.IntRemainder(lhs: key(\.small), rhs: Self.value(Int.random(in: 1...7, using: &g)))
                return compare(remainder, Self.value(Int.random(in: -3...3, using: &g)))
            }
        }

        mutating func condition(depth: Int) -> Condition {
            if depth <= 1 || Int.random(in: 0..<4, using: &g) == 0 { return leaf() }
            switch Int.random(in: 0..<5, using: &g) {
            case 0: return Self.and(condition(depth: depth - 1), condition(depth: depth - 1))
            case 1: return Self.or(condition(depth: depth - 1), condition(depth: depth - 1))
            case 2: return Self.not(condition(depth: depth - 1))
            case 3: return Self.ternary(condition(depth: depth - 1), condition(depth: depth - 1), condition(depth: depth - 1))
            default: return Self.and(condition(depth: depth - 1), leaf())
            }
        }

        static func and<A: StandardPredicateExpression<Bool>, B: StandardPredicateExpression<Bool>>(_ a: A, _ b: B) -> Condition {
            PredicateExpressions.Conjunction(lhs: a, rhs: b)
        }
        static func or<A: StandardPredicateExpression<Bool>, B: StandardPredicateExpression<Bool>>(_ a: A, _ b: B) -> Condition {
            PredicateExpressions.Disjunction(lhs: a, rhs: b)
        }
        static func not<A: StandardPredicateExpression<Bool>>(_ a: A) -> Condition {
            PredicateExpressions.Negation(a)
        }
        static func ternary<A: StandardPredicateExpression<Bool>, B: StandardPredicateExpression<Bool>, C: StandardPredicateExpression<Bool>>(
            _ a: A, _ b: B, _ c: C) -> Condition {
            PredicateExpressions.Conditional(test: a, trueBranch: b, falseBranch: c)
        }
    }

    static func predicates(count: Int, seed: UInt64) -> [Predicate<PdSample>] {
        var g = Generator(state: seed)
        return (0..<count).map { _ in
            let s = g.next()
            return Predicate<PdSample> { v in
                var builder = Builder(g: Generator(state: s), v: v)
                return builder.condition(depth: 4)
            }
        }
    }

    static func createTable(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("pd_sample", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("big", .int64, notNull: true),
                SQLColumnDefinition("small", .int64, notNull: true), SQLColumnDefinition("maybe", .int64),
                SQLColumnDefinition("text", .text, notNull: true), SQLColumnDefinition("note", .text),
                SQLColumnDefinition("real", .double, notNull: true), SQLColumnDefinition("money", .decimal, notNull: true),
                SQLColumnDefinition("flag", .bool, notNull: true), SQLColumnDefinition("when", .date, notNull: true),
                SQLColumnDefinition("doc", .json, notNull: true),
            ])))
        }
    }

    @Test(arguments: Backend.allCases)
    func swiftAndSQLAgree(_ backend: Backend) throws {
        let objects = Self.samples(count: 500, seed: 0x5EED)
        let predicates = Self.predicates(count: 1_000, seed: 0xC0FFEE)
        try withTestDatabase(backend) { (db: Database) throws in
            try Self.createTable(db)
            try DBManager.executeStatements(try objects.map { try $0.createSaveStatement() }, in: db)
            var disagreements: [String] = []
            var nonTrivial = 0
            for (index, predicate) in predicates.enumerated() {
                let swift = try objects.filter { try predicate.evaluate($0) }.map(\.id)
                let sql = try PdSample.instances(matching: predicate, orderBy: [SortDescriptor(\.id)], in: db).map(\.id)
                if !swift.isEmpty && swift.count < objects.count { nonTrivial += 1 }
                if swift != sql, disagreements.count < 5 {
                    let extra = Set(sql).subtracting(swift).sorted().prefix(3)
                    let missing = Set(swift).subtracting(sql).sorted().prefix(3)
                    disagreements.append("#\(index): \(predicate.expression)\n  only SQL kept \(Array(extra)), only Swift kept \(Array(missing))")
                }
            }
            #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
            // The generator must make predicates that actually filter.
            #expect(nonTrivial > 500)
        }
    }

    @Test(arguments: Backend.allCases)
    func stringsOutsideNFCAreTheDocumentedDifference(_ backend: Backend) throws {
        let nfc = "caf\u{00E9}", nfd = "cafe\u{0301}"
        try withTestDatabase(backend) { (db: Database) throws in
            try Self.createTable(db)
            let object = PdSample(id: 1, big: 0, small: 0, maybe: nil, text: nfd, note: nil, real: 0, money: 0, flag: true,
                                  when: Date(timeIntervalSince1970: 0),
                                  doc: PdDoc(s: "", n: nil, d: 0, b: false, m: 0, t: Date(timeIntervalSince1970: 0), inner: nil))
            _ = try object.save(in: db)
            let equal = #Predicate<PdSample> { $0.text == nfc }
            #expect(try equal.evaluate(object), "Swift: canonical equivalents are equal")
            #expect(try PdSample.count(matching: equal, in: db) == 0, "SQL: the code points differ")
            let containsE = #Predicate<PdSample> { $0.text.contains("e") }
            #expect(try !containsE.evaluate(object), "Swift: \"e\" is not a character of \"e\u{301}\"")
            #expect(try PdSample.count(matching: containsE, in: db) == 1, "SQL: the code point is there")
        }
    }
}
