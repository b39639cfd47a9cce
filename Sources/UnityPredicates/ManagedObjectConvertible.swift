import Foundation

/// A plain Swift value stored as one row of a table: Sworm's model protocol, with what Core
/// Data's model file held (relations, delete rules, unique attributes) declared in code.
///
/// ```swift
/// struct Author: ManagedObjectConvertible {
///     var id = UUID()
///     var name = ""
///     static let entityName = "Author"
///     static let attributes: Set<Attribute<Author>> = [
///         Attribute(\.id, "id", unique: true),
///         Attribute(\.name, "name"),
///     ]
///     struct Relations: RelationSet {
///         let books = ToManyRelation<Book>("books", inverse: "author", deleteRule: .cascade)
///         var all: [RelationDeclaration] { [books.declaration] }
///     }
///     static let relations = Relations()
/// }
/// ```
///
/// The table is named `entityName`; it has a hidden integer key `Z_PK` (as Core Data's own
/// SQLite stores) and one column per attribute. Encoding and decoding go through the key
/// paths: no `Codable`, no reflection.
public protocol ManagedObjectConvertible {
    /// The relations' declarations, reached through key paths (`object.books`); `Void` when
    /// the model has none. Conform it to ``RelationSet`` so the schema knows them.
    associatedtype Relations = Void
    /// The entity's (and table's) name.
    static var entityName: String { get }
    /// The stored attributes.
    static var attributes: Set<Attribute<Self>> { get }
    /// The relations.
    static var relations: Relations { get }
    /// The table's integer key column: `"Z_PK"` (the default), a hidden key the database
    /// assigns, or the column of one of the model's own integer attributes, for a model that
    /// maps an existing table keyed by it. With an attribute key, inserts need no key back
    /// from the database, so they wait and go to the database in batches.
    static var keyColumn: String { get }
    /// The model's own properties that read its relations, for `#Predicate` (none by default):
    /// see ``RelationKeyPath``.
    static var relationKeyPaths: [RelationKeyPath<Self>] { get }
    /// An empty value that ``ManagedObject/decode()`` fills attribute by attribute.
    init()
}

extension ManagedObjectConvertible {
    /// `"Z_PK"`: a hidden key assigned by the database.
    public static var keyColumn: String { hiddenKeyColumn }
}

extension ManagedObjectConvertible where Relations == Void {
    /// No relations.
    public static var relations: Void { () }
}

/// The relations of a model, listed for the schema (Swift cannot enumerate a struct's
/// properties without reflection, which Unity does not use).
public protocol RelationSet {
    /// Every relation's declaration.
    var all: [RelationDeclaration] { get }
}

/// One stored attribute: a key path and its column name, `Attribute(\.name, "name")`.
///
/// Attributes are equal when their column names are.
public struct Attribute<PlainObject>: Hashable, @unchecked Sendable {
    // @unchecked: the key path is immutable and the closures are @Sendable.
    /// The column's name.
    public let name: String
    /// Whether the column has a UNIQUE constraint.
    public let isUnique: Bool
    @usableFromInline let keyPath: AnyKeyPath
    @usableFromInline let columnType: ColumnType
    @usableFromInline let isOptional: Bool
    @usableFromInline let encode: @Sendable (PlainObject) -> DatabaseValue
    @usableFromInline let decode: @Sendable (inout PlainObject, DatabaseValue) throws -> Void
    /// Where a struct stores the attribute, for the common types: rows are decoded straight
    /// into that slot (``StoredSlot/store(_:at:)``), with ``decode`` left for the other
    /// types and for values that need its error.
    @usableFromInline let slot: StoredSlot?

    /// An attribute stored in the column `name`; `unique: true` adds a UNIQUE constraint
    /// (a value already stored then throws `DatabaseError` `.constraintViolation(.unique, …)`).
    ///
    /// - Parameters:
    ///   - keyPath: the model's stored property, of any ``SupportedAttributeType`` (an optional
    ///     one included).
    ///   - name: the column's name.
    ///   - unique: whether the column has a UNIQUE constraint.
    // Inlinable so that its closures are compiled for the model's concrete types: as generic
    // code they looked up type metadata on every call, which cost more than the row's values.
    @inlinable
    public init<Value: SupportedAttributeType>(_ keyPath: WritableKeyPath<PlainObject, Value>, _ name: String, unique: Bool = false) {
        self.name = name
        self.isUnique = unique
        self.keyPath = keyPath
        self.columnType = Value.attributeColumnType
        self.isOptional = Value.isOptionalAttribute
        nonisolated(unsafe) let path = keyPath
        self.slot = MemoryLayout<PlainObject>.offset(of: keyPath).flatMap { StoredSlot.make(Value.self, offset: $0) }
        if let offset = MemoryLayout<PlainObject>.offset(of: keyPath) {
            // A stored property of a struct: read and written in place at its offset, as
            // `MemoryLayout.offset(of:)` documents. Going through the key path costs a call
            // into the runtime's key-path machinery per attribute per row, which was most of
            // what building objects cost.
            self.encode = { object in
                withUnsafeBytes(of: object) { raw in
                    raw.load(fromByteOffset: offset, as: Value.self).encodeDatabaseValue()
                }
            }
            self.decode = { object, value in
                let decoded = try Value.decode(databaseValue: value, column: name)
                withUnsafeMutablePointer(to: &object) { pointer in
                    (UnsafeMutableRawPointer(pointer) + offset).assumingMemoryBound(to: Value.self).pointee = decoded
                }
            }
        } else {
            // A class's property, or a key path through a computed property.
            self.encode = { object in object[keyPath: path].encodeDatabaseValue() }
            self.decode = { object, value in
                object[keyPath: path] = try Value.decode(databaseValue: value, column: name)
            }
        }
    }

