import Foundation

/// What deleting an object does to the objects of one of its relations (Core Data's rules).
public enum DeleteRule: String, Sendable, Hashable {
    /// The related objects stay; the link to the deleted object goes (the default).
    case nullify
    /// The related objects are deleted too (and their own rules applied).
    case cascade
    /// The delete throws ``PredicatesError/deleteDenied(entity:relation:)`` while the
    /// relation holds any object.
    case deny
}

/// The shape of a relation.
public enum RelationKind: String, Sendable, Hashable {
    /// At most one related object.
    case toOne
    /// A set of related objects.
    case toMany
    /// A list of related objects in the order they were added.
    case orderedToMany
}

/// A relation as the schema sees it: its name, destination, inverse, shape and delete rule.
public struct RelationDeclaration: Sendable, Hashable {
    /// The relation's name on its own entity.
    public let name: String
    /// The destination entity's name.
    public let destinationEntity: String
    /// The name of the inverse relation on the destination, if any.
    public let inverse: String?
    /// To-one, to-many or ordered to-many.
    public let kind: RelationKind
    /// What deleting the owner does to the related objects.
    public let deleteRule: DeleteRule
    /// For a to-one relation kept in a foreign-key column of the owner's own table, that
    /// column's name; nil for a relation kept in a link table.
    public let column: String?

    init(name: String, destinationEntity: String, inverse: String?, kind: RelationKind, deleteRule: DeleteRule,
         column: String? = nil) {
        self.name = name
        self.destinationEntity = destinationEntity
        self.inverse = inverse
        self.kind = kind
        self.deleteRule = deleteRule
        self.column = column
    }
}

/// A to-one relation: `let author = ToOneRelation<Author>("author", inverse: "books")`.
public struct ToOneRelation<Destination: ManagedObjectConvertible>: Sendable {
    /// Its declaration.
    public let declaration: RelationDeclaration
    /// Declares a to-one relation named `name`, with the inverse relation's name on
    /// `Destination` (kept in step automatically) and a delete rule.
    ///
    /// - Parameters:
    ///   - name: the relation's name, as the inverse declares it.
    ///   - inverse: the inverse relation's name on `Destination`, if it has one.
    ///   - deleteRule: what deleting this object does to the related one.
    ///   - column: the foreign-key column of this model's own table that holds the
    ///     related object's key (as Core Data and most existing schemas store a to-one
    ///     relation: `album.artist_id`); nil (the default) keeps the relation in a link table.
    ///     The inverse, if any, is then read through the same column.
    public init(_ name: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify, column: String? = nil) {
        declaration = RelationDeclaration(name: name, destinationEntity: Destination.entityName, inverse: inverse,
                                          kind: .toOne, deleteRule: deleteRule, column: column)
    }
}

/// A to-many relation: `let books = ToManyRelation<Book>("books", inverse: "author")`.
public struct ToManyRelation<Destination: ManagedObjectConvertible>: Sendable {
    /// Its declaration.
    public let declaration: RelationDeclaration
    /// Declares a to-many relation named `name`, with the inverse relation's name on
    /// `Destination` and a delete rule.
    public init(_ name: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify) {
        declaration = RelationDeclaration(name: name, destinationEntity: Destination.entityName, inverse: inverse,
                                          kind: .toMany, deleteRule: deleteRule)
    }
}

/// An ordered to-many relation: its objects come back in the order they were added.
public struct ToManyOrderedRelation<Destination: ManagedObjectConvertible>: Sendable {
    /// Its declaration.
    public let declaration: RelationDeclaration
    /// Declares an ordered to-many relation named `name`, with the inverse relation's name on
    /// `Destination` and a delete rule.
    public init(_ name: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify) {
        declaration = RelationDeclaration(name: name, destinationEntity: Destination.entityName, inverse: inverse,
                                          kind: .orderedToMany, deleteRule: deleteRule)
    }
}

/// Where a relation (and its inverse: one storage for both, so they never disagree) is kept:
/// a link table, or a foreign-key column of the to-one side's table.
enum RelationStorage: Sendable, Hashable {
    case link(LinkStorage)
    case foreignKey(ForeignKeyStorage)

