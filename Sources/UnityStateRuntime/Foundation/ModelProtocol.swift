/// A model class whose properties live in a ``Database`` under paths.
///
/// Two objects of a model are equal, and hash alike, when they have the same ``id`` (as in
/// StateModel), whatever database they read.
///
/// `@Model(id:)` writes the conformance: the `id`, the database reference, the `PropertyId`
/// enum, `init(database:id:)`, the property visitor and the command dispatch. Writing it by
/// hand is allowed, as in StateModel.
public protocol ModelProtocol: AnyObject, Hashable {

    /// The ids of the model's stored properties, one case per `@Property`, `@Reference` and
    /// `@ReferenceList`.
    associatedtype PropertyId: RawRepresentable & CaseIterable where PropertyId.RawValue == PropertyKey

    /// The model's id, unique among the models of one database; the first part of every path.
    static var modelId: ModelKey { get }

    /// The instance's id; the second part of every path.
    var id: InstanceKey { get }

    /// The database the instance reads from and writes to.
    var database: any Database { get }

    /// Makes an object for the instance `id` in `database`; it reads and writes nothing.
    init(database: any Database, id: InstanceKey)

    /// Calls `visitor` once for every stored property with its id and its stored type:
    /// a `@Property`'s value type, `InstanceKey?` for a `@Reference`, `[InstanceKey]` for a
    /// `@ReferenceList`. Synchronization uses it to read and write every property of an
    /// instance without knowing the model.
    static func visitProperties<Visitor: PropertyVisitor>(with visitor: inout Visitor)

    /// Runs the `@Command` function that `command` names on this instance with its arguments.
    ///
    /// The default (a model without commands) throws ``StateError/unknownCommand(id:)``.
    func execute<Command: CommandArguments>(command: Command) throws(StateError)

    /// Called by the property wrappers before a property is read, so that an observer of the
    /// model learns which properties it depends on. `@Model` implements it with Swift's
    /// Observation; the default does nothing.
    func observationAccess(_ property: PropertyKey)

    /// Called by the property wrappers around a write of a property (`write` performs it), so
    /// that observers of the model are told. The default just writes.
    func observationMutation(_ property: PropertyKey, _ write: () -> Void)

    /// Tells the model's observers that `property` changed in the database by another way
    /// than this object (a sync apply, an editing context's commit, another object of the
    /// same instance). The default does nothing.
    func notifyObservers(ofChangeTo property: PropertyKey)

    /// The key path of each stored property with its id (`@Model` generates it), so that a
    /// key-path filter can tell a stored property from a computed one. Nil (the default) for
    /// a hand-written model: filters then find the property by reading the key path.
    static var propertyKeyPaths: [AnyKeyPath: PropertyKey]? { get }

    /// Sets every stored property back to its default (used by
    /// ``deleteAndClearProperties()``); `@Model` generates it.
    func resetPropertiesToDefaults()
}

extension ModelProtocol {

    /// Equal ids: the same instance (the database is not compared).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }

    /// Hashes the id.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// Does nothing: a model without `@Model` is not observed.
    public func observationAccess(_ property: PropertyKey) {}

    /// Performs the write: a model without `@Model` has no observers to tell.
    public func observationMutation(_ property: PropertyKey, _ write: () -> Void) { write() }

    /// Does nothing: a model without `@Model` has no observers to tell.
    public func notifyObservers(ofChangeTo property: PropertyKey) {}

    /// Nil: a model written without `@Model` has no table of key paths.
    public static var propertyKeyPaths: [AnyKeyPath: PropertyKey]? { nil }

    /// A model without `@Command` functions knows no command.
    public func execute<Command: CommandArguments>(command: Command) throws(StateError) {
        throw StateError.unknownCommand(id: command.commandId)
    }

    /// The path of property `property` of this instance.
    public func path(of property: PropertyKey) -> Path {
        Path(model: Self.modelId, instance: id, property: property)
    }

    /// The path under which the status of instance `instance` of this model is stored.
    public static func statusPath(for instance: InstanceKey) -> Path {
        Path(model: modelId, instance: instance)
    }
}

/// Receives the stored properties of a model with their types (see
/// ``ModelProtocol/visitProperties(with:)``).
public protocol PropertyVisitor {
    /// Called once per stored property.
    mutating func visit<Value: DatabaseValue>(property: PropertyKey, as type: Value.Type)
}

/// The id and the encoded arguments of a command to run, as the receiving side sees them.
///
/// The code `@Command` generates reads the arguments in declaration order.
public protocol CommandArguments {
    /// The command's id, from `@Command(id:)`.
    var commandId: Int { get }

    /// Decodes the argument at `index` (0-based, in declaration order) as `type`.
    func argument<T: Decodable>(_ index: Int, as type: T.Type) throws(StateError) -> T
}

/// A command to run on an instance of a remote database: which instance, which `@Command`
/// function, and its arguments, not yet encoded.
///
/// `@Command(id:)` on `func install(version: String)` generates `installCommand(version:)`,
/// which returns one of these; an `UpdateConsumer` encodes it for the remote side.
public struct CommandRequest {

    /// The model of the target instance.
    public let model: ModelKey

    /// The target instance.
    public let instance: InstanceKey

    /// The command's id, from `@Command(id:)`.
    public let command: Int

    /// The arguments, in declaration order.
    public let arguments: [any Encodable]

    /// A command `command` for `instance` of `model` with `arguments` in declaration order.
    public init(model: ModelKey, instance: InstanceKey, command: Int, arguments: [any Encodable]) {
        self.model = model
        self.instance = instance
        self.command = command
        self.arguments = arguments
    }
}
