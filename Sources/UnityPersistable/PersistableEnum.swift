import Unity

/// Tailor's persistable enum: stored as its snake-cased case name (`darkBlue` / `DarkBlue` →
/// `"dark_blue"`), even when it also has a `String` raw value. Conforming is the opt-in to this
/// mapping; an enum that is only `RawRepresentable` keeps the core's (its raw value).
///
/// ```swift
/// enum HatStyle: StringPersistableEnum {
///     case fedora, darkBlue
///     static let cases: [HatStyle] = [.fedora, .darkBlue]
/// }
/// ```
public protocol StringPersistableEnum: DatabaseValueConvertible {
    /// Every case, for reading a stored name back.
    static var cases: [Self] { get }
}

extension StringPersistableEnum {
    /// The stored name: the snake-cased case name.
    public var databaseName: String { snakeCased(String(describing: self)) }
    /// `.text` of the stored name.
    public var databaseValue: DatabaseValue { .text(databaseName) }
    /// The case whose stored name the text is; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? { persistableCase(value) }
    /// Text.
    public static var columnType: ColumnType { .text }

    static func persistableCase(_ value: DatabaseValue) -> Self? {
        guard case .text(let name) = value else { return nil }
        return cases.first { $0.databaseName == name }
    }
}

extension StringPersistableEnum where Self: RawRepresentable, Self.RawValue: DatabaseValueConvertible {
    /// `.text` of the snake-cased case name, not the raw value: the enum opted into Tailor's mapping.
    public var databaseValue: DatabaseValue { .text(databaseName) }
    /// The case whose stored name the text is.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? { persistableCase(value) }
    /// Text.
    public static var columnType: ColumnType { .text }
}
