import Foundation

/// How a model type's key paths map to a table, for compiling Foundation's `Predicate` and
/// `SortDescriptor` to SQL: which key path is which column, which is a to-one relationship
/// (a foreign key to another model's table) and which a to-many one.
///
/// Each flavor builds the schema of its models from what it already declares (`@RowCoded`'s
/// `columnName(for:)`, an ORM mapping, a `Persistable` record's mapping), so users rarely
/// write one; a schema of your own is a few lines:
///
/// ```swift
/// let authors = PredicateSchema(table: "author", key: "id")
///     .column(\Author.name, "name")
/// let books = PredicateSchema(table: "book", key: "id")
///     .column(\Book.title, "title")
///     .column(\Book.price, "price", isDecimal: true)
///     .toOne(\Book.author, foreignKey: "author_id", target: { authors })
/// ```
///
/// Key paths are matched by equality (never by their description), so a key path the schema
/// does not list is an error naming it, before any SQL runs.
public struct PredicateSchema: Sendable {
    /// A column a key path reads.
    public struct Column: Sendable, Hashable {
        /// The column's name (quoted as an identifier when rendered).
        public var name: String
        /// Whether the property is a Swift `Decimal`: compared and ordered as a number on every
        /// backend, whatever the column's declared type (see `SQLExpression.decimal`).
        public var isDecimal: Bool

        /// A column called `name`.
        public init(_ name: String, isDecimal: Bool = false) {
            self.name = name
            self.isDecimal = isDecimal
        }
    }

    /// A to-one relationship: this table's `foreignKey` column holds the target's
    /// `targetColumn` (its key by default), NULL when there is no target.
    public struct ToOne: Sendable {
        /// This table's column that refers to the target row.
        public var foreignKey: String
        /// The target's column the foreign key holds; nil: the target's key.
        public var targetColumn: String?
        /// The target model's schema (a closure, so that two schemas can refer to each other).
        public var target: @Sendable () -> PredicateSchema
    }

    /// A to-many relationship: the target rows whose `foreignKey` holds this row's
    /// `parentColumn` (its key by default), or the rows a link table pairs with this one.
    public struct ToMany: Sendable {
        /// Where the target rows are found.
        public enum Link: Sendable, Hashable {
            /// The target table's column that refers to this row.
            case foreignKey(String)
            /// A link table: its `parentColumn` refers to this row, its `targetColumn` to the
            /// target row's key.
            case through(table: String, parentColumn: String, targetColumn: String)
        }
        /// How the target rows refer to this one.
        public var link: Link
        /// This table's column that the target rows (or the link table) refer to; nil: the key.
        public var parentColumn: String?
        /// The target model's schema.
        public var target: @Sendable () -> PredicateSchema
    }

    enum Member: Sendable {
        case column(Column)
        case toOne(ToOne)
        case toMany(ToMany)
    }

    /// The table's name.
    public var table: String { didSet { serial = PredicateSchemaSerial.next() } }
    /// The table's key column: what to-many relationships and link tables refer to.
    public var key: String { didSet { serial = PredicateSchemaSerial.next() } }
    /// Key paths are immutable values, safe to share; Swift 6 does not yet say `AnyKeyPath`
    /// is `Sendable`, hence the box.
    struct Table: @unchecked Sendable {
        var members: [AnyKeyPath: Member] = [:]
        var columnResolver: ((AnyKeyPath) -> Column?)?
    }
    var table_ = Table()
    var members: [AnyKeyPath: Member] {
        get { table_.members }
        set { table_.members = newValue }
    }
    var columnResolver: ((AnyKeyPath) -> Column?)? {
        get { table_.columnResolver }
        set {
            table_.columnResolver = newValue
            serial = PredicateSchemaSerial.next()
        }
    }
    /// What a user should do about a key path without a column (said in the error).
    public var missingColumnAdvice: String?
    /// Tells this schema apart from others in the translation memos; a new one at every change.
    var serial = PredicateSchemaSerial.next()

    /// A schema for the table `table`, whose key column is `key`.
    public init(table: String, key: String = "id") {
        self.table = table
        self.key = key
    }

    /// A schema whose columns are found by `resolve` (for example a model's generated
    /// `columnName(for:)`), beside those listed with ``column(_:_:isDecimal:)``.
    public init(table: String, key: String = "id", columns resolve: @escaping @Sendable (AnyKeyPath) -> Column?) {
        self.init(table: table, key: key)
        self.columnResolver = resolve
    }

    /// Adds the column that `keyPath` reads.
    public func column<Root, Value>(_ keyPath: KeyPath<Root, Value>, _ name: String, isDecimal: Bool? = nil) -> PredicateSchema {
        var copy = self
        copy.serial = PredicateSchemaSerial.next()
        let decimal = isDecimal ?? (Value.self == Decimal.self || Value.self == Decimal?.self)
        copy.members[keyPath] = .column(Column(name, isDecimal: decimal))
        return copy
    }

    /// Adds a to-one relationship: `keyPath` reads the target model, which this table's
    /// `foreignKey` column refers to (by the target's `targetColumn`, its key by default).
    public func toOne<Root, Value>(_ keyPath: KeyPath<Root, Value>, foreignKey: String, targetColumn: String? = nil,
                                   target: @escaping @Sendable () -> PredicateSchema) -> PredicateSchema {
        var copy = self
        copy.serial = PredicateSchemaSerial.next()
        copy.members[keyPath] = .toOne(ToOne(foreignKey: foreignKey, targetColumn: targetColumn, target: target))
        return copy
    }

    /// Adds a to-many relationship: `keyPath` reads a collection of target models, which refer
    /// to this row through `link` (by this table's `parentColumn`, its key by default).
    public func toMany<Root, Value: Sequence>(_ keyPath: KeyPath<Root, Value>, _ link: ToMany.Link, parentColumn: String? = nil,
                                              target: @escaping @Sendable () -> PredicateSchema) -> PredicateSchema {
        var copy = self
        copy.serial = PredicateSchemaSerial.next()
        copy.members[keyPath] = .toMany(ToMany(link: link, parentColumn: parentColumn, target: target))
        return copy
    }

    func member(_ keyPath: AnyKeyPath) -> Member? {
        if let member = members[keyPath] { return member }
        return columnResolver?(keyPath).map(Member.column)
    }
}

/// A `Predicate` or `SortDescriptor` that cannot become SQL: a call Unity does not translate
/// (an arbitrary function, a regex, a type cast), a key path the model maps to no column, or a
/// localized string comparison. Thrown before any SQL runs; nothing is filtered in memory.
public struct PredicateTranslationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The expression that could not be translated, as Foundation describes it.
    public var expression: String
    /// Why, and what to write instead where there is something.
    public var reason: String

    /// An error about `expression`.
    public init(expression: String, reason: String) {
        self.expression = expression
        self.reason = reason
    }

    public var description: String { "cannot translate \(expression) to SQL: \(reason)" }
}
