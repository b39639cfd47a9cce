import Foundation
import UnityORMFields

/// The models of the ORM flavor's tests: the seed's examples, as close to it as Swift allows
/// (`@ORMFields` writes the accessor table that KVC made unnecessary in Amigo; `AllTypes`
/// keeps a hand-written key-path table, so both forms are tested).
enum AmigoSeed {
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

    @ORMFields
    final class MyModel: AmigoModel {
        var id: Int = 0
        var objId: String?
    }

    @ORMFields
    final class Parent: AmigoModel {
        var id: Int?
        var label: String?
    }

    @ORMFields
    final class Child: AmigoModel {
        var id: Int?
        var label: String?
    }

    @ORMFields
    final class Workout: AmigoModel {
        var id: Int?
        var label: String?
    }

    @ORMFields
    final class WorkoutExercise: AmigoModel {
        var id: Int?
        var label: String?
    }

    @ORMFields
    final class WorkoutMeta: AmigoModel {
        var id: Int?
        var duration: Int?
        var position: Int?
        var exercise: WorkoutExercise?
        var workout: Workout?
    }

    /// A value the ORM cannot store.
    struct Origin {
        var x = 0
    }

    /// What `@ORMFields` leaves out or cannot store: a constant, a computed property, a
    /// property of another type; and a property with an observer, which still fires.
    @ORMFields
    final class Tracked: AmigoModel {
        var id = 0
        var label = "" { didSet { labelWrites += 1 } }
        var origin = Origin()
        let kind = "tracked"
        var shout: String { label.uppercased() }
        var labelWrites = 0
    }

    /// Every column type the seed lists.
    final class AllTypes: AmigoModel {
        var id = 0
        var string = ""
        var int16: Int16 = 0
        var int32: Int32 = 0
        var int64: Int64 = 0
        var int = 0
        var date = Date(timeIntervalSince1970: 0)
        var data = Data()
        var bytes: [UInt8] = []
        var decimal = Decimal(0)
        var double = 0.0
        var float: Float = 0
        var bool = false
        var note: String?
        override class var ormFields: ORMFieldTable {
            ORMFieldTable(AllTypes.self, .property("id", \.id), .property("string", \.string), .property("int16", \.int16),
                          .property("int32", \.int32), .property("int64", \.int64), .property("int", \.int),
                          .property("date", \.date), .property("data", \.data), .property("bytes", \.bytes),
                          .property("decimal", \.decimal), .property("double", \.double), .property("float", \.float),
                          .property("bool", \.bool), .property("note", \.note))
        }
    }

    static func tracked(_ columns: Column...) -> ORMModel {
        ORMModel(Tracked.self, table: "tracked", items: [Column("id", type: Int.self, primaryKey: true)] + columns)
    }

    static func dogPerson() -> (dog: ORMModel, person: ORMModel) {
        let dog = ORMModel(Dog.self, table: "dog",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self, indexed: true),
            OneToMany("people", using: Person.self)
        )
        let person = ORMModel(Person.self, table: "person",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            Column("dog", type: ForeignKey(dog))
        )
        return (dog, person)
    }

    static func parentChild() -> [ORMModel] {
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

    static func workouts() -> [ORMModel] {
        let workout = ORMModel(Workout.self, table: "workout",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            ManyToMany("exercises", using: WorkoutExercise.self, throughModel: WorkoutMeta.self)
        )
        let workoutExercise = ORMModel(WorkoutExercise.self, table: "workoutexercise",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self)
        )
        let workoutMeta = ORMModel(WorkoutMeta.self, table: "workoutmeta",
            Column("id", type: Int.self, primaryKey: true),
            Column("duration", type: Int.self),
            Column("position", type: Int.self),
            Column("exercise", type: ForeignKey(workoutExercise)),
            Column("workout", type: ForeignKey(workout))
        )
        return [workout, workoutExercise, workoutMeta]
    }

    static func myModel() -> ORMModel {
        ORMModel(MyModel.self, table: "mymodel",
            IntegerField("id", primaryKey: true),
            UUIDField("objId", indexed: true, unique: true) {
                UUID().uuidString.lowercased()
            }
        )
    }

    static func allTypes() -> ORMModel {
        ORMModel(AllTypes.self, table: "alltypes",
            Column("id", type: Int.self, primaryKey: true),
            Column("string", type: String.self, optional: false),
            Column("int16", type: Int16.self),
            Column("int32", type: Int32.self),
            Column("int64", type: Int64.self),
            Column("int", type: Int.self, unique: true),
            Column("date", type: Date.self),
            Column("data", type: Data.self),
            Column("bytes", type: [UInt8].self),
            Column("decimal", type: Decimal.self),
            Column("double", type: Double.self),
            Column("float", type: Float.self),
            Column("bool", type: Bool.self),
            Column("note", type: String.self),
            Index("alltypes_string_int_idx", "string", "int")
        )
    }
}

