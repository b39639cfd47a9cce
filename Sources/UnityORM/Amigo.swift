import Foundation
import Logging

/// A link table of a many-to-many relationship: the two table names sorted and joined by
/// `_`, with the columns `<table>_<primary key>`. A plain relationship keys it by the pair;
/// a through relationship keeps one row per through row, as Amigo does: its own `id`, the pair,
/// and the through row's key in `<through table>_<primary key>`.
struct LinkTable {
    let name: String
    let sourceColumn: String
    let targetColumn: String
    /// The column holding the through row's key (nil for a plain relationship).
    let throughColumn: String?

    /// The index on the target column.
    var targetIndexName: String { derivedName(name + "_" + targetColumn + "_idx") }
    /// The index on the source column (a through link table; a plain one's key starts with it).
    var sourceIndexName: String { derivedName(name + "_" + sourceColumn + "_idx") }
}

/// A relationship resolved against the models given to ``Amigo``.
enum ResolvedRelationship {
    /// `target`'s foreign key `foreignKey` points at `source`.
    case oneToMany(source: ORMModel, target: ORMModel, foreignKey: MappedColumn)
    /// A link table between `source` and `target`, maintained by the through model if any.
    case manyToMany(source: ORMModel, target: ORMModel, link: LinkTable, through: ThroughModel?)
}

/// A through model of a many-to-many relationship and its two foreign keys.
struct ThroughModel {
    let model: ORMModel
    let sourceKey: MappedColumn
    let targetKey: MappedColumn
}

/// The ORM: models mapped to tables of one database (Amigo's `Amigo([dog, person], factory:)`).
///
/// `amigo.session` opens a ``AmigoSession`` (a transaction); `amigo.query(Dog.self)` and
/// `amigo.execute(...)` run outside any session, each statement on its own.
public final class Amigo: @unchecked Sendable {
    /// The database the models live in.
    public let database: Database
    /// The mapped models, as given.
    public let models: [ORMModel]
    let byType: [ObjectIdentifier: ORMModel]
    let relationships: [ObjectIdentifier: [String: ResolvedRelationship]]
    /// For each through model: the relationships whose link table its rows maintain.
    let throughOf: [ObjectIdentifier: [(link: LinkTable, through: ThroughModel)]]
    let linkTables: [(table: LinkTable, source: ORMModel, target: ORMModel)]
    /// Where the ORM's own warnings go (a session released with uncommitted work).
    public let logger: Logger
    /// The filter strings parsed so far.
    let parsedFilters = ParsedFilters()
    /// Each model's key path → column mapping for `#Predicate` and `SortDescriptor`.
    let predicateSchemas = PredicateSchemas()

    /// Maps `models` onto the database `factory` opens. Throws ``ORMError/mapping(_:)`` for
    /// a mapping problem (found here, before any statement runs).
    ///
    /// As in Amigo (one engine per factory), every `Amigo` made from equal factories (the same
    /// type, path or URL and options) shares one `Database` while any of them is alive: two
    /// `Amigo`s on one `SQLiteEngineFactory(":memory:")` see the same rows.
    public convenience init(_ models: [ORMModel], factory: some EngineFactory) throws {
        try self.init(models, database: FactoryDatabases.shared.database(for: factory))
    }

