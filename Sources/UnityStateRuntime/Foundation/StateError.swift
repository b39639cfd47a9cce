/// The errors of the state flavor: synchronization, commands, and failed writes of the SQL
/// stores. Each says what failed and carries the ids involved; none is ever a crash.
public enum StateError: Error, Sendable {

    /// No `@Command` with this id exists on the model.
    case unknownCommand(id: Int)

    /// A command was sent with fewer arguments than its function takes.
    case missingArgument(index: Int)

    /// A command argument could not be decoded as the parameter's type.
    case argumentDecodingFailed(index: Int, error: String)

    /// A command argument could not be encoded.
    case argumentEncodingFailed(index: Int, error: String)

    /// A command function threw; the message is its error's description.
    case commandFailed(id: Int, error: String)

    /// A property value in an update could not be decoded as the property's type.
    case propertyDecodingFailed(path: Path, error: String)

    /// The instance does not exist in the database.
    case missingInstance(model: ModelKey, id: InstanceKey)

    /// The model id is not in the model map given to the consumer or processor.
    case unknownModel(id: ModelKey)

    /// The data is not a message of the expected kind.
    case invalidDataSupplied

    /// A message could not be encoded.
    case encodingFailed(error: String)

    /// A message could not be decoded.
    case decodingFailed(error: String)

    /// A SQL store could not read or write; the core's error says why (constraint, lost
    /// connection, disk full, ...). The writes of the failed transaction were not applied.
    case store(DatabaseError)

    /// A key-path filter names something that is not one stored property of the model.
    case invalidFilter(String)

    /// A stored value could not be encoded or decoded by the store's encoder / decoder.
    case valueCodingFailed(path: Path, error: String)
}
