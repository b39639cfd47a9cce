@_exported import Unity
import Foundation

/// The base class of every mapped model (Amigo's `AmigoModel`).
///
/// Linux has no Objective-C runtime, so a model cannot be read and written by property name
/// through KVC. Instead each model lists its properties once, by name and key path, in
/// ``ormFields`` (a hand-written accessor table; no `Mirror`, no macro):
///
/// ```swift
/// final class Dog: AmigoModel {
///     var id = 0
///     var label = "New Dog"
///     override class var ormFields: ORMFieldTable {
///         ORMFieldTable(Dog.self, .property("id", \.id), .property("label", \.label))
///     }
/// }
/// ```
/// The table is read once, when ``ORMModel`` maps the class; reads and writes then go through
/// typed key paths.
open class AmigoModel {
    /// Creates an empty model (the ORM creates instances this way when it reads rows).
    public required init() {}

    /// The by-name accessor table: every mapped property, by its column name and key path.
    open class var ormFields: ORMFieldTable { ORMFieldTable() }
}

/// How a mapped property is read and written, decided from its key path's types once.
@usableFromInline
enum FieldAccessor {
    /// A value property: read as a database value, written from one (false when the value
    /// does not convert to the property's type).
    case value(get: (AmigoModel) -> DatabaseValue, set: (AmigoModel, DatabaseValue) -> Bool, valueType: Any.Type)
    /// A to-one property holding a related model.
    case toOne(get: (AmigoModel) -> AmigoModel?, set: (AmigoModel, AmigoModel?) -> Bool, relatedType: AmigoModel.Type)
}

/// One entry of a model's accessor table; build it with ``property(_:_:)-swift.type.method``.
public struct ORMProperty<Model: AmigoModel> {
    let name: String
    let accessor: FieldAccessor

    @usableFromInline
    init(name: String, accessor: FieldAccessor) {
        self.name = name
        self.accessor = accessor
    }

    /// A property holding a non-optional value.
    @inlinable
    public static func property<V: DatabaseValueConvertible>(_ name: String, _ keyPath: ReferenceWritableKeyPath<Model, V>) -> ORMProperty {
        ORMProperty(name: name, accessor: .value(
            get: { unsafeDowncast($0, to: Model.self)[keyPath: keyPath].databaseValue },
            set: { model, value in
                guard let v = V.fromDatabaseValue(value) else { return false }
                unsafeDowncast(model, to: Model.self)[keyPath: keyPath] = v
                return true
            },
            valueType: V.self))
    }

    /// A property holding an optional value (nil is NULL).
    @inlinable
    public static func property<V: DatabaseValueConvertible>(_ name: String, _ keyPath: ReferenceWritableKeyPath<Model, V?>) -> ORMProperty {
        ORMProperty(name: name, accessor: .value(
            get: { unsafeDowncast($0, to: Model.self)[keyPath: keyPath]?.databaseValue ?? .null },
            set: { model, value in
                if value.isNull {
                    unsafeDowncast(model, to: Model.self)[keyPath: keyPath] = nil
                    return true
                }
                guard let v = V.fromDatabaseValue(value) else { return false }
                unsafeDowncast(model, to: Model.self)[keyPath: keyPath] = v
                return true
            },
            valueType: V.self))
    }

    /// A to-one property holding a related model (a foreign key).
    @inlinable
    public static func property<R: AmigoModel>(_ name: String, _ keyPath: ReferenceWritableKeyPath<Model, R?>) -> ORMProperty {
        ORMProperty(name: name, accessor: .toOne(
            get: { unsafeDowncast($0, to: Model.self)[keyPath: keyPath] },
            set: { model, related in
                if related == nil {
                    unsafeDowncast(model, to: Model.self)[keyPath: keyPath] = nil
                    return true
                }
                guard let r = related as? R else { return false }
                unsafeDowncast(model, to: Model.self)[keyPath: keyPath] = r
                return true
            },
            relatedType: R.self))
    }
}

/// A model's by-name accessor table (see ``AmigoModel/ormFields``).
public struct ORMFieldTable {
    let modelType: AmigoModel.Type?
    let entries: [String: FieldAccessor]

    /// An empty table (a model that maps no properties).
    public init() {
        modelType = nil
        entries = [:]
    }

    /// The table of `model`'s properties.
    public init<M: AmigoModel>(_ model: M.Type, _ properties: ORMProperty<M>...) {
        modelType = model
        var entries: [String: FieldAccessor] = [:]
        for p in properties { entries[p.name.lowercased()] = p.accessor }
        self.entries = entries
    }
}
