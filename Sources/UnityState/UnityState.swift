// The state-path flavor (StateModel's API): `import UnityState` gives the runtime
// (`UnityStateRuntime`: databases, property wrappers, contexts, sync) and the `@Model` /
// `@Command` macros, which are declared in this module because they need swift-syntax.
@_exported import UnityStateRuntime
#if canImport(Observation)
// Models are `Observable` (the code `@Model` writes names `Observation.Observable`).
@_exported import Observation
#endif

/// Makes a class a state model stored by path (model id, instance id, property id), as
/// StateModel's `@Model`: it adds `id`, `database`, `init(database:id:)`, `modelId`, the
/// `PropertyId` enum, `create(in:id:…)` with one argument per stored property, and the
/// `ModelProtocol` conformance.
///
/// ```swift
/// @Model(id: 1)
/// final class Person {
///     @Property(id: 1) var name: String
///     @Property(id: 2) var age: Int = 18
///     @Reference(id: 3) var partner: Person?
///     @ReferenceList(id: 4) var friends: [Person]
/// }
/// let alice = try Person.create(in: database, id: 123, name: "Alice")
/// ```
///
/// `id` must be unique among the models of a database; property ids are integer literals,
/// unique within the model and not 0. A mistake is a compile-time error.
@attached(member, names: named(id), named(database), named(init(database:id:)), named(modelId), named(PropertyId),
          named(visitProperties), named(propertyKeyPaths), named(resetPropertiesToDefaults), named(create), named(execute),
          named(_$observation), named(observationAccess), named(observationMutation),
          named(notifyObservers))
@attached(extension, conformances: ModelProtocol, Observable)
public macro Model(id: ModelKey) = #externalMacro(module: "UnityMacros", type: "StateModelMacro")

/// Marks a method of a `@Model` class as a command that a remote database can run on the same
/// instance. It adds `<name>Command(<same arguments>)`, which returns the `CommandRequest`;
/// command ids are integer literals, unique within the model. Arguments must be `Codable`.
@attached(peer, names: suffixed(Command))
public macro Command(id: Int) = #externalMacro(module: "UnityMacros", type: "StateCommandMacro")
