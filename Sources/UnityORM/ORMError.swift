/// A fault of the ORM flavor itself (database faults stay `DatabaseError` cases). Every
/// message says what is wrong and what to do.
public enum ORMError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The mapping of a model is wrong (a missing accessor, a through model without its two
    /// foreign keys, a name PostgreSQL would truncate, ...). Found when ``Amigo`` is created.
    case mapping(String)
    /// A type was used that no ``ORMModel`` given to ``Amigo`` maps.
    case unmappedType(String)
    /// A relationship name the model does not declare.
    case unknownRelationship(model: String, name: String)
    /// A column (or dotted path) the model does not have, in a filter or an order.
    case unknownColumn(model: String, name: String)
    /// A filter string that does not parse: `position` is the 0-based character offset.
    case filterSyntax(filter: String, position: Int, message: String)
    /// A literal in a filter that cannot be converted to the compared column's type.
    case filterValue(filter: String, column: String, message: String)
    /// A value read from or written to the database that does not fit the model's property.
    case conversion(model: String, column: String, message: String)
    /// `relationship(...).add/delete` on a many-to-many declared with a through model: add
    /// or delete the through model's rows instead.
    case throughRelationship(model: String, name: String)
    /// The operation is not possible in this state (a session used after it was closed,
    /// an object that must have been saved first, ...).
    case misuse(String)

    /// The message.
    public var description: String {
        switch self {
        case .mapping(let m): return "ORM mapping error: \(m)"
        case .unmappedType(let t): return "\(t) is not mapped: pass an ORMModel for it to Amigo([...])"
        case .unknownRelationship(let model, let name):
            return "\(model) has no relationship named \"\(name)\": declare it with OneToMany/ManyToMany in its ORMModel"
        case .unknownColumn(let model, let name):
            return "\(model) has no column \"\(name)\" (use a mapped column name, or a foreign key path such as \"dog.label\")"
        case .filterSyntax(let filter, let position, let message):
            return "filter \"\(filter)\" does not parse at position \(position): \(message)"
        case .filterValue(let filter, let column, let message):
            return "filter \"\(filter)\": the value compared with \(column) \(message)"
        case .conversion(let model, let column, let message):
            return "\(model).\(column): \(message)"
        case .throughRelationship(let model, let name):
            return "\(model).\(name) is a many-to-many with a through model: add or delete the through model's objects instead"
        case .misuse(let m): return m
        }
    }
}
