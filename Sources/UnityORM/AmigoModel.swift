@_exported import Unity
import Foundation

/// The base class of every mapped model (Amigo's `AmigoModel`).
///
/// Linux has no Objective-C runtime, so a model cannot be read and written by property name
/// through key-value coding. Instead each model lists its properties once, by name, in its
/// ``ormFields`` accessor table. The `@ORMFields` macro (module `UnityORMFields`) writes it;
/// by hand it reads:
///
/// ```swift
/// final class Dog: AmigoModel {
///     var id = 0
///     var label = "New Dog"
///     override class var ormFields: ORMFieldTable {
///         ORMFieldTable(Dog.self, .property("id", \.id) { $0.id = $1 }, .property("label", \.label) { $0.label = $1 })
///     }
/// }
/// ```
///
/// The table is read once, when ``ORMModel`` maps the class (no `Mirror`); rows are then read
/// into new instances made with ``init()``.
open class AmigoModel {
    /// Creates an empty model (the ORM creates instances this way when it reads rows).
    public required init() {}

    /// The by-name accessor table: every mapped property, by its column name and key path.
    open class var ormFields: ORMFieldTable { ORMFieldTable() }

    /// The foreign-key values a fetch read for to-one properties it did not load, by the
    /// property's lower-cased name: `add` writes them back while the property stays nil.
    final var keptForeignKeys: [String: DatabaseValue] = [:]

    /// The foreign-key value a fetch read for the to-one property `name` without loading the
    /// related object (no `selectRelated` for it), or nil when there is none (the property was
    /// loaded or assigned, the object was never fetched, or the column held NULL).
    ///
    /// While the property is nil, ``AmigoSession/add(_:upsert:)-(AmigoModel...,_)`` writes this
    /// value back unchanged, so an update never erases a reference it did not load.
    public final func storedForeignKey(_ name: String) -> DatabaseValue? {
        keptForeignKeys[name.lowercased()]
    }

    /// Sets the to-one property `name` to nil and forgets the foreign-key value a fetch kept for
    /// it, so that the next `add` writes NULL. Setting an unloaded to-one property to nil alone
    /// keeps the stored reference; this is the explicit way to clear it.
    ///
    /// - Throws: ``ORMError/unknownRelationship(model:name:)`` when the model's ``ormFields``
    ///   has no to-one property named `name`.
    public final func clearRelationship(_ name: String) throws {
        guard case .toOne(_, let set, _)? = Swift.type(of: self).ormFields.entries[name.lowercased()] else {
            throw ORMError.unknownRelationship(model: String(describing: Swift.type(of: self)), name: name)
        }
        _ = set(self, nil)
        keptForeignKeys[name.lowercased()] = nil
    }
}

/// How a mapped property is read and written, decided from its key path's types once.
@usableFromInline
enum FieldAccessor {
    /// A value property: read as a database value, written from one (false when the value
    /// does not convert to the property's type).
    case value(get: (AmigoModel) -> DatabaseValue, set: (AmigoModel, DatabaseValue) -> Bool, valueType: Any.Type)
    /// A to-one property holding a related model.
    case toOne(get: (AmigoModel) -> AmigoModel?, set: (AmigoModel, AmigoModel?) -> Bool, relatedType: AmigoModel.Type)
}

/// One entry of a model's accessor table; build it with `property(_:_:)`.
public struct ORMProperty<Model: AmigoModel> {
    let name: String
    /// How it is read and written; nil for a property of a type the ORM cannot store.
    let accessor: FieldAccessor?
    /// The type of a property the ORM cannot store, for the mapping error that names it.
    let unstorableType: Any.Type?
    /// The property's key path, for `#Predicate` and `SortDescriptor`.
    let predicateKey: PredicateKeyPath?

    @usableFromInline
    init(name: String, accessor: FieldAccessor, predicateKey: PredicateKeyPath? = nil) {
        self.name = name
        self.accessor = accessor
        self.unstorableType = nil
        self.predicateKey = predicateKey
    }

    @usableFromInline
    init(name: String, unstorableType: Any.Type, predicateKey: PredicateKeyPath? = nil) {
        self.name = name
        self.accessor = nil
        self.unstorableType = unstorableType
        self.predicateKey = predicateKey
    }

