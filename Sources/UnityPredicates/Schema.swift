import Foundation

/// One column of an entity table, as the schema builder sees it.
struct ColumnSchema: Sendable {
    let name: String
    let type: ColumnType
    let optional: Bool
    let unique: Bool
}

/// An entity as the schema builder and the delete rules see it: no generic type needed.
struct EntitySchema: Sendable {
    let name: String
    let columns: [ColumnSchema]
    let relations: [RelationDeclaration]
    let keyColumn: String
    /// Set when the model's `Relations` type declares relations the schema cannot see (it
    /// does not conform to ``RelationSet``): the type's name.
    let unlistedRelations: String?
}

extension ManagedObjectConvertible {
    static var entitySchema: EntitySchema {
        EntitySchema(
            name: entityName,
            columns: EntityDescription<Self>.shared.attributes.map {
                ColumnSchema(name: $0.name, type: $0.columnType, optional: $0.isOptional, unique: $0.isUnique)
            },
            relations: relationDeclarations,
            keyColumn: keyColumn,
            unlistedRelations: (Relations.self == Void.self || relations is RelationSet) ? nil : String(reflecting: Relations.self))
    }
}

/// The models of a container: their tables, their relations' link tables, checked once.
struct SchemaRegistry: Sendable {
    let entities: [String: EntitySchema]
    let order: [String]

    /// What ``validate()`` found wrong when the container was made, thrown by each of its calls.
    private(set) var problem: PredicatesError?

    init(_ schemas: [EntitySchema]) {
        var map: [String: EntitySchema] = [:]
        for s in schemas { map[s.name] = s }
        entities = map
        order = schemas.map(\.name)
        do {
            try validate()
        } catch let error as PredicatesError {
            problem = error
        } catch {
            problem = .invalidRelation("\(error)")
        }
    }

    func relation(_ entity: String, _ name: String) -> RelationDeclaration? {
        entities[entity]?.relations.first { $0.name == name }
    }

    /// Where relation `r` of `source` is kept.
    func storage(source: String, _ r: RelationDeclaration) -> RelationStorage {
        let inverse = r.inverse.flatMap { relation(r.destinationEntity, $0) }
        return RelationStorage(source: source, sourceKey: entities[source]?.keyColumn ?? hiddenKeyColumn, r,
                               destinationKey: entities[r.destinationEntity]?.keyColumn ?? hiddenKeyColumn, inverse: inverse)
    }

    /// Every foreign-key column (of a relation declared with `column:`) that points at
    /// `entity`'s rows, each once.
    func incomingForeignKeys(_ entity: String) -> [ForeignKeyStorage] {
        var seen: Set<String> = []
        var result: [ForeignKeyStorage] = []
        for name in order {
            for r in entities[name]?.relations ?? [] where r.column != nil && r.destinationEntity == entity {
                guard case .foreignKey(let fk) = storage(source: name, r), seen.insert("\(fk.table).\(fk.column)").inserted else { continue }
                result.append(fk)
            }
        }
        return result
    }

    /// The shape of the other end of `r` (declared on `source`): its inverse's kind, or
    /// to-many for a relation without inverse (nothing limits how many point at an object).
    func inverseKind(source: String, _ r: RelationDeclaration) -> RelationKind {
        guard let inverse = r.inverse, let decl = relation(r.destinationEntity, inverse) else { return .toMany }
        return decl.kind
    }

    /// Checks every relation against the registered models.
    func validate() throws {
        for name in order {
            guard let entity = entities[name] else { continue }
            if let type = entity.unlistedRelations {
                throw PredicatesError.invalidRelation(
                    "\(name)'s relations type \(type) does not conform to RelationSet, so its relations cannot be "
                        + "stored: declare it `struct Relations: RelationSet` and list every relation in its `all`")
            }
        }
        for name in order {
            guard let entity = entities[name] else { continue }
            for r in entity.relations {
                if r.column != nil, r.kind != .toOne {
                    throw PredicatesError.invalidRelation("\(name).\(r.name): only a to-one relation can be kept in a column")
                }
                guard entities[r.destinationEntity] != nil else {
                    throw PredicatesError.invalidRelation(
                        "\(name).\(r.name) points at \(r.destinationEntity), which is not among the container's models: add it")
                }
                if let inverse = r.inverse {
                    guard let back = relation(r.destinationEntity, inverse) else {
                        throw PredicatesError.invalidRelation(
                            "\(name).\(r.name) names the inverse \(r.destinationEntity).\(inverse), which \(r.destinationEntity) does not declare: "
                                + "declare it, and list it in the `all` of \(r.destinationEntity)'s RelationSet")
                    }
                    guard back.inverse == r.name, back.destinationEntity == name else {
                        throw PredicatesError.invalidRelation(
                            "\(name).\(r.name) and \(r.destinationEntity).\(inverse) must name each other as inverses")
                    }
                    if back.name == r.name && r.destinationEntity == name {
                        throw PredicatesError.invalidRelation("\(name).\(r.name) cannot be its own inverse")
                    }
                    if r.column != nil, back.column != nil {
                        throw PredicatesError.invalidRelation(
                            "\(name).\(r.name) and \(r.destinationEntity).\(inverse) both name a column: name it on one side only")
                    }
                    if back.column != nil, r.kind == .orderedToMany {
                        throw PredicatesError.invalidRelation(
                            "\(name).\(r.name) is ordered, which needs a link table: drop the column of \(r.destinationEntity).\(inverse)")
                    }
                }
            }
        }
    }

