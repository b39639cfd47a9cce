import Foundation
import Testing
@testable import Unity

/// Models of their own, so that the shape cache's entries for them are these tests' alone.
private struct ShapeOwner {
    var id: Int
    var name: String
}

private struct ShapePet {
    var id: Int
    var name: String
    var nickname: String?
    var age: Int
    var indoor: Bool
    var owner: ShapeOwner
    var toys: [ShapeToy]
}

private struct ShapeToy {
    var id: Int
    var label: String
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private let toySchema = PredicateSchema(table: "toys").column(\ShapeToy.label, "label")
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private let ownerSchema = PredicateSchema(table: "owners").column(\ShapeOwner.name, "name")
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
private let petSchema = PredicateSchema(table: "pets")
    .column(\ShapePet.name, "name").column(\ShapePet.nickname, "nickname")
    .column(\ShapePet.age, "age").column(\ShapePet.indoor, "indoor")
    .toOne(\ShapePet.owner, foreignKey: "owner_id", target: { ownerSchema })
    .toMany(\ShapePet.toys, .foreignKey("pet_id"), target: { toySchema })

/// The translation cache keyed by a predicate's shape: each shape is translated once into a
/// template, and every predicate of that shape gets the SQL of its own values.
@Suite struct PredicateShapeCacheTests {
    /// The condition through the cache, checked against a walk of the tree made anew.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    private func cachedMatchesDirect(_ predicate: Predicate<ShapePet>, alias: String? = nil) throws -> SQLExpression {
        let cached = try PredicateSQL.condition(predicate, schema: petSchema, alias: alias)
        let direct = try PredicateSQL.translate(predicate, schema: petSchema, alias: alias, templating: false).expression
        #expect(cached == direct)
        return cached
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    private func entry(for predicate: Predicate<ShapePet>, alias: String? = nil) -> PredicateShapeEntry? {
        var shape = PredicateShapeCollector(schema: petSchema.serial, alias: alias,
                                            root: ObjectIdentifier(type(of: predicate.expression)))
        shape.declare(predicate.variable.key)
        guard shape.add(predicate.expression) else { return nil }
        return predicateShapes.lookup(shape.key)?.entry
    }

