import Foundation

extension QuerySet {
    /// The query's objects now, and again after each committed transaction that changed a
    /// table the query reads (from this process, another process on the same SQLite file, or
    /// any client of the same PostgreSQL database): ``all()``, observed.
    ///
    /// ```swift
    /// for try await dogs in try amigo.query(Dog.self).filter("label != ?", "Rex").orderBy("label").observe() {
    ///     show(dogs)
    /// }
    /// ```
    ///
    /// The tables are found in the query: the model's, those joined for a filter or an order
    /// across a foreign key and for ``selectRelated(_:)``, and a link table followed by
    /// ``using(_:)``. On PostgreSQL each needs the change trigger of `Migration.observeChanges(of:)`.
    ///
    /// Each result is made of **new objects**, built when the consumer takes it (on its task):
    /// the ORM keeps no identity map, so an object of one result is never the object of the
    /// next, and changing one changes nothing until it is added to a session. An observation
    /// reads committed data only: made from a session's query, it runs on the ORM's database,
    /// outside the session's transaction, and sees the session's work once it is committed.
    ///
    /// - Throws: the errors of ``all()`` for a bad filter or order, at once (nothing is
    ///   observed then). The sequence ends with ``ORMError/conversion(model:column:message:)``
    ///   for a stored value a property cannot hold, or with the core's `DatabaseError`.
    public func observe() throws -> ORMObservation<T> {
        let plan = try Plan(query: self)
        let select = plan.select(limit: limitCount, offset: offsetCount)
        return ORMObservation(rows: amigo.database.observe(.select(select), removeDuplicates: true),
                              materializer: plan.materializer)
    }
}

/// The results of an observed ``QuerySet`` (``QuerySet/observe()``): an `AsyncSequence` of
/// arrays of new objects, the current result first, then one after each committed
/// transaction that changed a table the query reads.
///
/// The core observes the rows (an unchanged result is not delivered again); the objects are
/// built from them by the iterator's `next()`, on the consuming task, so they belong to it.
/// Cancelling the consuming task ends the sequence. The sequence is `Sendable` (hand it to the
/// task that consumes it); its iterator and the objects it builds belong to that task.
public struct ORMObservation<T: AmigoModel>: AsyncSequence, Sendable {
    /// One result: the objects, in the query's order.
    public typealias Element = [T]
    /// ``ORMError`` for a value a property cannot hold, `ObservationError` when the observation
    /// cannot start, `DatabaseError` for a fetch that fails.
    public typealias Failure = any Error

    let rows: DatabaseObservation<[Row]>
    let materializer: RowMaterializer

    /// Starts nothing: the observation starts at the iterator's first `next()`.
    public func makeAsyncIterator() -> Iterator {
        Iterator(rows: rows.makeAsyncIterator(), materializer: materializer)
    }

    /// Iterates the results of one observation.
    public struct Iterator: AsyncIteratorProtocol {
        var rows: DatabaseObservation<[Row]>.Iterator
        let materializer: RowMaterializer

        /// The next result, as new objects; nil once the consuming task is cancelled.
        public mutating func next() async throws -> [T]? {
            guard let result = try await rows.next() else { return nil }
            var objects: [T] = []
            objects.reserveCapacity(result.count)
            // Made by `T()`.
            for row in result { objects.append(unsafeDowncast(try materializer.object(row), to: T.self)) }
            return objects
        }
    }
}
