import Foundation

/// A node of Foundation's predicate tree that has a SQL translation. The nodes without one
/// (regexes, casts, dictionary subscripts, localized comparisons, …) make the translation
/// throw ``PredicateTranslationError`` naming them.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
protocol SQLTranslatablePredicateExpression {
    func translate(into translator: inout PredicateTranslator) throws -> PredicateTranslator.Operand
}

/// A node whose SQL, but for its bound values, is fixed by its type and a few words: added to
/// a shape's key (see ``PredicateShapeCollector``). Conformances are conditional on the
/// children's, so one check of the whole tree's type (which the runtime caches) says whether
/// a predicate can share a template, and the walk below it is dispatched without casts.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
protocol SQLShapedPredicateExpression {
    /// Adds what this node's SQL depends on besides bound values, then its children in the
    /// order `translate` visits them; false when they cannot share a template (a captured
    /// collection or range): then the predicate is translated every time.
    func addShape(to shape: inout PredicateShapeCollector) -> Bool
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Variable: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        guard let bound = t.variables[key] else {
            throw PredicateTranslator.untranslatable(self, "a variable the predicate does not bind")
        }
        return bound
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Variable: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        shape.use(key)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.KeyPath: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let base = try t.translate(root)
        let kind = self.kind
        return try t.keyPath(root: base, keyPath: keyPath, traits: .of(Output.self),
                             isCount: kind == .collectionCount, isEmpty: kind == .collectionIsEmpty, describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.KeyPath: SQLShapedPredicateExpression where Root: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        guard root.addShape(to: &shape) else { return false }
        shape.keyPath(keyPath)
        return true
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Value: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.literal(value, describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Value: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        shape.value(value)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilLiteral: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand { .nilLiteral }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilLiteral: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        shape.word(-7)
        return true
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Conjunction: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let a = try t.condition(try t.translate(lhs), describing: lhs)
        let b = try t.condition(try t.translate(rhs), describing: rhs)
        return .condition(.and([a, b]))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Conjunction: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Disjunction: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let a = try t.condition(try t.translate(lhs), describing: lhs)
        let b = try t.condition(try t.translate(rhs), describing: rhs)
        return .condition(.or([a, b]))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Disjunction: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Negation: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        .condition(.unary(.not, try t.condition(try t.translate(wrapped), describing: wrapped)))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Negation: SQLShapedPredicateExpression where Wrapped: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        wrapped.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Equal: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.equality(try t.translate(lhs), try t.translate(rhs), negated: false, describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Equal: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NotEqual: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.equality(try t.translate(lhs), try t.translate(rhs), negated: true, describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NotEqual: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Comparison: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let op: SQLBinaryOperator
        switch self.op {
        case .lessThan: op = .less
        case .lessThanOrEqual: op = .lessOrEqual
        case .greaterThan: op = .greater
        case .greaterThanOrEqual: op = .greaterOrEqual
        }
        return try t.comparison(op, try t.translate(lhs), try t.translate(rhs), describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Comparison: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        switch op {
        case .lessThan: shape.word(1)
        case .lessThanOrEqual: shape.word(2)
        case .greaterThan: shape.word(3)
        case .greaterThanOrEqual: shape.word(4)
        }
        return lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Arithmetic: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let op: SQLBinaryOperator
        switch self.op {
        case .add: op = .add
        case .subtract: op = .subtract
        case .multiply: op = .multiply
        }
        return try t.arithmetic(op, try t.translate(lhs), try t.translate(rhs), describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Arithmetic: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        switch op {
        case .add: shape.word(1)
        case .subtract: shape.word(2)
        case .multiply: shape.word(3)
        }
        return lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.IntDivision: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.arithmetic(.divide, try t.translate(lhs), try t.translate(rhs), describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.IntDivision: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.IntRemainder: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.arithmetic(.modulo, try t.translate(lhs), try t.translate(rhs), describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.IntRemainder: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.FloatDivision: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.arithmetic(.divide, try t.translate(lhs), try t.translate(rhs), describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.FloatDivision: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.UnaryMinus: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let (e, traits) = try t.value(try t.translate(wrapped), describing: self)
        if traits.kind == .decimal {
            throw PredicateTranslator.untranslatable(self, "Decimal arithmetic is not translated")
        }
        return .value(.unary(.negate, PredicateTranslator.plain(e)), traits)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.UnaryMinus: SQLShapedPredicateExpression where Wrapped: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        wrapped.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Conditional: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let condition = try t.condition(try t.translate(test), describing: test)
        let yes = try t.translate(trueBranch)
        let no = try t.translate(falseBranch)
        if case .condition(let a) = yes, case .condition(let b) = no {
            return .condition(.caseWhen([SQLCaseBranch(when: condition, then: a)], else: b))
        }
        var (a, ta) = try t.value(yes, describing: trueBranch)
        var (b, tb) = try t.value(no, describing: falseBranch)
        if ta.kind == .encodedText || tb.kind == .encodedText {
            (a, b) = (try PredicateTranslator.encodedText(a, ta, describing: self), try PredicateTranslator.encodedText(b, tb, describing: self))
            (ta.kind, tb.kind) = (.encodedText, .encodedText)
        }
        let kind = ta.kind == .other ? tb.kind : ta.kind
        return .value(.caseWhen([SQLCaseBranch(when: condition, then: PredicateTranslator.plain(a))], else: PredicateTranslator.plain(b)),
                      .init(nullable: ta.nullable || tb.nullable, kind: kind))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Conditional: SQLShapedPredicateExpression where Test: SQLShapedPredicateExpression, If: SQLShapedPredicateExpression, Else: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        test.addShape(to: &shape) && trueBranch.addShape(to: &shape) && falseBranch.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilCoalesce: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        var (a, ta) = try t.value(try t.translate(lhs), describing: lhs)
        var (b, tb) = try t.value(try t.translate(rhs), describing: rhs)
        if ta.kind == .encodedText || tb.kind == .encodedText {
            (a, b) = (try PredicateTranslator.encodedText(a, ta, describing: self), try PredicateTranslator.encodedText(b, tb, describing: self))
            (ta.kind, tb.kind) = (.encodedText, .encodedText)
        }
        let kind = ta.kind == .other ? tb.kind : ta.kind
        let coalesced = SQLExpression.function(name: "COALESCE", arguments: [PredicateTranslator.plain(a), PredicateTranslator.plain(b)], distinct: false)
        return .value(kind == .decimal ? .decimal(coalesced) : coalesced, .init(nullable: tb.nullable, kind: kind))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.NilCoalesce: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lhs.addShape(to: &shape) && rhs.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.ForcedUnwrap: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        switch try t.translate(inner) {
        case .value(let e, let traits): return .value(e, traits.nonNull)
        case let other: return other
        }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.ForcedUnwrap: SQLShapedPredicateExpression where Inner: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        inner.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.OptionalFlatMap: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let base = try t.translate(wrapped)
        let present: SQLExpression
        switch base {
        case .nilLiteral:
            return .nilLiteral
        case .value(let e, let traits):
            present = .isNull(PredicateTranslator.plain(e), negated: true)
            t.variables[variable.key] = .value(e, traits.nonNull)
        case .row(let row):
            guard case .toOne(let parent, let relation) = row.source else {
                throw PredicateTranslator.untranslatable(self, "only an optional value or to-one relationship can be unwrapped")
            }
            present = .isNull(t.column(parent, relation.foreignKey), negated: true)
            t.variables[variable.key] = base
        case .jsonDocument(var json):
            present = json.present
            json.nullable = false
            t.variables[variable.key] = .jsonDocument(json)
        default:
            throw PredicateTranslator.untranslatable(self, "only an optional value or to-one relationship can be unwrapped")
        }
        defer { t.variables[variable.key] = nil }
        let result = try t.translate(transform)
        if case .row = result { return result }   // `$0.a?.b` of a to-one: NULL follows the chain
        if case .jsonDocument(var json) = result {
            // `$0.a?.b` of an object inside a document: absent when `a` is.
            json.nullable = true
            return .jsonDocument(json)
        }
        let (e, traits) = try t.value(result, describing: transform)
        return .value(.caseWhen([SQLCaseBranch(when: present, then: PredicateTranslator.plain(e))], else: nil),
                      .init(nullable: true, kind: traits.kind))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.OptionalFlatMap: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        guard wrapped.addShape(to: &shape) else { return false }
        shape.declare(variable.key)
        return transform.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceContains: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        let container = try t.translate(sequence)
        let member = try t.translate(element)
        switch container {
        case .list(let values, let containsNil, let listTraits):
            let (e, traits) = try t.value(member, describing: element)
            var conditions: [SQLExpression] = []
            if !values.isEmpty {
                let x = traits.kind == .decimal || listTraits.kind == .decimal ? SQLExpression.decimal(PredicateTranslator.plain(e)) : e
                var list = values.map { SQLExpression.bind($0) }
                if traits.kind == .encodedText {
                    list = try list.map { try PredicateTranslator.encodedText($0, listTraits, describing: self) }
                }
                conditions.append(.inList(x, list, negated: false))
            }
            if containsNil { conditions.append(.isNull(PredicateTranslator.plain(e), negated: false)) }
            if conditions.isEmpty { return .condition(.literal(.bool(false))) }
            let any = conditions.count == 1 ? conditions[0] : .or(conditions)
            // `x IN (…)` is NULL for a NULL x; Swift says false.
            return .condition(traits.nullable && !containsNil ? .function(name: "COALESCE", arguments: [any, .literal(.bool(false))], distinct: false) : any)
        case .value(_, let traits) where traits.kind == .text:
            return try t.like(container, member, before: "%", after: "%", describing: self)
        default:
            throw PredicateTranslator.untranslatable(self, "contains(_:) is translated for a literal collection and for a string")
        }
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceContains: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        sequence.addShape(to: &shape) && element.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceContainsWhere: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        guard case .rows(let parent, let relation) = try t.translate(sequence) else {
            throw PredicateTranslator.untranslatable(self, "contains(where:) is translated for a to-many relationship")
        }
        let exists = try t.related(parent, relation, count: false) { t, row in
            t.variables[variable.key] = .row(row)
            defer { t.variables[variable.key] = nil }
            return try t.condition(try t.translate(test), describing: test)
        }
        return .condition(exists)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceContainsWhere: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        guard sequence.addShape(to: &shape) else { return false }
        shape.declare(variable.key)
        return test.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceAllSatisfy: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        guard case .rows(let parent, let relation) = try t.translate(sequence) else {
            throw PredicateTranslator.untranslatable(self, "allSatisfy is translated for a to-many relationship")
        }
        let counterexample = try t.related(parent, relation, count: false) { t, row in
            t.variables[variable.key] = .row(row)
            defer { t.variables[variable.key] = nil }
            return .unary(.not, try t.condition(try t.translate(test), describing: test))
        }
        return .condition(.unary(.not, counterexample))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceAllSatisfy: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        guard sequence.addShape(to: &shape) else { return false }
        shape.declare(variable.key)
        return test.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceStartsWith: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.like(try t.translate(base), try t.translate(prefix), before: "", after: "%", describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.SequenceStartsWith: SQLShapedPredicateExpression where Base: SQLShapedPredicateExpression, Prefix: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        base.addShape(to: &shape) && prefix.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.CollectionContainsCollection: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        try t.like(try t.translate(base), try t.translate(other), before: "%", after: "%", describing: self)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.CollectionContainsCollection: SQLShapedPredicateExpression where Base: SQLShapedPredicateExpression, Other: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        base.addShape(to: &shape) && other.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.ClosedRange: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        .range(lower: try t.translate(lower), upper: try t.translate(upper), closed: true)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.ClosedRange: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lower.addShape(to: &shape) && upper.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Range: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        .range(lower: try t.translate(lower), upper: try t.translate(upper), closed: false)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.Range: SQLShapedPredicateExpression where LHS: SQLShapedPredicateExpression, RHS: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        lower.addShape(to: &shape) && upper.addShape(to: &shape)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.RangeExpressionContains: SQLTranslatablePredicateExpression {
    func translate(into t: inout PredicateTranslator) throws -> PredicateTranslator.Operand {
        guard case .range(let lower, let upper, let closed) = try t.translate(range) else {
            throw PredicateTranslator.untranslatable(self, "contains(_:) is translated for a range of values")
        }
        let (e, te) = try t.value(try t.translate(element), describing: element)
        let (lo, tl) = try t.value(lower, describing: range)
        let (hi, th) = try t.value(upper, describing: range)
        let (x, low) = try PredicateTranslator.comparable(e, te, lo, tl, ordering: true, describing: self)
        let (x2, high) = try PredicateTranslator.comparable(e, te, hi, th, ordering: true, describing: self)
        if closed {
            // PostgreSQL's grammar takes no COLLATE on BETWEEN's lower bound: two comparisons.
            if case .codePointOrdered = low {
                return .condition(.and([.binary(x, .greaterOrEqual, low), .binary(x2, .lessOrEqual, high)]))
            }
            return .condition(.between(x, low: low, high: high, negated: false))
        }
        return .condition(.and([.binary(x, .greaterOrEqual, low), .binary(x2, .less, high)]))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateExpressions.RangeExpressionContains: SQLShapedPredicateExpression where RangeExpression: SQLShapedPredicateExpression, Element: SQLShapedPredicateExpression {
    func addShape(to shape: inout PredicateShapeCollector) -> Bool {
        range.addShape(to: &shape) && element.addShape(to: &shape)
    }
}