    @Test func eachPredicateOfAShapeGetsItsOwnValues() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        func older(than age: Int, named name: String) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { $0.age > age && $0.name == name }
        }
        for (age, name) in [(3, "Rex"), (-7, "Ñandú"), (Int.max, ""), (0, "Rex")] {
            let condition = try cachedMatchesDirect(older(than: age, named: name))
            #expect(condition == .and([
                .binary(.column(table: "pets", name: "age"), .greater, .bind(.integer(Int64(age)))),
                .binary(.column(table: "pets", name: "name"), .equal, .bind(.text(name))),
            ]))
        }
        guard case .template(let template)? = entry(for: older(than: 1, named: "x")) else {
            Issue.record("the shape has no template")
            return
        }
        #expect(template.binds.count == 2)
    }

    @Test func nilAndBooleansAreTheShapeNotItsValues() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        func nicknamed(_ nickname: String?, indoor: Bool) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { $0.nickname == nickname && $0.indoor == indoor }
        }
        let none = try cachedMatchesDirect(nicknamed(nil, indoor: true))
        let some = try cachedMatchesDirect(nicknamed("Bo", indoor: false))
        let noneAgain = try cachedMatchesDirect(nicknamed(nil, indoor: false))
        #expect(none != some)
        guard case .and(let parts) = none, case .and(let someParts) = some, case .and(let againParts) = noneAgain else {
            Issue.record("not a conjunction")
            return
        }
        #expect(parts[0] == .isNull(.column(table: "pets", name: "nickname"), negated: false))
        #expect(someParts[0] == .isDistinctFrom(.column(table: "pets", name: "nickname"), .bind(.text("Bo")), negated: true))
        #expect(againParts[0] == parts[0])
        #expect(parts[1] != againParts[1])

        // Which of two values is nil is part of the shape too, even with nothing between them.
        func either(_ a: String?, _ b: String?) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { $0.nickname == (a ?? b) }
        }
        let nickname = SQLExpression.column(table: "pets", name: "nickname")
        #expect(try cachedMatchesDirect(either(nil, "Bo")) == .isDistinctFrom(
            nickname, .function(name: "COALESCE", arguments: [.literal(.null), .bind(.text("Bo"))], distinct: false), negated: true))
        #expect(try cachedMatchesDirect(either("Bo", nil)) == .isDistinctFrom(
            nickname, .function(name: "COALESCE", arguments: [.bind(.text("Bo")), .literal(.null)], distinct: false), negated: true))
    }

    @Test func aSearchedStringIsEscapedForEachPredicate() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        func containing(_ needle: String) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { $0.name.contains(needle) }
        }
        func starting(_ prefix: String) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { $0.name.starts(with: prefix) }
        }
        for needle in ["plain", "50%_off\\", ""] {
            guard case .like(_, let pattern, _, _, _) = try cachedMatchesDirect(containing(needle)) else {
                Issue.record("not a LIKE")
                continue
            }
            #expect(pattern == .bind(.text("%" + SQLExpression.escapeLikePattern(needle) + "%")))
        }
        guard case .like(_, let pattern, _, _, _) = try cachedMatchesDirect(starting("a_b")),
              case .like(_, let second, _, _, _) = try cachedMatchesDirect(starting("z")) else {
            Issue.record("not a LIKE")
            return
        }
        #expect(pattern == .bind(.text("a\\_b%")))
        #expect(second == .bind(.text("z%")))
    }

    @Test func relationshipsSubqueriesAreFilledToo() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        func ownedBy(_ name: String, toy label: String) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { pet in
                pet.owner.name == name && pet.toys.contains { $0.label == label }
            }
        }
        let a = try cachedMatchesDirect(ownedBy("Ann", toy: "ball"))
        let b = try cachedMatchesDirect(ownedBy("Bob", toy: "rope"), alias: "p")
        let c = try cachedMatchesDirect(ownedBy("Cy", toy: "bone"))
        #expect(a != c)
        #expect(b != a)
        guard case .template(let template)? = entry(for: ownedBy("x", toy: "y")) else {
            Issue.record("the shape has no template")
            return
        }
        #expect(template.binds.count == 2)
    }

    @Test func aCapturedCollectionIsTranslatedEveryTime() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        func aged(_ ages: [Int]) -> Predicate<ShapePet> {
            #Predicate<ShapePet> { ages.contains($0.age) }
        }
        let two = try cachedMatchesDirect(aged([1, 2]))
        let three = try cachedMatchesDirect(aged([4, 5, 6]))
        #expect(two == .inList(.column(table: "pets", name: "age"), [.bind(.integer(1)), .bind(.integer(2))], negated: false))
        #expect(three == .inList(.column(table: "pets", name: "age"), [.bind(.integer(4)), .bind(.integer(5)), .bind(.integer(6))], negated: false))
        #expect(entry(for: aged([7])) == nil)
    }

    @Test func predicatesMadeApartShareTheirShape() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let low = 2
        let first = #Predicate<ShapePet> { $0.age < low }
        let high = 9
        let second = #Predicate<ShapePet> { $0.age < high }
        _ = try cachedMatchesDirect(first)
        guard case .template? = entry(for: second) else {
            Issue.record("a second predicate of the shape missed the first one's template")
            return
        }
        #expect(try cachedMatchesDirect(second) == .binary(.column(table: "pets", name: "age"), .less, .bind(.integer(9))))
    }

    /// A shape's key holds its key paths by identity; its cache entry keeps those very objects
    /// alive, so that no other key path can take one's address while the entry is there.
    @Test func aCachedShapeHoldsTheKeyPathsItIsKeyedBy() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        typealias AgeAbove = PredicateExpressions.Comparison<
            PredicateExpressions.KeyPath<PredicateExpressions.Variable<ShapePet>, Int>, PredicateExpressions.Value<Int>>
        func older(than age: Int) -> Predicate<ShapePet> { #Predicate<ShapePet> { $0.age > age } }
        #expect(try cachedMatchesDirect(older(than: 3)) == .binary(.column(table: "pets", name: "age"), .greater, .bind(.integer(3))))
        let predicate = older(than: 9)
        let keyPath = try #require((predicate.expression as? AgeAbove)?.lhs.keyPath)
        var shape = PredicateShapeCollector(schema: petSchema.serial, alias: nil,
                                            root: ObjectIdentifier(type(of: predicate.expression)))
        shape.declare(predicate.variable.key)
        let added = shape.add(predicate.expression)
        #expect(added)
        let stored = try #require(predicateShapes.lookup(shape.key))
        #expect(stored.keyPaths.count == 1)
        #expect(stored.keyPaths.contains { $0 === keyPath })
    }

    /// Sort descriptors made apart from the same key path share one memo entry, which holds
    /// the key paths it is keyed by; a descending one is another entry.
    @Test func orderingsAreMemoizedByKeyPathIdentityAndOrder() throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let ascending = try PredicateSQL.ordering([SortDescriptor(\ShapePet.age)], schema: petSchema)
        #expect(ascending == [SQLOrdering(.column(table: "pets", name: "age"), .ascending)])
        let descending = try PredicateSQL.ordering([SortDescriptor(\ShapePet.age, order: .reverse)], schema: petSchema)
        #expect(descending == [SQLOrdering(.column(table: "pets", name: "age"), .descending)])
        let again = [SortDescriptor(\ShapePet.age)]
        let (key, keyPaths) = PredicateSQL.orderingKey(again, schema: petSchema, alias: nil)
        let stored = try #require(orderings.lookup(key))
        #expect(stored.terms == ascending)
        let keyPath = try #require(keyPaths.first ?? nil)
        #expect(stored.keyPaths.contains { $0 === keyPath })
        let (reverseKey, _) = PredicateSQL.orderingKey([SortDescriptor(\ShapePet.age, order: .reverse)], schema: petSchema, alias: nil)
        #expect(reverseKey != key)
        #expect(orderings.lookup(reverseKey)?.terms == descending)
    }
}
