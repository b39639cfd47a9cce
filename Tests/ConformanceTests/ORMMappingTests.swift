import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import UnityORM

@Suite struct ORMMappingTests {
    @Test(arguments: Backend.allCases)
    func everySeedColumnTypeRoundTrips(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, _ in
            let session = try amigo.session
            let a = AmigoSeed.AllTypes()
            a.string = "héllo ✓"
            a.int16 = -32768
            a.int32 = 2_147_483_647
            a.int64 = Int64.min
            a.int = 42
            a.date = Date(timeIntervalSince1970: 1_700_000_000.123456)
            a.data = Data([0, 1, 2, 255])
            a.bytes = [9, 8, 7]
            a.decimal = Decimal(string: "12345678901234567890.123456789")!
            a.double = 1.5e300
            a.float = 1.25
            a.bool = true
            try session.add(a)
            #expect(a.id == 1)
            try session.commit()
            let back = try #require(try amigo.query(AmigoSeed.AllTypes.self).get(1))
            #expect(back.string == "héllo ✓")
            #expect(back.int16 == -32768)
            #expect(back.int32 == 2_147_483_647)
            #expect(back.int64 == Int64.min)
            #expect(back.int == 42)
            #expect(back.date == Date(timeIntervalSince1970: 1_700_000_000.123456))
            #expect(back.data == Data([0, 1, 2, 255]))
            #expect(back.bytes == [9, 8, 7])
            #expect(back.decimal == Decimal(string: "12345678901234567890.123456789")!)
            #expect(back.double == 1.5e300)
            #expect(back.float == 1.25)
            #expect(back.bool == true)
            #expect(back.note == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func optionalFalseAndUniqueAreConstraints(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, test in
            let session = try amigo.session
            let a = AmigoSeed.AllTypes()
            a.int = 7
            try session.add(a)
            let b = AmigoSeed.AllTypes()
            b.int = 7
            #expect {
                try session.add(b)
            } throws: { error in
                if case .constraintViolation(.unique, _)? = error as? DatabaseError { return true }
                return false
            }
            // The failed add was rolled back to its savepoint: the first row survives.
            #expect(b.id == 0)
            try session.commit()
            #expect(try amigo.query(AmigoSeed.AllTypes.self).count() == 1)
            // NOT NULL: written through the core, the ORM's column refuses NULL.
            #expect(throws: DatabaseError.self) {
                try test.database.execute(sql: "INSERT INTO alltypes (string, \"int\") VALUES (NULL, 8)")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func createAllIsOneMigrationAndRerunIsANoOp(_ backend: Backend) throws {
        try withAmigo(backend, AmigoSeed.workouts() + AmigoSeed.parentChild()) { amigo, test in
            try amigo.createAll()
            let applied = try Migrator(migrations: []).appliedMigrations(test.database)
            #expect(applied.map(\.name) == ["flavor:orm/create_all(child,parent,workout,workoutexercise,workoutmeta)"])
            // Tables, the link tables, and the foreign-key column named <name>_<pk>.
            _ = try test.database.fetchAll(sql: "SELECT parent_id, child_id FROM child_parent")
            _ = try test.database.fetchAll(sql: "SELECT workout_id, workoutexercise_id FROM workout_workoutexercise")
            _ = try test.database.fetchAll(sql: "SELECT exercise_id, workout_id, duration, position FROM workoutmeta")
        }
    }

