import Foundation

/// A column as mapped: its property accessor, database name and type.
final class MappedColumn: @unchecked Sendable {
    /// The property name as declared ("dog" for a foreign key).
    let label: String
    /// The database column name ("dog_id" for a foreign key).
    let name: String
    let columnType: ColumnType
    let primaryKey: Bool
    let notNull: Bool
    let unique: Bool
    let indexed: Bool
    let codec: ColumnCodec
    let defaultValue: ORMDefaultValue?
    let accessor: FieldAccessor?
    /// For a foreign key: the related model and the referenced column.
    let reference: (model: ORMModel, column: MappedColumn)?
    unowned(unsafe) var owner: ORMModel! = nil

    init(label: String, name: String, columnType: ColumnType, primaryKey: Bool, notNull: Bool, unique: Bool, indexed: Bool,
         codec: ColumnCodec, defaultValue: ORMDefaultValue?, accessor: FieldAccessor?, reference: (model: ORMModel, column: MappedColumn)?) {
        self.label = label
        self.name = name
        self.columnType = columnType
        self.primaryKey = primaryKey
        self.notNull = notNull
        self.unique = unique
        self.indexed = indexed
        self.codec = codec
        self.defaultValue = defaultValue
        self.accessor = accessor
        self.reference = reference
    }

    var isForeignKey: Bool { reference != nil }

    /// The key of this to-one property in ``AmigoModel/keptForeignKeys``.
    var keptKey: String { label.lowercased() }

    /// Fills `object`'s property from a fetched row's value: a value property is assigned; a
    /// to-one property keeps the foreign-key value until `selectRelated` loads the object.
    func fill(_ stored: DatabaseValue, into object: AmigoModel) throws {
        if case .toOne? = accessor {
            if !stored.isNull { object.keptForeignKeys[keptKey] = stored }
            return
        }
        try assign(stored, to: object)
    }

    /// The value to bind for `object`'s property (a foreign key binds the related object's key).
    func storedValue(of object: AmigoModel) throws -> DatabaseValue {
        switch accessor {
        case .value(let get, _, _)?:
            let value = get(object)
            guard let stored = codec.toStorage(value) else {
                throw ORMError.conversion(model: owner.typeName, column: label, message: "\(value) is not a valid value for this column")
            }
            return stored
        case .toOne(let get, _, _)?:
            guard let reference else { return .null }
            // Nil and never loaded: the id the fetch read stays (an update never erases a
            // reference it did not load; `clearRelationship` forgets it).
            guard let related = get(object) else { return object.keptForeignKeys[keptKey] ?? .null }
            return try reference.column.storedValue(of: related)
        case nil:
            return .null
        }
    }

    /// Writes a value read from the database to `object`'s property (foreign keys are filled
    /// by `selectRelated` or `add` only: there is no lazy loading).
    func assign(_ stored: DatabaseValue, to object: AmigoModel) throws {
        guard case .value(_, let set, let valueType)? = accessor else { return }
        guard let value = codec.fromStorage(stored), set(object, value) else {
            throw ORMError.conversion(model: owner.typeName, column: label,
                                      message: "the database held \(stored), which does not convert to \(valueType)")
        }
    }
}

/// The mapping of a model class to a table: Amigo's `ORMModel(Dog.self, Column(...), ...)`.
///
/// The table is named as Amigo names it: the type's qualified name, lower-cased, with `.`
/// replaced by `_` (`MyApp.Dog` is `myapp_dog`). Mapping problems (a column without an entry
/// in the model's ``AmigoModel/ormFields``, a name over 63 bytes, ...) are thrown by
/// ``Amigo/init(_:factory:)``.
public final class ORMModel: @unchecked Sendable {
    /// The mapped class.
    public let type: AmigoModel.Type
    /// The table's name.
    public let tableName: String
    let typeName: String
    let columns: [MappedColumn]
    let primaryKey: MappedColumn?
    let indexes: [SQLCreateIndex]
    let oneToMany: [OneToMany]
    let manyToMany: [ManyToMany]
    let problems: [String]
    private let columnsByName: [String: MappedColumn]

    /// The table as Amigo exposes it (`dog.table.c["id"]`).
    public var table: ORMTable { ORMTable(model: self) }

    /// Maps `type` with its columns, indexes and relationships.
    /// `table` overrides Amigo's table name (Unity's addition, for types whose qualified name is long).
    public convenience init<M: AmigoModel>(_ type: M.Type, table: String? = nil, _ items: any ORMMappingItem...) {
        self.init(type, table: table, items: items)
    }

