import Foundation
import Logging
import Unity

/// One failed check: the model, the field (`key`), the message name (`blank`, `tooLow`,
/// `tooHigh`, `taken`, `unchecked`, or a custom one) and data to interpolate into the
/// localized text. Messages are stored as Tailor stores them; only the localization keys
/// are snake-cased (see ``localizationKeys``).
public struct ValidationError: Sendable, Hashable, CustomStringConvertible {
    /// The model the error is on (`hat`).
    public let modelName: String
    /// The field with the error (`color`, `brimSize`).
    public let key: String
    /// The message name (`blank`).
    public let message: String
    /// Details interpolated into the localized message (`["min": "5"]`).
    public let data: [String: String]

    /// Creates an error.
    public init(modelName: String, key: String, message: String, data: [String: String] = [:]) {
        self.modelName = modelName
        self.key = key
        self.message = message
        self.data = data
    }

    /// The keys looked up, in order, for the localized text: `hat.errors.color.blank`,
    /// `hat.errors.blank`, `model.errors.color.blank`, `model.errors.blank`. The key and the
    /// message are snake-cased (`brimSize` → `brim_size`, `tooLow` → `too_low`).
    public var localizationKeys: [String] {
        let key = snakeCased(self.key)
        let message = snakeCased(self.message)
        return [
            "\(modelName).errors.\(key).\(message)",
            "\(modelName).errors.\(message)",
            "model.errors.\(key).\(message)",
            "model.errors.\(message)",
        ]
    }

    /// The localized message: the first of ``localizationKeys`` that `localization` has, with
    /// ``data`` interpolated (`\(min)` becomes the value of `min`); the raw message when none.
    public func localize(_ localization: some LocalizationSource) -> String {
        for key in localizationKeys {
            if let text = localization.fetch(key, interpolations: data) { return text }
        }
        return message
    }

    /// `model.key message`.
    public var description: String { "\(modelName).\(key) \(message)" }
}

/// A table of localized strings that validation messages are looked up in. Plug in your own;
/// ``DictionaryLocalization`` keeps them in memory.
public protocol LocalizationSource: Sendable {
    /// The text for `key`, or nil when the table has none.
    func fetch(_ key: String) -> String?
}

extension LocalizationSource {
    /// The text for `key` with each `\(name)` in it replaced by `interpolations[name]`.
    public func fetch(_ key: String, interpolations: [String: String]) -> String? {
        guard var text = fetch(key) else { return nil }
        for (name, value) in interpolations {
            text = text.replacingOccurrences(of: "\\(\(name))", with: value)
        }
        return text
    }
}

/// A string table in memory: `DictionaryLocalization(["model.errors.blank": "can't be blank"])`.
public struct DictionaryLocalization: LocalizationSource {
    /// The texts by key.
    public let strings: [String: String]
    /// Creates a table.
    public init(_ strings: [String: String]) { self.strings = strings }
    /// The text for `key`.
    public func fetch(_ key: String) -> String? { strings[key] }
}

/// Checks on a model, collected as ``ValidationError``s. Each check returns a new validation,
/// so they chain:
///
/// ```swift
/// let validation = Validation("hat")
///     .validate(presenceOf: "color", hat.color)
///     .validate("brimSize", hat.brimSize, inRange: 5...15)
/// if validation.valid { hat.save() }
/// ```
public struct Validation: Sendable, Equatable {
    /// The model's name, the first part of every error's localization key.
    public let modelName: String
    /// The errors collected so far.
    public let errors: [ValidationError]

    /// A validation of the model called `modelName`, with no errors yet.
    public init(_ modelName: String, errors: [ValidationError] = []) {
        self.modelName = modelName
        self.errors = errors
    }

    /// A validation of a record type, named by its ``Persistable/modelName()``.
    public init<Record: Persistable>(_ recordType: Record.Type, errors: [ValidationError] = []) {
        self.init(Record.modelName(), errors: errors)
    }

    /// True when no check failed.
    public var valid: Bool { errors.isEmpty }

    /// The errors on `key`.
    public subscript(key: String) -> [ValidationError] { errors.filter { $0.key == key } }

    /// This validation with one more error.
    public func withError(_ key: String, _ message: String, data: [String: String] = [:]) -> Validation {
        Validation(modelName, errors: errors + [ValidationError(modelName: modelName, key: key, message: message, data: data)])
    }

