import Foundation

// Relations are reached through the model's `Relations` type, which must be a `RelationSet`:
// a `Relations` struct that is not one cannot reach its relations here (a compile error), and
// the container refuses it at its first call, naming the struct.
extension ManagedObject where PlainObject.Relations: RelationSet {
    /// The object a to-one relation holds, or nil.
    /// - Throws: ``PredicatesError/wrongContext(_:)`` once the object's `perform` has ended.
    public subscript<D: ManagedObjectConvertible>(dynamicMember keyPath: KeyPath<PlainObject.Relations, ToOneRelation<D>>) -> ManagedObject<D>? {
        get throws {
            try context.checkActive(PlainObject.entityName)
            let declaration = PlainObject.relations[keyPath: keyPath].declaration
            return try context.related(D.self, RelationStorage.of(PlainObject.self, declaration, D.self),
                                       owner: primaryKey, ordered: false).first
        }
    }

    /// Sets (or, with nil, clears) a to-one relation to `object`; the inverse follows.
    /// - Throws: ``PredicatesError/wrongContext(_:)`` when either object is not of a running
    ///   `perform`'s context, or they belong to different ones.
    public func set<D: ManagedObjectConvertible>(_ keyPath: KeyPath<PlainObject.Relations, ToOneRelation<D>>, _ object: ManagedObject<D>?) throws {
        try context.checkActive(PlainObject.entityName)
        if let object { try context.checkOwns(object) }
        let declaration = PlainObject.relations[keyPath: keyPath].declaration
        try context.link(source: PlainObject.entityName, declaration, RelationStorage.of(PlainObject.self, declaration, D.self),
                         owner: primaryKey, target: object?.primaryKey, replacing: true)
    }

    /// Sworm's value setter: writes `value` into the object the to-one relation holds
    /// (inserting one, and linking it, when it holds none); nil deletes the related object,
    /// as ``delete(_:context:)`` does.
    /// - Parameters:
    ///   - keyPath: the to-one relation.
    ///   - value: the related object's new value, or nil.
    ///   - context: the running `perform`'s context (the object's own).
    @discardableResult
    public func set<D: ManagedObjectConvertible>(_ keyPath: KeyPath<PlainObject.Relations, ToOneRelation<D>>, value: D?,
                                                 context: ManagedObjectContext) throws -> Self {
        try context.checkOwns(self)
        guard let value else { return try delete(keyPath, context: context) }
        if let object = try self[dynamicMember: keyPath] {
            try object.encode(value)
        } else {
            try set(keyPath, try context.insert(value))
        }
        return self
    }

    /// Sworm's to-one delete: unlinks the object the relation holds and deletes it (its own
    /// delete rules applied); nothing when the relation is empty.
    /// - Parameters:
    ///   - keyPath: the to-one relation.
    ///   - context: the running `perform`'s context (the object's own).
    @discardableResult
    public func delete<D: ManagedObjectConvertible>(_ keyPath: KeyPath<PlainObject.Relations, ToOneRelation<D>>,
                                                    context: ManagedObjectContext) throws -> Self {
        try context.checkOwns(self)
        if let object = try self[dynamicMember: keyPath] {
            try set(keyPath, nil)
            try context.delete(object)
        }
        return self
    }

    /// A to-many relation's set, to read, iterate and change.
    public subscript<D: ManagedObjectConvertible>(dynamicMember keyPath: KeyPath<PlainObject.Relations, ToManyRelation<D>>) -> ManagedObjectSet<D> {
        let declaration = PlainObject.relations[keyPath: keyPath].declaration
        let set = ManagedObjectSet<D>(RelationHandle(
            context: context, source: PlainObject.entityName, declaration: declaration,
            storage: RelationStorage.of(PlainObject.self, declaration, D.self), owner: primaryKey, ownerEntity: PlainObject.entityName))
        context.track(set)
        return set
    }

    /// An ordered to-many relation's list, to read, iterate and change.
    public subscript<D: ManagedObjectConvertible>(dynamicMember keyPath: KeyPath<PlainObject.Relations, ToManyOrderedRelation<D>>) -> ManagedObjectOrderedSet<D> {
        let declaration = PlainObject.relations[keyPath: keyPath].declaration
        let set = ManagedObjectOrderedSet<D>(RelationHandle(
            context: context, source: PlainObject.entityName, declaration: declaration,
            storage: RelationStorage.of(PlainObject.self, declaration, D.self), owner: primaryKey, ownerEntity: PlainObject.entityName))
        context.track(set)
        return set
    }
}

/// What both kinds of to-many set share.
struct RelationHandle<Destination: ManagedObjectConvertible> {
    let context: ManagedObjectContext
    let source: String
    let declaration: RelationDeclaration
    let storage: RelationStorage
    let owner: Int64
    let ownerEntity: String

    func objects(ordered: Bool) throws -> [ManagedObject<Destination>] {
        try context.checkActive(ownerEntity)
        return try context.related(Destination.self, storage, owner: owner, ordered: ordered)
    }

    func count() throws -> Int {
        try context.checkActive(ownerEntity)
        try context.flush()
        return try context.relatedCount(storage, owner: owner)
    }

    func add(_ object: ManagedObject<Destination>) throws {
        try context.checkActive(ownerEntity)
        try context.checkOwns(object)
        try context.link(source: source, declaration, storage, owner: owner, target: object.primaryKey, replacing: false)
    }