/// A music catalogue on a schema the ORM did not create (as a sample database's own scripts
/// would create it): a NOT NULL and a nullable foreign key, and prices in a column declared
/// TEXT on SQLite (NUMERIC(10,2) on PostgreSQL).
enum Catalogue {
    @ORMFields
    final class Genre: AmigoModel {
        var id = 0
        var name: String?
    }

    @ORMFields
    final class Album: AmigoModel {
        var id = 0
        var title = ""
    }

    @ORMFields
    final class Track: AmigoModel {
        var id = 0
        var name = ""
        var price = Decimal(0)
        var album: Album?
        var genre: Genre?
    }

    static func models() -> [ORMModel] {
        let genre = ORMModel(Genre.self, table: "genre",
            Column("id", type: Int.self, primaryKey: true),
            Column("name", type: String.self))
        let album = ORMModel(Album.self, table: "album",
            Column("id", type: Int.self, primaryKey: true),
            Column("title", type: String.self, optional: false))
        let track = ORMModel(Track.self, table: "track",
            Column("id", type: Int.self, primaryKey: true),
            Column("name", type: String.self, optional: false),
            Column("price", type: Decimal.self, optional: false),
            Column("album", type: ForeignKey(album), optional: false),
            Column("genre", type: ForeignKey(genre)))
        return [genre, album, track]
    }

    /// Creates the tables with raw SQL and fills them: genres 1 Rock, 2 Jazz; albums 10 "Ten",
    /// 11 "Eleven"; tracks 5 (album 10, genre 1), 6 (album 11, no genre), 7 (album 10, genre 2),
    /// 8 (album 11, genre 1), priced 9.91, 10.00, 8.94 and 100.5.
    static func create(_ database: Database, _ backend: Backend) throws {
        let money = backend == .sqlite ? "TEXT" : "NUMERIC(10,2)"
        try database.execute(sql: "CREATE TABLE genre (id INTEGER PRIMARY KEY, name TEXT)")
        try database.execute(sql: "CREATE TABLE album (id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
        try database.execute(sql: "CREATE TABLE track (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price \(money) NOT NULL, "
            + "album_id INTEGER NOT NULL REFERENCES album (id), genre_id INTEGER REFERENCES genre (id))")
        try database.execute(sql: "INSERT INTO genre (id, name) VALUES (1, 'Rock'), (2, 'Jazz')")
        try database.execute(sql: "INSERT INTO album (id, title) VALUES (10, 'Ten'), (11, 'Eleven')")
        try database.execute(sql: "INSERT INTO track (id, name, price, album_id, genre_id) VALUES "
            + "(5, 'Five', '9.91', 10, 1), (6, 'Six', '10.00', 11, NULL), (7, 'Seven', '8.94', 10, 2), (8, 'Eight', '100.5', 11, 1)")
    }

    /// The track's foreign keys as the database holds them.
    static func keys(_ database: Database, track id: Int) throws -> [DatabaseValue] {
        let row = try database.fetchOne(sql: "SELECT album_id, genre_id FROM track WHERE id = \(id)")
        return row.map { [$0[0], $0[1]] } ?? []
    }
}

/// An `Amigo` over a test database.
func withAmigo<T>(_ backend: Backend, _ models: [ORMModel], createAll: Bool = true, _ body: (Amigo, TestDatabase) throws -> T) throws -> T {
    let test = try TestDatabase(backend)
    defer { test.tearDown() }
    let amigo = try Amigo(models, database: test.database)
    if createAll { try amigo.createAll() }
    return try body(amigo, test)
}
