import Foundation

/// Anything that can be listed in an ``ORMModel``: a ``Column``, an ``Index``, a
/// ``OneToMany`` or a ``ManyToMany``.
public protocol ORMMappingItem {}

/// A column's default, computed when an inserted object's property is unset (nil).
public typealias ORMDefaultValue = @Sendable () -> (any DatabaseValueConvertible)?

/// How a column's value is stored when it differs from the property's own mapping: a
/// `UUIDField` property is a lowercase string, the column a UUID (16 bytes / `uuid`).
enum ColumnCodec: Sendable {
    case plain
    case uuidString

    /// The value to bind for a property value.
    func toStorage(_ value: DatabaseValue) -> DatabaseValue? {
        switch self {
        case .plain: return value
        case .uuidString:
            switch value {
            case .null, .uuid: return value
            case .text(let s): return UUID(uuidString: s).map { .uuid($0) }
            case .blob: return UUID.fromDatabaseValue(value).map { .uuid($0) }
            default: return nil
            }
        }
    }

    /// The property value for a stored value.
    func fromStorage(_ value: DatabaseValue) -> DatabaseValue? {
        switch self {
        case .plain: return value
        case .uuidString:
            if value.isNull { return .null }
            return UUID.fromDatabaseValue(value).map { .text($0.uuidString.lowercased()) }
        }
    }
}

/// A column of an ``ORMModel``: `Column("label", type: String.self, indexed: true)` or a
/// foreign key, `Column("dog", type: ForeignKey(dog))`.
public struct Column: ORMMappingItem {
    /// The property (and, but for a foreign key, column) name.
    public let name: String
    let columnType: ColumnType?
    let foreignKey: ForeignKey?
    let codec: ColumnCodec
    /// True for the primary key.
    public let primaryKey: Bool
    /// True when the column has an index of its own.
    public let indexed: Bool
    /// True when the column accepts NULL (the default, as in Amigo).
    public let optional: Bool
    /// True when the column has a UNIQUE constraint.
    public let unique: Bool
    let defaultValue: ORMDefaultValue?

    /// A column storing values of `type` (String, Int16/32/64, Int, Date, Data, `[UInt8]`,
    /// Decimal, Double, Float, Bool or UUID) through the core's value mapping.
    public init<V: DatabaseValueConvertible>(_ name: String, type: V.Type, primaryKey: Bool = false, indexed: Bool = false,
                                             optional: Bool = true, unique: Bool = false, defaultValue: ORMDefaultValue? = nil) {
        self.init(name, columnType: V.columnType, foreignKey: nil, codec: .plain, primaryKey: primaryKey, indexed: indexed,
                  optional: optional, unique: unique, defaultValue: defaultValue)
    }

    /// A foreign key column: the property holds the related object, the table a column
    /// `<name>_<related primary key>` (indexed by default) that REFERENCES the related table.
    public init(_ name: String, type foreignKey: ForeignKey, primaryKey: Bool = false, indexed: Bool = true,
                optional: Bool = true, unique: Bool = false) {
        self.init(name, columnType: nil, foreignKey: foreignKey, codec: .plain, primaryKey: primaryKey, indexed: indexed,
                  optional: optional, unique: unique, defaultValue: nil)
    }

    init(_ name: String, columnType: ColumnType?, foreignKey: ForeignKey?, codec: ColumnCodec, primaryKey: Bool, indexed: Bool,
         optional: Bool, unique: Bool, defaultValue: ORMDefaultValue?) {
        self.name = name
        self.columnType = columnType
        self.foreignKey = foreignKey
        self.codec = codec
        self.primaryKey = primaryKey
        self.indexed = indexed
        self.optional = optional
        self.unique = unique
        self.defaultValue = defaultValue
    }
}

/// A UUID column: a lowercase RFC 4122 string on the model (any case accepted), 16 bytes on
/// SQLite and `uuid` on PostgreSQL. `defaultValue` is used when the property is unset.
public func UUIDField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                      unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, columnType: .uuid, foreignKey: nil, codec: .uuidString, primaryKey: primaryKey, indexed: indexed,
           optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A text column.
