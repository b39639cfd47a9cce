import Foundation

// Foundation's `#Predicate` and `SortDescriptor` in requests: compiled by the core
// (`PredicateSQL`) with Swift's meaning, over a schema derived once per model from its
// `attributes`, its `Relations` and the key paths of `relationKeyPaths`.

/// A model key path that reads one of the model's relations, so that a `#Predicate` can
/// follow it: `$0.publisher?.name == "Ace"`, `$0.books.contains { $0.year > 2000 }`.
///
/// A Sworm model keeps its relations in its `Relations` struct, not in the model itself; a
/// model whose plain value also holds its related values (a property the container neither
/// stores nor fills) pairs each such property with its relation in
/// ``ManagedObjectConvertible/relationKeyPaths``:
///
/// ```swift
/// static let relationKeyPaths: [RelationKeyPath<Novel>] = [
///     .toOne(\.publisher, \.publisher),
///     .toMany(\.reviews, \.reviews),
/// ]
/// ```
///
/// A to-one relation kept in a link table (declared without `column:`, on either side) cannot
/// be followed: its key path throws `PredicateTranslationError`. Give the relation a
/// foreign-key `column:`, or use `Query.any`.
public struct RelationKeyPath<PlainObject: ManagedObjectConvertible>: Sendable {
    let addition: any SchemaAddition

    /// The to-one relation `relation`, read by the model's property `keyPath`.
    public static func toOne<D: ManagedObjectConvertible>(_ keyPath: KeyPath<PlainObject, D?>,
                                                          _ relation: KeyPath<PlainObject.Relations, ToOneRelation<D>>) -> RelationKeyPath
    where PlainObject.Relations: RelationSet {
        let declaration = PlainObject.relations[keyPath: relation].declaration
        return RelationKeyPath(addition: ToOneAddition<PlainObject, D, D?>(keyPath: keyPath, declaration: declaration))
    }

    /// The to-one relation `relation`, read by the model's non-optional property `keyPath`.
    public static func toOne<D: ManagedObjectConvertible>(_ keyPath: KeyPath<PlainObject, D>,
                                                          _ relation: KeyPath<PlainObject.Relations, ToOneRelation<D>>) -> RelationKeyPath
    where PlainObject.Relations: RelationSet {
        let declaration = PlainObject.relations[keyPath: relation].declaration
        return RelationKeyPath(addition: ToOneAddition<PlainObject, D, D>(keyPath: keyPath, declaration: declaration))
    }

    /// The to-many relation `relation`, read by the model's collection property `keyPath`.
    public static func toMany<D: ManagedObjectConvertible, C: Sequence>(_ keyPath: KeyPath<PlainObject, C>,
                                                                        _ relation: KeyPath<PlainObject.Relations, ToManyRelation<D>>) -> RelationKeyPath
    where PlainObject.Relations: RelationSet, C.Element == D {
        let declaration = PlainObject.relations[keyPath: relation].declaration
        return RelationKeyPath(addition: ToManyAddition<PlainObject, D, C>(keyPath: keyPath, declaration: declaration))
    }

    /// The ordered to-many relation `relation`, read by the model's collection property `keyPath`.
    public static func toMany<D: ManagedObjectConvertible, C: Sequence>(_ keyPath: KeyPath<PlainObject, C>,
                                                                        _ relation: KeyPath<PlainObject.Relations, ToManyOrderedRelation<D>>) -> RelationKeyPath
    where PlainObject.Relations: RelationSet, C.Element == D {
        let declaration = PlainObject.relations[keyPath: relation].declaration
        return RelationKeyPath(addition: ToManyAddition<PlainObject, D, C>(keyPath: keyPath, declaration: declaration))
    }
}

extension ManagedObjectConvertible {
    /// No relation is read through a key path of the model.
    public static var relationKeyPaths: [RelationKeyPath<Self>] { [] }

    /// The key path → column mapping that `#Predicate` and `SortDescriptor` use for this
    /// model, built once from ``attributes`` (each attribute's key path is its column; a
    /// `Decimal` compares as a number) and ``relationKeyPaths``.
    public static var predicateSchema: PredicateSchema {
        EntityDescriptionCache.get(PredicateSchemaBox<Self>.self) { PredicateSchemaBox<Self>(PredicateSchemas.make(Self.self)) }.schema
    }
}

final class PredicateSchemaBox<PlainObject>: Sendable {
    let schema: PredicateSchema
    init(_ schema: PredicateSchema) { self.schema = schema }
}

enum PredicateSchemas {
    static func make<T: ManagedObjectConvertible>(_ type: T.Type) -> PredicateSchema {
        var schema = PredicateSchema(table: T.entityName, key: T.keyColumn)
        for attribute in T.attributes {
            // Listed one by one (not through a resolver): a sort through a to-one relation
            // finds the target's columns among the listed ones.
            if let keyPath = attribute.keyPath as? any ColumnKeyPath {
                schema = keyPath.addColumn(to: schema, attribute.name, isDecimal: attribute.columnType == .decimal)
            }
        }
        schema.missingColumnAdvice = "add Attribute(keyPath, \"column\") to \(T.entityName).attributes, "
            + "or pair a relation's key path with it in \(T.entityName).relationKeyPaths"
        for relation in T.relationKeyPaths { schema = relation.addition.add(to: schema) }
        return schema
    }
}

