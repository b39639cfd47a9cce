import Foundation

/// Compiles Foundation's `Predicate` and `SortDescriptor` into the SQL AST, so that the same
/// `#Predicate` a Swift program evaluates in memory filters rows on SQLite and PostgreSQL.
///
/// The translation means what Swift means: `!=` keeps rows whose value is nil (`IS DISTINCT
/// FROM`), strings compare by code point (no case or accent folding), nil sorts first in a
/// forward `SortDescriptor` and last in a reverse one. What SQL cannot mean (a call to an
/// arbitrary function, a regex, a type cast, a key path without a column) throws
/// ``PredicateTranslationError`` before any SQL runs. Flavors call it with their models'
/// ``PredicateSchema``; values become bind parameters.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
public enum PredicateSQL {
    /// The WHERE condition that keeps the rows of `schema`'s table for which `predicate` holds.
    /// Columns are qualified with the table's name, or with `alias` where the query names the
    /// table `FROM table AS alias`.
    public static func condition<Model>(_ predicate: Predicate<Model>, schema: PredicateSchema,
                                        alias: String? = nil) throws -> SQLExpression {
        // Predicates of one shape (the same tree of node types, key paths and operators) give
        // the same SQL but for their values: translated once into a template, which each
        // later predicate fills with its own values.
        let root = ObjectIdentifier(type(of: predicate.expression))
        var shape = PredicateShapeCollector(schema: schema.serial, alias: alias, root: root)
        shape.declare(predicate.variable.key)
        guard shape.add(predicate.expression) else {
            return try translate(predicate, schema: schema, alias: alias, templating: false).expression
        }
        switch predicateShapes.lookup(shape.key)?.entry {
        case .template(let template)?:
            if let filled = template.filled(with: shape.values) { return filled }
            return try translate(predicate, schema: schema, alias: alias, templating: false).expression
        case .unshared?:
            return try translate(predicate, schema: schema, alias: alias, templating: false).expression
        case nil:
            let direct = try translate(predicate, schema: schema, alias: alias, templating: false).expression
            // The template is kept only if, filled with this predicate's values, it gives back
            // the direct translation: a node that read a value instead of binding it would
            // otherwise leak one predicate's value into the next.
            var entry = PredicateShapeEntry.unshared
            if let template = try? translate(predicate, schema: schema, alias: alias, templating: true),
               template.filled(with: shape.values) == direct {
                entry = .template(template)
            }
            // Walked again, keeping the key paths, which the entry holds on to.
            var pinning = PredicateShapeCollector(schema: schema.serial, alias: alias, root: root, keepsKeyPaths: true)
            pinning.declare(predicate.variable.key)
            if pinning.add(predicate.expression), pinning.key == shape.key {
                predicateShapes.store(shape.key, PredicateShapeStored(entry: entry, keyPaths: pinning.keyPaths))
            }
            return direct
        }
    }

    /// One walk over `predicate`'s tree; with `templating`, each bound value is a slot.
    static func translate<Model>(_ predicate: Predicate<Model>, schema: PredicateSchema, alias: String?,
                                         templating: Bool) throws -> PredicateTemplate {
        var translator = PredicateTranslator()
        translator.templating = templating
        let root = PredicateTranslator.RowRef(schema: schema, source: .table(alias ?? schema.table))
        translator.variables[predicate.variable.key] = .row(root)
        let operand = try translator.translate(predicate.expression)
        return PredicateTemplate(expression: try translator.condition(operand, describing: predicate.expression),
                                 binds: translator.templateBinds)
    }

