import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import UnityORM

/// The through relationship's link table as Amigo keeps it (one row per through row), and
/// upstream's call shapes: the builder order, `batch.delete` as a function value, one database
/// per engine factory.
@Suite struct ORMThroughLinkTests {
    typealias Workout = AmigoSeed.Workout
    typealias Exercise = AmigoSeed.WorkoutExercise
    typealias Meta = AmigoSeed.WorkoutMeta

    /// Amigo's session-test data: w1 "foo", w2 "bar", e1 "Jumping Jacks", e2 "Push-Ups"; metas
    /// m1 (w1, e1, position 1), m2 (w1, e2, 2), m3 (w2, e2, 1), m4 (w1, e2, 3): m2 and m4
    /// share the pair (w1, e2).
    func amigoData() -> (w: [Workout], e: [Exercise], m: [Meta]) {
        let w1 = Workout(), w2 = Workout()
        w1.label = "foo"
        w2.label = "bar"
        let e1 = Exercise(), e2 = Exercise()
        e1.label = "Jumping Jacks"
        e2.label = "Push-Ups"
        func meta(_ w: Workout, _ e: Exercise, _ duration: Int, _ position: Int) -> Meta {
            let m = Meta()
            m.workout = w
            m.exercise = e
            m.duration = duration
            m.position = position
            return m
        }
        return ([w1, w2], [e1, e2], [meta(w1, e1, 60000, 1), meta(w1, e2, 15, 2), meta(w2, e2, 60, 1), meta(w1, e2, 25, 3)])
    }

    func links(_ db: Database) throws -> [[DatabaseValue]] {
        try db.fetchAll(sql: "SELECT workout_id, workoutexercise_id, workoutmeta_id FROM workout_workoutexercise ORDER BY workoutmeta_id")
            .map { [$0[0], $0[1], $0[2]] }
    }

    func triple(_ w: Int64, _ e: Int64, _ m: Int64) -> [DatabaseValue] { [.integer(w), .integer(e), .integer(m)] }

    /// Four through rows, two of them for one pair: four link rows, each naming its through row
    /// (Amigo's testBatchDeleteThroughModels counts 4), by single adds, a batch, and a keyed batch.
    @Test(arguments: Backend.allCases)
    func eachThroughRowHasItsOwnLinkRow(_ backend: Backend) throws {
        for mode in ["add", "batch", "upsert"] {
            try withAmigo(backend, AmigoSeed.workouts()) { amigo, test in
                let session = try amigo.session
                let (w, e, m) = amigoData()
                switch mode {
                case "add":
                    try session.add(w[0], w[1], e[0], e[1])
                    for meta in m { try session.add(meta) }
                case "batch":
                    try session.batch { $0.add(m) }
                default:
                    for (i, x) in w.enumerated() { x.id = i + 1 }
                    for (i, x) in e.enumerated() { x.id = i + 1 }
                    for (i, x) in m.enumerated() { x.id = i + 1 }
                    try session.add(w[0], w[1], e[0], e[1], upsert: true)
                    try session.batch { $0.add(m, upsert: true) }
                }
                #expect(try session.query(Meta.self).count() == 4, "\(mode)")
                try session.commit()
                #expect(try links(test.database) == [triple(1, 1, 1), triple(1, 2, 2), triple(2, 2, 3), triple(1, 2, 4)], "\(mode)")
                let linked = try test.database.fetchOne(sql: "SELECT COUNT(*) FROM workout_workoutexercise")?[0]
                #expect(linked == .integer(4))
            }
        }
    }

    /// Deleting a through row deletes its own link row only (its pair's other row stays);
    /// moving a through row to another workout moves its link row; an update of a fetched
    /// through row that did not load its foreign keys leaves its link row as it was.
    @Test(arguments: Backend.allCases)
    func linkRowsFollowTheirThroughRows(_ backend: Backend) throws {
        try withAmigo(backend, AmigoSeed.workouts()) { amigo, test in
            let session = try amigo.session
            let (w, _, m) = amigoData()
            for meta in m { try session.add(meta) }
            try session.delete(m[3])
            try session.commit()
            #expect(try links(test.database) == [triple(1, 1, 1), triple(1, 2, 2), triple(2, 2, 3)])
            // The pair (w1, e2) is still linked through m2.
            let exercises = try session.query(Exercise.self).using(w[0]).relationship("exercises").orderBy("id").all()
            #expect(exercises.map(\.label) == ["Jumping Jacks", "Push-Ups"])
            m[2].workout = w[0]
            try session.add(m[2])
            try session.commit()
            #expect(try links(test.database) == [triple(1, 1, 1), triple(1, 2, 2), triple(1, 2, 3)])
            let fetched = try #require(try session.query(Meta.self).get(1))
            #expect(fetched.workout == nil)
            fetched.duration = 5
            try session.add(fetched)
            try session.commit()
            #expect(try links(test.database) == [triple(1, 1, 1), triple(1, 2, 2), triple(1, 2, 3)])
            // A related object reached through two through rows is returned once.
            let again = try amigo.query(Exercise.self).using(w[0]).relationship("exercises").all()
            #expect(again.compactMap(\.id).sorted() == [1, 2])
            #expect(try amigo.query(Exercise.self).using(w[1]).relationship("exercises").count() == 0)
        }
    }