    /// Equal when the column names are.
    public static func == (lhs: Attribute, rhs: Attribute) -> Bool { lhs.name == rhs.name }
    /// Hashes the column name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A stored property of a common type at its offset in a struct: what decoding a row writes
/// there without a call through the attribute's closure (which cost a call and a retain of
/// its context per attribute per row). Each case reads the value with the type's own core
/// conversion, the one ``SupportedAttributeType/decode(databaseValue:column:)`` uses, so both paths
/// agree.
@usableFromInline
enum StoredSlot: Sendable {
    case int64(Int), int(Int), int32(Int), double(Int), bool(Int), string(Int), date(Int), data(Int)
    case optionalInt64(Int), optionalInt(Int), optionalDouble(Int), optionalString(Int), optionalDate(Int)

    /// The slot for a property of type `Value` at `offset`, or nil for another type.
    @inlinable
    static func make<Value>(_ type: Value.Type, offset: Int) -> StoredSlot? {
        if Value.self == Int64.self { return .int64(offset) }
        if Value.self == Int.self { return .int(offset) }
        if Value.self == Int32.self { return .int32(offset) }
        if Value.self == Double.self { return .double(offset) }
        if Value.self == Bool.self { return .bool(offset) }
        if Value.self == String.self { return .string(offset) }
        if Value.self == Date.self { return .date(offset) }
        if Value.self == Data.self { return .data(offset) }
        if Value.self == Int64?.self { return .optionalInt64(offset) }
        if Value.self == Int?.self { return .optionalInt(offset) }
        if Value.self == Double?.self { return .optionalDouble(offset) }
        if Value.self == String?.self { return .optionalString(offset) }
        if Value.self == Date?.self { return .optionalDate(offset) }
        return nil
    }

    /// Writes `value` into the slot of the struct at `base`; false when the value does not
    /// convert (the attribute's closure then throws the conversion error).
    @inlinable @inline(__always)
    func store(_ value: DatabaseValue, at base: UnsafeMutableRawPointer) -> Bool {
        switch self {
        case .int64(let o): return Self.put(Int64.fromDatabaseValue(value), base + o)
        case .int(let o): return Self.put(Int.fromDatabaseValue(value), base + o)
        case .int32(let o): return Self.put(Int32.fromDatabaseValue(value), base + o)
        case .double(let o): return Self.put(Double.fromDatabaseValue(value), base + o)
        case .bool(let o): return Self.put(Bool.fromDatabaseValue(value), base + o)
        case .string(let o): return Self.put(String.fromDatabaseValue(value), base + o)
        case .date(let o): return Self.put(Date.fromDatabaseValue(value), base + o)
        case .data(let o): return Self.put(Data.fromDatabaseValue(value), base + o)
        case .optionalInt64(let o): return Self.putOptional(value, Int64.fromDatabaseValue, base + o)
        case .optionalInt(let o): return Self.putOptional(value, Int.fromDatabaseValue, base + o)
        case .optionalDouble(let o): return Self.putOptional(value, Double.fromDatabaseValue, base + o)
        case .optionalString(let o): return Self.putOptional(value, String.fromDatabaseValue, base + o)
        case .optionalDate(let o): return Self.putOptional(value, Date.fromDatabaseValue, base + o)
        }
    }

    @inlinable @inline(__always)
    static func put<V>(_ converted: V?, _ slot: UnsafeMutableRawPointer) -> Bool {
        guard let converted else { return false }
        slot.assumingMemoryBound(to: V.self).pointee = converted
        return true
    }

    @inlinable @inline(__always)
    static func putOptional<V>(_ value: DatabaseValue, _ convert: (DatabaseValue) -> V?, _ slot: UnsafeMutableRawPointer) -> Bool {
        if case .null = value {
            slot.assumingMemoryBound(to: V?.self).pointee = nil
            return true
        }
        guard let converted = convert(value) else { return false }
        slot.assumingMemoryBound(to: V?.self).pointee = converted
        return true
    }
}

/// The flavor's own faults. Database faults stay the core's `DatabaseError`.
public enum PredicatesError: Error, CustomStringConvertible, Sendable {
    /// A key path that no declared ``Attribute`` stores.
    case unknownAttribute(entity: String, keyPath: String)
    /// A stored value that the attribute's Swift type cannot hold.
    case conversion(column: String, type: String, value: DatabaseValue)
    /// A stored value that the attribute type's `decode(primitiveValue:)` refused, with the
    /// error it threw.
    case invalidValue(column: String, type: String, value: DatabaseValue, reason: String)
    /// A relation whose declaration is inconsistent (a missing inverse, a destination that is
    /// not among the container's models).
    case invalidRelation(String)
    /// A delete refused by a `.deny` delete rule.
    case deleteDenied(entity: String, relation: String)
    /// An object used with a context other than its own, or after its context ended.
    case wrongContext(String)