    /// Maps `models` onto an open `database`; the ORM's warnings go to `logger`.
    ///
    /// - Throws: ``ORMError/mapping(_:)`` for a mapping problem (found here, before any
    ///   statement runs).
    public init(_ models: [ORMModel], database: Database, logger: Logger = Logger(label: "unity.orm")) throws {
        self.database = database
        self.logger = logger
        self.models = models
        var problems = models.flatMap(\.problems)
        var byType: [ObjectIdentifier: ORMModel] = [:]
        for m in models { byType[ObjectIdentifier(m.type)] = m }
        var relationships: [ObjectIdentifier: [String: ResolvedRelationship]] = [:]
        var throughOf: [ObjectIdentifier: [(link: LinkTable, through: ThroughModel)]] = [:]
        var linkTables: [(table: LinkTable, source: ORMModel, target: ORMModel)] = []
        for m in models {
            for c in m.columns where c.isForeignKey {
                if let ref = c.reference, byType[ObjectIdentifier(ref.model.type)] !== ref.model {
                    problems.append("\(m.typeName).\(c.label) references \(ref.model.typeName), which is not among the models given to Amigo")
                }
            }
            var named: [String: ResolvedRelationship] = [:]
            for r in m.oneToMany {
                guard let target = byType[ObjectIdentifier(r.target)] else {
                    problems.append("\(m.typeName).\(r.name) uses \(r.target), which is not mapped"); continue
                }
                guard let fk = target.columns.first(where: { $0.reference?.model === m }) else {
                    problems.append("\(m.typeName).\(r.name): \(target.typeName) has no ForeignKey to \(m.typeName)"); continue
                }
                named[r.name.lowercased()] = .oneToMany(source: m, target: target, foreignKey: fk)
            }
            for r in m.manyToMany {
                guard let target = byType[ObjectIdentifier(r.target)] else {
                    problems.append("\(m.typeName).\(r.name) uses \(r.target), which is not mapped"); continue
                }
                guard let sourcePK = m.primaryKey, let targetPK = target.primaryKey, target !== m else {
                    problems.append("\(m.typeName).\(r.name): both models need a primary key and must differ"); continue
                }
                let tables = [m.tableName, target.tableName].sorted()
                let linkName = derivedName(tables.joined(separator: "_"))
                let sourceColumn = derivedName(m.tableName + "_" + sourcePK.name)
                let targetColumn = derivedName(target.tableName + "_" + targetPK.name)
                var through: ThroughModel?
                var link = LinkTable(name: linkName, sourceColumn: sourceColumn, targetColumn: targetColumn, throughColumn: nil)
                if let throughType = r.through {
                    guard let model = byType[ObjectIdentifier(throughType)] else {
                        problems.append("\(m.typeName).\(r.name) goes through \(throughType), which is not mapped"); continue
                    }
                    guard let sk = model.columns.first(where: { $0.reference?.model === m }),
                          let tk = model.columns.first(where: { $0.reference?.model === target }) else {
                        problems.append("the through model \(model.typeName) of \(m.typeName).\(r.name) must have a ForeignKey to "
                            + "\(m.typeName) and one to \(target.typeName)"); continue
                    }
                    guard let throughPK = model.primaryKey else {
                        problems.append("the through model \(model.typeName) of \(m.typeName).\(r.name) needs a primary key"); continue
                    }
                    let throughColumn = derivedName(model.tableName + "_" + throughPK.name)
                    guard ![sourceColumn, targetColumn, "id"].contains(throughColumn) else {
                        problems.append("the link table \(linkName) of \(m.typeName).\(r.name) would have two columns named \(throughColumn)"); continue
                    }
                    link = LinkTable(name: linkName, sourceColumn: sourceColumn, targetColumn: targetColumn, throughColumn: throughColumn)
                    let resolved = ThroughModel(model: model, sourceKey: sk, targetKey: tk)
                    through = resolved
                    throughOf[ObjectIdentifier(throughType), default: []].append((link, resolved))
                }
                if let existing = linkTables.first(where: { $0.table.name == link.name }) {
                    if existing.table.throughColumn != link.throughColumn {
                        problems.append("the link table \(link.name) of \(m.typeName).\(r.name) is also the link table of a relationship "
                            + (link.throughColumn == nil ? "with" : "without") + " a through model: declare both sides alike")
                    }
                } else {
                    linkTables.append((link, m, target))
                }
                named[r.name.lowercased()] = .manyToMany(source: m, target: target, link: link, through: through)
            }
            relationships[ObjectIdentifier(m.type)] = named
        }
        if !problems.isEmpty { throw ORMError.mapping(problems.joined(separator: "; ")) }
        self.byType = byType
        self.relationships = relationships
        self.throughOf = throughOf
        self.linkTables = linkTables
        predicateSchemas.derive(models, relationships: relationships)
    }

    /// The mapping of `type`, or ``ORMError/unmappedType(_:)``.
    func model(for type: AmigoModel.Type) throws -> ORMModel {
        guard let m = byType[ObjectIdentifier(type)] else { throw ORMError.unmappedType(String(describing: type)) }
        return m
    }

    func relationship(_ name: String, of model: ORMModel) throws -> ResolvedRelationship {
        guard let r = relationships[ObjectIdentifier(model.type)]?[name.lowercased()] else {
            throw ORMError.unknownRelationship(model: model.typeName, name: name)
        }
        return r
    }

