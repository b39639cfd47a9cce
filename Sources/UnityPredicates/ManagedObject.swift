import Foundation

/// A stored object seen through its model: read it with ``decode()`` or ``decode(_:)``,
/// change it with ``encode(_:)`` or ``encode(_:_:)``, reach its relations by name
/// (`book.author`, `author.books`).
///
/// Changes are written when the context next runs a statement (a fetch, a count, a delete)
/// and when `perform` ends; a unique attribute broken by them throws there and rolls the
/// whole `perform` back. An object belongs to the `perform` that fetched or inserted it: any
/// use of it after that `perform` ended, or with another `perform`'s context, throws
/// ``PredicatesError/wrongContext(_:)``.
@dynamicMemberLookup
public final class ManagedObject<PlainObject: ManagedObjectConvertible> {
    @usableFromInline let context: ManagedObjectContext
    /// The hidden key (`Z_PK`).
    @usableFromInline let primaryKey: Int64
    /// A fetched object's value, decoded from its row when it was fetched: the object's
    /// value while ``values`` is empty (not once the object is changed, nor when the row held
    /// a value the model cannot: ``decode()`` then throws that error).
    ///
    /// (Kept decoded rather than as the row's values: holding on to a row's values made the
    /// driver copy its row buffer for every row, and ``decode()`` is then a copy. Not an
    /// optional: freeing an object then looked up `Optional<PlainObject>`'s metadata. A
    /// constant, and no separate flag: each access to a variable of a class is checked.)
    @usableFromInline let decoded: PlainObject
    /// The attributes' values in ``EntityDescription/attributes`` order, for an inserted or
    /// changed object or a row that did not decode; empty while ``decoded`` is the value.
    @usableFromInline var values: [DatabaseValue]
    @usableFromInline var changed: Set<Int> = []

    /// An object whose attributes' values are `values`.
    @inlinable
    init(context: ManagedObjectContext, primaryKey: Int64, values: [DatabaseValue]) {
        self.context = context
        self.primaryKey = primaryKey
        self.decoded = PlainObject()
        self.values = values
    }

    /// A fetched object: its value is decoded from the row's `values` (the attributes'
    /// values, then the key). A value the model cannot hold is no fetch error: the object
    /// then keeps the row's values, and its ``decode()`` throws, as it would have.
    @inlinable
    init(context: ManagedObjectContext, primaryKey: Int64, values: UnsafeBufferPointer<DatabaseValue>,
         attributes: UnsafeBufferPointer<Attribute<PlainObject>>) {
        self.context = context
        self.primaryKey = primaryKey
        var object = PlainObject()
        do {
            try Self.decode(values, with: attributes, into: &object)
            self.values = []
        } catch {
            self.values = Array(values.prefix(attributes.count))
        }
        self.decoded = object
    }

    @inlinable
    static func decode(_ values: UnsafeBufferPointer<DatabaseValue>, with attributes: UnsafeBufferPointer<Attribute<PlainObject>>,
                       into object: inout PlainObject) throws {
        try withUnsafeMutablePointer(to: &object) { pointer in
            let base = UnsafeMutableRawPointer(pointer)
            for i in attributes.indices {
                guard i < values.count else {
                    try attributes[i].decode(&pointer.pointee, .null)
                    continue
                }
                // The value is passed borrowed from the row (no copy of it, no retain).
                if let slot = attributes[i].slot, slot.store(values[i], at: base) { continue }
                try attributes[i].decode(&pointer.pointee, values[i])
            }
        }
    }

    /// The whole value, attribute by attribute.
    @inlinable
    public func decode() throws -> PlainObject {
        if !context.isActive { throw PredicatesError.endedContext(PlainObject.entityName) }
        let values = self.values
        if values.isEmpty { return decoded }
        var object = PlainObject()
        try values.withUnsafeBufferPointer { values in
            try EntityDescription<PlainObject>.shared.attributes.withUnsafeBufferPointer { attributes in
                try Self.decode(values, with: attributes, into: &object)
            }
        }
        return object
    }

    /// One attribute's value.
    public func decode<A: SupportedAttributeType>(_ keyPath: KeyPath<PlainObject, A>) throws -> A {
        try context.checkActive(PlainObject.entityName)
        let index = try Self.index(of: keyPath)
        if values.isEmpty { return decoded[keyPath: keyPath] }
        return try A.decode(databaseValue: values[index], column: EntityDescription<PlainObject>.shared.attributes[index].name)
    }

    /// Turns a decoded object into its attributes' values, before a change.
    private func takeValues() {
        guard values.isEmpty else { return }
        let object = decoded
        values = EntityDescription<PlainObject>.shared.attributes.map { $0.encode(object) }
    }

    /// Sets every attribute from `value`; written when the context next runs a statement.
    /// - Throws: ``PredicatesError/wrongContext(_:)`` once the object's `perform` has ended.
    @discardableResult
    public func encode(_ value: PlainObject) throws -> Self {
        try context.checkActive(PlainObject.entityName)
        let attributes = EntityDescription<PlainObject>.shared.attributes
        values = attributes.map { $0.encode(value) }
        for i in attributes.indices { changed.insert(i) }
        context.markChanged(self)
        return self
    }

    /// Sets one attribute; written when the context next runs a statement.
    /// - Throws: ``PredicatesError/unknownAttribute(entity:keyPath:)`` for a key path that is
    ///   no attribute; ``PredicatesError/wrongContext(_:)`` once the object's `perform` has ended.
    @discardableResult
    public func encode<A: SupportedAttributeType>(_ keyPath: KeyPath<PlainObject, A>, _ value: A) throws -> Self {
        try context.checkActive(PlainObject.entityName)
        let index = try Self.index(of: keyPath)
        takeValues()
        values[index] = value.encodeDatabaseValue()
        changed.insert(index)
        context.markChanged(self)
        return self
    }

    static func index(of keyPath: AnyKeyPath) throws -> Int {
        let description = EntityDescription<PlainObject>.shared
        guard let attribute = description.byKeyPath[keyPath],
              let index = description.attributes.firstIndex(of: attribute) else {
            throw PredicatesError.unknownAttribute(entity: PlainObject.entityName, keyPath: "\(keyPath)")
        }
        return index
    }

    /// The UPDATE that writes the changed attributes, or nil; forgets the changes.
    func takeUpdate() -> SQLStatement? {
        guard !changed.isEmpty else { return nil }
        takeValues()
        let attributes = EntityDescription<PlainObject>.shared.attributes
        let assignments = changed.sorted().map { SQLAssignment(attributes[$0].name, .bind(values[$0])) }
        changed = []
        return .update(SQLUpdate(
            PlainObject.entityName, set: assignments,
            where: .column(PlainObject.keyColumn).equals(.bind(.integer(primaryKey)))))
    }

}
