import Foundation

/// Writes objects on one connection inside a session's transaction.
struct ORMWriter {
    let amigo: Amigo
    let conn: Connection

    /// The values to write for `object` (defaults filled in and written back), with the
    /// primary key left out when the database generates it.
    private func values(of object: AmigoModel, model: ORMModel, includeKey: Bool) throws -> (columns: [String], values: [DatabaseValue]) {
        var names: [String] = []
        var values: [DatabaseValue] = []
        names.reserveCapacity(model.columns.count)
        values.reserveCapacity(model.columns.count)
        for c in model.columns {
            if c.primaryKey && !includeKey { continue }
            var value = try c.storedValue(of: object)
            if value.isNull, let make = c.defaultValue, let made = make() {
                try c.assign(c.codec.toStorage(made.databaseValue) ?? made.databaseValue, to: object)
                value = try c.storedValue(of: object)
            }
            names.append(c.name)
            values.append(value)
        }
        return (names, values)
    }

    /// Saves the unsaved objects `object` points to.
    private func saveRelated(of object: AmigoModel, model: ORMModel, visiting: inout Set<ObjectIdentifier>) throws {
        for c in model.columns {
            guard case .toOne(let get, _, _)? = c.accessor, let related = get(object), let ref = c.reference else { continue }
            if try ref.model.savedKey(of: related) == nil {
                try save(related, upsert: false, visiting: &visiting)
            }
        }
    }

    func save(_ object: AmigoModel, upsert: Bool) throws {
        var visiting = Set<ObjectIdentifier>()
        try save(object, upsert: upsert, visiting: &visiting)
    }

    private func save(_ object: AmigoModel, upsert: Bool, visiting: inout Set<ObjectIdentifier>) throws {
        let id = ObjectIdentifier(object)
        guard !visiting.contains(id) else { return }
        visiting.insert(id)
        let model = try amigo.model(for: type(of: object))
        try saveRelated(of: object, model: model, visiting: &visiting)
        guard let pk = model.primaryKey else {
            let (names, values) = try self.values(of: object, model: model, includeKey: true)
            _ = try conn.execute(.insert(SQLInsert(into: model.tableName, columns: names, values: [values.map { .bind($0) }])))
            try maintainLinks(of: object, model: model)
            return
        }
        let key = try model.savedKey(of: object)
        let generated = key == nil && pk.reference == nil && [.int64, .int32, .int16].contains(pk.columnType)
        let (names, values) = try self.values(of: object, model: model, includeKey: !generated)
        if generated {
            let insert = SQLInsert(into: model.tableName, columns: names, values: [values.map { .bind($0) }])
                .returning(.column(pk.name))
            guard let row = try conn.fetchOne(.insert(insert)) else {
                throw ORMError.misuse("the insert into \(model.tableName) returned no key")
            }
            try pk.assign(row[0], to: object)
        } else if upsert || key == nil {
            var insert = SQLInsert(into: model.tableName, columns: names, values: [values.map { .bind($0) }])
            if upsert {
                let others = names.filter { $0 != pk.name }
                insert = others.isEmpty ? insert.onConflictDoNothing([pk.name])
                    : insert.onConflict([pk.name], doUpdate: others.map { SQLAssignment($0, .excluded($0)) })
            }
            _ = try conn.execute(.insert(insert))
        } else if let key {
            var assignments: [SQLAssignment] = []
            for (n, v) in zip(names, values) where n != pk.name { assignments.append(SQLAssignment(n, .bind(v))) }
            let changed = assignments.isEmpty ? 0
                : try conn.execute(.update(SQLUpdate(model.tableName, set: assignments, where: SQLExpression.column(pk.name).equals(.bind(key)))))
            if changed == 0 {
                // A key given by the caller that no row has yet: insert it.
                _ = try conn.execute(.insert(SQLInsert(into: model.tableName, columns: names, values: [values.map { .bind($0) }])
                    .onConflictDoNothing([pk.name])))
            }
        }
        try maintainLinks(of: object, model: model)
    }

    /// A through model's row keeps the relationship's link table row too.
    private func maintainLinks(of object: AmigoModel, model: ORMModel) throws {
        guard let entries = amigo.throughOf[ObjectIdentifier(model.type)] else { return }
        for (link, through) in entries {
            let s = try through.sourceKey.storedValue(of: object)
            let t = try through.targetKey.storedValue(of: object)
            if s.isNull || t.isNull { continue }
            try insertLink(link, s, t)
        }
    }

