import Foundation
import Unity

/// `database` as a store that keeps write dates, if it is one. An ``ObservableDatabase``
/// wrapping such a store is one too: its dated writes go to the store and are announced.
func datedView(of database: any Database) -> (any TimestampedDatabase)? {
    if let observed = database as? ObservableDatabase { return observed.datedView }
    return database as? any TimestampedDatabase
}

/// The model type for a model id: what synchronization needs to know a model's properties.
public typealias ModelMap = (ModelKey) -> (any ModelProtocol.Type)?

/// Reads every stored property of one instance, with its write date when the database keeps
/// dates, and encodes each value.
private struct PropertyReader: PropertyVisitor {
    let database: any Database
    let model: ModelKey
    let instance: InstanceKey
    let after: Date?
    let encoder: any GenericEncoder
    /// `database` when it keeps write dates (found once per instance, not once per value).
    let timestamped: (any TimestampedDatabase)?
    var values: [PropertyValueData] = []
    var failure: StateError?

    mutating func visit<Value: DatabaseValue>(property: PropertyKey, as type: Value.Type) {
        let path = Path(model: model, instance: instance, property: property)
        let value: Value
        var date: Date?
        if let timestamped {
            guard let found: Timestamped<Value> = timestamped.get(path) else { return }
            if let after, found.date <= after { return }
            value = found.value
            date = found.date
        } else {
            guard let found: Value = database.get(path) else { return }
            value = found
        }
        do {
            values.append(try PropertyValueData(property: property, value: value, date: date, encoder: encoder))
        } catch {
            failure = .valueCodingFailed(path: path, error: String(describing: error))
        }
    }
}

/// Writes the values of one instance update with their types.
private struct PropertyWriter: PropertyVisitor {
    let database: any Database
    let model: ModelKey
    let instance: InstanceKey
    let decoder: any GenericDecoder
    let values: [PropertyKey: PropertyValueData]
    /// `database` when it keeps write dates (found once per instance, not once per value).
    let timestamped: (any TimestampedDatabase)?
    var failure: StateError?

    mutating func visit<Value: DatabaseValue>(property: PropertyKey, as type: Value.Type) {
        guard failure == nil, let update = values[property] else { return }
        let path = Path(model: model, instance: instance, property: property)
        let value: Value
        do {
            value = try update.decoded(Value.self, decoder: decoder)
        } catch {
            failure = .propertyDecodingFailed(path: path, error: String(describing: error))
            return
        }
        if let timestamped {
            timestamped.set(value, for: path, at: update.date)
        } else {
            database.set(value, for: path)
        }
    }
}

/// Both sides of a synchronization find model types the same way.
protocol ModelMapping {
    var modelMap: ModelMap { get }
}

extension ModelMapping {
    /// The model type of `model` from the map; a type whose own id differs is not it.
    func modelType(_ model: ModelKey) throws(StateError) -> any ModelProtocol.Type {
        guard let type = modelMap(model), type.modelId == model else { throw .unknownModel(id: model) }
        return type
    }
}

/// Reads what the remote side asks for: StateModel's `RequestProcessor`, on the database that
/// holds the data (a server). Requests and answers are encoded `Data`.
public final class RequestProcessor: ModelMapping {
    /// The database answered from.
    public let database: any Database
    let coder: MessageCoder
    let modelMap: ModelMap

    /// A processor for `database`; `modelMap` gives the model type of each model id.
    public init(database: any Database, encoder: any GenericEncoder, decoder: any GenericDecoder,
                modelMap: @escaping ModelMap) {
        self.database = database
        self.coder = MessageCoder(encoder: encoder, decoder: decoder)
        self.modelMap = modelMap
    }

    /// The status of the model's instances: those changed after the request's date on a
    /// store that keeps dates, every instance elsewhere.
    public func process(instanceStatusRequest data: Data) throws(StateError) -> Data {
        let request = try coder.decode(.instanceStatusRequest, InstanceStatusRequestData.self, from: data)
        _ = try modelType(request.model)
        return try coder.encode(.instanceStatusUpdate,
                                InstanceStatusUpdateData(model: request.model, instances: statuses(request.model, after: request.after)))
    }

    private func statuses(_ model: ModelKey, after: Date?) -> [StatusEntry] {
        syncStatuses(of: database, model: model, after: after)
    }

    /// Every property of one instance changed after the request's date (all on a store
    /// without dates), with its status.
    public func process(instanceUpdateRequest data: Data) throws(StateError) -> Data {
        let request = try coder.decode(.instanceUpdateRequest, InstanceUpdateRequestData.self, from: data)
        let type = try modelType(request.model)
        guard let update = try instanceUpdate(type, instance: request.instance, after: request.after) else {
            throw .missingInstance(model: request.model, id: request.instance)
        }
        return try coder.encode(.instanceUpdate, update)
    }

