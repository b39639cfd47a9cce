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
}

extension ManagedObjectConvertible {
    static var entitySchema: EntitySchema {
        EntitySchema(
            name: entityName,
            columns: EntityDescription<Self>.shared.attributes.map {
                ColumnSchema(name: $0.name, type: $0.columnType, optional: $0.isOptional, unique: $0.isUnique)
            },
            relations: relationDeclarations,
            keyColumn: keyColumn)
    }
}

/// The models of a container: their tables, their relations' link tables, checked once.
struct SchemaRegistry: Sendable {
    let entities: [String: EntitySchema]
    let order: [String]

    init(_ schemas: [EntitySchema]) {
        var map: [String: EntitySchema] = [:]
        for s in schemas { map[s.name] = s }
        entities = map
        order = schemas.map(\.name)
    }

    func relation(_ entity: String, _ name: String) -> RelationDeclaration? {
        entities[entity]?.relations.first { $0.name == name }
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
            for r in entity.relations {
                guard entities[r.destinationEntity] != nil else {
                    throw PredicatesError.invalidRelation(
                        "\(name).\(r.name) points at \(r.destinationEntity), which is not among the container's models: add it")
                }
                if let inverse = r.inverse {
                    guard let back = relation(r.destinationEntity, inverse) else {
                        throw PredicatesError.invalidRelation(
                            "\(name).\(r.name) names the inverse \(r.destinationEntity).\(inverse), which \(r.destinationEntity) does not declare")
                    }
                    guard back.inverse == r.name, back.destinationEntity == name else {
                        throw PredicatesError.invalidRelation(
                            "\(name).\(r.name) and \(r.destinationEntity).\(inverse) must name each other as inverses")
                    }
                    if back.name == r.name && r.destinationEntity == name {
                        throw PredicatesError.invalidRelation("\(name).\(r.name) cannot be its own inverse")
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
        for name in order {
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
            result.append(Migration("\(Migrator.flavorMigrationPrefix)predicates/create/\(name)", statements: [
                .createTable(SQLCreateTable(name, ifNotExists: true, columns: columns)),
            ]))
        }
        var seen: Set<String> = []
        for name in order {
            guard let entity = entities[name] else { continue }
            for r in entity.relations {
                let link = LinkStorage(source: name, r)
                guard seen.insert(link.table).inserted else { continue }
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
