import Foundation

/// Reads every stored property of one instance as the Swift value it is, with its write date
/// when the database keeps dates.
private struct TypedPropertyReader: PropertyVisitor {
    let database: any Database
    let model: ModelKey
    let instance: InstanceKey
    let after: Date?
    let timestamped: (any TimestampedDatabase)?
    var values: [PropertyUpdate] = []

    mutating func visit<Value: DatabaseValue>(property: PropertyKey, as type: Value.Type) {
        let path = Path(model: model, instance: instance, property: property)
        if let timestamped {
            guard let found: Timestamped<Value> = timestamped.get(path) else { return }
            if let after, found.date <= after { return }
            values.append(PropertyUpdate(id: property, value: found.value, date: found.date))
        } else {
            guard let found: Value = database.get(path) else { return }
            values.append(PropertyUpdate(id: property, value: found, date: nil))
        }
    }
}

/// Writes the values of one instance update, each of its property's own type.
private struct TypedPropertyWriter: PropertyVisitor {
    let database: any Database
    let model: ModelKey
    let instance: InstanceKey
    let values: [PropertyKey: PropertyUpdate]
    let timestamped: (any TimestampedDatabase)?
    var failure: StateError?

    mutating func visit<Value: DatabaseValue>(property: PropertyKey, as type: Value.Type) {
        guard failure == nil, let update = values[property] else { return }
        let path = Path(model: model, instance: instance, property: property)
        guard let value: Value = update.value() else {
            failure = .propertyDecodingFailed(path: path, error: "the update holds a \(update.valueType), the property is a \(Value.self)")
            return
        }
        if let timestamped {
            timestamped.set(value, for: path, at: update.date)
        } else {
            database.set(value, for: path)
        }
    }
}

/// Answers requests from a database in the same process: StateModel's
/// `UnencodedRequestProcessor`, the server side of ``UnencodedUpdateConsumer``.
///
/// It reads what ``RequestProcessor`` reads, and answers with Swift values instead of `Data`:
/// each property's value is the value itself, of its own type, so nothing is encoded or decoded
/// on the way.
public struct UnencodedRequestProcessor: ModelMapping {
    /// The database answered from.
    public let database: any Database

    let modelMap: ModelMap

    private let encoder: any GenericEncoder
    private let decoder: any GenericDecoder

    /// A processor for `database`.
    /// - Parameters:
    ///   - database: The database answered from.
    ///   - encoder: Encodes the arguments of a command given to ``process(command:)``.
    ///   - decoder: Decodes them as the command's parameter types.
    ///   - modelMap: The model type of each model id.
    public init(database: any Database, encoder: any GenericEncoder = JSONEncoder(), decoder: any GenericDecoder = JSONDecoder(),
                modelMap: @escaping ModelMap) {
        self.database = database
        self.encoder = encoder
        self.decoder = decoder
        self.modelMap = modelMap
    }

    // MARK: Instance statuses

    /// The statuses `request` asks for.
    /// - Throws: ``StateError/unknownModel(id:)`` for a model not in the model map.
    public func instanceStatusUpdates(for request: InstanceStatusRequest) throws(StateError) -> InstancesUpdate {
        try instanceStatusUpdates(for: request.model, after: request.timestamp)
    }

    /// The status of `model`'s instances changed after `timestamp` (every instance on a store
    /// without dates, or when `timestamp` is nil).
    public func instanceStatusUpdates<T: ModelProtocol>(for model: T.Type, after timestamp: Date?) throws(StateError) -> InstancesUpdate {
        try instanceStatusUpdates(for: T.modelId, after: timestamp)
    }

    /// The status of the instances of the model `model` changed after `timestamp`.
    /// - Throws: ``StateError/unknownModel(id:)`` for a model not in the model map.
    public func instanceStatusUpdates(for model: ModelKey, after timestamp: Date?) throws(StateError) -> InstancesUpdate {
        _ = try modelType(model)
        let entries = syncStatuses(of: database, model: model, after: timestamp).sorted { $0.instance < $1.instance }
        return InstancesUpdate(model: model, updates: entries.map {
            InstanceStatusUpdate(instance: $0.instance, status: $0.status, date: $0.date)
        })
    }

    // MARK: Pages of a model's updates

    /// The page of updates `request` asks for.
    public func allUpdates(for request: ModelUpdateRequest) throws(StateError) -> ModelUpdate {
        try allUpdates(for: request.model, after: request.timestamp, limit: request.limit, startingAt: request.instance)
    }

    /// One page of `model`'s updates after `timestamp`.
    public func allUpdates<T: ModelProtocol>(for model: T.Type, after timestamp: Date?, limit: Int,
                                             startingAt instance: InstanceKey? = nil) throws(StateError) -> ModelUpdate {
        try allUpdates(for: T.modelId, after: timestamp, limit: limit, startingAt: instance)
    }

