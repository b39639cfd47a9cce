import Foundation

// The messages of a synchronization between two databases in one process: the same requests
// and updates as the `Data` messages of `UpdateConsumer` / `RequestProcessor`, as Swift values.
// A property's value travels as itself, of its own type, never encoded.

/// A request for the status of a model's instances.
public struct InstanceStatusRequest: Sendable {
    /// The model whose instances are asked for.
    public let model: ModelKey

    /// Only instances whose status changed after this date (on a store that keeps write
    /// dates); nil for all.
    public let timestamp: Date?

    /// A request for the instances of `model` whose status changed after `timestamp`.
    public init(model: ModelKey, timestamp: Date?) {
        self.model = model
        self.timestamp = timestamp
    }
}

/// The status of one instance, with the date it was written when the store keeps dates.
public struct InstanceStatusUpdate: Sendable, Equatable {
    /// The instance.
    public let instance: InstanceKey

    /// Its status.
    public let status: InstanceStatus

    /// When the status was written; nil from a store that keeps no dates (the receiving
    /// store then dates it when it writes it).
    public let date: Date?

    /// The status `status` of `instance`, written at `date`.
    public init(instance: InstanceKey, status: InstanceStatus, date: Date?) {
        self.instance = instance
        self.status = status
        self.date = date
    }
}

/// The status of several instances of one model: the answer to an ``InstanceStatusRequest``.
public struct InstancesUpdate: Sendable, Equatable {
    /// The model of the instances.
    public let model: ModelKey

    /// One status per instance, in instance id order.
    public let updates: [InstanceStatusUpdate]

    /// Statuses of instances of `model`.
    public init(model: ModelKey, updates: [InstanceStatusUpdate]) {
        self.model = model
        self.updates = updates
    }
}

/// One property's value in an update, as the Swift value it is (of the property's own type),
/// with the date it was written.
///
/// Property 0 (`PropertyKey.instanceId`) is the instance's status, an ``InstanceStatus``.
public struct PropertyUpdate {
    /// The property.
    public let id: PropertyKey

    /// When the value was written; nil from a store that keeps no dates.
    public let date: Date?

    /// The value, in a box of its exact type (so that `Int??.some(nil)` stays what it is).
    let stored: AnyObject

    /// The value's type, for the error when the receiving property has another.
    let valueType: Any.Type

    /// The value `value` of property `id`, written at `date`.
    public init<Value: DatabaseValue>(id: PropertyKey, value: Value, date: Date?) {
        self.id = id
        self.date = date
        self.stored = StoredValue(value)
        self.valueType = Value.self
    }

    /// The value `value` of property `id`, written at `date`.
    public init<P: RawRepresentable, Value: DatabaseValue>(id: P, value: Value, date: Date?) where P.RawValue == PropertyKey {
        self.init(id: id.rawValue, value: value, date: date)
    }

    /// The value, when it is a `Value` (exactly that type); nil otherwise.
    public func value<Value: DatabaseValue>(as type: Value.Type = Value.self) -> Value? {
        (stored as? StoredValue<Value>)?.value
    }
}

/// The status and properties of one instance: the answer to an ``InstanceUpdateRequest``.
public struct InstanceUpdate {
    /// The model of the instance.
    public let model: ModelKey

    /// The instance.
    public let instance: InstanceKey

    /// Its changed properties, the status (property 0) first when it changed.
    public let properties: [PropertyUpdate]

    /// Properties that could not be read. Always empty here: values are not encoded, so none
    /// can fail; kept for code written against StateModel.
    public let failedProperties: [PropertyKey]

    /// An update of `instance` of `model`.
    public init(model: ModelKey, instance: InstanceKey, properties: [PropertyUpdate] = [], failedProperties: [PropertyKey] = []) {
        self.model = model
        self.instance = instance
        self.properties = properties
        self.failedProperties = failedProperties
    }
}

/// A request for the properties of one instance changed after a date.
public struct InstanceUpdateRequest: Sendable {
    /// The instance.
    public let instance: InstanceKey

    /// Its model.
    public let model: ModelKey

    /// Only values written after this date (on a store that keeps dates); nil for all.
    public let timestamp: Date?

    /// A request for the values of `instance` of `model` written after `timestamp`.
    public init(instance: InstanceKey, model: ModelKey, timestamp: Date?) {
        self.instance = instance
        self.model = model
        self.timestamp = timestamp
    }
}

/// A request for one page of a model's updates.
public struct ModelUpdateRequest: Sendable {
    /// The model.
    public let model: ModelKey

    /// Only values written after this date (on a store that keeps dates); nil for all.
    public let timestamp: Date?

    /// About how many updates (statuses and values) the page may hold; a page never splits
    /// an instance.
    public let limit: Int

    /// The instance the page starts at (a previous page's
    /// ``ModelUpdate/hasMoreUpdatesAtInstance``); nil for the first.
    public let instance: InstanceKey?

    /// A request for a page of `model`'s updates after `timestamp`, of about `limit` updates,
    /// from `instance`.
    public init(model: ModelKey, timestamp: Date?, limit: Int, instance: InstanceKey?) {
        self.model = model
        self.timestamp = timestamp
        self.limit = limit
        self.instance = instance
    }
}

/// The changed status and properties of one instance in a ``ModelUpdate``.
public struct ModelInstanceUpdate {
    /// The instance.
    public let instance: InstanceKey

    /// Its changed properties, the status (property 0) first when it changed.
    public let properties: [PropertyUpdate]

    /// The updates `properties` of `instance`.
    public init(instance: InstanceKey, properties: [PropertyUpdate]) {
        self.instance = instance
        self.properties = properties
    }
}

/// One page of a model's updates: the answer to a ``ModelUpdateRequest``.
public struct ModelUpdate {
    /// The model.
    public let model: ModelKey

    /// The instances of the page, in id order.
    public let updates: [ModelInstanceUpdate]

    /// The instance the next page starts at; nil when this was the last page.
    public let hasMoreUpdatesAtInstance: InstanceKey?

    /// A page of `model`'s updates.
    public init(model: ModelKey, updates: [ModelInstanceUpdate], hasMoreUpdatesAtInstance: InstanceKey?) {
        self.model = model
        self.updates = updates
        self.hasMoreUpdatesAtInstance = hasMoreUpdatesAtInstance
    }
}
