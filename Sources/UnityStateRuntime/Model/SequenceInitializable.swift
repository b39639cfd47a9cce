/// A collection that can be made from a sequence of its elements: what `@ReferenceList` needs
/// of its property's type. `Array`, `ContiguousArray` and `Set` conform; conform others to use
/// them with `@ReferenceList`.
public protocol SequenceInitializable: Collection {
    /// Makes the collection from the elements of `sequence`.
    init<S: Sequence>(_ sequence: S) where S.Element == Element
    /// An empty collection.
    init()
}

extension Array: SequenceInitializable {}
extension ContiguousArray: SequenceInitializable {}
extension Set: SequenceInitializable {}
