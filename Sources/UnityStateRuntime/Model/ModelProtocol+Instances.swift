extension ModelProtocol {

    /// Whether the instance exists or was deleted (`created` when no status is stored, as in
    /// StateModel: an object made for an id nobody created yet).
    public var status: InstanceStatus {
        observationAccess(PropertyKey.instanceId)
        return database.get(Self.statusPath(for: id)) ?? .created
    }

    /// Marks the instance deleted. Its values stay (``insert()`` restores it); references and
    /// lists that point at it now report it `deleted`. Nothing happens to an instance that is
    /// not `created`.
    public func delete() {
        let stored: InstanceStatus? = database.get(Self.statusPath(for: id))
        guard stored == .created else { return }
        observationMutation(PropertyKey.instanceId) {
            database.set(InstanceStatus.deleted, for: Self.statusPath(for: id))
        }
    }

    /// Restores a deleted instance, with the values it had. Nothing happens to an instance
    /// that is not deleted.
    public func insert() {
        let stored: InstanceStatus? = database.get(Self.statusPath(for: id))
        guard stored == .deleted else { return }
        observationMutation(PropertyKey.instanceId) {
            database.set(InstanceStatus.created, for: Self.statusPath(for: id))
        }
    }

    /// Marks the instance deleted and sets every property back to its default, so that an
    /// instance created again with this id starts empty. One transaction on the SQL stores.
    public func deleteAndClearProperties() throws {
        try database.transaction {
            resetPropertiesToDefaults()
            database.set(InstanceStatus.deleted, for: Self.statusPath(for: id))
        }
        notifyObservers(ofChangeTo: PropertyKey.instanceId)
    }
}

extension Database {

    /// Creates (or re-creates) instance `id` of `type`: its status becomes `created`. Values a
    /// previous instance with this id had are still there (StateModel's rule; see
    /// ``ModelProtocol/deleteAndClearProperties()``).
    @discardableResult
    public func create<Instance: ModelProtocol>(id: InstanceKey, of type: Instance.Type = Instance.self) -> Instance {
        set(InstanceStatus.created, for: Instance.statusPath(for: id))
        return Instance(database: self, id: id)
    }

    /// Instance `id` of `type`, deleted or not; nil when it was never created.
    public func get<Instance: ModelProtocol>(id: InstanceKey, of type: Instance.Type = Instance.self) -> Instance? {
        let status: InstanceStatus? = get(Instance.statusPath(for: id))
        return status == nil ? nil : Instance(database: self, id: id)
    }

    /// Instance `id` of `type` when it exists and is not deleted.
    public func active<Instance: ModelProtocol>(id: InstanceKey, of type: Instance.Type = Instance.self) -> Instance? {
        let status: InstanceStatus? = get(Instance.statusPath(for: id))
        return status == .created ? Instance(database: self, id: id) : nil
    }

    /// Instance `id` of `type`, created when it never was (a deleted one is returned as it is).
    public func getOrCreate<Instance: ModelProtocol>(id: InstanceKey, of type: Instance.Type = Instance.self) -> Instance {
        get(id: id, of: type) ?? create(id: id, of: type)
    }

    /// Marks `instance` deleted (see ``ModelProtocol/delete()``).
    public func delete<Instance: ModelProtocol>(_ instance: Instance) {
        instance.delete()
    }

    /// Every instance of `type` that is not deleted, in no particular order.
    public func all<Instance: ModelProtocol>(of type: Instance.Type = Instance.self) -> [Instance] {
        all(model: Instance.modelId) { id, status in
            status == .created ? Instance(database: self, id: id) : nil
        }
    }

    /// Every instance of `type` that is not deleted and for which `isIncluded` is true; the
    /// filter runs in Swift on each instance.
    public func all<Instance: ModelProtocol>(_ type: Instance.Type, where isIncluded: (Instance) -> Bool) -> [Instance] {
        all(model: Instance.modelId) { id, status in
            guard status == .created else { return nil }
            let instance = Instance(database: self, id: id)
            return isIncluded(instance) ? instance : nil
        }
    }

    /// `all(T.self, where:)` with the type inferred from the closure or the result.
    public func all<Instance: ModelProtocol>(where isIncluded: (Instance) -> Bool) -> [Instance] {
        all(Instance.self, where: isIncluded)
    }
}
