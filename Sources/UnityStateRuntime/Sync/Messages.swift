import Foundation

/// The messages `UpdateConsumer` and `RequestProcessor` exchange, encoded with the encoder
/// both are given. Each carries its kind, so data of another kind is refused
/// (``StateError/invalidDataSupplied``), never misread.
enum MessageKind: String, Codable {
    case instanceStatusRequest, instanceStatusUpdate, instanceUpdateRequest, instanceUpdate
    case modelUpdateRequest, modelUpdate, command, commandResponse
    /// The records of `InMemoryDatabase.getEncodedHistory(until:)`.
    case history
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
    /// A `nil` of an optional, at this nesting depth (`Int??.some(nil)`: 1), which an encoding
    /// such as JSON cannot tell from the outer `nil`.
    var nilDepth: Int? = nil
    let date: Date?

    /// A value whose column the caller fills in.
    init(property: PropertyKey, date: Date?) {
        self.property = property
        self.date = date
    }

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
        } else if let depth = Self.nilDepth(of: value) {
            nilDepth = depth
        } else {
            self.value = try encoder.encode(value)
        }
    }

    /// The depth of the `nil` `value` is, if it is one (nil when it holds a value).
    private static func nilDepth(of value: Any) -> Int? {
        var current = value
        var depth = 0
        while let optional = current as? any StateOptionalValue {
            guard let wrapped = optional.wrappedAny else { return depth }
            current = wrapped
            depth += 1
        }
        return nil
    }

    /// The value as a `Value`, from its message form; throws when it was sent as another type.
    func decoded<Value: Decodable>(_ type: Value.Type, decoder: any GenericDecoder) throws -> Value {
        if Value.self == String.self, let text { return unsafeBitCast(text, to: Value.self) }
        if Value.self == Int.self, let integer { return unsafeBitCast(integer, to: Value.self) }
        if Value.self == Double.self, let real { return unsafeBitCast(real, to: Value.self) }
        if Value.self == Bool.self, let boolean { return unsafeBitCast(boolean, to: Value.self) }
        if let nilDepth {
            guard let empty = stateNil(Value.self, atDepth: nilDepth) else {
                throw StateError.decodingFailed(error: "a nil was sent for \(Value.self)")
            }
            return empty
        }
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

    init(model: ModelKey, instances: [InstanceUpdateData], next: InstanceKey?) {
        self.model = model
        self.instances = instances
        self.next = next
    }

    // A page travels by columns: a few arrays of plain values instead of a container per
    // instance, status and property, which is what an encoder spends its time on. The integer
    // columns (doubles as their bit patterns, booleans as 0 / 1) go as one string of decimal
    // numbers each: an encoder spends as long on one array element as on a whole string. Dates go as
    // `timeIntervalSinceReferenceDate`, every bit kept, each distinct one once (`dateValues`: the
    // writes of one commit share their date), referred to by index from `statusDates` and
    // `dates` only where there is one: a flag in the status or form column says so.
    private enum CodingKeys: String, CodingKey {
        case model, next, instances, statuses, statusDates, propertyCounts, properties, forms, dates, dateValues
        case texts, integers, reals, booleans, data
    }

    /// How a property's value travels: which column holds it. In the forms column it is
    /// `form * 2 + 1` when a date follows in the dates column, `form * 2` otherwise.
    private enum Form: Int {
        case data = 0, text = 1, integer = 2, real = 3, boolean = 4
        /// A nil, its depth in the integers.
        case null = 5
    }

    func encode(to encoder: Encoder) throws {
        // statuses: 0 for none, else `raw * 2 + 1` with a date, `raw * 2` without.
        var statuses: [Int] = [], statusDates: [Int] = [], propertyCounts: [Int] = []
        var properties: [Int] = [], forms: [Int] = [], dates: [Int] = []
        var dateValues: [Double] = [], dateIndex: [UInt64: Int] = [:]
        func index(of date: Date) -> Int {
            let seconds = date.timeIntervalSinceReferenceDate
            if let found = dateIndex[seconds.bitPattern] { return found }
            dateIndex[seconds.bitPattern] = dateValues.count
            dateValues.append(seconds)
            return dateValues.count - 1
        }
        var texts: [String] = [], integers: [Int] = [], reals: [Double] = [], booleans: [Bool] = [], data: [Data] = []
        for update in instances {
            if let status = update.status {
                statuses.append(Int(status.status.rawValue) * 2 + (status.date == nil ? 0 : 1))
                if let date = status.date { statusDates.append(index(of: date)) }
            } else {
                statuses.append(0)
            }
            propertyCounts.append(update.properties.count)
            for property in update.properties {
                properties.append(property.property)
                let form: Form
                if let text = property.text {
                    form = .text
                    texts.append(text)
                } else if let integer = property.integer {
                    form = .integer
                    integers.append(integer)
                } else if let real = property.real {
                    form = .real
                    reals.append(real)
                } else if let boolean = property.boolean {
                    form = .boolean
                    booleans.append(boolean)
                } else if let depth = property.nilDepth {
                    form = .null
                    integers.append(depth)
                } else {
                    form = .data
                    data.append(property.value ?? Data())
                }
                forms.append(form.rawValue * 2 + (property.date == nil ? 0 : 1))
                if let date = property.date { dates.append(index(of: date)) }
            }
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(model, forKey: .model)
        try container.encodeIfPresent(next, forKey: .next)
        try container.encode(PackedIntegers(instances.map(\.instance)), forKey: .instances)
        try container.encode(PackedIntegers(statuses), forKey: .statuses)
        try container.encode(PackedIntegers(statusDates), forKey: .statusDates)
        try container.encode(PackedIntegers(propertyCounts), forKey: .propertyCounts)
        try container.encode(PackedIntegers(properties), forKey: .properties)
        try container.encode(PackedIntegers(forms), forKey: .forms)
        try container.encode(PackedIntegers(dates), forKey: .dates)
        try container.encode(dateValues, forKey: .dateValues)
        try container.encode(texts, forKey: .texts)
        try container.encode(PackedIntegers(integers), forKey: .integers)
        try container.encode(PackedIntegers(reals.map { Int(Int64(bitPattern: $0.bitPattern)) }), forKey: .reals)
        try container.encode(PackedIntegers(booleans.map { $0 ? 1 : 0 }), forKey: .booleans)
        try container.encode(data, forKey: .data)
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        model = try container.decode(ModelKey.self, forKey: .model)
        next = try container.decodeIfPresent(InstanceKey.self, forKey: .next)
        let ids = try container.decode(PackedIntegers.self, forKey: .instances).values
        let statuses = try container.decode(PackedIntegers.self, forKey: .statuses).values
        let statusDates = try container.decode(PackedIntegers.self, forKey: .statusDates).values
        let propertyCounts = try container.decode(PackedIntegers.self, forKey: .propertyCounts).values
        let properties = try container.decode(PackedIntegers.self, forKey: .properties).values
        let forms = try container.decode(PackedIntegers.self, forKey: .forms).values
        let dates = try container.decode(PackedIntegers.self, forKey: .dates).values
        let dateValues = try container.decode([Double].self, forKey: .dateValues)
        let texts = try container.decode([String].self, forKey: .texts)
        let integers = try container.decode(PackedIntegers.self, forKey: .integers).values
        let reals = try container.decode(PackedIntegers.self, forKey: .reals).values.map { Double(bitPattern: UInt64(bitPattern: Int64($0))) }
        let booleans = try container.decode(PackedIntegers.self, forKey: .booleans).values.map { $0 != 0 }
        let data = try container.decode([Data].self, forKey: .data)
        func corrupt(_ what: String) -> DecodingError {
            .dataCorruptedError(forKey: .instances, in: container, debugDescription: "a model update page whose \(what)")
        }
        guard statuses.count == ids.count, propertyCounts.count == ids.count, forms.count == properties.count,
              propertyCounts.allSatisfy({ $0 >= 0 }), propertyCounts.reduce(0, +) == properties.count else {
            throw corrupt("columns have different lengths")
        }
        /// The next value of `column`, or a corrupt-page error naming it.
        func take<T>(_ column: [T], _ cursor: inout Int, _ name: String) throws -> T {
            guard cursor < column.count else { throw corrupt("\(name) are missing") }
            defer { cursor += 1 }
            return column[cursor]
        }
        /// The date a `dates` or `statusDates` entry refers to.
        func dateAt(_ column: [Int], _ cursor: inout Int, _ name: String) throws -> Date {
            let index = try take(column, &cursor, name)
            guard dateValues.indices.contains(index) else { throw corrupt("\(name) refer to no date") }
            return Date(timeIntervalSinceReferenceDate: dateValues[index])
        }
        var cursors = (text: 0, integer: 0, real: 0, boolean: 0, data: 0, date: 0, statusDate: 0)
        var index = 0
        var updates: [InstanceUpdateData] = []
        updates.reserveCapacity(ids.count)
        for (row, id) in ids.enumerated() {
            var status: StatusEntry?
            if statuses[row] != 0 {
                let code = statuses[row]
                guard code > 0, let value = UInt8(exactly: code / 2).flatMap(InstanceStatus.init(rawValue:)) else {
                    throw corrupt("status \(code) is unknown")
                }
                let date = code % 2 == 1 ? try dateAt(statusDates, &cursors.statusDate, "status dates") : nil
                status = StatusEntry(instance: id, status: value, date: date)
            }
            var values: [PropertyValueData] = []
            values.reserveCapacity(propertyCounts[row])
            for _ in 0..<propertyCounts[row] {
                let code = forms[index]
                guard code >= 0, let form = Form(rawValue: code / 2) else { throw corrupt("value form \(code) is unknown") }
                let date = code % 2 == 1 ? try dateAt(dates, &cursors.date, "dates") : nil
                var value = PropertyValueData(property: properties[index], date: date)
                switch form {
                case .text: value.text = try take(texts, &cursors.text, "texts")
                case .integer: value.integer = try take(integers, &cursors.integer, "integers")
                case .real: value.real = try take(reals, &cursors.real, "doubles")
                case .boolean: value.boolean = try take(booleans, &cursors.boolean, "booleans")
                case .null: value.nilDepth = try take(integers, &cursors.integer, "integers")
                case .data: value.value = try take(data, &cursors.data, "encoded values")
                }
                values.append(value)
                index += 1
            }
            updates.append(InstanceUpdateData(model: model, instance: id, status: status, properties: values))
        }
        instances = updates
    }
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
        // One decoding when all is well; the kind alone is read only to tell why it failed.
        let envelope: Envelope<Payload>
        do {
            envelope = try decoder.decode(Envelope<Payload>.self, from: data)
        } catch {
            guard let found = try? decoder.decode(EnvelopeKind.self, from: data), found.kind == kind else {
                throw .invalidDataSupplied
            }
            throw .decodingFailed(error: String(describing: error))
        }
        guard envelope.kind == kind else { throw .invalidDataSupplied }
        return envelope.payload
    }
}