    /// A property holding a non-optional value, written through its key path (slower than
    /// the setter form `property(_:_:set:)` that `@ORMFields` writes).
    @inlinable
    public static func property<V: DatabaseValueConvertible>(_ name: String, _ keyPath: ReferenceWritableKeyPath<Model, V>) -> ORMProperty {
        property(name, keyPath) { $0[keyPath: keyPath] = $1 }
    }

    /// A property holding an optional value (nil is NULL), written through its key path.
    @inlinable
    public static func property<V: DatabaseValueConvertible>(_ name: String, _ keyPath: ReferenceWritableKeyPath<Model, V?>) -> ORMProperty {
        property(name, keyPath) { $0[keyPath: keyPath] = $1 }
    }

    /// A to-one property holding a related model (a foreign key), written through its key path.
    @inlinable
    public static func property<R: AmigoModel>(_ name: String, _ keyPath: ReferenceWritableKeyPath<Model, R?>) -> ORMProperty {
        property(name, keyPath) { $0[keyPath: keyPath] = $1 }
    }
}

extension ORMProperty {
    /// A property holding a non-optional value, written by `set`: a direct store, where a
    /// write through a key path goes through the Swift runtime (about a third of the time of
    /// reading a row into a model). `@ORMFields` writes these for you;
    /// `.property("id", \.id) { $0.id = $1 }` is the same by hand. The key path reads it.
    @inlinable
    public static func property<V: DatabaseValueConvertible>(_ name: String, _ keyPath: KeyPath<Model, V>,
                                                             set: @escaping (Model, V) -> Void) -> ORMProperty {
        ORMProperty(name: name, accessor: .value(
            get: { unsafeDowncast($0, to: Model.self)[keyPath: keyPath].databaseValue },
            set: { model, value in
                guard let v = V.fromDatabaseValue(value) else { return false }
                set(unsafeDowncast(model, to: Model.self), v)
                return true
            },
            valueType: V.self), predicateKey: .value(keyPath))
    }

    /// A property holding an optional value (nil is NULL), written by `set` (see
    /// `property(_:_:set:)`).
    @inlinable
    public static func property<V: DatabaseValueConvertible>(_ name: String, _ keyPath: KeyPath<Model, V?>,
                                                             set: @escaping (Model, V?) -> Void) -> ORMProperty {
        ORMProperty(name: name, accessor: .value(
            get: { unsafeDowncast($0, to: Model.self)[keyPath: keyPath]?.databaseValue ?? .null },
            set: { model, value in
                if value.isNull {
                    set(unsafeDowncast(model, to: Model.self), nil)
                    return true
                }
                guard let v = V.fromDatabaseValue(value) else { return false }
                set(unsafeDowncast(model, to: Model.self), v)
                return true
            },
            valueType: V.self), predicateKey: .value(keyPath))
    }

    /// A to-one property holding a related model, written by `set`.
    @inlinable
    public static func property<R: AmigoModel>(_ name: String, _ keyPath: KeyPath<Model, R?>,
                                               set: @escaping (Model, R?) -> Void) -> ORMProperty {
        ORMProperty(name: name, accessor: .toOne(
            get: { unsafeDowncast($0, to: Model.self)[keyPath: keyPath] },
            set: { model, related in
                if related == nil {
                    set(unsafeDowncast(model, to: Model.self), nil)
                    return true
                }
                guard let r = related as? R else { return false }
                set(unsafeDowncast(model, to: Model.self), r)
                return true
            },
            relatedType: R.self), predicateKey: .toOne(keyPath))
    }
}

extension ORMProperty {
    /// A property of a type that is neither a database value nor a related model (an array, a
    /// closure, …): `@ORMFields` lists every stored property, and this one maps to no column.
    /// A `Column` that names it is a mapping error naming its type.
    @inlinable
    @_disfavoredOverload
    public static func property<V>(_ name: String, _ keyPath: KeyPath<Model, V>,
                                   set: @escaping (Model, V) -> Void) -> ORMProperty {
        ORMProperty(name: name, unstorableType: V.self)
    }