    func remove(_ object: ManagedObject<Destination>) throws {
        try context.checkActive(ownerEntity)
        try context.checkOwns(object)
        try context.unlink(storage, owner: owner, target: object.primaryKey)
    }

    func delete(_ object: ManagedObject<Destination>, context given: ManagedObjectContext) throws {
        guard given === context else {
            throw PredicatesError.wrongContext("this \(ownerEntity) object's relation belongs to another perform's context")
        }
        try remove(object)
        try context.delete(object)
    }

    /// The objects to iterate: read now while the `perform` runs (an error is kept and thrown
    /// by the context's next statement, or by the end of the `perform`, which then fails),
    /// else the members read when the `perform` ended.
    func iterationObjects(ordered: Bool, snapshot: [ManagedObject<Destination>]?) -> [ManagedObject<Destination>] {
        guard context.isActive else { return snapshot ?? [] }
        do {
            return try objects(ordered: ordered)
        } catch {
            context.pendingError = context.pendingError ?? error
            return []
        }
    }
}

/// A relation set that reads its members when its `perform` is about to end.
protocol RelationSnapshot: AnyObject {
    func takeSnapshot() throws
}

/// A weak reference to a relation set.
struct WeakSet {
    weak var set: (any RelationSnapshot)?
    init(_ set: any RelationSnapshot) { self.set = set }
}

/// Iterates the objects of a to-many relation.
public struct ManagedObjectSetIterator<PlainObject: ManagedObjectConvertible>: IteratorProtocol {
    var base: IndexingIterator<[ManagedObject<PlainObject>]>

    /// The next related object, or nil.
    public mutating func next() -> ManagedObject<PlainObject>? { base.next() }
}

/// The objects of a to-many relation. Adding or removing updates the inverse as well.
///
/// A `Sequence` (`for book in author.books`): iterating reads the relation's members at that
/// moment, in key order. Iterated after its `perform` ended, it yields the members it held
/// when that `perform` ended, and any use of them throws ``PredicatesError/wrongContext(_:)``.
/// A read error while iterating (which cannot throw) is thrown by the context's next
/// statement, or by the end of the `perform`, which then rolls back.
public final class ManagedObjectSet<Destination: ManagedObjectConvertible>: Sequence, RelationSnapshot {
    let handle: RelationHandle<Destination>
    private var snapshot: [ManagedObject<Destination>]?

    init(_ handle: RelationHandle<Destination>) { self.handle = handle }

    func takeSnapshot() throws { snapshot = try handle.objects(ordered: false) }

    /// The related objects (in key order).
    public func objects() throws -> [ManagedObject<Destination>] { try handle.objects(ordered: false) }
    /// How many objects the relation holds.
    public func count() throws -> Int { try handle.count() }
    /// Adds `object` (no-op when present). When the inverse is to-one, `object` leaves its
    /// previous owner.
    public func add(_ object: ManagedObject<Destination>) throws { try handle.add(object) }
    /// Removes `object` (no-op when absent).
    public func remove(_ object: ManagedObject<Destination>) throws { try handle.remove(object) }
    /// Sworm's `delete`: removes `object` from the relation and deletes it (its delete rules
    /// applied).
    /// - Parameters:
    ///   - object: the related object to delete.
    ///   - context: the running `perform`'s context (the objects' own).
    public func delete(_ object: ManagedObject<Destination>, context: ManagedObjectContext) throws {
        try handle.delete(object, context: context)
    }
    /// Iterates the related objects.
    public func makeIterator() -> ManagedObjectSetIterator<Destination> {
        ManagedObjectSetIterator(base: handle.iterationObjects(ordered: false, snapshot: snapshot).makeIterator())
    }
}

/// The objects of an ordered to-many relation, in the order they were added; a `Sequence`
/// in that order, as ``ManagedObjectSet`` is.
public final class ManagedObjectOrderedSet<Destination: ManagedObjectConvertible>: Sequence, RelationSnapshot {
    let handle: RelationHandle<Destination>
    private var snapshot: [ManagedObject<Destination>]?

    init(_ handle: RelationHandle<Destination>) { self.handle = handle }

    func takeSnapshot() throws { snapshot = try handle.objects(ordered: true) }

    /// The related objects in order.
    public func objects() throws -> [ManagedObject<Destination>] { try handle.objects(ordered: true) }
    /// How many objects the relation holds.
    public func count() throws -> Int { try handle.count() }
    /// Appends `object` (no-op when present).
    public func add(_ object: ManagedObject<Destination>) throws { try handle.add(object) }
    /// Removes `object`; the others keep their order.
    public func remove(_ object: ManagedObject<Destination>) throws { try handle.remove(object) }
    /// Sworm's `delete`: removes `object` from the list and deletes it (its delete rules
    /// applied).
    /// - Parameters:
    ///   - object: the related object to delete.
    ///   - context: the running `perform`'s context (the objects' own).
    public func delete(_ object: ManagedObject<Destination>, context: ManagedObjectContext) throws {
        try handle.delete(object, context: context)
    }
    /// Iterates the related objects in order.
    public func makeIterator() -> ManagedObjectSetIterator<Destination> {
        ManagedObjectSetIterator(base: handle.iterationObjects(ordered: true, snapshot: snapshot).makeIterator())
    }
}