    // MARK: Schema

    /// The statements that create every table, index and link table, in dependency order
    /// (a table after the tables its foreign keys reference).
    func schemaStatements() -> [SQLStatement] {
        var ordered: [ORMModel] = []
        var visiting = Set<ObjectIdentifier>()
        func visit(_ m: ORMModel) {
            let id = ObjectIdentifier(m)
            if ordered.contains(where: { $0 === m }) || visiting.contains(id) { return }
            visiting.insert(id)
            for c in m.columns { if let ref = c.reference, ref.model !== m { visit(ref.model) } }
            ordered.append(m)
        }
        models.forEach(visit)
        var statements: [SQLStatement] = []
        for m in ordered {
            statements.append(.createTable(m.createTable()))
            for index in m.indexes { statements.append(.createIndex(index)) }
        }
        for (link, source, target) in linkTables {
            guard let sp = source.primaryKey, let tp = target.primaryKey else { continue }
            let pair = [
                SQLColumnDefinition(link.sourceColumn, sp.columnType, notNull: true,
                                    references: SQLForeignKeyReference(source.tableName, columns: [sp.name])),
                SQLColumnDefinition(link.targetColumn, tp.columnType, notNull: true,
                                    references: SQLForeignKeyReference(target.tableName, columns: [tp.name])),
            ]
            if let throughColumn = link.throughColumn,
               let through = throughOf.values.joined().first(where: { $0.link.name == link.name })?.through.model,
               let throughPK = through.primaryKey {
                // One row per through row (Amigo's association table): its own id, the pair, and
                // the through row's key, unique so that saving the through row again updates it.
                statements.append(.createTable(SQLCreateTable(link.name, ifNotExists: true, columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                ] + pair + [
                    SQLColumnDefinition(throughColumn, throughPK.columnType, notNull: true, unique: true,
                                        references: SQLForeignKeyReference(through.tableName, columns: [throughPK.name])),
                ])))
                statements.append(.createIndex(SQLCreateIndex(link.sourceIndexName, on: link.name, columns: [link.sourceColumn])))
            } else {
                statements.append(.createTable(SQLCreateTable(link.name, ifNotExists: true, columns: pair,
                                                              constraints: [.primaryKey([link.sourceColumn, link.targetColumn])])))
            }
            statements.append(.createIndex(SQLCreateIndex(link.targetIndexName, on: link.name, columns: [link.targetColumn])))
        }
        return statements
    }

    /// The migration ``createAll()`` applies: named after the mapped tables (with the core's
    /// `Migrator.flavorMigrationPrefix`, so the application's own migrators leave it alone),
    /// its checksum the SQL it runs. It shares the tracking table with those migrations.
    public var createAllMigration: Migration {
        Migration(Migrator.flavorMigrationPrefix + "orm/create_all(" + models.map(\.tableName).sorted().joined(separator: ",") + ")",
                  statements: schemaStatements())
    }

    /// Creates every table, index and link table that is missing, as one migration recorded
    /// by the core's `Migrator`; running it again changes nothing. A later change to a
    /// model is a migration you write (the recorded checksum then no longer matches:
    /// `MigrationError.checksumMismatch(name:applied:current:)`).
    ///
    /// - Throws: the core's `MigrationError` or `DatabaseError` when the migration cannot run;
    ///   nothing of it is then applied.
    public func createAll() throws {
        let migration = createAllMigration
        var migrator = Migrator(migrations: [migration])
        migrator.ignoresOtherAppliedMigrations = true
        try migrator.migrate(database)
    }

    // MARK: Outside a session

    /// A session: a transaction begun now on a connection of its own (see ``AmigoSession``).
    ///
    /// - Throws: the core's `DatabaseError` when no connection can be had (on SQLite, after
    ///   waiting the pool's checkout timeout for another session to end).
    public var session: AmigoSession {
        get throws { try AmigoSession(amigo: self) }
    }

    /// A query of `type` outside any session: each call runs on its own.
    public func query<T: AmigoModel>(_ type: T.Type) -> QuerySet<T> {
        QuerySet(amigo: self, executor: .database(database))
    }

    /// Runs a raw SQL statement (`?` placeholders, `params` bound) outside any session and
    /// maps each row with `mapper`.
    public func execute<T>(_ sql: String, _ params: [any DatabaseValueConvertible] = [], mapper: (Row) throws -> T) throws -> [T] {
        try database.fetchAll(sql: sql, params.map(\.databaseValue)).map(mapper)
    }

    /// Runs a raw SQL statement outside any session; returns the number of rows changed.
    @discardableResult
    public func execute(_ sql: String, _ params: [any DatabaseValueConvertible] = []) throws -> Int {
        try database.execute(sql: sql, params.map(\.databaseValue))
    }
}