    private func instanceUpdate(_ type: any ModelProtocol.Type, instance: InstanceKey, after: Date?) throws(StateError) -> InstanceUpdateData? {
        let model = type.modelId
        guard let status = syncStatus(of: database, model: model, instance: instance, after: after) else { return nil }
        var reader = PropertyReader(database: database, model: model, instance: instance, after: after, encoder: coder.encoder,
                                    timestamped: datedView(of: database))
        type.visitProperties(with: &reader)
        if let failure = reader.failure { throw failure }
        return InstanceUpdateData(model: model, instance: instance, status: status.entry, properties: reader.values)
    }

    /// One page of a model's updates after the request's date: whole instances, in id order,
    /// from `startingAt`, until the page holds `limit` updates (status and properties; an
    /// instance with more than `limit` updates goes whole on a page of its own). The answer
    /// says where the next page starts.
    public func process(modelUpdateRequest data: Data) throws(StateError) -> Data {
        let request = try coder.decode(.modelUpdateRequest, ModelUpdateRequestData.self, from: data)
        let type = try modelType(request.model)
        let (page, next) = try syncPage(of: database, model: request.model, limit: request.limit, startingAt: request.startingAt,
                                        count: \InstanceUpdateData.updateCount) { id throws(StateError) in
            try instanceUpdate(type, instance: id, after: request.after)
        }
        return try coder.encode(.modelUpdate, ModelUpdateData(model: request.model, instances: page, next: next))
    }

    /// Runs a command made by ``UpdateConsumer/encode(command:)`` on its instance and answers
    /// with its outcome: success, or the error (unknown model, missing instance, unknown
    /// command, bad argument, failed command) for the sender's ``UpdateConsumer/decode(commandResponse:)``.
    public func process(command data: Data) -> Data {
        var model: ModelKey = 0
        var failure: StateError?
        do throws(StateError) {
            let command = try coder.decode(.command, CommandData.self, from: data)
            model = command.model
            let type = try modelType(command.model)
            let status: InstanceStatus? = database.get(Path(model: command.model, instance: command.instance))
            guard status == .created else { throw .missingInstance(model: command.model, id: command.instance) }
            let instance = type.init(database: database, id: command.instance)
            try instance.execute(command: DecodedCommandArguments(commandId: command.command, arguments: command.arguments,
                                                                  decoder: coder.decoder))
        } catch {
            failure = error
        }
        let response = CommandResponseData(model: model, error: failure.map(CommandErrorData.init))
        // A response that cannot be encoded would be an encoder that cannot encode strings
        // and integers; answer with an empty message, which the sender reports as invalid.
        return (try? coder.encode(.commandResponse, response)) ?? Data()
    }
}

/// Command arguments decoded with the processor's decoder.
struct DecodedCommandArguments: CommandArguments {
    let commandId: Int
    let arguments: [Data]
    let decoder: any GenericDecoder

    func argument<T: Decodable>(_ index: Int, as type: T.Type) throws(StateError) -> T {
        guard arguments.indices.contains(index) else { throw .missingArgument(index: index) }
        do {
            return try decoder.decode(T.self, from: arguments[index])
        } catch {
            throw .argumentDecodingFailed(index: index, error: String(describing: error))
        }
    }
}

/// Asks a remote side for updates and applies them: StateModel's `UpdateConsumer`, on the
/// local database (a client). Every apply writes in one transaction of the local database.
public final class UpdateConsumer: ModelMapping {
    /// The local database updates are applied to.
    public let database: any Database
    let coder: MessageCoder
    let modelMap: ModelMap

    /// A consumer for `database`; `modelMap` gives the model type of each model id.
    public init(database: any Database, encoder: any GenericEncoder, decoder: any GenericDecoder,
                modelMap: @escaping ModelMap) {
        self.database = database
        self.coder = MessageCoder(encoder: encoder, decoder: decoder)
        self.modelMap = modelMap
    }

    /// A request for the status of every instance of `model` changed after `date`.
    public func instanceStatusRequest<Model: ModelProtocol>(for model: Model.Type, after date: Date? = nil) throws(StateError) -> Data {
        try coder.encode(.instanceStatusRequest, InstanceStatusRequestData(model: Model.modelId, after: date))
    }

    /// A request for the properties of one instance changed after `date`.
    public func instanceUpdateRequest<Model: ModelProtocol>(for instance: InstanceKey, of model: Model.Type,
                                                           after date: Date? = nil) throws(StateError) -> Data {
        try coder.encode(.instanceUpdateRequest, InstanceUpdateRequestData(model: Model.modelId, instance: instance, after: date))
    }

