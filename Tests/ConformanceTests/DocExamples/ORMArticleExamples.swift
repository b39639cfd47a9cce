import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import UnityORMFields

// The code of the UnityORM catalog's articles, compiled and run on both backends. Every
// ```swift block of those articles stands here line for line (DocumentationExamplesTests checks
// that), so an example that drifts from the API fails the build or a test.

// MARK: From "Getting started" (Amigo's README, ported)

@ORMFields
final class Dog: AmigoModel {
    var id = 0
    var label = "New Dog"
}

@ORMFields
final class Person: AmigoModel {
    var id = 0
    var label = "New Person"
    var dog: Dog?
}

func dogAndPersonModels() -> [ORMModel] {
    let dog = ORMModel(Dog.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self),
        Index("dog_label_idx", "label"),
        OneToMany("people", using: Person.self)
    )
    let person = ORMModel(Person.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self),
        Column("dog", type: ForeignKey(dog))
    )
    return [dog, person]
}

func openAmigo(_ models: [ORMModel], sqlitePath: String) throws -> Amigo {
    try Amigo(models, factory: SQLiteEngineFactory(sqlitePath, echo: true))   // a file path, or ":memory:"
}

func openAmigo(_ models: [ORMModel], url: String, schema: String) throws -> Amigo {
    try Amigo(models, factory: PostgresEngineFactory(url, echo: true, searchPath: schema))
}

// MARK: From "Mappings and naming"

@ORMFields
final class Appliance: AmigoModel {
    var id = 0
    var serial: String?
    var name = ""
    var price = Decimal(0)
    var madeAt = Date(timeIntervalSince1970: 0)
    var inStock = true
}

func applianceModel() -> ORMModel {
    ORMModel(Appliance.self, table: "appliance",
        IntegerField("id", primaryKey: true),
        UUIDField("serial", indexed: true, unique: true) { UUID().uuidString.lowercased() },
        CharField("name", optional: false),
        Column("price", type: Decimal.self),
        DateTimeField("madeAt"),
        BooleanField("inStock"),
        Index("appliance_name_price_idx", "name", "price", unique: true)
    )
}

final class Memo: AmigoModel {
    var id = 0
    var text: String?
    override class var ormFields: ORMFieldTable {
        ORMFieldTable(Memo.self, .property("id", \.id) { $0.id = $1 }, .property("text", \.text) { $0.text = $1 })
    }
}

// MARK: From "Relationships"

@ORMFields
final class Parent: AmigoModel {
    var id = 0
    var label = ""
}

@ORMFields
final class Child: AmigoModel {
    var id = 0
    var label = ""
}

func familyModels() -> [ORMModel] {
    let parent = ORMModel(Parent.self, table: "parent",
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self),
        ManyToMany("children", using: Child.self)
    )
    let child = ORMModel(Child.self, table: "child",
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self)
    )
    return [parent, child]
}

@ORMFields
final class Workout: AmigoModel {
    var id = 0
    var label = ""
}

@ORMFields
final class WorkoutExercise: AmigoModel {
    var id = 0
    var label = ""
}

@ORMFields
final class WorkoutMeta: AmigoModel {
    var id = 0
    var duration = 0
    var position = 0
    var exercise: WorkoutExercise?
    var workout: Workout?
}

func workoutModels() -> [ORMModel] {
    let workout = ORMModel(Workout.self, table: "workout",
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self),
        ManyToMany("exercises", using: WorkoutExercise.self, throughModel: WorkoutMeta.self)
    )
    let exercise = ORMModel(WorkoutExercise.self, table: "workoutexercise",
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self)
    )
    let meta = ORMModel(WorkoutMeta.self, table: "workoutmeta",
        Column("id", type: Int.self, primaryKey: true),
        Column("duration", type: Int.self),
        Column("position", type: Int.self),
        Column("exercise", type: ForeignKey(exercise)),
        Column("workout", type: ForeignKey(workout))
    )
    return [workout, exercise, meta]
}

// MARK: From "Existing schemas"

@ORMFields
final class Department: AmigoModel {
    var id = 0
    var name = ""
}

@ORMFields
final class Employee: AmigoModel {
    var id = 0
    var name = ""
    var salary = Decimal(0)
    var department: Department?
}

func staffModels() -> [ORMModel] {
    let department = ORMModel(Department.self, table: "department",
        Column("id", type: Int.self, primaryKey: true),
        Column("name", type: String.self, optional: false))
    let employee = ORMModel(Employee.self, table: "employee",
        Column("id", type: Int.self, primaryKey: true),
        Column("name", type: String.self, optional: false),
        Column("salary", type: Decimal.self, optional: false),
        Column("department", type: ForeignKey(department), optional: false))
    return [department, employee]
}