    /// A property holding the related models of a ``OneToMany`` or ``ManyToMany`` relationship
    /// of the same name (`var people: [Person] = []`). It maps to no column (the ORM does not
    /// fill it); its key path lets `#Predicate` follow the relationship
    /// (`$0.people.contains { $0.label == "Foo" }`, `$0.people.isEmpty`, `$0.people.count`).
    @inlinable
    public static func property<R: AmigoModel>(_ name: String, _ keyPath: KeyPath<Model, [R]>,
                                               set: @escaping (Model, [R]) -> Void) -> ORMProperty {
        ORMProperty(name: name, unstorableType: [R].self, predicateKey: .toMany(keyPath))
    }
}

/// A property's key path, and how it enters its model's `PredicateSchema`: typed where the
/// property is declared, so the schema is built from key paths, never from their descriptions.
@usableFromInline
struct PredicateKeyPath {
    /// What the mapping makes of the property.
    enum Role {
        case column(name: String, isDecimal: Bool)
        case toOne(foreignKey: String, targetColumn: String, target: @Sendable () -> PredicateSchema)
        case toMany(PredicateSchema.ToMany.Link, parentColumn: String?, target: @Sendable () -> PredicateSchema)
    }

    /// Adds the property to a schema in a role, or nil when its type cannot play that role.
    let add: (PredicateSchema, Role) -> PredicateSchema?

    init(add: @escaping (PredicateSchema, Role) -> PredicateSchema?) {
        self.add = add
    }

    /// A value property: a column.
    @usableFromInline
    static func value<Root, Value>(_ keyPath: KeyPath<Root, Value>) -> PredicateKeyPath {
        PredicateKeyPath { schema, role in
            guard case .column(let name, let isDecimal) = role else { return nil }
            return schema.column(keyPath, name, isDecimal: isDecimal)
        }
    }

    /// A related model: a to-one relationship, read as `\Pet.owner` in predicates (`$0.owner?.name`)
    /// and as `\Pet.owner!` in sort descriptors (`SortDescriptor(\Pet.owner!.name)`): a key path
    /// through an optional chain cannot be rebuilt from its parts, one through a force unwrap can.
    @usableFromInline
    static func toOne<Root, Related>(_ keyPath: KeyPath<Root, Related?>) -> PredicateKeyPath {
        PredicateKeyPath { schema, role in
            guard case .toOne(let foreignKey, let targetColumn, let target) = role else { return nil }
            return schema.toOne(keyPath, foreignKey: foreignKey, targetColumn: targetColumn, target: target)
                .toOne(keyPath.appending(path: \Related?.!), foreignKey: foreignKey, targetColumn: targetColumn, target: target)
        }
    }

    /// An array of related models: a to-many relationship.
    @usableFromInline
    static func toMany<Root, Value: Sequence>(_ keyPath: KeyPath<Root, Value>) -> PredicateKeyPath {
        PredicateKeyPath { schema, role in
            guard case .toMany(let link, let parentColumn, let target) = role else { return nil }
            return schema.toMany(keyPath, link, parentColumn: parentColumn, target: target)
        }
    }
}

/// A model's by-name accessor table (see ``AmigoModel/ormFields``).
public struct ORMFieldTable {
    let modelType: AmigoModel.Type?
    let entries: [String: FieldAccessor]
    /// Properties of types the ORM cannot store, by lower-cased name: their type's name.
    let unstorable: [String: String]
    /// The key paths of the properties, by lower-cased name.
    let predicateKeys: [String: PredicateKeyPath]

    /// An empty table (a model that maps no properties).
    public init() {
        modelType = nil
        entries = [:]
        unstorable = [:]
        predicateKeys = [:]
    }

    /// The table of `model`'s properties.
    public init<M: AmigoModel>(_ model: M.Type, _ properties: ORMProperty<M>...) {
        modelType = model
        var entries: [String: FieldAccessor] = [:]
        var unstorable: [String: String] = [:]
        var predicateKeys: [String: PredicateKeyPath] = [:]
        for p in properties {
            if let accessor = p.accessor {
                entries[p.name.lowercased()] = accessor
            } else if let type = p.unstorableType {
                unstorable[p.name.lowercased()] = String(describing: type)
            }
            if let key = p.predicateKey { predicateKeys[p.name.lowercased()] = key }
        }
        self.entries = entries
        self.unstorable = unstorable
        self.predicateKeys = predicateKeys
    }
}
