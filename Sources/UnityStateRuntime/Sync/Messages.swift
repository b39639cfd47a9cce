import Foundation

/// The messages `UpdateConsumer` and `RequestProcessor` exchange, encoded with the encoder
/// both are given. Each carries its kind, so data of another kind is refused
/// (``StateError/invalidDataSupplied``), never misread.
enum MessageKind: String, Codable {
    case instanceStatusRequest, instanceStatusUpdate, instanceUpdateRequest, instanceUpdate
    case modelUpdateRequest, modelUpdate, command, commandResponse
}

struct Envelope<Payload: Codable>: Codable {
    let kind: MessageKind
    let payload: Payload
}

/// Only the kind, to check it before decoding the payload.
struct EnvelopeKind: Codable {
    let kind: MessageKind
}

struct InstanceStatusRequestData: Codable {
    let model: ModelKey
    let after: Date?
}

struct StatusEntry: Codable, Equatable {
    let instance: InstanceKey
    let status: InstanceStatus
    let date: Date?
}

struct InstanceStatusUpdateData: Codable {
    let model: ModelKey
    let instances: [StatusEntry]
}

struct InstanceUpdateRequestData: Codable {
    let model: ModelKey
    let instance: InstanceKey
    let after: Date?
}

/// One property's value in a message. Strings, integers, doubles and booleans travel as
/// themselves, inside the message's own encoding; any other value as the bytes the
/// synchronization's encoder made of it (one nested encoding per value, which for the common
/// types would cost more than the rest of the message).
struct PropertyValueData: Codable {
    let property: PropertyKey
    var value: Data? = nil
    var text: String? = nil
    var integer: Int? = nil
    var real: Double? = nil
    var boolean: Bool? = nil
    let date: Date?

    /// `value` in its message form; `encoder` makes the bytes of the other types.
    init<Value: Encodable>(property: PropertyKey, value: Value, date: Date?, encoder: any GenericEncoder) throws {
        self.property = property
        self.date = date
        if Value.self == String.self {
            text = unsafeBitCast(value, to: String.self)
        } else if Value.self == Int.self {
            integer = unsafeBitCast(value, to: Int.self)
        } else if Value.self == Double.self {
            real = unsafeBitCast(value, to: Double.self)
        } else if Value.self == Bool.self {
            boolean = unsafeBitCast(value, to: Bool.self)
        } else {
            self.value = try encoder.encode(value)
        }
    }

    /// The value as a `Value`, from its message form; throws when it was sent as another type.
    func decoded<Value: Decodable>(_ type: Value.Type, decoder: any GenericDecoder) throws -> Value {
        if Value.self == String.self, let text { return unsafeBitCast(text, to: Value.self) }
        if Value.self == Int.self, let integer { return unsafeBitCast(integer, to: Value.self) }
        if Value.self == Double.self, let real { return unsafeBitCast(real, to: Value.self) }
        if Value.self == Bool.self, let boolean { return unsafeBitCast(boolean, to: Value.self) }
        guard let value else {
            throw StateError.decodingFailed(error: "the value was sent as another type than \(Value.self)")
        }
        return try decoder.decode(Value.self, from: value)
    }
}

struct InstanceUpdateData: Codable {
    let model: ModelKey
    let instance: InstanceKey
    let status: StatusEntry?
    let properties: [PropertyValueData]

    /// What `limit` counts: the status and each property.
    var updateCount: Int { properties.count + (status == nil ? 0 : 1) }
}

struct ModelUpdateRequestData: Codable {
    let model: ModelKey
    let after: Date?
    let limit: Int
    let startingAt: InstanceKey?
}

struct ModelUpdateData: Codable {
    let model: ModelKey
    let instances: [InstanceUpdateData]
    /// The instance the next request starts at; nil when this was the last page.
    let next: InstanceKey?
}

struct CommandData: Codable {
    let model: ModelKey
    let instance: InstanceKey
    let command: Int
    let arguments: [Data]
}

/// A ``StateError`` as it travels in a command response.
struct CommandErrorData: Codable {
    let code: String
    let id: Int?
    let message: String?

    init(_ error: StateError) {
        switch error {
        case .unknownCommand(let id): (code, self.id, message) = ("unknownCommand", id, nil)
        case .missingArgument(let index): (code, id, message) = ("missingArgument", index, nil)
        case .argumentDecodingFailed(let index, let error): (code, id, message) = ("argumentDecodingFailed", index, error)
        case .commandFailed(let command, let error): (code, id, message) = ("commandFailed", command, error)
        case .missingInstance(_, let instance): (code, id, message) = ("missingInstance", instance, nil)
        case .unknownModel(let model): (code, id, message) = ("unknownModel", model, nil)
        default: (code, id, message) = ("failed", nil, String(describing: error))
        }
    }

    func error(model: ModelKey) -> StateError {
        switch code {
        case "unknownCommand": return .unknownCommand(id: id ?? 0)
        case "missingArgument": return .missingArgument(index: id ?? 0)
        case "argumentDecodingFailed": return .argumentDecodingFailed(index: id ?? 0, error: message ?? "")
        case "commandFailed": return .commandFailed(id: id ?? 0, error: message ?? "")
        case "missingInstance": return .missingInstance(model: model, id: id ?? 0)
        case "unknownModel": return .unknownModel(id: id ?? model)
        default: return .decodingFailed(error: message ?? code)
        }
    }
}

struct CommandResponseData: Codable {
    let model: ModelKey
    let error: CommandErrorData?
}

/// Encoding and decoding of the messages, with the errors of the state flavor.
struct MessageCoder {
    let encoder: any GenericEncoder
    let decoder: any GenericDecoder

    func encode<Payload: Codable>(_ kind: MessageKind, _ payload: Payload) throws(StateError) -> Data {
        do {
            return try encoder.encode(Envelope(kind: kind, payload: payload))
        } catch {
            throw .encodingFailed(error: String(describing: error))
        }
    }

    func decode<Payload: Codable>(_ kind: MessageKind, _ type: Payload.Type, from data: Data) throws(StateError) -> Payload {
        let found: EnvelopeKind
        do {
            found = try decoder.decode(EnvelopeKind.self, from: data)
        } catch {
            throw .invalidDataSupplied
        }
        guard found.kind == kind else { throw .invalidDataSupplied }
        do {
            return try decoder.decode(Envelope<Payload>.self, from: data).payload
        } catch {
            throw .decodingFailed(error: String(describing: error))
        }
    }
}