    /// Fails with `blank` when `value` is nil (an optional holding nil included) or an empty string.
    public func validate(presenceOf key: String, _ value: Any?) -> Validation {
        guard let value, !isNilOptional(value) else { return withError(key, "blank") }
        if let string = value as? String, string.isEmpty { return withError(key, "blank") }
        return self
    }

    /// Fails with `tooLow` (data `min`) or `tooHigh` (data `max`) when `value` is outside the
    /// closed range; both bounds are allowed.
    public func validate<T: Comparable & CustomStringConvertible>(_ key: String, _ value: T, inRange range: ClosedRange<T>) -> Validation {
        if value < range.lowerBound { return withError(key, "tooLow", data: ["min": range.lowerBound.description]) }
        if value > range.upperBound { return withError(key, "tooHigh", data: ["max": range.upperBound.description]) }
        return self
    }

    /// Fails with `tooLow` (data `min`) or `tooHigh` (data `max`, the excluded upper bound)
    /// when `value` is outside the half-open range; the lower bound is allowed.
    public func validate<T: Comparable & CustomStringConvertible>(_ key: String, _ value: T, inRange range: Range<T>) -> Validation {
        if value < range.lowerBound { return withError(key, "tooLow", data: ["min": range.lowerBound.description]) }
        if value >= range.upperBound { return withError(key, "tooHigh", data: ["max": range.upperBound.description]) }
        return self
    }

    /// Tailor's name for ``validate(_:_:inRange:)-(_,_,ClosedRange<T>)``.
    public func validate<T: Comparable & CustomStringConvertible>(_ key: String, _ value: T, inBounds range: ClosedRange<T>) -> Validation {
        validate(key, value, inRange: range)
    }

    /// Tailor's name for ``validate(_:_:inRange:)-(_,_,Range<T>)``.
    public func validate<T: Comparable & CustomStringConvertible>(_ key: String, _ value: T, inBounds range: Range<T>) -> Validation {
        validate(key, value, inRange: range)
    }

    /// Runs a custom check that answers its errors as (key, message, data) triples.
    public func validate(block: () -> [(String, String, [String: String])]) -> Validation {
        let added = block().map { ValidationError(modelName: modelName, key: $0.0, message: $0.1, data: $0.2) }
        return Validation(modelName, errors: errors + added)
    }

    /// Fails with `taken` when another row of the record's table has all of `fields` (column
    /// names) equal to the values given. A nil value matches a stored NULL (as Tailor, unlike
    /// SQL's `=`); the record's own row (by id) is ignored. The error's key is the column names,
    /// sorted, joined with `_`. Asks the database (the default when nil); when it cannot, the
    /// failure is logged and the validation fails with `unchecked`, so nothing is saved on an
    /// unverified uniqueness.
    public func validate<Record: Persistable>(uniquenessOf fields: [String: (any DatabaseValueConvertible)?],
                                              on record: Record, _ database: Database? = nil) -> Validation {
        if fields.isEmpty { return self }
        let compositeKey = fields.keys.sorted().joined(separator: "_")
        var query = Query<Record>().filter(fields)
        if let id = record.id {
            query = query.filter(SQLExpression.column(Record.tableName, "id").notEquals(.bind(.integer(Int64(id)))))
        }
        do {
            let db = try DefaultDatabase.resolve(database)
            if try !query.isEmptyOrThrow(db) { return withError(compositeKey, "taken") }
            return self
        } catch {
            let logger = (database ?? DefaultDatabase.current)?.configuration.logger ?? persistableLogger
            logger.error("uniqueness of \(compositeKey) on \(Record.tableName) could not be checked: \(error)")
            return withError(compositeKey, "unchecked", data: ["error": "\(error)"])
        }
    }
}

extension Query {
    /// True when the query has no records; throws the database's error.
    public func isEmptyOrThrow(_ database: Database? = nil) throws -> Bool {
        let db = try DefaultDatabase.resolve(database)
        var select = limit(1).statement
        select.columns = [.expression(.literal(.integer(1)), alias: nil)]
        return try reading(db) { try $0.fetchOne(.select(select)) } == nil
    }
}

/// True for an `Optional.none` boxed in `Any`.
private func isNilOptional(_ value: Any) -> Bool {
    let mirror = Mirror(reflecting: value)
    return mirror.displayStyle == .optional && mirror.children.isEmpty
}
