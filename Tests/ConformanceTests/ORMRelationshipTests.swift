import Foundation
import Testing
import UnityORM

/// The seed's examples, as close to it as Swift allows.
@Suite struct ORMRelationshipTests {
    @Test(arguments: Backend.allCases)
    func seedOneToMany(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            let session = try amigo.session
            let d1 = AmigoSeed.Dog()
            d1.label = "Lucy"
            let p1 = AmigoSeed.Person()
            p1.label = "Foo"
            p1.dog = d1
            let p2 = AmigoSeed.Person()
            p2.label = "Bar"
            p2.dog = d1
            let other = AmigoSeed.Person()
            other.label = "Other"
            try session.add(d1, p1, p2, other)
            let results = try session
                .query(AmigoSeed.Person.self)   // We want the Person objects
                .using(d1)                      // by using the d1 (Dog) object
                .relationship("people")         // and following the d1 model's "people" relationship
                .orderBy("label")
                .all()
            #expect(results.map(\.label) == ["Bar", "Foo"])
            // Asking for the wrong type is a clear error.
            #expect(throws: ORMError.self) { try session.query(AmigoSeed.Dog.self).using(d1).relationship("people").all() }
        }
    }

    @Test(arguments: Backend.allCases)
    func seedManyToMany(_ backend: Backend) throws {
        try withAmigo(backend, AmigoSeed.parentChild()) { amigo, test in
            let session = try amigo.session
            let p1 = AmigoSeed.Parent()
            p1.label = "Foo"
            let c1 = AmigoSeed.Child()
            c1.label = "Baz"
            let c2 = AmigoSeed.Child()
            c2.label = "Qux"
            let c3 = AmigoSeed.Child()
            c3.label = "Not linked"
            try session.add(p1, c1, c2, c3)
            // add 2 children to p1
            try session.using(p1).relationship("children").add(c1, c2)
            try session.using(p1).relationship("children").add(c1)  // twice is once
            var results = try session
                .query(AmigoSeed.Child.self)    // We want the Child objects
                .using(p1)                      // by using the p1 (Parent) object
                .relationship("children")       // and following the p1 model's "children" relationship
                .orderBy("label")
                .all()
            #expect(results.map(\.label) == ["Baz", "Qux"])
            try session.using(p1).relationship("children").delete(c1)
            results = try session.query(AmigoSeed.Child.self).using(p1).relationship("children").all()
            #expect(results.map(\.label) == ["Qux"])
            // Deleting a row deletes its link rows.
            try session.delete(c2)
            try session.commit()
            #expect(try test.database.fetchAll(sql: "SELECT * FROM child_parent").isEmpty)
            #expect(throws: ORMError.unknownRelationship(model: "Parent", name: "kids")) {
                try session.using(p1).relationship("kids").add(c3)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func seedThroughModel(_ backend: Backend) throws {
        try withAmigo(backend, AmigoSeed.workouts()) { amigo, test in
            let session = try amigo.session
            let w1 = AmigoSeed.Workout()
            w1.label = "foo"
            let e1 = AmigoSeed.WorkoutExercise()
            e1.label = "Jumping Jacks"
            try session.add(w1)
            try session.add(e1)
            // The seed's fatal error is a thrown error; nothing was written.
            #expect(throws: ORMError.throughRelationship(model: "Workout", name: "exercises")) {
                try session.using(w1).relationship("exercises").add(e1)
            }
            let e2 = AmigoSeed.WorkoutExercise()
            e2.label = "Burpees"
            let m1 = AmigoSeed.WorkoutMeta()
            m1.workout = w1
            m1.exercise = e1
            m1.duration = 60000
            m1.position = 2
            let m2 = AmigoSeed.WorkoutMeta()
            m2.workout = w1
            m2.exercise = e2
            m2.duration = 30000
            m2.position = 1
            try session.add(w1, e1, m1, m2)
            let results = try session
                .query(AmigoSeed.WorkoutMeta.self)      // We want the WorkoutMeta objects
                .using(w1)                              // by using the w1 (Workout) object
                .relationship("exercises")              // and following the w1 model's "exercises" relationship
                .orderBy("position", ascending: true)   // order the results by WorkoutMeta.position ascending
                .selectRelated("exercise")
                .all()
            #expect(results.map(\.position) == [1, 2])
            #expect(results.map { $0.exercise?.label } == ["Burpees", "Jumping Jacks"])
            // The exercises themselves, through the link table the through rows maintain.
            let exercises = try session.query(AmigoSeed.WorkoutExercise.self).using(w1).relationship("exercises").orderBy("label").all()
            #expect(exercises.map(\.label) == ["Burpees", "Jumping Jacks"])
            try session.delete(m2)
            try session.commit()
            let links = try test.database.fetchAll(sql: "SELECT workoutexercise_id FROM workout_workoutexercise")
            #expect(links.map { $0[0] } == [.integer(1)])
        }
    }

    @Test(arguments: Backend.allCases)
    func seedUUIDField(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.myModel()]) { amigo, test in
            let objId = UUID().uuidString  // upper case, as NSUUID().UUIDString
            let obj = AmigoSeed.MyModel()
            obj.objId = objId
            let session = try amigo.session
            try session.add(obj)
            let results = try session
                .query(AmigoSeed.MyModel.self)
                .filter("objId = '\(objId)'")
                .all()
            #expect(results.count == 1)
            #expect(results.first?.objId == objId.lowercased())
            // The default value closure fills an unset value.
            let fresh = AmigoSeed.MyModel()
            try session.add(fresh)
            let generated = try #require(fresh.objId)
            #expect(UUID(uuidString: generated) != nil && generated == generated.lowercased())
            try session.commit()
            // Stored as a UUID: 16 bytes on SQLite, uuid on PostgreSQL.
            let row = try #require(try test.database.fetchOne(sql: "SELECT \"objId\" FROM mymodel WHERE id = 1"))
            #expect(try row.decode(UUID.self, at: 0) == UUID(uuidString: objId))
            if backend == .sqlite, case .blob(let bytes) = row[0] { #expect(bytes.count == 16) }
            #expect(throws: ORMError.self) { try amigo.query(AmigoSeed.MyModel.self).filter("objId = 'not a uuid'").all() }
        }
    }

    @Test(arguments: Backend.allCases)
    func crossFlavorRowsReadTheSame(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, test in
            // ORM → core.
            let session = try amigo.session
            let a = AmigoSeed.AllTypes()
            a.string = "ORM ✓"
            a.int = 1
            a.date = Date(timeIntervalSince1970: 1_234_567_890.5)
            a.decimal = Decimal(string: "0.1")!
            a.bytes = [1, 2]
            a.float = 0.5
            a.bool = true
            try session.add(a)
            try session.commit()
            let row = try #require(try test.database.fetchOne(sql: "SELECT * FROM alltypes WHERE id = 1"))
            #expect(try row.decode(String.self, column: "string") == "ORM ✓")
            #expect(try row.decode(Date.self, column: "date") == Date(timeIntervalSince1970: 1_234_567_890.5))
            #expect(try row.decode(Decimal.self, column: "decimal") == Decimal(string: "0.1")!)
            #expect(try row.decode([UInt8].self, column: "bytes") == [1, 2])
            #expect(try row.decode(Bool.self, column: "bool") == true)
            #expect(try row.decodeIfPresent(String.self, column: "note") == nil)
            // Core (AST insert with the core's values) → ORM.
            try test.database.execute(.insert(SQLInsert(into: "alltypes", values: [
                "string": "core", "int16": Int16(-3).databaseValue, "int32": Int32(7).databaseValue, "int64": .integer(9),
                "int": .integer(2), "date": .date(Date(timeIntervalSince1970: 86_400)), "data": .blob(Data([7])),
                "bytes": .blob(Data([8])), "decimal": .decimal(Decimal(string: "-2.50")!), "double": .double(0.25),
                "float": .double(2), "bool": .bool(false), "note": .text("n"),
            ])))
            let back = try #require(try amigo.query(AmigoSeed.AllTypes.self).filter("string = 'core'").all().first)
            #expect(back.id == 2)
            #expect(back.int16 == -3 && back.int32 == 7 && back.int64 == 9 && back.int == 2)
            #expect(back.date == Date(timeIntervalSince1970: 86_400))
            #expect(back.data == Data([7]) && back.bytes == [8])
            #expect(back.decimal == Decimal(string: "-2.5")!)
            #expect(back.double == 0.25 && back.float == 2 && back.bool == false && back.note == "n")
            // The SQL-first flavor reads the ORM's rows, and the ORM reads its row.
            let records = try ORMAllTypesRecord.allInstances(orderedBy: [.ascending("id")], in: test.database)
            #expect(records.map(\.string) == ["ORM ✓", "core"])
            #expect(records.first?.date == Date(timeIntervalSince1970: 1_234_567_890.5))
            #expect(records.first?.decimal == Decimal(string: "0.1")!)
            #expect(records.first?.float == 0.5 && records.first?.bool == true && records.first?.note == nil)
            let record = ORMAllTypesRecord(id: 3, string: "modeldef", int16: 1, int32: 2, int64: 3, int: 3,
                                           date: Date(timeIntervalSince1970: 42.25), data: Data([1]), decimal: Decimal(string: "9.99")!,
                                           double: -1, float: 1.5, bool: true, note: nil)
            _ = try record.save(in: test.database)
            let fromRecord = try #require(try amigo.query(AmigoSeed.AllTypes.self).get(3))
            #expect(fromRecord.string == "modeldef" && fromRecord.int16 == 1 && fromRecord.int64 == 3)
            #expect(fromRecord.date == Date(timeIntervalSince1970: 42.25) && fromRecord.decimal == Decimal(string: "9.99")!)
            #expect(fromRecord.float == 1.5 && fromRecord.bool && fromRecord.note == nil && fromRecord.data == Data([1]) && fromRecord.bytes == [5])
        }
    }
}

/// The ORM's `alltypes` table seen by the SQL-first flavor.
struct ORMAllTypesRecord: ModelDef {
    var id: Int
    var string: String
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var int: Int
    var date: Date
    var data: Data
    var bytes: Data
    var decimal: Decimal
    var double: Double
    var float: Float
    var bool: Bool
    var note: String?

    static let tableName = "alltypes"
    var existsInDatabase = false
    var primaryKeys: [any CodingKey] { [CodingKeys.id] }

    init(id: Int, string: String, int16: Int16, int32: Int32, int64: Int64, int: Int, date: Date, data: Data,
         decimal: Decimal, double: Double, float: Float, bool: Bool, note: String?) {
        (self.id, self.string, self.int16, self.int32, self.int64, self.int) = (id, string, int16, int32, int64, int)
        (self.date, self.data, self.bytes, self.decimal, self.double, self.float, self.bool, self.note) = (date, data, Data([5]), decimal, double, float, bool, note)
    }
}
