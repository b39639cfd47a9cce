/// A stored property of a model: `@Property(id: 1) var name: String`.
///
/// Reading it reads the value at (model id, instance id, property id) from the model's
/// database, or the default when nothing is stored there; assigning it writes to the database.
/// The default is the explicit `= value`, else `Defaultable.default` (0, "", empty
/// collections, ...), else nil for an optional.
@propertyWrapper
public struct Property<Value: DatabaseValue> {

    /// The property's id, unique within the model (0 is the instance status).
    public let id: PropertyKey

    /// The value read when the database holds none.
    public let defaultValue: Value

    /// Only a model's database holds the value; use the property on a `@Model` class.
    @available(*, unavailable, message: "@Property works only inside a @Model class")
    public var wrappedValue: Value {
        get { defaultValue }
        // swiftlint:disable:next unused_setter_value
        set {}
    }

    /// A property whose default is its type's `Defaultable.default`.
    public init(id: PropertyKey) where Value: Defaultable {
        self.id = id
        self.defaultValue = Value.default
    }

    /// An optional property: nil by default.
    public init(id: PropertyKey) where Value: AnyOptional {
        self.id = id
        self.defaultValue = Value.nilValue
    }

    /// A property with an explicit default: `@Property(id: 2) var title: String = "Untitled"`.
    public init(wrappedValue: Value, id: PropertyKey) {
        self.id = id
        self.defaultValue = wrappedValue
    }

    /// A property whose id is a case of an `Int` enum.
    public init<P: RawRepresentable>(id: P) where Value: Defaultable, P.RawValue == PropertyKey {
        self.init(id: id.rawValue)
    }

    /// The value, read from and written to the enclosing model's database.
    public static subscript<Model: ModelProtocol>(
        _enclosingInstance instance: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, Property<Value>>
    ) -> Value {
        get {
            let wrapper = instance[keyPath: storageKeyPath]
            instance.observationAccess(wrapper.id)
            let stored: Value? = instance.database.get(instance.path(of: wrapper.id))
            return stored ?? wrapper.defaultValue
        }
        set {
            let wrapper = instance[keyPath: storageKeyPath]
            instance.observationMutation(wrapper.id) {
                instance.database.set(newValue, for: instance.path(of: wrapper.id))
            }
        }
    }
}

/// A reference to another model's instance: `@Reference(id: 3) var owner: Person?`.
///
/// Always optional (nil by default; `Person!` works too). Stored as the referenced instance's
/// id (`InstanceKey?`). A reference to an instance that was deleted returns it, with
/// `status == .deleted`; reading never writes.
@propertyWrapper
public struct Reference<Target: ModelProtocol> {

    /// The property's id, unique within the model.
    public let id: PropertyKey

    /// Only a model's database holds the value; use the property on a `@Model` class.
    @available(*, unavailable, message: "@Reference works only inside a @Model class")
    public var wrappedValue: Target? {
        get { nil }
        // swiftlint:disable:next unused_setter_value
        set {}
    }

    /// A reference stored under property `id`.
    public init(id: PropertyKey) {
        self.id = id
    }

    /// A reference whose id is a case of an `Int` enum.
    public init<P: RawRepresentable>(id: P) where P.RawValue == PropertyKey {
        self.id = id.rawValue
    }

    /// The referenced instance, in the enclosing model's database.
    public static subscript<Model: ModelProtocol>(
        _enclosingInstance instance: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Target?>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, Reference<Target>>
    ) -> Target? {
        get {
            let wrapper = instance[keyPath: storageKeyPath]
            instance.observationAccess(wrapper.id)
            let stored: InstanceKey?? = instance.database.get(instance.path(of: wrapper.id))
            guard let target = stored ?? nil else { return nil }
            return Target(database: instance.database, id: target)
        }
        set {
            let wrapper = instance[keyPath: storageKeyPath]
            instance.observationMutation(wrapper.id) {
                instance.database.set(newValue?.id, for: instance.path(of: wrapper.id))
            }
        }
    }
}

/// A list of references to instances of another model: `@ReferenceList(id: 4) var pets: [Pet]`.
///
/// Works with `Array`, `ContiguousArray`, `Set` and any ``SequenceInitializable``; stored as
/// the ordered list of instance ids (`[InstanceKey]`), empty by default. An element that was
/// deleted is returned with `status == .deleted`.
@propertyWrapper
public struct ReferenceList<Collection: SequenceInitializable> where Collection.Element: ModelProtocol {

    /// The property's id, unique within the model.
    public let id: PropertyKey

    /// Only a model's database holds the value; use the property on a `@Model` class.
    @available(*, unavailable, message: "@ReferenceList works only inside a @Model class")
    public var wrappedValue: Collection {
        get { Collection() }
        // swiftlint:disable:next unused_setter_value
        set {}
    }

    /// A list stored under property `id`.
    public init(id: PropertyKey) {
        self.id = id
    }

    /// A list whose id is a case of an `Int` enum.
    public init<P: RawRepresentable>(id: P) where P.RawValue == PropertyKey {
        self.id = id.rawValue
    }

    /// The empty list, the property's default.
    public var emptyValue: Collection { Collection() }

    /// The referenced instances, in the enclosing model's database.
    public static subscript<Model: ModelProtocol>(
        _enclosingInstance instance: Model,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<Model, Collection>,
        storage storageKeyPath: ReferenceWritableKeyPath<Model, ReferenceList<Collection>>
    ) -> Collection {
        get {
            let wrapper = instance[keyPath: storageKeyPath]
            instance.observationAccess(wrapper.id)
            let ids: [InstanceKey] = instance.database.get(instance.path(of: wrapper.id)) ?? []
            let database = instance.database
            return Collection(ids.lazy.map { Collection.Element(database: database, id: $0) })
        }
        set {
            let wrapper = instance[keyPath: storageKeyPath]
            instance.observationMutation(wrapper.id) {
                instance.database.set(newValue.map(\.id), for: instance.path(of: wrapper.id))
            }
        }
    }
}