/// A typed key path seen through `AnyKeyPath`, so that it can be listed as a column.
protocol ColumnKeyPath {
    func addColumn(to schema: PredicateSchema, _ name: String, isDecimal: Bool) -> PredicateSchema
}

extension KeyPath: ColumnKeyPath {
    func addColumn(to schema: PredicateSchema, _ name: String, isDecimal: Bool) -> PredicateSchema {
        schema.column(self, name, isDecimal: isDecimal)
    }
}

/// What a ``RelationKeyPath`` adds to its model's schema.
protocol SchemaAddition: Sendable {
    func add(to schema: PredicateSchema) -> PredicateSchema
}

/// The target schema of a relation, built when a predicate first follows it.
struct TargetSchema<D: ManagedObjectConvertible>: Sendable {
    @Sendable func make() -> PredicateSchema { D.predicateSchema }
}

/// A to-one relation kept in a foreign-key column of the owner's table; a to-one kept anywhere
/// else is left out (its key path then throws, naming it).
struct ToOneAddition<T: ManagedObjectConvertible, D: ManagedObjectConvertible, V>: @unchecked Sendable, SchemaAddition {
    // @unchecked: the key path is immutable.
    let keyPath: KeyPath<T, V>
    let declaration: RelationDeclaration

    func add(to schema: PredicateSchema) -> PredicateSchema {
        guard case .foreignKey(let fk) = RelationStorage.of(T.self, declaration, D.self), fk.ownerHoldsColumn else {
            var schema = schema
            schema.missingColumnAdvice = (schema.missingColumnAdvice ?? "") + "; the to-one relation "
                + "\(T.entityName).\(declaration.name) is kept in a link table or in \(D.entityName)'s column, "
                + "which a predicate cannot follow: give it a column: of \(T.entityName), or use Query.any"
            return schema
        }
        return schema.toOne(keyPath, foreignKey: fk.column, targetColumn: fk.referencedKey, target: TargetSchema<D>().make)
    }
}

/// A to-many relation: the destination's foreign-key column, or the link table.
struct ToManyAddition<T: ManagedObjectConvertible, D: ManagedObjectConvertible, C: Sequence>: @unchecked Sendable, SchemaAddition {
    // @unchecked: the key path is immutable.
    let keyPath: KeyPath<T, C>
    let declaration: RelationDeclaration

    func add(to schema: PredicateSchema) -> PredicateSchema {
        let link: PredicateSchema.ToMany.Link
        switch RelationStorage.of(T.self, declaration, D.self) {
        case .foreignKey(let fk):
            // The destination's column holds this object's key (a to-many is never the side
            // that holds the column).
            link = .foreignKey(fk.column)
        case .link(let storage):
            link = .through(table: storage.table, parentColumn: storage.ownerColumn, targetColumn: storage.targetColumn)
        }
        return schema.toMany(keyPath, link, parentColumn: T.keyColumn, target: TargetSchema<D>().make)
    }
}

/// A `#Predicate` inside a ``QueryPredicate``: compiled for the table (or subquery alias) the
/// condition is placed in.
protocol FoundationCondition: Sendable {
    func compile(_ qualifier: String) throws -> SQLExpression
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
struct TypedFoundationCondition<T: ManagedObjectConvertible>: FoundationCondition {
    let predicate: Predicate<T>

    func compile(_ qualifier: String) throws -> SQLExpression {
        var schema = T.predicateSchema
        schema.table = qualifier
        return try PredicateSQL.condition(predicate, schema: schema)
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension QueryPredicate {
    /// A condition from Foundation's `#Predicate`, which composes with the key-path operators:
    /// `\Novel.year > 1900 && QueryPredicate(#Predicate<Novel> { $0.title.contains("War") })`.
    ///
    /// It means what Swift's `predicate.evaluate` means (`!=` keeps nil values, strings compare
    /// exactly, by code point), not what the flavor's own operators mean. What SQL cannot
    /// express throws `PredicateTranslationError` when the request runs, before any SQL does.
    public init<T: ManagedObjectConvertible>(_ predicate: Predicate<T>) {
        self.init(.foundation(TypedFoundationCondition(predicate: predicate)))
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension Request {
    /// The request with Foundation's `#Predicate` as its whole condition (replacing any earlier
    /// one, as every `where` does): `Novel.all.where(#Predicate<Novel> { $0.year > 1900 })`.
    /// Combine it with the key-path operators through ``QueryPredicate/init(_:)``.
    ///
    /// The predicate means what Swift's `predicate.evaluate` means; what SQL cannot express
    /// throws `PredicateTranslationError` when the request runs, before any SQL does.
    public func `where`(_ predicate: Predicate<PlainObject>) -> Request {
        self.where(QueryPredicate(predicate))
    }

    /// The request sorted by Foundation's `descriptor` after its earlier sorts:
    /// `.sort(SortDescriptor(\Novel.title))`, `.sort(SortDescriptor(\Novel.year, order: .reverse))`.
    ///
    /// As Swift's `SortDescriptor` orders: nil first in forward order, last in reverse; strings
    /// by code point (a comparator other than `.lexical` throws `PredicateTranslationError`).
    /// A key path may go through a to-one relation of ``ManagedObjectConvertible/relationKeyPaths``.
    public func sort(_ descriptor: SortDescriptor<PlainObject>) -> Request {
        var r = self
        r.sortTerms.append(SortTerm(descriptor: descriptor))
        return r
    }
}