/// The staff tables as another tool made them: money in a TEXT column on SQLite.
func createStaffTables(_ amigo: Amigo, moneyType: String) throws {
    try amigo.execute("CREATE TABLE department (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    try amigo.execute("CREATE TABLE employee (id INTEGER PRIMARY KEY, name TEXT NOT NULL, salary \(moneyType) NOT NULL, "
        + "department_id INTEGER NOT NULL REFERENCES department (id))")
    try amigo.execute("INSERT INTO department (id, name) VALUES (1, 'Research'), (2, 'Sales')")
    try amigo.execute("INSERT INTO employee (id, name, salary, department_id) VALUES "
        + "(5, 'Ada', '9.91', 1), (6, 'Grace', '100.5', 1), (7, 'Linus', '10.00', 2)")
}

/// An `Amigo` for a fresh test database: through its engine factory, as the articles open one.
func withDocAmigo<T>(_ backend: Backend, _ models: [ORMModel], _ body: (Amigo) throws -> T) throws -> T {
    try withTestDatabaseHandle(backend) { test in
        let amigo: Amigo
        switch backend {
        case .sqlite: amigo = try openAmigo(models, sqlitePath: test.location)
        case .postgres: amigo = try openAmigo(models, url: try #require(postgresURL), schema: test.location)
        }
        return try body(amigo)
    }
}

@Suite("Documentation: the UnityORM catalog's examples")
struct ORMArticleExamples {
    // MARK: Getting started

    @Test(arguments: Backend.allCases)
    func gettingStarted(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try amigo.createAll()

            let session = try amigo.session      // a transaction begins here
            let d1 = Dog()
            d1.label = "Lucy"
            let d2 = Dog()
            d2.label = "Ollie"
            try session.add(d1, d2)              // written now; the generated ids are written back
            let results = try session.query(Dog.self).all()
            print(results.count)                 // 2
            try session.commit()                 // without commit() nothing is kept

            let p1 = Person()
            p1.label = "Foo"
            p1.dog = d1
            try session.add(p1)
            let lucys = try session.query(Person.self)
                .filter("dog.label = 'Lucy'")
                .selectRelated("dog")
                .orderBy("label")
                .all()
            let people = try session.query(Person.self).using(d1).relationship("people").all()
            print(lucys.map { $0.dog?.label }, people.map(\.label))   // [Optional("Lucy")] ["Foo"]

            d2.label = "Ollie II"
            try session.add(d2)                  // it has an id: an UPDATE
            try session.delete(p1)
            try session.commit()

            #expect(results.map(\.label) == ["Lucy", "Ollie"])
            #expect(d1.id == 1)
            #expect(d2.id == 2)
            #expect(lucys.map(\.label) == ["Foo"])
            #expect(lucys.first?.dog?.label == "Lucy")
            #expect(people.map(\.label) == ["Foo"])
            #expect(try amigo.query(Dog.self).orderBy("id").all().map(\.label) == ["Lucy", "Ollie II"])
            #expect(try amigo.query(Person.self).count() == 0)
        }
    }

    // MARK: Mappings and naming

    @Test(arguments: Backend.allCases)
    func columnsFieldsAndIndexes(_ backend: Backend) throws {
        try withDocAmigo(backend, [applianceModel()]) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let lamp = Appliance()
            lamp.name = "Lamp"
            lamp.price = Decimal(string: "19.99")!
            try session.add(lamp)
            try session.commit()
            let serial = lamp.serial ?? ""
            let found = try amigo.query(Appliance.self).filter("serial = ?", serial.uppercased()).first()
            // found?.name == "Lamp": the serial was filled by the default; any case matches

            #expect(serial.count == 36)
            #expect(serial == serial.lowercased())
            #expect(found?.name == "Lamp")
            #expect(found?.price == Decimal(string: "19.99"))
            #expect(found?.serial == serial)
            #expect(found?.inStock == true)
            let twin = Appliance()
            twin.name = "Lamp"
            twin.price = Decimal(string: "19.99")!
            #expect(throws: DatabaseError.self) { try session.add(twin) }   // the unique index
            try session.rollback()
        }
    }

    @Test(arguments: Backend.allCases)
    func tableNamesAndHandWrittenAccessors(_ backend: Backend) throws {
        let dog = ORMModel(Dog.self, Column("id", type: Int.self, primaryKey: true))
        let memo = ORMModel(Memo.self, table: "memo",
            Column("id", type: Int.self, primaryKey: true),
            Column("text", type: String.self))
        // dog.tableName == "conformancetests_dog" (module ConformanceTests); memo.tableName == "memo"
        #expect(dog.tableName == "conformancetests_dog")
        #expect(memo.tableName == "memo")

        try withDocAmigo(backend, [memo]) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let m = Memo()
            m.text = "buy milk"
            try session.add(m)
            try session.commit()
            #expect(try amigo.query(Memo.self).get(1)?.text == "buy milk")
        }
    }

    @Test(arguments: Backend.allCases)
    func mappingErrors(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            do {
                let memo = ORMModel(Memo.self, Column("id", type: Int.self, primaryKey: true), Column("title", type: String.self))
                _ = try Amigo([memo], database: database)
            } catch ORMError.mapping(let message) {
                print(message)   // names Memo and "title", which its ormFields does not list
            }

            #expect {
                _ = try Amigo([ORMModel(Memo.self, Column("id", type: Int.self, primaryKey: true),
                                        Column("title", type: String.self))], database: database)
            } throws: { error in
                guard case ORMError.mapping(let message) = error else { return false }
                return message.contains("title")
            }
        }
    }

    // MARK: Relationships

    @Test(arguments: Backend.allCases)
    func foreignKeysAndOneToMany(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let d1 = Dog()
            d1.label = "Lucy"
            let p1 = Person()
            p1.label = "Foo"
            p1.dog = d1                          // d1 is unsaved: add saves it first
            let p2 = Person()
            p2.label = "Bar"
            p2.dog = d1
            try session.add(p1, p2)
            try session.commit()

            let plain = try session.query(Person.self).get(p1.id)
            let joined = try session.query(Person.self).selectRelated("dog").get(p1.id)
            let people = try session.query(Person.self).using(d1).relationship("people").orderBy("label").all()
            // plain?.dog == nil, plain?.storedForeignKey("dog") == .integer(1)
            // joined?.dog?.label == "Lucy"; people: Bar, Foo

            #expect(plain?.dog == nil)
            #expect(plain?.storedForeignKey("dog") == .integer(1))
            #expect(joined?.dog?.label == "Lucy")
            #expect(people.map(\.label) == ["Bar", "Foo"])
        }
    }

    @Test(arguments: Backend.allCases)
    func unloadedForeignKeys(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let d1 = Dog()
            d1.label = "Lucy"
            let p1 = Person()
            p1.label = "Foo"
            p1.dog = d1
            try session.add(p1)
            try session.commit()

            if let foo = try session.query(Person.self).get(p1.id) {   // dog not loaded
                foo.label = "Foo II"
                try session.add(foo)                                     // keeps dog_id
            }
            let kept = try session.query(Person.self).filter("dog.label = 'Lucy'").count()
            if let foo = try session.query(Person.self).get(p1.id) {
                try foo.clearRelationship("dog")
                try session.add(foo)                                     // writes NULL
            }
            let cleared = try session.query(Person.self).filter("dog = nil").count()
            try session.commit()
            // kept == 1, cleared == 1

            #expect(kept == 1)
            #expect(cleared == 1)
            #expect(try amigo.query(Person.self).get(p1.id)?.label == "Foo II")
            #expect {
                try Person().clearRelationship("cat")
            } throws: { error in
                (error as? ORMError) == .unknownRelationship(model: "Person", name: "cat")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func manyToMany(_ backend: Backend) throws {
        try withDocAmigo(backend, familyModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let p1 = Parent()
            p1.label = "Pat"
            let c1 = Child()
            c1.label = "Ann"
            let c2 = Child()
            c2.label = "Bob"
            try session.add(p1, c1, c2)
            try session.using(p1).relationship("children").add(c1, c2)
            try session.using(p1).relationship("children").add(c1)   // already linked: one row
            try session.using(p1).relationship("children").delete(c2)
            let children = try session.query(Child.self).using(p1).relationship("children").all()
            try session.commit()
            // children: Ann

            #expect(children.map(\.label) == ["Ann"])
            let links = try amigo.execute("SELECT count(*) AS n FROM child_parent") { try $0.decode(Int.self, column: "n") }
            #expect(links == [1])
        }
    }

    @Test(arguments: Backend.allCases)
    func throughModels(_ backend: Backend) throws {
        try withDocAmigo(backend, workoutModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let w1 = Workout()
            w1.label = "Monday"
            let squat = WorkoutExercise()
            squat.label = "Squat"
            let plank = WorkoutExercise()
            plank.label = "Plank"
            let m1 = WorkoutMeta()
            m1.duration = 60
            m1.position = 2
            m1.workout = w1
            m1.exercise = squat
            let m2 = WorkoutMeta()
            m2.duration = 90
            m2.position = 1
            m2.workout = w1
            m2.exercise = plank
            try session.add(m1, m2)              // the workout and exercises are saved first

            let exercises = try session.query(WorkoutExercise.self).using(w1).relationship("exercises").orderBy("label").all()
            let steps = try session.query(WorkoutMeta.self).using(w1).selectRelated("exercise")
                .orderBy("position").relationship("exercises").all()
            // exercises: Plank, Squat; steps: Plank (90 s), Squat (60 s)

            do {
                try session.using(w1).relationship("exercises").add(squat)
            } catch ORMError.throughRelationship(let model, let name) {
                print("add \(model).\(name) rows through the through model")
            }
            try session.commit()

            #expect(exercises.map(\.label) == ["Plank", "Squat"])
            #expect(steps.map { $0.exercise?.label } == ["Plank", "Squat"])
            #expect(steps.map(\.duration) == [90, 60])
            #expect(throws: ORMError.throughRelationship(model: "Workout", name: "exercises")) {
                try session.using(w1).relationship("exercises").add(plank)
            }
            try session.rollback()
        }
    }

    // MARK: Queries

    static func kennel(_ amigo: Amigo) throws {
        try amigo.createAll()
        let session = try amigo.session
        for (label, owner) in [("Lucy", "Foo"), ("Ollie", "Bar"), ("Rex", nil), ("Max", "Baz")] as [(String, String?)] {
            let dog = Dog()
            dog.label = label
            try session.add(dog)
            if let owner {
                let person = Person()
                person.label = owner
                person.dog = dog
                try session.add(person)
            }
        }
        try session.commit()
    }

    @Test(arguments: Backend.allCases)
    func filtersOrderingAndPaging(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try Self.kennel(amigo)
            let session = try amigo.session

            let some = try session.query(Dog.self).filter("id > 1 AND label != 'Rex'").orderBy("label", ascending: false).all()
            let page = try session.query(Dog.self).orderBy("label").limit(2).offset(1).all()
            let owners = try session.query(Person.self)
                .selectRelated("dog")
                .filter("dog.label = ? OR dog.label = ?", "Lucy", "Max")
                .orderBy("dog.label", ascending: false)
                .all()
            let bigger = try session.query(Dog.self).filter("id < 2.5").count()
            let first = try session.query(Dog.self).orderBy("label").first()
            try session.commit()
            // some: Ollie, Max; page: Max, Ollie; owners: Baz (Max), Foo (Lucy); bigger: 2; first: Lucy

            #expect(some.map(\.label) == ["Ollie", "Max"])
            #expect(page.map(\.label) == ["Max", "Ollie"])
            #expect(owners.map(\.label) == ["Baz", "Foo"])
            #expect(owners.map { $0.dog?.label } == ["Max", "Lucy"])
            #expect(bigger == 2)
            #expect(first?.label == "Lucy")
        }
    }

    @Test(arguments: Backend.allCases)
    func filterErrors(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try Self.kennel(amigo)

            do {
                _ = try amigo.query(Dog.self).filter("label = 'Lucy' AND").all()
            } catch ORMError.filterSyntax(_, let position, let message) {
                print("at \(position): \(message)")   // never reached the database
            }

            #expect {
                try amigo.query(Dog.self).filter("label = 'Lucy' AND").all()
            } throws: { error in
                guard case ORMError.filterSyntax(_, let position, _) = error else { return false }
                return position == 18
            }
            #expect {
                try amigo.query(Dog.self).filter("id = 'seven'").all()
            } throws: { error in
                guard case ORMError.filterValue(_, let column, _) = error else { return false }
                return column == "id"
            }
            #expect(throws: ORMError.unknownColumn(model: "Dog", name: "color")) {
                try amigo.query(Dog.self).filter("color = 'brown'").all()
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func streaming(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try Self.kennel(amigo)
            let session = try amigo.session

            var labels: [String] = []
            try session.query(Dog.self).orderBy("label").forEach { dog in
                labels.append(dog.label)
            }
            var firstTwo: [String] = []
            try session.query(Dog.self).orderBy("label").stream { dog in
                firstTwo.append(dog.label)
                return firstTwo.count < 2
            }
            try session.commit()
            // labels: Lucy, Max, Ollie, Rex; firstTwo: Lucy, Max

            #expect(labels == ["Lucy", "Max", "Ollie", "Rex"])
            #expect(firstTwo == ["Lucy", "Max"])
        }
    }

    @Test(arguments: Backend.allCases)
    func rawSQL(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try Self.kennel(amigo)

            let table = amigo.models[0].tableName
            let labels = try amigo.execute("SELECT label FROM \(table) WHERE id > ? ORDER BY id", [2]) {
                try $0.decode(String.self, column: "label")
            }
            // labels: Rex, Max

            #expect(labels == ["Rex", "Max"])
        }
    }

    // MARK: Sessions and transactions

    @Test(arguments: Backend.allCases)
    func sessionsCommitAndRollBack(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let lucy = Dog()
            lucy.label = "Lucy"
            try session.add(lucy)
            try session.commit()                 // durable; the next call begins a new transaction

            let ollie = Dog()
            ollie.label = "Ollie"
            try session.add(ollie)
            try session.rollback()               // Ollie is gone

            try session.begin()                  // a savepoint
            let rex = Dog()
            rex.label = "Rex"
            try session.add(rex)
            try session.rollback()               // back to the savepoint: Rex is gone
            let max = Dog()
            max.label = "Max"
            try session.add(max)
            try session.commit()                 // releases the savepoint
            try session.commit()                 // commits Max

            let labels = try amigo.query(Dog.self).orderBy("label").all().map(\.label)
            // Lucy, Max

            #expect(labels == ["Lucy", "Max"])
        }
    }

    @Test(arguments: Backend.allCases)
    func failedAddsAndUpserts(_ backend: Backend) throws {
        try withDocAmigo(backend, [applianceModel()]) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let lamp = Appliance()
            lamp.name = "Lamp"
            try session.add(lamp)
            let copy = Appliance()
            copy.name = "Lamp"                   // the unique index on (name, price)
            do {
                try session.add(copy)
            } catch DatabaseError.constraintViolation(.unique, _) {
                // only this add was rolled back: the lamp is still there
            }
            let desk = Appliance()
            desk.id = lamp.id
            desk.name = "Desk lamp"
            try session.add(desk, upsert: true)  // replaces the row with that key
            try session.commit()

            let names = try amigo.query(Appliance.self).all().map(\.name)
            // Desk lamp

            #expect(names == ["Desk lamp"])
        }
    }

    @Test(arguments: Backend.allCases)
    func batches(_ backend: Backend) throws {
        try withDocAmigo(backend, dogAndPersonModels()) { amigo in
            try Self.kennel(amigo)
            let session = try amigo.session

            let people = try session.query(Person.self).all()
            let pups = (1...3).map { n -> Dog in
                let pup = Dog()
                pup.label = "Pup \(n)"
                return pup
            }
            try session.batch { batch in
                people.forEach(batch.delete)
                pups.forEach(batch.add)          // one multi-row INSERT
            }
            try session.commit()
            // pups' ids: 5, 6, 7; no people left

            #expect(pups.map(\.id) == [5, 6, 7])
            #expect(try amigo.query(Person.self).count() == 0)
            #expect(try amigo.query(Dog.self).count() == 7)
        }
    }

    // MARK: Existing schemas

    @Test(arguments: Backend.allCases)
    func existingSchema(_ backend: Backend) throws {
        try withDocAmigo(backend, staffModels()) { amigo in
            try createStaffTables(amigo, moneyType: amigo.database.dialect == .sqlite ? "TEXT" : "NUMERIC(10,2)")
            let session = try amigo.session

            let wellPaid = try session.query(Employee.self).filter("salary >= 10").orderBy("salary").all()
            if let ada = try session.query(Employee.self).get(5) {   // department not loaded
                ada.salary = Decimal(string: "12.50")!
                try session.add(ada)                                   // department_id is kept
            }
            let hire = Employee()
            hire.id = 8                              // the table generates no key on PostgreSQL
            hire.name = "Ken"
            hire.salary = 11
            hire.department = try session.query(Department.self).get(2)
            try session.add(hire)
            let research = try session.query(Employee.self).filter("department.name = 'Research'").orderBy("name").all()
            try session.commit()
            // wellPaid: Linus (10.00), Grace (100.5): numbers, not text; research: Ada, Grace

            #expect(wellPaid.map(\.name) == ["Linus", "Grace"])
            #expect(research.map(\.name) == ["Ada", "Grace"])
            #expect(try amigo.query(Employee.self).get(5)?.salary == Decimal(string: "12.5"))
            #expect(try amigo.query(Employee.self).filter("department.name = 'Sales'").orderBy("id").all().map(\.name) == ["Linus", "Ken"])
        }
    }
}