    /// What went wrong and what to do.
    public var description: String {
        switch self {
        case .unknownAttribute(let entity, let keyPath):
            return "\(keyPath) is not an attribute of \(entity): add Attribute(\(keyPath), \"column\") to \(entity).attributes"
        case .conversion(let column, let type, let value):
            return "column \(column) holds \(value), which is not a \(type)"
        case .invalidValue(let column, let type, let value, let reason):
            return "column \(column) holds \(value), which \(type).decode(primitiveValue:) refused: \(reason)"
        case .invalidRelation(let message):
            return "invalid relation: \(message)"
        case .deleteDenied(let entity, let relation):
            return "cannot delete this \(entity): its relation \(relation) has the delete rule .deny and is not empty"
        case .wrongContext(let message):
            return message
        }
    }

    /// The error for a context (or an object of it) used after its `perform` ended.
    @usableFromInline
    static func endedContext(_ entity: String?) -> PredicatesError {
        .wrongContext("\(entity.map { "this \($0) object" } ?? "this context") was used after the perform that "
            + "made it ended: use objects only inside their perform, and fetch them again in a new one")
    }
}

/// Per-type lookup tables built once from `attributes` (key path → attribute, column order).
@usableFromInline
final class EntityDescription<PlainObject: ManagedObjectConvertible>: @unchecked Sendable {
    // @unchecked: immutable after init.
    @usableFromInline let attributes: [Attribute<PlainObject>]
    let byKeyPath: [AnyKeyPath: Attribute<PlainObject>]
    /// The column of each attribute's key path (a lookup that copies no attribute).
    @usableFromInline let columnByKeyPath: [AnyKeyPath: String]
    /// The attributes' columns, then the key (`Z_PK`) unless an attribute is the key: the
    /// select list of every fetch. (A key that is also an attribute is read once: selecting it
    /// twice cost the server, the wire and the decoder a seventh more on a six-column model.)
    @usableFromInline let selectColumns: [SQLSelectColumn]
    /// The attribute that is the key, when the key is no hidden column.
    let keyAttributeIndex: Int?
    /// The index of the key in a fetched row: the key attribute's, or the hidden key's after
    /// the attributes.
    @usableFromInline let keyIndex: Int

    init() {
        attributes = PlainObject.attributes.sorted { $0.name < $1.name }
        var map: [AnyKeyPath: Attribute<PlainObject>] = [:]
        for a in attributes { map[a.keyPath] = a }
        byKeyPath = map
        columnByKeyPath = map.mapValues(\.name)
        keyAttributeIndex = attributes.firstIndex { $0.name == PlainObject.keyColumn }
        keyIndex = keyAttributeIndex ?? attributes.count
        // One column list, hashed once (rendering a query no longer hashes every name).
        let names = attributes.map(\.name) + (keyAttributeIndex == nil ? [PlainObject.keyColumn] : [])
        selectColumns = [.columns(SQLColumnList(table: PlainObject.entityName, names))]
    }

    @usableFromInline
    static var shared: EntityDescription<PlainObject> {
        EntityDescriptionCache.get(PlainObject.self) { EntityDescription<PlainObject>() }
    }
}

/// The hidden integer key of every entity table.
let hiddenKeyColumn = "Z_PK"

enum EntityDescriptionCache {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [ObjectIdentifier: AnyObject] = [:]

    static func get<T: AnyObject>(_ type: Any.Type, _ make: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        if let found = cache[ObjectIdentifier(type)] as? T { return found }
        let made = make()
        cache[ObjectIdentifier(type)] = made
        return made
    }
}

extension ManagedObjectConvertible {
    /// The attribute stored for `keyPath`.
    static func attribute(_ keyPath: AnyKeyPath) throws -> Attribute<Self> {
        guard let found = EntityDescription<Self>.shared.byKeyPath[keyPath] else {
            throw PredicatesError.unknownAttribute(entity: entityName, keyPath: "\(keyPath)")
        }
        return found
    }

    /// The column name for `keyPath`, or nil when no attribute stores it. (Inlinable, as are
    /// the operators that call it, so that building a predicate is specialized for the model:
    /// as generic code it looked up the description's type metadata on every call.)
    @inlinable
    static func columnName(_ keyPath: AnyKeyPath) -> String? {
        EntityDescription<Self>.shared.columnByKeyPath[keyPath]
    }

    /// The declared relations.
    static var relationDeclarations: [RelationDeclaration] {
        (relations as? RelationSet)?.all ?? []
    }
}