    /// The ORDER BY terms of `descriptors`, in order. A descriptor's key path must be a column
    /// of `schema`, or of a to-one relationship's target (`\Book.author.name`). Strings order
    /// by code point: a `String.StandardComparator` other than `.lexical` throws. Columns are
    /// qualified as in ``condition(_:schema:alias:)``.
    public static func ordering<Model>(_ descriptors: [SortDescriptor<Model>], schema: PredicateSchema,
                                       alias: String? = nil) throws -> [SQLOrdering] {
        if descriptors.isEmpty { return [] }
        // The same descriptors on the same schema always give the same terms: translated once.
        let (key, keyPaths) = orderingKey(descriptors, schema: schema, alias: alias)
        if let stored = orderings.lookup(key) { return stored.terms }
        var translator = PredicateTranslator()
        let root = PredicateTranslator.RowRef(schema: schema, source: .table(alias ?? schema.table))
        let terms = try descriptors.map { try translator.ordering($0, root: root) }
        orderings.store(key, OrderingStored(terms: terms, keyPaths: keyPaths.compactMap { $0 }))
        return terms
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateSQL {
    /// The memo key of `descriptors`, and the key paths it was made from (the very objects
    /// whose identities it holds, which the memo's entry keeps alive).
    static func orderingKey<Model>(_ descriptors: [SortDescriptor<Model>], schema: PredicateSchema,
                                   alias: String?) -> (OrderingKey, [AnyKeyPath?]) {
        // An index loop, not map or zip: in code not specialized for `Model`, each generic
        // adapter costs a metadata lookup per call, more than the rest of the key.
        var keyPaths: [AnyKeyPath?] = []
        keyPaths.reserveCapacity(descriptors.count)
        var digest = SQLShapeHash(salt: 0x0BDE_2B1E)
        for index in 0..<descriptors.count {
            let descriptor = descriptors[index]
            let keyPath: AnyKeyPath? = descriptor.keyPath
            keyPaths.append(keyPath)
            if let keyPath {
                digest.combine(Int(bitPattern: UInt(bitPattern: ObjectIdentifier(keyPath))))
            } else {
                digest.combine(0)
            }
            digest.combine(descriptor.order == .forward ? 1 : 2)
            // Any comparator but `.lexical` throws, so it is never stored: one word for all.
            // Only a descriptor of a string (or an optional one) has a comparator, so the
            // getter (a cost of its own) is asked only for those.
            if keyPath.map({ Self.mayHaveStringComparator(type(of: $0).valueType) }) ?? true {
                let comparator = descriptor.stringComparator
                digest.combine(comparator == nil ? 0 : comparator == .lexical ? 1 : 2)
            } else {
                digest.combine(0)
            }
        }
        return (OrderingKey(schema: schema.serial, alias: alias, descriptors: digest.finalize(bindingCount: descriptors.count)),
                keyPaths)
    }

    /// Whether a sort descriptor of a key path to `valueType` can carry a string comparator.
    private static func mayHaveStringComparator(_ valueType: Any.Type) -> Bool {
        valueType == String.self || valueType == String?.self
    }
}

/// What ``PredicateSQL/ordering(_:schema:alias:)`` memoizes by: the schema, the alias, and a
/// digest of each descriptor's key path (by identity), order and comparator.
struct OrderingKey: Hashable {
    var schema: Int
    var alias: String?
    var descriptors: SQLShapeKey
}

/// Memoized ORDER BY terms, with the key paths whose identities their key holds.
struct OrderingStored {
    var terms: [SQLOrdering]
    var keyPaths: [AnyKeyPath]
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
let predicateShapes = BoundedCache<PredicateShapeKey, PredicateShapeStored>(capacity: 1_024)

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
let orderings = BoundedCache<OrderingKey, OrderingStored>(capacity: 512)

/// The walk over a `Predicate`'s expression tree.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
struct PredicateTranslator {
    /// What an expression of the tree stands for in SQL.
    indirect enum Operand {
        /// A value (a column, a bound value, an arithmetic result).
        case value(SQLExpression, Traits)
        /// A condition: true or false, never NULL.
        case condition(SQLExpression)
        /// A model's row: the root, or the target of a to-one relationship.
        case row(RowRef)
        /// The rows of a to-many relationship.
        case rows(RowRef, PredicateSchema.ToMany)
        /// `nil`.
        case nilLiteral
        /// A collection written in the predicate (or captured by it): `[1, 2].contains($0.x)`.
        case list([DatabaseValue], containsNil: Bool, Traits)
        /// A range: `(1...5).contains($0.x)`.
        case range(lower: Operand, upper: Operand, closed: Bool)
        /// A JSON column whose type is ``PredicateJSONMapped``, or an object inside it: a
        /// further key path reads a member.
        case jsonDocument(JSONDocument)
    }

    /// A JSON document (or an object at `path` inside one) that key paths read into.
    struct JSONDocument {
        /// The column that holds the document.
        var document: SQLExpression
        /// Where the object is inside the document (empty: the document itself).
        var path: SQLJSONPath
        /// The object's Swift type, whose table names its members' JSON keys.
        var type: any PredicateJSONMapped.Type
        /// Whether the object may be nil (the column, or a member on the way, is optional).
        var nullable: Bool
        /// The column's traits, for the document compared as a whole.
        var columnTraits: Traits

        /// True when the object is there: the column is not NULL, and inside it the member is
        /// present and not a JSON `null`.
        var present: SQLExpression {
            path.elements.isEmpty ? .isNull(document, negated: true)
                : .isNull(document.jsonValue(at: path, as: .text), negated: true)
        }
    }

    /// What the SQL of a value needs to mean what Swift means.
    struct Traits {
        /// `encodedText`: a `Date` or `UUID` inside a JSON document, held as the text Unity's JSON
        /// encoder writes (the date text, the UUID's string), compared with values in that form.
        enum Kind { case other, text, decimal, boolean, encodedText }
        var nullable: Bool
        var kind: Kind

        static func of(_ type: Any.Type) -> Traits {
            var unwrapped = type
            var nullable = false
            while let optional = unwrapped as? any OptionalTypeMarker.Type {
                nullable = true
                unwrapped = optional.wrappedType
            }
            if let raw = unwrapped as? any RawRepresentable.Type, !(unwrapped is any DatabaseValueConvertible.Type) {
                unwrapped = rawValueType(raw)
            }
            let kind: Kind = unwrapped == String.self || unwrapped == Character.self || unwrapped == Substring.self ? .text
                : unwrapped == Decimal.self ? .decimal
                : unwrapped == Bool.self ? .boolean
                : .other
            return Traits(nullable: nullable, kind: kind)
        }

        private static func rawValueType<R: RawRepresentable>(_ type: R.Type) -> Any.Type { R.RawValue.self }

        var nonNull: Traits { Traits(nullable: false, kind: kind) }
    }

    /// A row of a model's table, as the tree reaches it.
    final class RowRef {
        enum Source {
            /// The table itself (or its alias inside a subquery).
            case table(String)
            /// The target of a to-one relationship of `parent`.
            case toOne(RowRef, PredicateSchema.ToOne)
        }
        let schema: PredicateSchema
        let source: Source

        init(schema: PredicateSchema, source: Source) {
            self.schema = schema
            self.source = source
        }
    }

    var variables: [PredicateExpressions.VariableID: Operand] = [:]
    private var aliasCount = 0
    /// Whether values become slots (see ``PredicateTemplate``) instead of binds.
    var templating = false
    /// The slots' binds met so far, when templating.
    var templateBinds: [String: PredicateTemplate.Use] = [:]
    private var slotCount = 0

    /// `value`, or when templating the next slot's stand-in.
    mutating func slotted(_ value: DatabaseValue) -> DatabaseValue {
        guard templating else { return value }
        let sentinel = predicateSlotSentinel(slotCount)
        templateBinds[sentinel] = .value(slotCount)
        slotCount += 1
        return .text(sentinel)
    }

    // MARK: Walking the tree

    mutating func translate<E: PredicateExpression>(_ expression: E) throws -> Operand {
        guard let node = expression as? any SQLTranslatablePredicateExpression else {
            throw Self.untranslatable(expression, "this expression has no SQL translation")
        }
        return try node.translate(into: &self)
    }

    static func untranslatable(_ expression: Any, _ reason: String) -> PredicateTranslationError {
        PredicateTranslationError(expression: String(describing: expression), reason: reason)
    }

    mutating func newAlias() -> String {
        aliasCount += 1
        return "unity_p\(aliasCount)"
    }

    // MARK: Conversions between operands

    /// `operand` as a condition that is never NULL where Swift's answer is a `Bool`.
    func condition(_ operand: Operand, describing expression: @autoclosure () -> Any) throws -> SQLExpression {
        switch operand {
        case .condition(let c):
            return c
        case .value(let e, let traits) where traits.kind == .boolean:
            if case .literal(.bool) = e { return e }
            return .binary(e, .equal, .literal(.bool(true)))
        default:
            throw Self.untranslatable(expression(), "it is not a condition")
        }
    }

    /// `operand` as a value.
    func value(_ operand: Operand, describing expression: @autoclosure () -> Any) throws -> (SQLExpression, Traits) {
        switch operand {
        case .value(let e, let traits):
            return (e, traits)
        case .condition(let c):
            return (.caseWhen([SQLCaseBranch(when: c, then: .literal(.bool(true)))], else: .literal(.bool(false))),
                    Traits(nullable: false, kind: .boolean))
        case .nilLiteral:
            return (.literal(.null), Traits(nullable: true, kind: .other))
        case .jsonDocument(let json) where json.path.elements.isEmpty:
            return (json.document, json.columnTraits)
        case .jsonDocument:
            throw Self.untranslatable(expression(), "an object inside a JSON document is not compared as a whole: compare its members")
        default:
            throw Self.untranslatable(expression(), "a model, a relationship or a collection cannot be used as a value here")
        }
    }

    /// The SQL of `column` of `row`: the column itself, or, through to-one relationships, a
    /// scalar subquery that is NULL when the relationship is.
    mutating func column(_ row: RowRef, _ column: String) -> SQLExpression {
        switch row.source {
        case .table(let name):
            return .column(table: name, name: column)
        case .toOne(let parent, let relation):
            let reference = self.column(parent, relation.foreignKey)
            let alias = newAlias()
            let target = row.schema
            return .subquery(SQLSelect(columns: [.expression(.column(table: alias, name: column), alias: nil)],
                                       from: .table(target.table, alias: alias),
                                       where: .binary(.column(table: alias, name: relation.targetColumn ?? target.key), .equal, reference)))
        }
    }

    /// A value of `row` read through a column: wrapped so that it compares as Swift does.
    mutating func columnValue(_ row: RowRef, _ column: PredicateSchema.Column, _ traits: Traits) -> Operand {
        let e = self.column(row, column.name)
        var traits = traits
        if column.isDecimal { traits.kind = .decimal }
        return .value(traits.kind == .decimal ? .decimal(e) : e, traits)
    }

    /// EXISTS (or, with `count`, the number) of the rows of a to-many relationship for which
    /// `test` holds.
    mutating func related(_ parent: RowRef, _ relation: PredicateSchema.ToMany, count: Bool,
                          test: (inout PredicateTranslator, RowRef) throws -> SQLExpression?) throws -> SQLExpression {
        let target = relation.target()
        let parentKey = column(parent, relation.parentColumn ?? parent.schema.key)
        let alias = newAlias()
        let row = RowRef(schema: target, source: .table(alias))
        var conditions: [SQLExpression] = []
        var joins: [SQLJoin] = []
        let from: SQLTableSource
        switch relation.link {
        case .foreignKey(let foreignKey):
            from = .table(target.table, alias: alias)
            conditions.append(.binary(.column(table: alias, name: foreignKey), .equal, parentKey))
        case .through(let table, let parentColumn, let targetColumn):
            let link = newAlias()
            from = .table(table, alias: link)
            joins.append(SQLJoin(.inner, .table(target.table, alias: alias),
                                 on: .binary(.column(table: alias, name: target.key), .equal, .column(table: link, name: targetColumn))))
            conditions.append(.binary(.column(table: link, name: parentColumn), .equal, parentKey))
        }
        if let extra = try test(&self, row) { conditions.append(extra) }
        let select = SQLSelect(columns: [count ? .expression(.countAll, alias: nil) : .expression(.literal(.integer(1)), alias: nil)],
                               from: from, joins: joins, where: .and(conditions))
        return count ? .subquery(select) : .exists(select, negated: false)
    }

    // MARK: Operators

    mutating func equality(_ lhs: Operand, _ rhs: Operand, negated: Bool, describing expression: @autoclosure () -> Any) throws -> Operand {
        switch (lhs, rhs) {
        case (.nilLiteral, .nilLiteral):
            return .condition(.literal(.bool(!negated)))
        case (.nilLiteral, let other), (let other, .nilLiteral):
            switch other {
            case .value(let e, _):
                return .condition(.isNull(e, negated: negated))
            case .row(let row):
                guard case .toOne(let parent, let relation) = row.source else {
                    return .condition(.literal(.bool(negated)))
                }
                return .condition(.isNull(column(parent, relation.foreignKey), negated: negated))
            case .jsonDocument(let json):
                // An absent member and a JSON `null` both decode as nil.
                return .condition(negated ? json.present : .unary(.not, json.present))
            default:
                throw Self.untranslatable(expression(), "only a value or a to-one relationship can be compared with nil")
            }
        default:
            let (a, ta) = try value(lhs, describing: expression())
            let (b, tb) = try value(rhs, describing: expression())
            let (x, y) = try Self.comparable(a, ta, b, tb, ordering: false, describing: expression())
            if ta.nullable || tb.nullable {
                // Swift's `==` on optionals: nil equals nil, and nil differs from every value.
                return .condition(.isDistinctFrom(x, y, negated: !negated))
            }
            return .condition(.binary(x, negated ? .notEqual : .equal, y))
        }
    }

    /// Both sides of a comparison, wrapped so that they compare as Swift compares them:
    /// decimals as numbers, strings (when ordered) by code point.
    static func comparable(_ a: SQLExpression, _ ta: Traits, _ b: SQLExpression, _ tb: Traits,
                           ordering: Bool, describing expression: @autoclosure () -> Any) throws -> (SQLExpression, SQLExpression) {
        if ta.kind == .encodedText || tb.kind == .encodedText {
            let x = try encodedText(a, ta, describing: expression()), y = try encodedText(b, tb, describing: expression())
            return ordering ? (.codePointOrdered(x), .codePointOrdered(y)) : (x, y)
        }
        func wrap(_ e: SQLExpression, _ t: Traits, other: Traits) -> SQLExpression {
            if t.kind == .decimal || other.kind == .decimal {
                if case .decimal = e { return e }
                return .decimal(e)
            }
            if ordering, t.kind == .text || other.kind == .text {
                return .codePointOrdered(e)
            }
            return e
        }
        return (wrap(a, ta, other: tb), wrap(b, tb, other: ta))
    }

    mutating func comparison(_ op: SQLBinaryOperator, _ lhs: Operand, _ rhs: Operand, describing expression: @autoclosure () -> Any) throws -> Operand {
        let (a, ta) = try value(lhs, describing: expression())
        let (b, tb) = try value(rhs, describing: expression())
        let (x, y) = try Self.comparable(a, ta, b, tb, ordering: true, describing: expression())
        return .condition(.binary(x, op, y))
    }

    /// `e` as the text Unity's JSON encoder writes for a `Date` or a `UUID`, to compare with
    /// such a value inside a JSON document: the value itself when it was read from one, a
    /// bound date or UUID converted. A date outside the years 0000–9999 throws: its text
    /// would not sort as the dates do.
    static func encodedText(_ e: SQLExpression, _ t: Traits, describing expression: @autoclosure () -> Any) throws -> SQLExpression {
        if t.kind == .encodedText { return plain(e) }
        switch e {
        case .literal(.null), .bind(.null):
            return e
        case .bind(.date(let date)):
            guard DateText.isInTextRange(date) else {
                throw untranslatable(expression(), "a date inside a JSON document is compared as Unity's date text, which orders as the dates do "
                                     + "for the years 0000 to 9999 only; \(date) is outside them")
            }
            return .bind(.text(DateText.format(date)))
        case .bind(.uuid(let uuid)):
            return .bind(.text(uuid.uuidString))
        default:
            throw untranslatable(expression(), "a date or UUID inside a JSON document compares with a value written in the predicate "
                                 + "(or another one inside a JSON document), not with a column")
        }
    }

    mutating func arithmetic(_ op: SQLBinaryOperator, _ lhs: Operand, _ rhs: Operand, describing expression: @autoclosure () -> Any) throws -> Operand {
        let (a, ta) = try value(lhs, describing: expression())
        let (b, tb) = try value(rhs, describing: expression())
        if ta.kind == .decimal || tb.kind == .decimal {
            throw Self.untranslatable(expression(), "Decimal arithmetic is not translated (SQLite would compute it in floating point); compare the stored values instead")
        }
        return .value(.binary(Self.plain(a), op, Self.plain(b)), Traits(nullable: ta.nullable || tb.nullable, kind: .other))
    }

    /// An operand without the collation a comparison would give it (arithmetic has none).
    static func plain(_ e: SQLExpression) -> SQLExpression {
        switch e {
        case .decimal(let x), .codePointOrdered(let x): return x
        default: return e
        }
    }

    /// `text LIKE pattern`, where the pattern is `before`, `needle` taken literally, `after`.
    mutating func like(_ text: Operand, _ needle: Operand, before: String, after: String, describing expression: @autoclosure () -> Any) throws -> Operand {
        let (haystack, th) = try value(text, describing: expression())
        let (pattern, tp) = try value(needle, describing: expression())
        guard th.kind == .text, tp.kind == .text else {
            throw Self.untranslatable(expression(), "only strings are searched in SQL")
        }
        let literal: SQLExpression
        if case .bind(.text(let string)) = pattern {
            let text = before + SQLExpression.escapeLikePattern(string) + after
            if templating, case .value(let slot)? = templateBinds[string] {
                // A slot's stand-in has no LIKE metacharacter: the pattern holds it whole.
                templateBinds[text] = .likePattern(slot, before: before, after: after)
            }
            literal = .bind(.text(text))
        } else {
            // A needle read from a column: escape it in SQL.
            var escaped = Self.plain(pattern)
            for character in ["\\", "%", "_"] {
                escaped = .function(name: "replace", arguments: [escaped, .literal(.string(character)), .literal(.string("\\" + character))], distinct: false)
            }
            if !before.isEmpty { escaped = .binary(.literal(.string(before)), .concat, escaped) }
            if !after.isEmpty { escaped = .binary(escaped, .concat, .literal(.string(after))) }
            literal = escaped
        }
        let condition = SQLExpression.like(Self.plain(haystack), pattern: literal, escape: .literal(.string("\\")),
                                           caseInsensitive: false, negated: false)
        // A NULL text (or needle) gives NULL; Swift has no nil here (the optional was unwrapped).
        return .condition(th.nullable || tp.nullable ? .function(name: "COALESCE", arguments: [condition, .literal(.bool(false))], distinct: false) : condition)
    }

    mutating func keyPath(root: Operand, keyPath: AnyKeyPath, traits: Traits, isCount: Bool, isEmpty: Bool,
                          describing expression: @autoclosure () -> Any) throws -> Operand {
        switch root {
        case .row(let row):
            switch row.schema.member(keyPath) {
            case .column(let column):
                var valueType = type(of: keyPath).valueType
                while let optional = valueType as? any OptionalTypeMarker.Type { valueType = optional.wrappedType }
                if let mapped = valueType as? any PredicateJSONMapped.Type {
                    return .jsonDocument(JSONDocument(document: self.column(row, column.name), path: [], type: mapped,
                                                      nullable: traits.nullable, columnTraits: traits))
                }
                return columnValue(row, column, traits)
            case .toOne(let relation):
                return .row(RowRef(schema: relation.target(), source: .toOne(row, relation)))
            case .toMany(let relation):
                return .rows(row, relation)
            case nil:
                let advice = row.schema.missingColumnAdvice.map { ": " + $0 } ?? ""
                throw Self.untranslatable(expression(), "the key path \(keyPath) maps to no column of \"\(row.schema.table)\"" + advice)
            }
        case .rows(let parent, let relation):
            if isCount {
                return .value(try related(parent, relation, count: true) { _, _ in nil }, Traits(nullable: false, kind: .other))
            }
            if isEmpty {
                let exists = try related(parent, relation, count: false) { _, _ in nil }
                return .condition(.unary(.not, exists))
            }
            throw Self.untranslatable(expression(), "of a to-many relationship, only count, isEmpty, contains(where:) and allSatisfy are translated")
        case .jsonDocument(let json):
            return try jsonMember(json, keyPath, describing: expression())
        case .value(let e, let t) where t.kind == .text:
            if isCount {
                return .value(.function(name: "length", arguments: [Self.plain(e)], distinct: false), Traits(nullable: t.nullable, kind: .other))
            }
            if isEmpty {
                return .condition(.binary(Self.plain(e), .equal, .literal(.string(""))))
            }
            throw Self.untranslatable(expression(), "of a string, only count and isEmpty are translated")
        default:
            throw Self.untranslatable(expression(), "this key path reads no column")
        }
    }

    /// The member `keyPath` of the JSON object `json`: a nested object, or a scalar extracted
    /// with the type that makes it compare as Swift compares it.
    func jsonMember(_ json: JSONDocument, _ keyPath: AnyKeyPath, describing expression: @autoclosure () -> Any) throws -> Operand {
        guard let key = json.type.predicateJSONKey(for: keyPath) else {
            throw Self.untranslatable(expression(), "the key path \(keyPath) is not in \(json.type).predicateJSONKeys, so nothing says which JSON key "
                                      + "it is stored under: list the stored property there (a computed property has no JSON key)")
        }
        let path = json.path.appending(.key(key))
        do { try path.validate() } catch {
            throw Self.untranslatable(expression(), "the JSON key \"\(key)\" of \(keyPath) cannot be looked up: \(error)")
        }
        var valueType = type(of: keyPath).valueType
        var nullable = json.nullable
        while let optional = valueType as? any OptionalTypeMarker.Type {
            nullable = true
            valueType = optional.wrappedType
        }
        switch PredicateJSONLeaf.of(valueType) {
        case .object(let mapped)?:
            return .jsonDocument(JSONDocument(document: json.document, path: path, type: mapped, nullable: nullable,
                                              columnTraits: json.columnTraits))
        case .scalar(let extracted, let kind)?:
            return .value(json.document.jsonValue(at: path, as: extracted), Traits(nullable: nullable, kind: kind))
        case nil:
            throw Self.untranslatable(expression(), "the key path \(keyPath) reads a \(valueType) inside a JSON document, which SQL does not "
                                      + "compare as Swift does (members translate when they are strings, integers, Double, Bool, Decimal, Date, UUID, "
                                      + "raw-value enums of these, or PredicateJSONMapped objects)")
        }
    }

    /// A value written in the predicate, or captured by it.
    mutating func literal(_ value: Any, describing expression: @autoclosure () -> Any) throws -> Operand {
        if let optional = value as? any OptionalValueMarker {
            guard let wrapped = optional.wrappedAny else { return .nilLiteral }
            return try literal(wrapped, describing: expression())
        }
        if let bool = value as? Bool {
            return .value(.literal(.bool(bool)), Traits(nullable: false, kind: .boolean))
        }
        if let scalar = try Self.scalar(value) {
            return .value(.bind(slotted(scalar.0)), scalar.1)
        }
        if let range = value as? any RangeMarker {
            let (lower, upper) = range.boundValues
            return .range(lower: try literal(lower, describing: expression()), upper: try literal(upper, describing: expression()),
                          closed: range.isClosed)
        }
        if let sequence = value as? any Sequence {
            var values: [DatabaseValue] = []
            var containsNil = false
            var traits = Traits(nullable: false, kind: .other)
            for element in sequence {
                if let optional = element as? any OptionalValueMarker, optional.wrappedAny == nil {
                    containsNil = true
                    continue
                }
                let unwrapped = (element as? any OptionalValueMarker)?.wrappedAny ?? element
                guard let scalar = try Self.scalar(unwrapped) else {
                    throw Self.untranslatable(expression(), "a collection of \(type(of: element)) cannot be bound")
                }
                values.append(scalar.0)
                traits = scalar.1
            }
            return .list(values, containsNil: containsNil, traits)
        }
        throw Self.untranslatable(expression(), "a value of type \(type(of: value)) cannot be bound")
    }

    /// A single bindable value and its traits, or nil for a collection or range.
    /// `value`'s database value alone, without its traits (what a shape's slot takes).
    static func scalarValue(_ value: Any) -> DatabaseValue? {
        if let character = value as? Character { return .text(String(character)) }
        if let convertible = value as? any DatabaseValueConvertible { return convertible.databaseValue }
        if let raw = value as? any RawRepresentable, let convertible = raw.rawValue as? any DatabaseValueConvertible {
            return convertible.databaseValue
        }
        return nil
    }

    static func scalar(_ value: Any) throws -> (DatabaseValue, Traits)? {
        if let character = value as? Character {
            return (.text(String(character)), Traits(nullable: false, kind: .text))
        }
        if let convertible = value as? any DatabaseValueConvertible {
            return (convertible.databaseValue, Traits.of(type(of: value)))
        }
        if let raw = value as? any RawRepresentable, let convertible = raw.rawValue as? any DatabaseValueConvertible {
            return (convertible.databaseValue, Traits.of(type(of: raw.rawValue)))
        }
        return nil
    }

    // MARK: Sorting

    mutating func ordering<Model>(_ descriptor: SortDescriptor<Model>, root: RowRef) throws -> SQLOrdering {
        guard let keyPath = descriptor.keyPath else {
            throw Self.untranslatable(descriptor, "a SortDescriptor made from a comparator has no key path to sort by")
        }
        if let comparator = descriptor.stringComparator, comparator != .lexical {
            throw Self.untranslatable(descriptor, "strings sort by code point in SQL: use the .lexical comparator")
        }
        guard let (column, traits) = try sortKey(keyPath, row: root, depth: 0) else {
            throw Self.untranslatable(descriptor, "the key path \(keyPath) maps to no column of \"\(root.schema.table)\" or of its to-one relationships")
        }
        let e = traits.kind == .text ? SQLExpression.codePointOrdered(column) : column
        // Swift's SortDescriptor puts nil before every value in forward order. The NULLS
        // clause is written only for an optional value: on PostgreSQL it is the opposite of
        // the default, and an ORDER BY with it cannot walk a plain index.
        let nulls: (forward: SQLOrdering.Nulls?, reverse: SQLOrdering.Nulls?) = traits.nullable ? (.first, .last) : (nil, nil)
        return descriptor.order == .forward ? SQLOrdering(e, .ascending, nulls: nulls.forward)
            : SQLOrdering(e, .descending, nulls: nulls.reverse)
    }

    /// The column a sort key path reads: one of `row`'s, or one of a to-one relationship's
    /// target (`\Book.author.name` is `\Book.author` appending `\Author.name`).
    mutating func sortKey(_ keyPath: AnyKeyPath, row: RowRef, depth: Int) throws -> (SQLExpression, Traits)? {
        let valueType = type(of: keyPath).valueType
        if case .column(let column)? = row.schema.member(keyPath),
           case .value(let e, let traits) = columnValue(row, column, Traits.of(valueType)) {
            return (e, traits)
        }
        guard depth < 4 else { return nil }
        for (relationPath, member) in row.schema.members {
            guard case .toOne(let relation) = member else { continue }
            let target = RowRef(schema: relation.target(), source: .toOne(row, relation))
            for (targetPath, _) in target.schema.members {
                guard let joined = relationPath.appending(path: targetPath) else { continue }
                guard joined == keyPath, let (e, traits) = try sortKey(targetPath, row: target, depth: depth + 1) else { continue }
                // A row without the related one reads NULL through the subquery, whatever the
                // key path's type: it sorts as nil.
                return (e, Traits(nullable: true, kind: traits.kind))
            }
        }
        return nil
    }
}

// MARK: - Markers for optionals and ranges

/// Lets the translator see through `Optional` without knowing its wrapped type.
protocol OptionalTypeMarker {
    static var wrappedType: Any.Type { get }
}

protocol OptionalValueMarker {
    var wrappedAny: Any? { get }
}

extension Optional: OptionalTypeMarker {
    static var wrappedType: Any.Type { Wrapped.self }
}

extension Optional: OptionalValueMarker {
    var wrappedAny: Any? {
        switch self {
        case .some(let value): return value
        case .none: return nil
        }
    }
}

/// Lets the translator read a captured range's bounds.
protocol RangeMarker {
    var boundValues: (Any, Any) { get }
    var isClosed: Bool { get }
}

extension ClosedRange: RangeMarker {
    var boundValues: (Any, Any) { (lowerBound, upperBound) }
    var isClosed: Bool { true }
}

extension Range: RangeMarker {
    var boundValues: (Any, Any) { (lowerBound, upperBound) }
    var isClosed: Bool { false }
}
