import Foundation
import Unity

/// A record type that maps its key paths to its columns, so that its queries take Foundation's
/// `#Predicate` and `SortDescriptor`: `try Hat.query.filter(#Predicate<Hat> { $0.brimSize > 10 })`.
///
/// A ``Persistable`` record maps columns by name (in `init(databaseRow:)` and
/// `valuesToPersist()`), which says nothing about its properties; conforming to this protocol
/// is where it says, once, which key path reads which column. Queries of a type that does not
/// conform have no `filter(_: Predicate<…>)`: a missing mapping is a compile error.
///
/// ```swift
/// extension Hat: PredicateMappable {
///     static let predicateSchema = PredicateSchema(Hat.self)
///         .column(\Hat.id, "id")
///         .column(\Hat.color, "color")
///         .column(\Hat.brimSize, "brim_size")
///         .toOne(\Hat.store)                        // store_id refers to a store
///         .toMany(\Hat.orderList)                   // orders.hat_id refers to the hat
/// }
/// ```
///
/// Relationships are mapped where the record has a key path for them: a to-one property whose
/// value is the related record (`var store: Store?`), a to-many property whose value is a
/// collection of them (`var orderList: [Order] { orders.all() }`). A key path the schema does
/// not list makes the translation throw `PredicateTranslationError` naming it, before any SQL
/// runs.
///
/// (The protocol refines `SendableMetatype` because a schema reaches a related type's schema
/// lazily, from whatever thread translates a predicate.)
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
public protocol PredicateMappable: Persistable, SendableMetatype {
    /// The record's key paths and the columns and relationships they read, built with
    /// `PredicateSchema(Self.self)` (its table must be ``Persistable/tableName``).
    static var predicateSchema: PredicateSchema { get }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension PredicateMappable {
    /// ``predicateSchema``, checked to describe this type's table (the query's columns and the
    /// predicate's are qualified with it).
    static func checkedPredicateSchema() throws -> PredicateSchema {
        let schema = predicateSchema
        guard schema.table == tableName else {
            throw PredicateTranslationError(
                expression: "\(Self.self).predicateSchema",
                reason: "it describes the table \"\(schema.table)\", but \(Self.self).tableName is \"\(tableName)\": build it with PredicateSchema(\(Self.self).self)")
        }
        return schema
    }
}

extension PredicateSchema {
    /// An empty schema for the table of `record` (``Persistable/tableName``, keyed by `id`), to
    /// which `column(_:_:isDecimal:)` and the relationship calls add key paths.
    public init<Record: Persistable>(_ record: Record.Type) {
        self.init(table: Record.tableName, key: "id")
        missingColumnAdvice = "add it to \(Record.self).predicateSchema"
    }

    /// Adds a to-one relationship the Persistable way: `keyPath` reads the related record (as
    /// `var store: Store? { Query<Store>().find(storeId) }` does), whose id this table's
    /// `foreignKey` column holds (by default the target type's ``Persistable/foreignKeyName()``,
    /// `store_id`).
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func toOne<Root: Persistable, Target: PredicateMappable>(_ keyPath: KeyPath<Root, Target?>,
                                                                   foreignKey: String? = nil) -> PredicateSchema {
        toOne(keyPath, foreignKey: foreignKey ?? Target.foreignKeyName(), target: { Target.predicateSchema })
    }

    /// Adds a to-one relationship whose key path reads a record that is always there.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func toOne<Root: Persistable, Target: PredicateMappable>(_ keyPath: KeyPath<Root, Target>,
                                                                   foreignKey: String? = nil) -> PredicateSchema {
        toOne(keyPath, foreignKey: foreignKey ?? Target.foreignKeyName(), target: { Target.predicateSchema })
    }

    /// Adds a to-many relationship the Persistable way, as ``Persistable/toMany(foreignKey:)``
    /// reads it: `keyPath` reads a collection of the records whose `foreignKey` column (by
    /// default the root type's ``Persistable/foreignKeyName()``, `hat_id`) holds this record's id.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func toMany<Root: Persistable, Value: Sequence>(_ keyPath: KeyPath<Root, Value>, foreignKey: String? = nil) -> PredicateSchema
    where Value.Element: PredicateMappable {
        toMany(keyPath, .foreignKey(foreignKey ?? Root.foreignKeyName()), target: { Value.Element.predicateSchema })
    }

    /// Adds a to-many relationship through the table of `link`, as
    /// ``Persistable/toMany(through:foreignKey:joinToMany:)`` reads it: `keyPath` reads a
    /// collection of the records that a row of `link` pairs with this one. The link table's
    /// `foreignKey` column (by default the root type's ``Persistable/foreignKeyName()``) holds
    /// this record's id, its `targetForeignKey` (by default the target type's) the target's.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    public func toMany<Root: Persistable, Value: Sequence, Link: Persistable>(
        _ keyPath: KeyPath<Root, Value>, through link: Link.Type, foreignKey: String? = nil, targetForeignKey: String? = nil
    ) -> PredicateSchema where Value.Element: PredicateMappable {
        toMany(keyPath, .through(table: Link.tableName, parentColumn: foreignKey ?? Root.foreignKeyName(),
                                 targetColumn: targetForeignKey ?? Value.Element.foreignKeyName()),
               target: { Value.Element.predicateSchema })
    }
}

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
extension Query where Record: PredicateMappable {
    /// ANDs the condition of a `#Predicate` with the query's other filters:
    /// `try Hat.query.filter(["color": "red"]).filter(#Predicate<Hat> { $0.brimSize > 10 })`.
    ///
    /// The condition means what `predicate.evaluate` means in Swift (`!=` keeps records whose
    /// value is nil; strings compare by code point), its values are bound, and its columns are
    /// qualified with the table name, so it composes with joins and relationship queries.
    ///
    /// - Throws: `PredicateTranslationError` naming what SQL cannot express (a key path
    ///   without a column, a call to a function of your own, a regex, a cast); nothing runs then.
    public func filter(_ predicate: Predicate<Record>) throws -> Query {
        filter(try PredicateSQL.condition(predicate, schema: try Record.checkedPredicateSchema()))
    }

    /// Adds an ordering by a `SortDescriptor`, after the orderings already added:
    /// `try Hat.query.order(SortDescriptor(\Hat.brimSize, order: .reverse))`. Nil sorts first
    /// in forward order and last in reverse, as Swift sorts; strings sort by code point.
    ///
    /// - Throws: `PredicateTranslationError` for a key path without a column, or a string
    ///   comparator other than `.lexical`.
    public func order(_ descriptor: SortDescriptor<Record>) throws -> Query {
        try order([descriptor])
    }

    /// Adds the orderings of `descriptors`, first to last, after the orderings already added.
    ///
    /// - Throws: `PredicateTranslationError`, as the one-descriptor form does.
    public func order(_ descriptors: [SortDescriptor<Record>]) throws -> Query {
        appendingOrders(try PredicateSQL.ordering(descriptors, schema: try Record.checkedPredicateSchema()))
    }
}