    /// One page of the updates of the model `model` after `timestamp`: whole instances, in id
    /// order, from `instance`, until the page holds `limit` updates (statuses and values; an
    /// instance with more goes whole on a page of its own).
    /// - Throws: ``StateError/unknownModel(id:)`` for a model not in the model map,
    ///   ``StateError/store(_:)`` when a SQL store cannot read.
    public func allUpdates(for model: ModelKey, after timestamp: Date?, limit: Int,
                           startingAt instance: InstanceKey? = nil) throws(StateError) -> ModelUpdate {
        let type = try modelType(model)
        let (page, next) = try syncPage(of: database, model: model, limit: limit, startingAt: instance,
                                        count: { (update: ModelInstanceUpdate) in update.properties.count }) { id throws(StateError) in
            read(type, instance: id, after: timestamp).map { ModelInstanceUpdate(instance: id, properties: $0) }
        }
        return ModelUpdate(model: model, updates: page, hasMoreUpdatesAtInstance: next)
    }

    // MARK: One instance

    /// A request for the properties of `instance` of `model` changed after `timestamp`.
    public func instanceUpdateRequest(for instance: InstanceKey, of model: ModelKey, after timestamp: Date?) -> InstanceUpdateRequest {
        InstanceUpdateRequest(instance: instance, model: model, timestamp: timestamp)
    }

    /// The update `request` asks for.
    public func process(instanceUpdateRequest request: InstanceUpdateRequest) throws(StateError) -> InstanceUpdate {
        try updates(for: request.instance, of: request.model, after: request.timestamp)
    }

    /// The status and properties of `instance` changed after `timestamp` (all of them on a
    /// store without dates, or when `timestamp` is nil).
    public func updates<T: ModelProtocol>(for instance: InstanceKey, of model: T.Type, after timestamp: Date?) throws(StateError) -> InstanceUpdate {
        try updates(for: instance, of: T.modelId, after: timestamp)
    }

    /// The status and properties of `instance` of the model `model` changed after `timestamp`.
    /// - Throws: ``StateError/unknownModel(id:)`` for a model not in the model map,
    ///   ``StateError/missingInstance(model:id:)`` when the instance does not exist.
    public func updates(for instance: InstanceKey, of model: ModelKey, after timestamp: Date?) throws(StateError) -> InstanceUpdate {
        let type = try modelType(model)
        guard let properties = read(type, instance: instance, after: timestamp) else {
            throw .missingInstance(model: model, id: instance)
        }
        return InstanceUpdate(model: model, instance: instance, properties: properties)
    }

    /// The changed status (as property 0) and properties of `instance`; nil when it does not exist.
    private func read(_ type: any ModelProtocol.Type, instance: InstanceKey, after: Date?) -> [PropertyUpdate]? {
        let model = type.modelId
        guard let status = syncStatus(of: database, model: model, instance: instance, after: after) else { return nil }
        var reader = TypedPropertyReader(database: database, model: model, instance: instance, after: after,
                                         timestamped: datedView(of: database))
        type.visitProperties(with: &reader)
        guard let entry = status.entry else { return reader.values }
        return [PropertyUpdate(id: PropertyKey.instanceId, value: entry.status, date: entry.date)] + reader.values
    }

    // MARK: Commands

    /// Runs `command` on its instance: each argument is encoded with the encoder and decoded
    /// as the parameter's type with the decoder, as it would be between two processes.
    /// - Throws: ``StateError/unknownModel(id:)``, ``StateError/missingInstance(model:id:)``
    ///   when the instance does not exist or is deleted, ``StateError/argumentEncodingFailed(index:error:)``,
    ///   and what the command's generated code throws (unknown command, missing or undecodable
    ///   argument, failed command).
    public func process(command: CommandRequest) throws(StateError) {
        let type = try modelType(command.model)
        let status: InstanceStatus? = database.get(Path(model: command.model, instance: command.instance))
        guard status == .created else { throw .missingInstance(model: command.model, id: command.instance) }
        var arguments: [Data] = []
        for (index, argument) in command.arguments.enumerated() {
            do {
                arguments.append(try encoder.encode(argument))
            } catch {
                throw .argumentEncodingFailed(index: index, error: String(describing: error))
            }
        }
        let instance = type.init(database: database, id: command.instance)
        try instance.execute(command: DecodedCommandArguments(commandId: command.command, arguments: arguments, decoder: decoder))
    }
}

/// Asks a database in the same process for updates and applies them: StateModel's
/// `UnencodedUpdateConsumer`, the client side of ``UnencodedRequestProcessor``.
///
/// Each `apply` writes in one transaction of the local database: when any part fails (an
/// unknown model, a value of another type than its property, a store error) nothing of the
/// update is applied.
public struct UnencodedUpdateConsumer: ModelMapping {
    /// The local database updates are applied to.
    public let database: any Database

    let modelMap: ModelMap

    /// A consumer for `database`; `modelMap` gives the model type of each model id.
    public init(database: any Database, modelMap: @escaping ModelMap) {
        self.database = database
        self.modelMap = modelMap
    }

