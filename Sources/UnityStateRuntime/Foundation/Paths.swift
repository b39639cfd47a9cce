/// The identifier of a model class, chosen by the user in `@Model(id:)`; the first part of a ``Path``.
public typealias ModelKey = Int

/// The identifier of one instance of a model; the second part of a ``Path``.
public typealias InstanceKey = Int

/// The identifier of a property of a model, chosen in `@Property(id:)`; the third part of a ``Path``.
public typealias PropertyKey = Int

extension PropertyKey {
    /// The property id under which an instance's ``InstanceStatus`` is stored.
    ///
    /// It is zero, as in StateModel: a model must not declare a property with id 0 (`@Model`
    /// refuses it at compile time).
    public static var instanceId: Self { 0 }
}

/// The address of one stored value: (model id, instance id, property id).
///
/// Everything the state flavor stores is stored under a path; a database only needs to get and
/// set values by path and to list the instances of a model.
public struct Path: Hashable, Sendable {

    /// The id of the model class.
    public let model: ModelKey

    /// The id of the instance.
    public let instance: InstanceKey

    /// The id of the property (`PropertyKey.instanceId` for the instance's status).
    public let property: PropertyKey

    /// Creates the path of one property of one instance.
    public init(model: ModelKey, instance: InstanceKey, property: PropertyKey) {
        self.model = model
        self.instance = instance
        self.property = property
    }

    /// Creates the path of one property of one instance from a property-id enum case.
    public init<P: RawRepresentable>(model: ModelKey, instance: InstanceKey, property: P)
    where P.RawValue == PropertyKey {
        self.init(model: model, instance: instance, property: property.rawValue)
    }

    /// Creates the path under which the status of an instance is stored.
    public init(model: ModelKey, instance: InstanceKey) {
        self.init(model: model, instance: instance, property: PropertyKey.instanceId)
    }

    /// Whether this path holds an instance's status rather than a property value.
    public var isInstanceStatus: Bool { property == PropertyKey.instanceId }
}

extension Path: Comparable {
    /// Paths order by model, then instance, then property.
    public static func < (lhs: Path, rhs: Path) -> Bool {
        (lhs.model, lhs.instance, lhs.property) < (rhs.model, rhs.instance, rhs.property)
    }
}

extension Path: CustomStringConvertible {
    /// `model.instance.property`, as StateModel prints a path.
    public var description: String { "\(model).\(instance).\(property)" }
}

extension Path: Codable {
    // Encoded as a three-element array, as StateModel does, so messages stay small.
    /// Encodes the path as three numbers: model, instance, property.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(model)
        try container.encode(instance)
        try container.encode(property)
    }

    /// Decodes a path written by ``encode(to:)``.
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        model = try container.decode(ModelKey.self)
        instance = try container.decode(InstanceKey.self)
        property = try container.decode(PropertyKey.self)
    }
}