public func CharField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                      unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: String.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A boolean column.
public func BooleanField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                         unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: Bool.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A 64-bit integer column.
public func IntegerField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                         unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: Int.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A single-precision float column.
public func FloatField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                       unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: Float.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A double-precision float column.
public func DoubleField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                        unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: Double.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A bytes column (the property is `Data` or `[UInt8]`).
public func BinaryField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                        unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: Data.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// A timestamp column (the property is a `Date`), exact to the microsecond on both backends.
public func DateTimeField(_ name: String, primaryKey: Bool = false, indexed: Bool = false, optional: Bool = true,
                          unique: Bool = false, defaultValue: ORMDefaultValue? = nil) -> Column {
    Column(name, type: Date.self, primaryKey: primaryKey, indexed: indexed, optional: optional, unique: unique, defaultValue: defaultValue)
}

/// The target of a foreign key: a mapped model (its primary key) or one of its columns
/// (`ForeignKey(dog.table.c["id"])`).
public struct ForeignKey: Sendable {
    let model: ORMModel
    let column: String?

    /// A foreign key to `model`'s primary key.
    public init(_ model: ORMModel) {
        self.model = model
        column = nil
    }

    /// A foreign key to a column of a mapped table.
    public init(_ column: ORMColumnReference) {
        model = column.model
        self.column = column.name
    }
}

/// A named column of a mapped table, `dog.table.c["id"]`.
public struct ORMColumnReference: Sendable {
    let model: ORMModel
    /// The column's name.
    public let name: String
}

/// A mapped table as Amigo exposes it: its name and its columns by name (`table.c["id"]`).
public struct ORMTable: Sendable {
    let model: ORMModel
    /// The table's name.
    public var name: String { model.tableName }
    /// The columns by name: `c["id"]` (checked when ``Amigo`` is created).
    public var c: Columns { Columns(model: model) }

    /// Columns of a table by name.
    public struct Columns: Sendable {
        let model: ORMModel
        /// The column named `name`.
        public subscript(name: String) -> ORMColumnReference { ORMColumnReference(model: model, name: name) }
    }
}

/// An index over columns of the model: `Index("dog_label_idx", "label")`.
public struct Index: ORMMappingItem {
    /// The index name.
    public let name: String
    /// The column names (property names; a foreign key's property name stands for its column).
    public let columns: [String]
    /// True for a unique index.
    public let unique: Bool

    /// An index named `name` over `columns`.
    public init(_ name: String, _ columns: String..., unique: Bool = false) {
        self.name = name
        self.columns = columns
        self.unique = unique
    }

    /// An index named `name` over `columns`, in Amigo's argument order
    /// (`Index("dog_label_idx", unique: true, "label")`).
    public init(_ name: String, unique: Bool, _ columns: String...) {
        self.name = name
        self.columns = columns
        self.unique = unique
    }

    /// An index named `name` over an array of columns (Amigo's `columns:` form).
    public init(_ name: String, unique: Bool = false, columns: [String]) {
        self.name = name
        self.columns = columns
        self.unique = unique
    }
}

/// The inverse of a foreign key: `OneToMany("people", using: Person.self)` on Dog follows
/// Person's foreign key to Dog.
public struct OneToMany: ORMMappingItem {
    /// The relationship's name.
    public let name: String
    let target: AmigoModel.Type

    /// A one-to-many relationship named `name` to the model `type`, which has a foreign key to this one.
    public init(_ name: String, using type: AmigoModel.Type) {
        self.name = name
        target = type
    }
}

/// A many-to-many relationship: `ManyToMany("children", using: Child.self)` (the link table
/// is created for you), or with a through model that holds the two foreign keys and extra
/// fields: `ManyToMany("exercises", using: WorkoutExercise.self, throughModel: WorkoutMeta.self)`.
public struct ManyToMany: ORMMappingItem {
    /// The relationship's name.
    public let name: String
    let target: AmigoModel.Type
    let through: AmigoModel.Type?

    /// A many-to-many relationship named `name` to `type`, optionally through `throughModel`.
    public init(_ name: String, using type: AmigoModel.Type, throughModel: AmigoModel.Type? = nil) {
        self.name = name
        target = type
        through = throughModel
    }
}
