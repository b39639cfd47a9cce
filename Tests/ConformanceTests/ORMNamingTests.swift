import Foundation
import Testing
import UnityORM

/// Names the ORM derives never exceed PostgreSQL's 63 bytes; names given that do are mapping
/// errors.
@Suite struct ORMNamingTests {
    /// The names of the tables and indexes in the test's database.
    func catalogue(_ test: TestDatabase) throws -> Set<String> {
        let sql = test.backend == .sqlite
            ? "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%'"
            : "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() "
                + "UNION SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema()"
        return Set(try test.database.fetchAll(sql: sql).compactMap { row -> String? in
            if case .text(let s) = row[0] { return s }
            return nil
        })
    }

    /// The seed's through relationship with module-qualified table names (no `table:`): the
    /// link table's name (77 bytes) and its index names are shortened to 63 bytes, cut with a
    /// hash suffix, the same on both backends; the link table works.
    @Test(arguments: Backend.allCases)
    func derivedNamesOfAThroughRelationshipStayWithin63Bytes(_ backend: Backend) throws {
        let workout = ORMModel(AmigoSeed.Workout.self,
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            ManyToMany("exercises", using: AmigoSeed.WorkoutExercise.self, throughModel: AmigoSeed.WorkoutMeta.self))
        let exercise = ORMModel(AmigoSeed.WorkoutExercise.self,
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self))
        let meta = ORMModel(AmigoSeed.WorkoutMeta.self,
            Column("id", type: Int.self, primaryKey: true),
            Column("duration", type: Int.self),
            Column("position", type: Int.self),
            Column("exercise", type: ForeignKey(exercise)),
            Column("workout", type: ForeignKey(workout)))
        #expect(workout.tableName == "conformancetests_amigoseed_workout")
        try withAmigo(backend, [workout, exercise, meta]) { amigo, test in
            let link = "conformancetests_amigoseed_workout_conformancetests_am_57df9b60"
            let names = try catalogue(test)
            #expect(names.isSuperset(of: [
                "conformancetests_amigoseed_workout", "conformancetests_amigoseed_workoutexercise",
                "conformancetests_amigoseed_workoutmeta", link,
                "conformancetests_amigoseed_workoutmeta_exercise_id_idx",
                "conformancetests_amigoseed_workout_conformancetests_am_66484a63",
                "conformancetests_amigoseed_workout_conformancetests_am_afd71610",
            ]))
            #expect(names.allSatisfy { $0.utf8.count <= 63 })
            let session = try amigo.session
            let w = AmigoSeed.Workout()
            let e = AmigoSeed.WorkoutExercise()
            let m = AmigoSeed.WorkoutMeta()
            m.workout = w
            m.exercise = e
            try session.add(m)
            try session.commit()
            let rows = try test.database.fetchAll(sql: "SELECT conformancetests_amigoseed_workout_id, "
                + "conformancetests_amigoseed_workoutexercise_id, conformancetests_amigoseed_workoutmeta_id FROM \(link)")
            #expect(rows.map { [$0[0], $0[1], $0[2]] } == [[.integer(1), .integer(1), .integer(1)]])
            #expect(try amigo.query(AmigoSeed.WorkoutExercise.self).using(w).relationship("exercises").count() == 1)
        }
    }

    /// A derived name of exactly 63 bytes is kept as it is; one of 64 is shortened.
    @Test(arguments: Backend.allCases)
    func aDerivedNameIsShortenedFromTheSixtyFourthByte(_ backend: Backend) throws {
        func models(parent: String, child: String) -> [ORMModel] {
            [ORMModel(AmigoSeed.Parent.self, table: parent, Column("id", type: Int.self, primaryKey: true),
                      ManyToMany("children", using: AmigoSeed.Child.self)),
             ORMModel(AmigoSeed.Child.self, table: child, Column("id", type: Int.self, primaryKey: true))]
        }
        let p31 = String(repeating: "p", count: 31)
        let c31 = String(repeating: "c", count: 31)
        let c32 = String(repeating: "c", count: 32)
        try withAmigo(backend, models(parent: p31, child: c31)) { _, test in
            let names = try catalogue(test)
            #expect(names.contains(c31 + "_" + p31))
        }
        try withAmigo(backend, models(parent: p31, child: c32)) { amigo, test in
            let link = "cccccccccccccccccccccccccccccccc_ppppppppppppppppppppp_7d4bb00e"
            #expect(try catalogue(test).contains(link))
            let session = try amigo.session
            let p = AmigoSeed.Parent()
            let c = AmigoSeed.Child()
            try session.add(p)
            try session.using(p).relationship("children").add(c)
            try session.commit()
            #expect(try test.database.fetchAll(sql: "SELECT \(p31)_id, \(c32)_id FROM \(link)").map { [$0[0], $0[1]] }
                == [[.integer(1), .integer(1)]])
        }
    }

    /// A table, column or index name given over 63 bytes is a mapping error from `Amigo(...)`
    /// naming it; 63 bytes are accepted and work.
    @Test(arguments: Backend.allCases)
    func aGivenNameOver63BytesIsAMappingError(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        func expectTooLong(_ model: ORMModel, _ name: String) {
            do {
                _ = try Amigo([model], database: test.database)
                Issue.record("the name \(name) was accepted")
            } catch let error as ORMError {
                #expect(error.description.contains("the name \"\(name)\" is 64 bytes long"))
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        let d64 = String(repeating: "d", count: 64)
        expectTooLong(ORMModel(AmigoSeed.Dog.self, table: d64, Column("id", type: Int.self, primaryKey: true)), d64)
        let i64 = String(repeating: "i", count: 64)
        expectTooLong(ORMModel(AmigoSeed.Dog.self, table: "dog", Column("id", type: Int.self, primaryKey: true),
                               Column("label", type: String.self), Index(i64, "label")), i64)
        #expect(try Migrator(migrations: []).appliedMigrations(test.database).isEmpty)
        let d63 = String(repeating: "d", count: 63)
        let i63 = String(repeating: "i", count: 63)
        let amigo = try Amigo([ORMModel(AmigoSeed.Dog.self, table: d63, Column("id", type: Int.self, primaryKey: true),
                                        Column("label", type: String.self), Index(i63, "label"))], database: test.database)
        try amigo.createAll()
        #expect(try catalogue(test).isSuperset(of: [d63, i63]))
        let session = try amigo.session
        let dog = AmigoSeed.Dog()
        dog.label = "Lucy"
        try session.add(dog)
        try session.commit()
        #expect(try amigo.query(AmigoSeed.Dog.self).all().map(\.label) == ["Lucy"])
    }

    /// `Index` takes its name, then columns, `unique:` last; Amigo's order (`unique:` before the
    /// columns) and its `columns:` array form make the same indexes.
    @Test(arguments: Backend.allCases)
    func indexArgumentOrders(_ backend: Backend) throws {
        let dog = ORMModel(AmigoSeed.Dog.self, table: "dog",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            Index("dog_label_uq", unique: true, "label"),
            Index("dog_id_label_idx", columns: ["id", "label"]),
            Index("dog_label_id_idx", "label", "id", unique: false))
        try withAmigo(backend, [dog]) { amigo, test in
            #expect(try catalogue(test).isSuperset(of: ["dog_label_uq", "dog_id_label_idx", "dog_label_id_idx"]))
            let session = try amigo.session
            let a = AmigoSeed.Dog(), b = AmigoSeed.Dog()
            a.label = "Rex"
            b.label = "Rex"
            try session.add(a)
            #expect {
                try session.add(b)
            } throws: { error in
                if case .constraintViolation(.unique, _)? = error as? DatabaseError { return true }
                return false
            }
            try session.commit()
            #expect(try test.database.fetchAll(sql: "SELECT id FROM dog").map { $0[0] } == [.integer(1)])
        }
    }
}