    /// A consumer for `database`, in StateModel's shape. Values travel unencoded, so the
    /// encoder and decoder are not used; commands go to
    /// ``UnencodedRequestProcessor/process(command:)`` as they are.
    public init(database: any Database, decoder: any GenericDecoder, encoder: any GenericEncoder, modelMap: @escaping ModelMap) {
        self.init(database: database, modelMap: modelMap)
    }

    // MARK: Instance statuses

    /// A request for the status of `model`'s instances changed after `timestamp`.
    public func instanceStatusRequest<T: ModelProtocol>(for model: T.Type, after timestamp: Date?) -> InstanceStatusRequest {
        InstanceStatusRequest(model: T.modelId, timestamp: timestamp)
    }

    /// A request for the status of the instances of the model `model` changed after `timestamp`.
    public func instanceStatusRequest(for model: ModelKey, after timestamp: Date?) -> InstanceStatusRequest {
        InstanceStatusRequest(model: model, timestamp: timestamp)
    }

    /// Applies instance statuses (creations, deletions) in one transaction, with their dates
    /// on a store that keeps dates.
    /// - Throws: ``StateError/unknownModel(id:)``, ``StateError/store(_:)``.
    public func apply(instanceUpdates: InstancesUpdate) throws(StateError) {
        let model = instanceUpdates.model
        _ = try modelType(model)
        try syncTransaction(database) {
            for update in instanceUpdates.updates {
                syncWrite(status: StatusEntry(instance: update.instance, status: update.status, date: update.date),
                          model: model, to: database)
            }
        }
    }

    // MARK: Pages of a model's updates

    /// A request for one page of `model`'s updates after `timestamp`.
    public func modelUpdateRequest<T: ModelProtocol>(for model: T.Type, after timestamp: Date?, limit: Int,
                                                     startingAt instance: InstanceKey? = nil) -> ModelUpdateRequest {
        modelUpdateRequest(for: T.modelId, after: timestamp, limit: limit, startingAt: instance)
    }

    /// A request for one page of the updates of the model `model` after `timestamp`.
    public func modelUpdateRequest(for model: ModelKey, after timestamp: Date?, limit: Int,
                                   startingAt instance: InstanceKey? = nil) -> ModelUpdateRequest {
        ModelUpdateRequest(model: model, timestamp: timestamp, limit: limit, instance: instance)
    }

    /// Applies one page of a model's updates in one transaction.
    /// - Returns: The instance the next page starts at; nil when this was the last page.
    /// - Throws: ``StateError/unknownModel(id:)``, ``StateError/propertyDecodingFailed(path:error:)``
    ///   for a value of another type than its property, ``StateError/store(_:)``.
    @discardableResult
    public func apply(modelUpdates: ModelUpdate) throws(StateError) -> InstanceKey? {
        let type = try modelType(modelUpdates.model)
        try syncTransaction(database) { () throws(StateError) in
            for update in modelUpdates.updates {
                try write(update.properties, of: update.instance, type: type)
            }
        }
        return modelUpdates.hasMoreUpdatesAtInstance
    }

    // MARK: One instance

    /// A request for the properties of `instance` of `model` changed after `timestamp`.
    public func instanceUpdateRequest<T: ModelProtocol>(for instance: InstanceKey, of model: T.Type, after timestamp: Date?) -> InstanceUpdateRequest {
        instanceUpdateRequest(for: instance, of: T.modelId, after: timestamp)
    }

    /// A request for the properties of `instance` of the model `model` changed after `timestamp`.
    public func instanceUpdateRequest(for instance: InstanceKey, of model: ModelKey, after timestamp: Date?) -> InstanceUpdateRequest {
        InstanceUpdateRequest(instance: instance, model: model, timestamp: timestamp)
    }

    /// Applies one instance's status and properties in one transaction.
    /// - Throws: ``StateError/unknownModel(id:)``, ``StateError/propertyDecodingFailed(path:error:)``
    ///   for a value of another type than its property, ``StateError/store(_:)``.
    public func apply(instanceUpdate update: InstanceUpdate) throws(StateError) {
        let type = try modelType(update.model)
        try syncTransaction(database) { () throws(StateError) in
            try write(update.properties, of: update.instance, type: type)
        }
    }

    // MARK: Writing

    private func write(_ properties: [PropertyUpdate], of instance: InstanceKey, type: any ModelProtocol.Type) throws(StateError) {
        let model = type.modelId
        var values: [PropertyKey: PropertyUpdate] = [:]
        var status: StatusEntry?
        for property in properties {
            guard property.id == PropertyKey.instanceId else {
                values[property.id] = property
                continue
            }
            guard let value: InstanceStatus = property.value() else {
                throw .propertyDecodingFailed(path: Path(model: model, instance: instance),
                                              error: "the update holds a \(property.valueType) as the status")
            }
            status = StatusEntry(instance: instance, status: value, date: property.date)
        }
        var writer = TypedPropertyWriter(database: database, model: model, instance: instance, values: values,
                                         timestamped: datedView(of: database))
        type.visitProperties(with: &writer)
        if let failure = writer.failure { throw failure }
        if let status { syncWrite(status: status, model: model, to: database) }
    }
}