    /// The migrations that create every table: one per entity table, then one per link
    /// table, each `CREATE TABLE IF NOT EXISTS`, recorded by the core's migrator so that
    /// running them again is a no-op.
    func migrations(for dialect: SQLDialect) throws -> [Migration] {
        try validate()
        let isPostgres = dialect.name == SQLDialect.postgres.name
        var result: [Migration] = []
        // Tables referenced by a foreign-key column come first (PostgreSQL checks a
        // reference when the table is created); a reference back into a cycle gets no
        // REFERENCES clause (the flavor keeps it consistent itself).
        var created: Set<String> = []
        var visiting: Set<String> = []
        var tableOrder: [String] = []
        func visit(_ name: String) {
            guard !created.contains(name), visiting.insert(name).inserted, let entity = entities[name] else { return }
            for r in entity.relations where r.column != nil && r.destinationEntity != name { visit(r.destinationEntity) }
            visiting.remove(name)
            created.insert(name)
            tableOrder.append(name)
        }
        for name in order { visit(name) }
        var made: Set<String> = []
        for name in tableOrder {
            guard let entity = entities[name] else { continue }
            var columns: [SQLColumnDefinition] = []
            let ownKey = entity.columns.contains { $0.name == entity.keyColumn }
            if !ownKey { columns.append(SQLColumnDefinition(entity.keyColumn, .int64, primaryKey: .autoIncrement)) }
            for c in entity.columns {
                // Text compares and sorts in binary code-point order on both backends:
                // SQLite's default BINARY collation, PostgreSQL's "C".
                let type: ColumnType = (c.type == .text && isPostgres) ? .custom("TEXT COLLATE \"C\"") : c.type
                let isKey = c.name == entity.keyColumn
                columns.append(SQLColumnDefinition(c.name, type, primaryKey: isKey ? .plain : nil, notNull: !c.optional || isKey,
                                                   unique: c.unique && !isKey))
            }
            var indexes: [SQLStatement] = []
            for r in entity.relations {
                guard let column = r.column, !columns.contains(where: { $0.name == column }) else { continue }
                let destination = r.destinationEntity
                let canReference = destination == name || made.contains(destination)
                let unique = inverseKind(source: name, r) == .toOne
                columns.append(SQLColumnDefinition(column, .int64, unique: unique, references: canReference
                    ? SQLForeignKeyReference(destination, columns: [entities[destination]?.keyColumn ?? hiddenKeyColumn],
                                             onDelete: .setNull)
                    : nil))
                if !unique {
                    indexes.append(.createIndex(SQLCreateIndex("\(name)_\(column)", on: name, columns: [column], ifNotExists: true)))
                }
            }
            made.insert(name)
            result.append(Migration("\(Migrator.flavorMigrationPrefix)predicates/create/\(name)", statements: [
                .createTable(SQLCreateTable(name, ifNotExists: true, columns: columns)),
            ] + indexes))
        }
        var seen: Set<String> = []
        for name in order {
            guard let entity = entities[name] else { continue }
            for r in entity.relations {
                guard case .link(let link) = storage(source: name, r), seen.insert(link.table).inserted else { continue }
                let mineKind = r.kind
                let otherKind = inverseKind(source: name, r)
                let aKind = link.ownerColumn == "a_pk" ? mineKind : otherKind
                let bKind = link.ownerColumn == "a_pk" ? otherKind : mineKind
                var constraints: [SQLTableConstraint] = [.primaryKey(["a_pk", "b_pk"])]
                if aKind == .toOne { constraints.append(.unique(["a_pk"])) }
                if bKind == .toOne { constraints.append(.unique(["b_pk"])) }
                let table = SQLCreateTable(link.table, ifNotExists: true, columns: [
                    SQLColumnDefinition("a_pk", .int64, notNull: true, references: SQLForeignKeyReference(
                        link.aEntity, columns: [entities[link.aEntity]?.keyColumn ?? hiddenKeyColumn], onDelete: .cascade)),
                    SQLColumnDefinition("b_pk", .int64, notNull: true, references: SQLForeignKeyReference(
                        link.bEntity, columns: [entities[link.bEntity]?.keyColumn ?? hiddenKeyColumn], onDelete: .cascade)),
                    SQLColumnDefinition("a_position", .int64),
                    SQLColumnDefinition("b_position", .int64),
                ], constraints: constraints)
                result.append(Migration("\(Migrator.flavorMigrationPrefix)predicates/link/\(link.table)", statements: [
                    .createTable(table),
                    .createIndex(SQLCreateIndex("\(link.table)_b", on: link.table, columns: ["b_pk"], ifNotExists: true)),
                ]))
            }
        }
        return result
    }
}