    /// Upstream's order compiles and works: `using(w1).selectRelated(...).relationship(...)`
    /// (Amigo's testManyToManyThroughModel), filters and orders before the relationship too.
    @Test(arguments: Backend.allCases)
    func upstreamBuilderOrder(_ backend: Backend) throws {
        try withAmigo(backend, AmigoSeed.workouts()) { amigo, _ in
            let session = try amigo.session
            let (w, e, m) = amigoData()
            for meta in m { try session.add(meta) }
            let results = try session
                .query(Meta.self)
                .using(w[0])
                .selectRelated("exercise", "workout")
                .relationship("exercises")
                .orderBy("position", ascending: false)
                .all()
            #expect(results.map(\.id) == [4, 2, 1])
            #expect(results.map(\.duration) == [25, 15, 60000])
            #expect(results.map { $0.exercise?.id } == [e[1].id, e[1].id, e[0].id])
            #expect(results.map { $0.exercise?.label } == ["Push-Ups", "Push-Ups", "Jumping Jacks"])
            #expect(results.map { $0.workout?.label } == ["foo", "foo", "foo"])
            let ordered = try session.query(Meta.self).using(w[0]).filter("position > ?", 1).orderBy("position")
                .limit(5).offset(1).relationship("exercises").all()
            #expect(ordered.map(\.id) == [4])
        }
    }

    /// `batch.add` and `batch.delete` are usable as function values (`results.forEach(batch.delete)`).
    @Test(arguments: Backend.allCases)
    func batchCallsAsFunctionValues(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, test in
            let session = try amigo.session
            let dogs = ["a", "b", "c"].map { label -> AmigoSeed.Dog in
                let d = AmigoSeed.Dog()
                d.label = label
                return d
            }
            try session.batch { batch in dogs.forEach(batch.add) }
            #expect(dogs.map(\.id) == [1, 2, 3])
            let results = try session.query(AmigoSeed.Dog.self).filter("id < 3").all()
            try session.batch { batch in results.forEach(batch.delete) }
            try session.commit()
            #expect(try test.database.fetchAll(sql: "SELECT label FROM dog").map { $0[0] } == [.text("c")])
        }
    }

    /// Two `Amigo`s made from one factory share its database, as Amigo's one engine per factory:
    /// a row one commits is read by the other (on an in-memory SQLite database too).
    @Test(arguments: Backend.allCases)
    func twoAmigosOnOneFactoryShareItsDatabase(_ backend: Backend) throws {
        func check(_ factory: some EngineFactory) throws {
            let first = try Amigo([AmigoSeed.myModel()], factory: factory)
            let second = try Amigo([AmigoSeed.myModel()], factory: factory)
            #expect(first.database === second.database)
            try first.createAll()
            let session = try second.session
            let m = AmigoSeed.MyModel()
            try session.add(m)
            try session.commit()
            #expect(try first.query(AmigoSeed.MyModel.self).all().map(\.objId) == [m.objId])
        }
        switch backend {
        case .sqlite:
            try check(SQLiteEngineFactory(":memory:"))
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("orm_factory_\(UUID().uuidString).sqlite").path
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
            try check(SQLiteEngineFactory(path))
            // A factory of another path is another database.
            let memory = try Amigo([AmigoSeed.myModel()], factory: SQLiteEngineFactory(":memory:"))
            let file = try Amigo([AmigoSeed.myModel()], factory: SQLiteEngineFactory(path))
            #expect(memory.database !== file.database)
        case .postgres:
            let test = try TestDatabase(backend)
            defer { test.tearDown() }
            let url = try #require(postgresURL)
            try check(PostgresEngineFactory(url, connections: 2, searchPath: test.location))
        }
    }
}