/// A column of integers as one string of decimal numbers separated by commas ("" when empty):
/// one value for the message's encoder instead of one per number.
struct PackedIntegers: Codable {
    var values: [Int]

    init(_ values: [Int]) {
        self.values = values
    }

    func encode(to encoder: Encoder) throws {
        var text = ""
        text.reserveCapacity(values.count * 4)
        for (i, value) in values.enumerated() {
            if i > 0 { text.append(",") }
            text.append(String(value))
        }
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        var values: [Int] = []
        var current = 0
        var negative = false
        var digits = 0
        func corrupt() -> DecodingError {
            .dataCorruptedError(in: container, debugDescription: "not a list of integers: \(text.prefix(40))")
        }
        func finish() throws {
            guard digits > 0 else { throw corrupt() }
            values.append(negative ? -current : current)
            current = 0
            negative = false
            digits = 0
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                let (times, overflow1) = current.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
                // Int.min's magnitude is one more than Int.max: accumulate it negated.
                if overflow1 || overflow2 {
                    guard negative, current == Int.max / 10, byte == UInt8(ascii: "8") else { throw corrupt() }
                    current = Int.min
                    negative = false
                    digits += 1
                    continue
                }
                current = sum
                digits += 1
            case UInt8(ascii: "-"):
                guard digits == 0, !negative else { throw corrupt() }
                negative = true
            case UInt8(ascii: ","):
                try finish()
            default:
                throw corrupt()
            }
        }
        if !text.isEmpty { try finish() }
        self.values = values
    }
}