    /// A request for one page of `model`'s updates after `date`, of about `limit` updates,
    /// from instance `startingAt` (the `next` that ``apply(modelUpdate:)`` returned).
    public func modelUpdateRequest<Model: ModelProtocol>(for model: Model.Type, after date: Date? = nil, limit: Int = 1000,
                                                        startingAt: InstanceKey? = nil) throws(StateError) -> Data {
        try coder.encode(.modelUpdateRequest,
                         ModelUpdateRequestData(model: Model.modelId, after: date, limit: limit, startingAt: startingAt))
    }

    /// Applies instance statuses (creations, deletions) in one transaction.
    public func apply(instanceUpdates data: Data) throws(StateError) {
        let update = try coder.decode(.instanceStatusUpdate, InstanceStatusUpdateData.self, from: data)
        _ = try modelType(update.model)
        try inTransaction {
            for entry in update.instances { write(status: entry, model: update.model) }
        }
    }

    /// Applies one instance's status and properties in one transaction.
    public func apply(instanceUpdate data: Data) throws(StateError) {
        let update = try coder.decode(.instanceUpdate, InstanceUpdateData.self, from: data)
        let type = try modelType(update.model)
        try inTransaction { () throws(StateError) in try write(update, type: type) }
    }

    /// Applies one page of a model's updates in one transaction; returns where the next page
    /// starts, nil when this was the last.
    @discardableResult
    public func apply(modelUpdate data: Data) throws(StateError) -> InstanceKey? {
        let update = try coder.decode(.modelUpdate, ModelUpdateData.self, from: data)
        let type = try modelType(update.model)
        try inTransaction { () throws(StateError) in
            for instance in update.instances { try write(instance, type: type) }
        }
        return update.next
    }

    /// Applies any update message from the remote side (instance statuses, one instance, or
    /// a page of a model's updates), as its kind says; returns where the next page starts for
    /// a model update, nil otherwise. Throws ``StateError/invalidDataSupplied`` for anything
    /// that is not an update message.
    @discardableResult
    public func apply(data: Data) throws(StateError) -> InstanceKey? {
        let kind: MessageKind
        do {
            kind = try coder.decoder.decode(EnvelopeKind.self, from: data).kind
        } catch {
            throw .invalidDataSupplied
        }
        switch kind {
        case .instanceStatusUpdate: try apply(instanceUpdates: data)
        case .instanceUpdate: try apply(instanceUpdate: data)
        case .modelUpdate: return try apply(modelUpdate: data)
        default: throw .invalidDataSupplied
        }
        return nil
    }

    /// The command encoded for the remote ``RequestProcessor/process(command:)``: its
    /// instance, its id and each argument encoded with the encoder.
    public func encode(command: CommandRequest) throws(StateError) -> Data {
        var arguments: [Data] = []
        for (index, argument) in command.arguments.enumerated() {
            do {
                arguments.append(try encodeArgument(argument))
            } catch {
                throw .argumentEncodingFailed(index: index, error: String(describing: error))
            }
        }
        return try coder.encode(.command, CommandData(model: command.model, instance: command.instance,
                                                      command: command.command, arguments: arguments))
    }

    private func encodeArgument<T: Encodable>(_ value: T) throws -> Data {
        try coder.encoder.encode(value)
    }

    /// Reads the remote side's answer to a command: returns when it ran, throws its error
    /// (unknown model, missing instance, unknown command, bad argument, failed) otherwise.
    public func decode(commandResponse data: Data) throws(StateError) {
        let response = try coder.decode(.commandResponse, CommandResponseData.self, from: data)
        if let error = response.error { throw error.error(model: response.model) }
    }

    // MARK: Writing

    private func write(status entry: StatusEntry, model: ModelKey) {
        syncWrite(status: entry, model: model, to: database)
    }

    private func write(_ update: InstanceUpdateData, type: any ModelProtocol.Type) throws(StateError) {
        var values: [PropertyKey: PropertyValueData] = [:]
        for value in update.properties { values[value.property] = value }
        var writer = PropertyWriter(database: database, model: update.model, instance: update.instance,
                                    decoder: coder.decoder, values: values, timestamped: datedView(of: database))
        type.visitProperties(with: &writer)
        if let failure = writer.failure { throw failure }
        if let status = update.status { write(status: status, model: update.model) }
    }

    private func inTransaction(_ body: () throws(StateError) -> Void) throws(StateError) {
        try syncTransaction(database, body)
    }
}