    /// The storage of relation `r` declared on `source` (keyed by `sourceKey`), whose
    /// destination is keyed by `destinationKey`; `inverse` is the inverse's declaration.
    init(source: String, sourceKey: String, _ r: RelationDeclaration, destinationKey: String, inverse: RelationDeclaration?) {
        if let column = r.column {
            self = .foreignKey(ForeignKeyStorage(table: source, tableKey: sourceKey, column: column,
                                                 referenced: r.destinationEntity, referencedKey: destinationKey,
                                                 ownerHoldsColumn: true))
        } else if let inverse, let column = inverse.column {
            self = .foreignKey(ForeignKeyStorage(table: r.destinationEntity, tableKey: destinationKey, column: column,
                                                 referenced: source, referencedKey: sourceKey, ownerHoldsColumn: false))
        } else {
            self = .link(LinkStorage(source: source, r))
        }
    }

    /// The storage of `r`, declared on `Owner`, to `Destination`.
    static func of<Owner: ManagedObjectConvertible, Destination: ManagedObjectConvertible>(
        _ owner: Owner.Type, _ r: RelationDeclaration, _ destination: Destination.Type) -> RelationStorage {
        let inverse = r.inverse.flatMap { name in Destination.relationDeclarations.first { $0.name == name } }
        return RelationStorage(source: Owner.entityName, sourceKey: Owner.keyColumn, r,
                               destinationKey: Destination.keyColumn, inverse: inverse)
    }
}

/// A to-one relation kept in a foreign-key column: `table.column` holds the key of a row of
/// `referenced`. Seen from the table that holds the column (`ownerHoldsColumn`), the
/// relation is to-one; seen from the referenced side, it is its to-many (or to-one) inverse.
struct ForeignKeyStorage: Sendable, Hashable {
    /// The table holding the column, and its key column.
    let table: String
    let tableKey: String
    /// The foreign-key column.
    let column: String
    /// The table the column points at, and its key column.
    let referenced: String
    let referencedKey: String
    /// True when the relation is seen from `table` (the to-one side).
    let ownerHoldsColumn: Bool
}

/// A relation kept in a link table with one row per linked pair.
///
/// The two ends are ordered by `"Entity.relation"`; end A's objects are in `a_pk`, end B's in
/// `b_pk`, and each end's ordered list position in `a_position` / `b_position`. A to-one end
/// makes its column UNIQUE. Both key columns reference their tables with ON DELETE CASCADE,
/// so deleting an object drops its links (the nullify rule) without a statement of ours.
struct LinkStorage: Sendable, Hashable {
    let table: String
    /// The column holding the owner's key, for the relation seen from its owner.
    let ownerColumn: String
    /// The column holding the related object's key.
    let targetColumn: String
    /// The owner's list position column.
    let positionColumn: String
    /// The other end's list position column.
    let targetPositionColumn: String
    /// Entity of end A and B (for the schema).
    let aEntity: String
    let bEntity: String

    init(source: String, _ r: RelationDeclaration) {
        let mine = "\(source).\(r.name)"
        let other = "\(r.destinationEntity).\(r.inverse ?? "")"
        let mineIsA = mine <= other
        if let inverse = r.inverse {
            let (a, b) = mineIsA ? ((source, r.name), (r.destinationEntity, inverse)) : ((r.destinationEntity, inverse), (source, r.name))
            table = "\(a.0)_\(a.1)_\(b.0)_\(b.1)"
        } else {
            table = "\(source)_\(r.name)"
        }
        let effectiveMineIsA = r.inverse == nil ? true : mineIsA
        ownerColumn = effectiveMineIsA ? "a_pk" : "b_pk"
        targetColumn = effectiveMineIsA ? "b_pk" : "a_pk"
        positionColumn = effectiveMineIsA ? "a_position" : "b_position"
        targetPositionColumn = effectiveMineIsA ? "b_position" : "a_position"
        aEntity = effectiveMineIsA ? source : r.destinationEntity
        bEntity = effectiveMineIsA ? r.destinationEntity : source
    }
}