    @Test(arguments: Backend.allCases)
    func createAllBesideOtherMigrationsAndAfterAModelChange(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        try Migrator(migrations: [Migration("0001_app", sql: "CREATE TABLE app_thing (id INTEGER)")]).migrate(test.database)
        let (dog, person) = AmigoSeed.dogPerson()
        try Amigo([dog, person], database: test.database).createAll()
        let names = try Migrator(migrations: []).appliedMigrations(test.database).map(\.name)
        #expect(names == ["0001_app", "flavor:orm/create_all(dog,person)"])
        // The application's own migrator, which does not list createAll's migration, still runs.
        #expect(throws: Never.self) {
            try Migrator(migrations: [Migration("0001_app", sql: "CREATE TABLE app_thing (id INTEGER)")]).migrate(test.database)
        }
        // The same tables with another column: a migration the user writes, not a silent change.
        let changedDog = ORMModel(AmigoSeed.Dog.self, table: "dog", Column("id", type: Int.self, primaryKey: true),
                                  Column("label", type: String.self, unique: true), OneToMany("people", using: AmigoSeed.Person.self))
        let samePerson = ORMModel(AmigoSeed.Person.self, table: "person", Column("id", type: Int.self, primaryKey: true),
                                  Column("label", type: String.self), Column("dog", type: ForeignKey(changedDog)))
        #expect(throws: MigrationError.self) { try Amigo([changedDog, samePerson], database: test.database).createAll() }
    }

    @Test(arguments: Backend.allCases)
    func foreignKeyToATableColumn(_ backend: Backend) throws {
        let dog = ORMModel(AmigoSeed.Dog.self, table: "dog",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self))
        let person = ORMModel(AmigoSeed.Person.self, table: "person",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            Column("dog", type: ForeignKey(dog.table.c["id"])))
        try withAmigo(backend, [dog, person]) { amigo, test in
            let session = try amigo.session
            let d = AmigoSeed.Dog()
            let p = AmigoSeed.Person()
            p.dog = d
            try session.add(p)
            try session.commit()
            #expect(try test.database.fetchOne(sql: "SELECT dog_id FROM person")?["dog_id"] == .integer(1))
            // A reference to a column the table lacks is a mapping error.
            let bad = ORMModel(AmigoSeed.Person.self, table: "person2", Column("id", type: Int.self, primaryKey: true),
                               Column("dog", type: ForeignKey(dog.table.c["nope"])))
            #expect(throws: ORMError.self) { try Amigo([dog, bad], database: test.database) }
        }
    }

    @Test func defaultTableNameFollowsAmigo() throws {
        let m = ORMModel(AmigoSeed.Dog.self, Column("id", type: Int.self, primaryKey: true))
        #expect(m.tableName == "conformancetests_amigoseed_dog")
    }

    /// `@ORMFields` maps every stored `var`: a fetched row is written through the generated
    /// setters (an observer fires once per write), values checked against what the core reads.
    @Test(arguments: Backend.allCases)
    func generatedFieldTableWritesThroughSetters(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.tracked(Column("label", type: String.self))]) { amigo, test in
            let session = try amigo.session
            let tracked = AmigoSeed.Tracked()
            tracked.label = "first"
            try session.add(tracked)
            try session.commit()
            #expect(try test.database.read { try $0.fetchValue(String.self, sql: "SELECT label FROM tracked WHERE id = 1") } == "first")
            try test.database.execute(sql: "UPDATE tracked SET label = 'second' WHERE id = 1")
            let back = try #require(try amigo.query(AmigoSeed.Tracked.self).get(1))
            #expect(back !== tracked)
            #expect(back.id == 1)
            #expect(back.label == "second")
            #expect(back.labelWrites == 1)
            #expect(back.kind == "tracked")
        }
    }

    /// A `Column` naming a property `@ORMFields` cannot store is a mapping error naming the
    /// property's type; nothing is created.
    @Test(arguments: Backend.allCases)
    func columnOfAnUnstorablePropertyIsAMappingError(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let model = AmigoSeed.tracked(Column("origin", type: String.self))
        do {
            _ = try Amigo([model], database: test.database)
            Issue.record("a column of an unstorable property was accepted")
        } catch let error as ORMError {
            #expect(error.description.contains("\"origin\" of Tracked is a property of type Origin"))
        }
        #expect(try Migrator(migrations: []).appliedMigrations(test.database).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func mappingProblemsAreErrorsAtMappingTime(_ backend: Backend) throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        // A name over 63 bytes.
        let long = ORMModel(AmigoSeed.Dog.self, table: String(repeating: "d", count: 64),
                            Column("id", type: Int.self, primaryKey: true))
        #expect(throws: ORMError.self) { try Amigo([long], database: test.database) }
        // A column without an accessor entry.
        let missing = ORMModel(AmigoSeed.Dog.self, table: "dog", Column("id", type: Int.self, primaryKey: true),
                               Column("nickname", type: String.self))
        #expect(throws: ORMError.self) { try Amigo([missing], database: test.database) }
        // A through model without its two foreign keys.
        let workout = ORMModel(AmigoSeed.Workout.self, table: "workout", Column("id", type: Int.self, primaryKey: true),
                               ManyToMany("exercises", using: AmigoSeed.WorkoutExercise.self, throughModel: AmigoSeed.WorkoutMeta.self))
        let exercise = ORMModel(AmigoSeed.WorkoutExercise.self, table: "workoutexercise", Column("id", type: Int.self, primaryKey: true))
        let meta = ORMModel(AmigoSeed.WorkoutMeta.self, table: "workoutmeta", Column("id", type: Int.self, primaryKey: true),
                            Column("workout", type: ForeignKey(workout)))
        do {
            _ = try Amigo([workout, exercise, meta], database: test.database)
            Issue.record("a through model without a foreign key to WorkoutExercise was accepted")
        } catch let error as ORMError {
            #expect(error.description.contains("must have a ForeignKey"))
        }
        // Nothing was created.
        #expect(try Migrator(migrations: []).appliedMigrations(test.database).isEmpty)
    }

    @Test(arguments: Backend.allCases)
    func engineFactoriesOpenTheDatabase(_ backend: Backend) throws {
        switch backend {
        case .sqlite:
            let amigo = try Amigo([AmigoSeed.myModel()], factory: SQLiteEngineFactory(":memory:", echo: true))
            try amigo.createAll()
            let session = try amigo.session
            try session.add(AmigoSeed.MyModel())
            try session.commit()
            #expect(try amigo.query(AmigoSeed.MyModel.self).count() == 1)
        case .postgres:
            let test = try TestDatabase(backend)
            defer { test.tearDown() }
            let url = try #require(postgresURL)
            let amigo = try Amigo([AmigoSeed.myModel()],
                                  factory: PostgresEngineFactory(url, echo: true, connections: 2, searchPath: test.location))
            try amigo.createAll()
            let session = try amigo.session
            try session.add(AmigoSeed.MyModel())
            try session.commit()
            #expect(try amigo.query(AmigoSeed.MyModel.self).count() == 1)
            amigo.database.close()
        }
    }
}
