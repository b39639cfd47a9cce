import Foundation
import Testing
import UnityORMFields

// The code of the UnityORM catalog's article "Filtering with #Predicate", compiled and run on
// both backends (DocumentationExamplesTests checks that every block stands here).

@ORMFields
final class Shelter: AmigoModel {
    var id = 0
    var name = ""
    var city: String?
    var animals: [Animal] = []
}

@ORMFields
final class Animal: AmigoModel {
    var id = 0
    var name = ""
    var weight: Double?
    var born: Date?
    var shelter: Shelter?
    var toys: [Toy] = []
    var isHeavy: Bool { (weight ?? 0) > 10 }
}

@ORMFields
final class Toy: AmigoModel {
    var id = 0
    var label = ""
}

func shelterModels() -> [ORMModel] {
    let shelter = ORMModel(Shelter.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("name", type: String.self),
        Column("city", type: String.self),
        OneToMany("animals", using: Animal.self)
    )
    let toy = ORMModel(Toy.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("label", type: String.self)
    )
    let animal = ORMModel(Animal.self,
        Column("id", type: Int.self, primaryKey: true),
        Column("name", type: String.self),
        Column("weight", type: Double.self),
        Column("born", type: Date.self),
        Column("shelter", type: ForeignKey(shelter)),
        ManyToMany("toys", using: Toy.self)
    )
    return [shelter, toy, animal]
}

@Suite("Documentation: filtering the ORM's query sets with #Predicate")
struct ORMPredicateArticleExamples {
    /// North (Oslo): Rex (30 kg; ball, rope), Mia (no weight; ball); South (no city): Ace (4 kg);
    /// Bo (12 kg) in no shelter.
    static func shelters(_ session: AmigoSession) throws -> (north: Shelter, south: Shelter) {
        let north = Shelter()
        north.name = "North"
        north.city = "Oslo"
        let south = Shelter()
        south.name = "South"
        func animal(_ name: String, _ weight: Double?, _ shelter: Shelter?) -> Animal {
            let a = Animal()
            a.name = name
            a.weight = weight
            a.shelter = shelter
            return a
        }
        let rex = animal("Rex", 30, north)
        let mia = animal("Mia", nil, north)
        let ace = animal("Ace", 4, south)
        let bo = animal("Bo", 12, nil)
        let ball = Toy()
        ball.label = "ball"
        let rope = Toy()
        rope.label = "rope"
        try session.add(north, south)
        try session.add(rex, mia, ace, bo)
        try session.add(ball, rope)
        try session.using(rex).relationship("toys").add(ball, rope)
        try session.using(mia).relationship("toys").add(ball)
        return (north, south)
    }

    @Test(arguments: Backend.allCases)
    func filteringAndSorting(_ backend: Backend) throws {
        try withDocAmigo(backend, shelterModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            let (north, _) = try Self.shelters(session)

            let heavy = try session.query(Animal.self)
                .filter(#Predicate<Animal> { ($0.weight ?? 0) > 10 })
                .orderBy(SortDescriptor(\Animal.name))
                .all()
            // heavy: Bo, Rex
            let notThirty = try session.query(Animal.self)
                .filter(#Predicate<Animal> { $0.weight != 30 })
                .orderBy(SortDescriptor(\Animal.weight, order: .reverse))
                .all()
            // notThirty: Bo, Ace, Mia (Mia has no weight: nil != 30 in Swift, so she is kept; nil sorts last in reverse)

            #expect(heavy.map(\.name) == ["Bo", "Rex"])
            #expect(notThirty.map(\.name) == ["Bo", "Ace", "Mia"])

            let firstMatch = try session.query(Animal.self)
                .filter("weight > ?", 1)
                .filter(#Predicate<Animal> { $0.name.starts(with: "R") || $0.name == "Ace" })
                .orderBy("name", ascending: false)
                .limit(1)
                .all()
            // firstMatch: Rex
            let withBall = try session.query(Animal.self)
                .using(north)
                .filter(#Predicate<Animal> { $0.toys.contains { $0.label == "ball" } })
                .orderBy(SortDescriptor(\Animal.id))
                .relationship("animals")
                .all()
            // withBall: Rex, Mia

            #expect(firstMatch.map(\.name) == ["Rex"])
            #expect(withBall.map(\.name) == ["Rex", "Mia"])

            let inOslo = try session.query(Animal.self)
                .filter(#Predicate<Animal> { $0.shelter?.city == "Oslo" })
                .orderBy(SortDescriptor(\Animal.id))
                .all()
            // inOslo: Rex, Mia
            let busy = try session.query(Shelter.self)
                .filter(#Predicate<Shelter> { $0.animals.count >= 2 || $0.animals.contains { $0.toys.isEmpty } })
                .orderBy(SortDescriptor(\Shelter.name))
                .all()
            // busy: North, South

            #expect(inOslo.map(\.name) == ["Rex", "Mia"])
            #expect(busy.map(\.name) == ["North", "South"])

            let byShelter = try session.query(Animal.self)
                .orderBy(SortDescriptor(\Animal.shelter!.name), SortDescriptor(\Animal.name))
                .all()
            // byShelter: Bo (no shelter), Mia, Rex (North), Ace (South)

            #expect(byShelter.map(\.name) == ["Bo", "Mia", "Rex", "Ace"])
        }
    }

    @Test(arguments: Backend.allCases)
    func untranslatable(_ backend: Backend) throws {
        try withDocAmigo(backend, shelterModels()) { amigo in
            try amigo.createAll()
            let session = try amigo.session
            _ = try Self.shelters(session)
            var thrown: PredicateTranslationError?
            do {
                _ = try session.query(Animal.self).filter(#Predicate<Animal> { $0.isHeavy }).all()
                Issue.record("a computed property was translated")
            } catch let error as PredicateTranslationError {
                thrown = error
            }
            #expect(thrown?.reason.contains("maps to no column") == true)
            #expect(try session.query(Animal.self).count() == 4)
            do {
                _ = try session.query(Animal.self).filter(#Predicate<Animal> { $0.isHeavy }).all()
            } catch let error as PredicateTranslationError {
                print(error.reason)   // the key path maps to no column; nothing was sent
            }
        }
    }
}
