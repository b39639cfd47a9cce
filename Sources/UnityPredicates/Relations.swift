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
}

/// A to-one relation: `let author = ToOneRelation<Author>("author", inverse: "books")`.
public struct ToOneRelation<Destination: ManagedObjectConvertible>: Sendable {
    /// Its declaration.
    public let declaration: RelationDeclaration
    /// Declares a to-one relation named `name`, with the inverse relation's name on
    /// `Destination` (kept in step automatically) and a delete rule.
    public init(_ name: String, inverse: String? = nil, deleteRule: DeleteRule = .nullify) {
        declaration = RelationDeclaration(name: name, destinationEntity: Destination.entityName, inverse: inverse,
                                          kind: .toOne, deleteRule: deleteRule)
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
/// a link table with one row per linked pair.
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