/// The databases factories opened, by the factory's description (its type and every stored
/// option), held weakly: the last `Amigo` of a factory to go closes its database.
final class FactoryDatabases: @unchecked Sendable {
    static let shared = FactoryDatabases()

    private final class Weak {
        weak var database: Database?
        init(_ database: Database) { self.database = database }
    }

    private let lock = NSLock()
    private var open: [String: Weak] = [:]

    /// The database `factory` opened for a living `Amigo`, or a new one.
    func database(for factory: some EngineFactory) throws -> Database {
        let key = String(reflecting: factory)
        lock.lock()
        defer { lock.unlock() }
        if let database = open[key]?.database { return database }
        let database = try factory.connect()
        open = open.filter { $0.value.database != nil }
        open[key] = Weak(database)
        return database
    }
}

/// The `PredicateSchema` of each mapped model, derived once from its mapping when ``Amigo`` is
/// created: a column for each mapped property, a to-one relationship for each foreign key, and a
/// to-many one for each ``OneToMany`` or ``ManyToMany`` whose model has an array property of
/// the same name, all matched by the key paths of the model's ``AmigoModel/ormFields``.
final class PredicateSchemas: @unchecked Sendable {
    /// Written once, in ``derive(_:relationships:)``, before the `Amigo` is handed out; only read after.
    private var byModel: [ObjectIdentifier: PredicateSchema] = [:]

    /// The schema of `model`.
    func schema(of model: ORMModel) -> PredicateSchema {
        byModel[ObjectIdentifier(model)] ?? PredicateSchema(table: model.tableName, key: model.primaryKey?.name ?? "id")
    }

    func derive(_ models: [ORMModel], relationships: [ObjectIdentifier: [String: ResolvedRelationship]]) {
        // Targets are looked up when a predicate reaches them (the schemas refer to each other);
        // they live as long as this object, which holds them.
        let target: (ORMModel) -> @Sendable () -> PredicateSchema = { model in { [unowned self] in self.schema(of: model) } }
        for m in models {
            let keys = m.type.ormFields.predicateKeys
            var schema = PredicateSchema(table: m.tableName, key: m.primaryKey?.name ?? "id")
            schema.missingColumnAdvice = "map it with a Column in \(m.typeName)'s ORMModel (a to-many key path: an array "
                + "property named as a OneToMany or ManyToMany of the mapping)"
            for c in m.columns {
                guard let key = keys[c.label.lowercased()] else { continue }
                let role: PredicateKeyPath.Role
                if let reference = c.reference {
                    role = .toOne(foreignKey: c.name, targetColumn: reference.column.name, target: target(reference.model))
                } else if case .plain = c.codec {
                    role = .column(name: c.name, isDecimal: c.columnType == .decimal)
                } else {
                    // A UUIDField is a string on the model and a UUID in the table: not compared in SQL.
                    continue
                }
                schema = key.add(schema, role) ?? schema
            }
            for (name, relationship) in relationships[ObjectIdentifier(m.type)] ?? [:] {
                guard let key = keys[name] else { continue }
                switch relationship {
                case .oneToMany(_, let targetModel, let foreignKey):
                    schema = key.add(schema, .toMany(.foreignKey(foreignKey.name), parentColumn: foreignKey.reference?.column.name,
                                                      target: target(targetModel))) ?? schema
                case .manyToMany(_, let targetModel, let link, _):
                    let through = PredicateSchema.ToMany.Link.through(table: link.name, parentColumn: link.sourceColumn,
                                                                      targetColumn: link.targetColumn)
                    schema = key.add(schema, .toMany(through, parentColumn: nil, target: target(targetModel))) ?? schema
                }
            }
            byModel[ObjectIdentifier(m)] = schema
        }
    }
}