    /// Maps `type` with its columns, indexes and relationships, given as an array.
    public init<M: AmigoModel>(_ type: M.Type, table: String? = nil, items: [any ORMMappingItem]) {
        self.type = type
        typeName = String(describing: type)
        tableName = table ?? derivedName(String(reflecting: type).split(separator: ".").map { $0.lowercased() }.joined(separator: "_"))
        let fields = M.ormFields
        var problems: [String] = []
        if let declared = fields.modelType, declared != type {
            problems.append("\(typeName).ormFields is the table of \(String(describing: declared)), not of \(typeName)")
        }
        var columns: [MappedColumn] = []
        var indexes: [SQLCreateIndex] = []
        var oneToMany: [OneToMany] = []
        var manyToMany: [ManyToMany] = []
        var indexItems: [Index] = []
        for item in items {
            switch item {
            case let column as Column:
                let accessor = fields.entries[column.name.lowercased()]
                if accessor == nil, let type = fields.unstorable[column.name.lowercased()] {
                    problems.append("column \"\(column.name)\" of \(typeName) is a property of type \(type), "
                        + "which is neither a database value nor a model")
                } else if accessor == nil {
                    problems.append("column \"\(column.name)\" of \(typeName) has no entry in \(typeName).ormFields: "
                        + "add .property(\"\(column.name)\", \\.\(column.name)) to it")
                }
                if let fk = column.foreignKey {
                    let target: MappedColumn?
                    if let name = fk.column { target = fk.model.column(named: name) } else { target = fk.model.primaryKey }
                    guard let target else {
                        problems.append("the foreign key \(typeName).\(column.name) references a column \(fk.model.tableName) does not have")
                        continue
                    }
                    if case .value? = accessor {
                        problems.append("\(typeName).\(column.name) is a foreign key: its property must hold a \(fk.model.typeName)?")
                    }
                    columns.append(MappedColumn(
                        label: column.name, name: derivedName(column.name + "_" + target.name), columnType: target.columnType,
                        primaryKey: column.primaryKey, notNull: !column.optional, unique: column.unique, indexed: column.indexed,
                        codec: target.codec, defaultValue: nil, accessor: accessor, reference: (fk.model, target)))
                } else if let columnType = column.columnType {
                    if case .toOne? = accessor {
                        problems.append("\(typeName).\(column.name) holds a related object: map it with type: ForeignKey(...)")
                    }
                    columns.append(MappedColumn(
                        label: column.name, name: column.name, columnType: columnType, primaryKey: column.primaryKey,
                        notNull: !column.optional && !column.primaryKey, unique: column.unique, indexed: column.indexed,
                        codec: column.codec, defaultValue: column.defaultValue, accessor: accessor, reference: nil))
                }
            case let index as Index: indexItems.append(index)
            case let relationship as OneToMany: oneToMany.append(relationship)
            case let relationship as ManyToMany: manyToMany.append(relationship)
            default: problems.append("\(item) cannot be mapped (use Column, Index, OneToMany or ManyToMany)")
            }
        }
        var byName: [String: MappedColumn] = [:]
        for c in columns {
            byName[c.label.lowercased()] = c
            byName[c.name.lowercased()] = c
        }
        let keys = columns.filter(\.primaryKey)
        if keys.count > 1 { problems.append("\(typeName) declares \(keys.count) primary keys; Amigo models have one") }
        for c in columns where c.indexed && !c.primaryKey {
            indexes.append(SQLCreateIndex(derivedName("\(tableName)_\(c.name)_idx"), on: tableName, columns: [c.name]))
        }
        for index in indexItems {
            var names: [String] = []
            for name in index.columns {
                if let c = byName[name.lowercased()] { names.append(c.name) } else {
                    problems.append("index \(index.name) of \(typeName) names an unknown column \"\(name)\"")
                }
            }
            indexes.append(SQLCreateIndex(index.name, on: tableName, columns: names, unique: index.unique))
        }
        // The names given here (a table, a column, an index); derived ones are shortened.
        let given = (table.map { [$0] } ?? []) + items.compactMap { ($0 as? Column).flatMap { $0.foreignKey == nil ? $0.name : nil } }
            + indexItems.map(\.name)
        for name in given where name.utf8.count > maxIdentifierBytes {
            problems.append("the name \"\(name)\" is \(name.utf8.count) bytes long; PostgreSQL keeps \(maxIdentifierBytes): choose a shorter name")
        }
        self.columns = columns
        self.columnsByName = byName
        self.primaryKey = keys.first
        self.indexes = indexes
        self.oneToMany = oneToMany
        self.manyToMany = manyToMany
        self.problems = problems
        for c in columns { c.owner = self }
    }

    /// The column whose property or database name is `name` (case-insensitive).
    func column(named name: String) -> MappedColumn? { columnsByName[name.lowercased()] }

    /// The key of `object`, or nil while it is unsaved (nil or an integer 0).
    func savedKey(of object: AmigoModel) throws -> DatabaseValue? {
        guard let pk = primaryKey else { return nil }
        let key = try pk.storedValue(of: object)
        switch key {
        case .null, .integer(0): return nil
        default: return key
        }
    }

    /// CREATE TABLE for this model.
    func createTable() -> SQLCreateTable {
        var definitions: [SQLColumnDefinition] = []
        for c in columns {
            let isInteger = c.columnType == .int64 || c.columnType == .int32 || c.columnType == .int16
            definitions.append(SQLColumnDefinition(
                c.name, c.columnType,
                primaryKey: c.primaryKey ? (isInteger ? .autoIncrement : .plain) : nil,
                notNull: c.notNull, unique: c.unique && !c.primaryKey,
                references: c.reference.map { SQLForeignKeyReference($0.model.tableName, columns: [$0.column.name]) }))
        }
        return SQLCreateTable(tableName, ifNotExists: true, columns: definitions)
    }
}
