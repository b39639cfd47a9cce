import Foundation

/// What a query selects and how it orders it: StateModel's `QueryDescriptor`, the value a
/// SwiftUI `@Query` is built from. Both closures run in Swift on each instance; for a filter
/// the database runs, give `where:` a key-path filter (``StateFilter``).
public struct QueryDescriptor<Model: ModelProtocol> {
    /// Which instances are included (all when nil).
    public let filter: ((Model) -> Bool)?
    /// A filter on stored properties that a SQL store runs in SQL, applied before `filter`.
    public let storedFilter: StateFilter<Model>?
    /// Orders two instances (the database's order, by id, when nil).
    public let areInIncreasingOrder: ((Model, Model) -> Bool)?
    /// A new value for every descriptor made, so a holder can tell that it was replaced.
    public let id = UUID()

    /// Instances for which `filter` is true, ordered by the value `sortBy` gives.
    public init<Key: Comparable>(where storedFilter: StateFilter<Model>? = nil, filter: ((Model) -> Bool)? = nil,
                                 sortBy: @escaping (Model) -> Key, ascending: Bool = true) {
        self.filter = filter
        self.storedFilter = storedFilter
        self.areInIncreasingOrder = ascending ? { sortBy($0) < sortBy($1) } : { sortBy($0) > sortBy($1) }
    }

    /// Instances for which `filter` is true, in id order.
    public init(where storedFilter: StateFilter<Model>? = nil, filter: ((Model) -> Bool)? = nil) {
        self.filter = filter
        self.storedFilter = storedFilter
        self.areInIncreasingOrder = nil
    }
}

extension Database {
    /// The instances `descriptor` selects, in its order.
    public func all<Model: ModelProtocol>(_ descriptor: QueryDescriptor<Model>) throws -> [Model] {
        var items: [Model]
        if let stored = descriptor.storedFilter {
            items = try all(Model.self, matching: stored)
        } else {
            items = all(of: Model.self)
        }
        if let filter = descriptor.filter { items = items.filter(filter) }
        if let order = descriptor.areInIncreasingOrder { items.sort(by: order) }
        return items
    }
}

/// The result of a query that can be recomputed: replace ``descriptor`` and ``items`` follow
/// (StateModel's dynamic `@Query` without SwiftUI). Call ``refresh()`` after the database
/// changed.
public final class QueryResults<Model: ModelProtocol> {
    /// The database queried.
    public let database: any Database

    /// What is selected; setting it recomputes ``items``.
    public var descriptor: QueryDescriptor<Model> {
        didSet { refresh() }
    }

    /// The instances selected, in order.
    public private(set) var items: [Model] = []

    /// The last error a recomputation met (an invalid key-path filter); `items` is then empty.
    public private(set) var error: StateError?

    /// The results of `descriptor` in `database`, computed now.
    public init(database: any Database, descriptor: QueryDescriptor<Model>) {
        self.database = database
        self.descriptor = descriptor
        refresh()
    }

    /// Computes ``items`` again.
    public func refresh() {
        do {
            items = try database.all(descriptor)
            error = nil
        } catch let failure as StateError {
            items = []
            error = failure
        } catch {
            items = []
            self.error = .invalidFilter(String(describing: error))
        }
    }
}