    func insertLink(_ link: LinkTable, _ source: DatabaseValue, _ target: DatabaseValue) throws {
        _ = try conn.execute(.insert(SQLInsert(into: link.name, columns: [link.sourceColumn, link.targetColumn],
                                               values: [[.bind(source), .bind(target)]])
            .onConflictDoNothing([link.sourceColumn, link.targetColumn])))
    }

    func delete(_ object: AmigoModel) throws {
        let model = try amigo.model(for: type(of: object))
        guard let pk = model.primaryKey, let key = try model.savedKey(of: object) else {
            throw ORMError.misuse("cannot delete an unsaved \(model.typeName) (it has no key)")
        }
        for (link, source, target) in amigo.linkTables {
            if source === model {
                _ = try conn.execute(.delete(SQLDelete(from: link.name, where: SQLExpression.column(link.sourceColumn).equals(.bind(key)))))
            }
            if target === model {
                _ = try conn.execute(.delete(SQLDelete(from: link.name, where: SQLExpression.column(link.targetColumn).equals(.bind(key)))))
            }
        }
        _ = try conn.execute(.delete(SQLDelete(from: model.tableName, where: SQLExpression.column(pk.name).equals(.bind(key)))))
        for (link, through) in amigo.throughOf[ObjectIdentifier(model.type)] ?? [] {
            let s = try through.sourceKey.storedValue(of: object)
            let t = try through.targetKey.storedValue(of: object)
            let others = SQLSelect(from: through.model.tableName).columns(.expression(.literal(.integer(1))))
                .where(.all([SQLExpression.column(through.sourceKey.name).equals(.bind(s)),
                             SQLExpression.column(through.targetKey.name).equals(.bind(t))]))
            _ = try conn.execute(.delete(SQLDelete(from: link.name, where: .all([
                SQLExpression.column(link.sourceColumn).equals(.bind(s)),
                SQLExpression.column(link.targetColumn).equals(.bind(t)),
                .notExists(others),
            ]))))
        }
    }

    /// Runs a batch: runs of unsaved objects of one model with generated keys become
    /// multi-row INSERTs (RETURNING the keys, in order); everything else runs one by one.
    func run(_ operations: [AmigoBatch.Operation]) throws {
        var i = 0
        while i < operations.count {
            guard case .add(let first, false) = operations[i], let model = try? amigo.model(for: type(of: first)),
                  let pk = model.primaryKey, pk.reference == nil, [.int64, .int32, .int16].contains(pk.columnType),
                  try model.savedKey(of: first) == nil else {
                switch operations[i] {
                case .add(let o, let upsert): try save(o, upsert: upsert)
                case .delete(let o): try delete(o)
                }
                i += 1
                continue
            }
            var run: [AmigoModel] = []
            while i < operations.count, case .add(let o, false) = operations[i], type(of: o) == model.type,
                  try model.savedKey(of: o) == nil {
                run.append(o)
                i += 1
            }
            try insertMany(run, model: model, key: pk)
        }
    }

    private func insertMany(_ objects: [AmigoModel], model: ORMModel, key pk: MappedColumn) throws {
        var visiting = Set<ObjectIdentifier>()
        for o in objects { try saveRelated(of: o, model: model, visiting: &visiting) }
        let perRow = max(1, model.columns.count - 1)
        let chunk = max(1, min(1000, 30_000 / perRow))
        var start = 0
        while start < objects.count {
            let slice = objects[start..<min(objects.count, start + chunk)]
            var names: [String] = []
            var rows: [[SQLExpression]] = []
            rows.reserveCapacity(slice.count)
            for o in slice {
                let (n, v) = try values(of: o, model: model, includeKey: false)
                names = n
                rows.append(v.map { .bind($0) })
            }
            let insert = SQLInsert(into: model.tableName, columns: names, values: rows).returning(.column(pk.name))
            let keys = try conn.fetchAll(.insert(insert))
            guard keys.count == slice.count else {
                throw ORMError.misuse("a batch insert into \(model.tableName) returned \(keys.count) keys for \(slice.count) rows")
            }
            // Generated keys rise in the order the rows were inserted; RETURNING's row order
            // is not promised, so the keys are sorted before they are handed out.
            let sorted = keys.map { $0[0] }.sorted { (Int64.fromDatabaseValue($0) ?? 0) < (Int64.fromDatabaseValue($1) ?? 0) }
            for (o, key) in zip(slice, sorted) { try pk.assign(key, to: o) }
            for o in slice { try maintainLinks(of: o, model: model) }
            start += chunk
        }
    }
}
