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

struct PropertyValueData: Codable {
    let property: PropertyKey
    let value: Data
    let date: Date?
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