extension CommandRequest {
    /// This command encoded with `encoder`, as ``UpdateConsumer/encode(command:)`` encodes it,
    /// for the remote ``RequestProcessor/process(command:)``.
    public func encoded(using encoder: any GenericEncoder) throws(StateError) -> Data {
        try UpdateConsumer(database: InMemoryDatabase(), encoder: encoder, decoder: JSONDecoder(), modelMap: { _ in nil })
            .encode(command: self)
    }
}

// MARK: Reading and writing shared by the encoded and the unencoded sides

/// The status of `model`'s instances: those changed after `after` on a store that keeps
/// dates, every instance elsewhere.
func syncStatuses(of database: any Database, model: ModelKey, after: Date?) -> [StatusEntry] {
    if let timestamped = datedView(of: database) {
        return timestamped.all(model: model) { id, status, date -> StatusEntry? in
            if let after, date <= after { return nil }
            return StatusEntry(instance: id, status: status, date: date)
        }
    }
    return database.all(model: model) { StatusEntry(instance: $0, status: $1, date: nil) }
}

/// An existing instance's status as a sync sends it.
struct SyncStatus {
    /// The status, when it changed after the date asked for (always on a store without dates).
    let entry: StatusEntry?
}

/// The status of `instance` as a sync sends it, or nil when the instance does not exist.
func syncStatus(of database: any Database, model: ModelKey, instance: InstanceKey, after: Date?) -> SyncStatus? {
    let statusPath = Path(model: model, instance: instance)
    if let timestamped = datedView(of: database) {
        guard let found: Timestamped<InstanceStatus> = timestamped.get(statusPath) else { return nil }
        guard after.map({ found.date > $0 }) ?? true else { return SyncStatus(entry: nil) }
        return SyncStatus(entry: StatusEntry(instance: instance, status: found.value, date: found.date))
    }
    guard let found: InstanceStatus = database.get(statusPath) else { return nil }
    return SyncStatus(entry: StatusEntry(instance: instance, status: found, date: nil))
}

/// One page of a model's updates: whole instances, in id order, from `startingAt`, until the
/// page holds `limit` updates (an instance with more goes whole on a page of its own); and
/// the instance the next page starts at (nil after the last).
func syncPage<Update>(of database: any Database, model: ModelKey, limit: Int, startingAt: InstanceKey?,
                      count: (Update) -> Int,
                      read: (InstanceKey) throws(StateError) -> Update?) throws(StateError) -> ([Update], InstanceKey?) {
    var page: [Update] = []
    var total = 0
    var next: InstanceKey?
    // The instances are listed a run at a time (one indexed query on the SQL stores), and
    // the SQL stores read the values of a run with two statements instead of one per value.
    let chunk = max(1, min(1_000, limit))
    var cursor = startingAt ?? .min
    while true {
        let run = database.instanceKeys(of: model, from: cursor, limit: chunk)
        guard let first = run.first, let last = run.last else { break }
        let done: Bool = try prefetching(database, model: model, range: first...last) { () throws(StateError) -> Bool in
            for id in run {
                guard let update = try read(id) else { continue }
                let updates = count(update)
                if updates == 0 { continue }
                if !page.isEmpty, total + updates > max(1, limit) {
                    next = id
                    return true
                }
                page.append(update)
                total += updates
            }
            return false
        }
        if done || run.count < chunk || last == .max { break }
        cursor = last + 1
    }
    return (page, next)
}

/// Runs `body` with the instances `range` read ahead when the database is a SQL store.
private func prefetching<R>(_ database: any Database, model: ModelKey, range: ClosedRange<InstanceKey>,
                            _ body: () throws(StateError) -> R) throws(StateError) -> R {
    guard let sql = database as? SQLDatabase else { return try body() }
    do {
        return try sql.withPrefetchedInstances(model: model, range: range) { try body() }
    } catch let error as StateError {
        throw error
    } catch let error as DatabaseError {
        // The store's own error, kept typed (a constraint, a lost connection, ...).
        throw .store(error)
    } catch {
        throw .decodingFailed(error: String(describing: error))
    }
}

/// Writes an instance status, with its date on a store that keeps dates.
func syncWrite(status entry: StatusEntry, model: ModelKey, to database: any Database) {
    let path = Path(model: model, instance: entry.instance)
    if let timestamped = datedView(of: database) {
        timestamped.set(entry.status, for: path, at: entry.date)
    } else {
        database.set(entry.status, for: path)
    }
}

/// Runs `body` in one transaction of `database`; a store error stays typed.
func syncTransaction(_ database: any Database, _ body: () throws(StateError) -> Void) throws(StateError) {
    do {
        try database.transaction { try body() }
    } catch let error as StateError {
        throw error
    } catch let error as DatabaseError {
        // The store's own error, kept typed (a constraint, a lost connection, ...).
        throw .store(error)
    } catch {
        throw .decodingFailed(error: String(describing: error))
    }
}
