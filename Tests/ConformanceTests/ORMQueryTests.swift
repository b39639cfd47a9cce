import Foundation
import Testing
import UnityORM

@Suite struct ORMQueryTests {
    typealias Dog = AmigoSeed.Dog
    typealias Person = AmigoSeed.Person

    /// Dogs Lucy (1), Rex (2), Max (3); people Foo→Lucy, Bar→Lucy, Baz→Max, Qux (no dog).
    func seed(_ amigo: Amigo) throws {
        let session = try amigo.session
        var dogs: [Dog] = []
        for label in ["Lucy", "Rex", "Max"] {
            let d = Dog()
            d.label = label
            dogs.append(d)
        }
        try session.add(dogs)
        for (label, dog) in [("Foo", dogs[0]), ("Bar", dogs[0]), ("Baz", dogs[2]), ("Qux", nil)] as [(String, Dog?)] {
            let p = Person()
            p.label = label
            p.dog = dog
            try session.add(p)
        }
        try session.commit()
    }

    /// A filter string is parsed once per `Amigo` and reused: the same text with other
    /// arguments selects other rows, and a filter that does not parse fails every time.
    @Test(arguments: Backend.allCases)
    func repeatedFiltersReuseTheirParse(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            try seed(amigo)
            for (key, label) in [(1, "Lucy"), (3, "Max"), (2, "Rex"), (1, "Lucy")] {
                #expect(try amigo.query(Dog.self).get(key)?.label == label)
                #expect(try amigo.query(Dog.self).filter("id = ?", key).all().map(\.label) == [label])
            }
            #expect(try amigo.query(Dog.self).get(4) == nil)
            for _ in 0..<2 {
                #expect(throws: ORMError.self) { try amigo.query(Dog.self).filter("id = = 1").all() }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func filtersOrderLimitOffsetCount(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            try seed(amigo)
            let session = try amigo.session
            #expect(try session.query(Dog.self).filter("label = 'Rex'").all().map(\.id) == [2])
            #expect(try session.query(Dog.self).filter("label == \"Rex\" OR id >= 3").orderBy("id").all().map(\.id) == [2, 3])
            #expect(try session.query(Dog.self).filter("NOT (label = 'Rex') && id <> 1").all().map(\.label) == ["Max"])
            #expect(try session.query(Dog.self).filter("id > ?", 1).filter("label != ?", "Max").all().map(\.label) == ["Rex"])
            // A literal is converted to the column's type: id = "3" works on PostgreSQL too.
            #expect(try session.query(Dog.self).filter("ID = \"3\"").all().map(\.label) == ["Max"])
            // AND binds tighter than OR; keywords are case-insensitive.
            #expect(try session.query(Dog.self).filter("id = 1 or id = 2 and label = 'Max'").all().map(\.id) == [1])
            #expect(try session.query(Dog.self).orderBy("label", ascending: false).all().map(\.label) == ["Rex", "Max", "Lucy"])
            #expect(try session.query(Dog.self).orderBy("id").limit(2).offset(1).all().map(\.id) == [2, 3])
            #expect(try session.query(Dog.self).count() == 3)
            #expect(try session.query(Dog.self).filter("id >= 2").count() == 2)
            #expect(try session.query(Dog.self).orderBy("id").limit(2).offset(2).count() == 1)
            #expect(try session.query(Dog.self).get(3)?.label == "Max")
            #expect(try session.query(Dog.self).get(42) == nil)
            // Across a foreign key, and nil.
            #expect(try session.query(Person.self).filter("dog.label = 'Lucy'").orderBy("label").all().map(\.label) == ["Bar", "Foo"])
            #expect(try session.query(Person.self).filter("dog = nil").all().map(\.label) == ["Qux"])
            #expect(try session.query(Person.self).filter("dog != nil").orderBy("dog.label").orderBy("label").all().map(\.label)
                == ["Bar", "Foo", "Baz"])
            // A string containing quotes and SQL stays a bound value.
            #expect(try session.query(Dog.self).filter("label = 'x'' OR ''1''=''1'").count() == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func selectRelatedLoadsByAJoinWithoutLazyLoading(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            try seed(amigo)
            let plain = try amigo.query(Person.self).orderBy("id").all()
            #expect(plain.allSatisfy { $0.dog == nil })  // no lazy loading
            let people = try amigo.query(Person.self).selectRelated("dog").orderBy("id").all()
            #expect(people.map { $0.dog?.label } == ["Lucy", "Lucy", "Max", nil])
            #expect(people.map { $0.dog?.id } == [1, 1, 3, nil])
        }
    }

    @Test(arguments: Backend.allCases)
    func badFiltersAndNamesAreClearErrors(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            try seed(amigo)
            let q = amigo.query(Dog.self)
            #expect(throws: ORMError.filterSyntax(filter: "label = ", position: 8,
                                                  message: "expected a column, a value or \"?\", found the end of the filter")) {
                try q.filter("label = ").all()
            }
            #expect(throws: ORMError.filterSyntax(filter: "label = 'Foo", position: 8, message: "the string opened here is not closed")) {
                try q.filter("label = 'Foo").all()
            }
            #expect(throws: ORMError.filterSyntax(filter: "(id = 1", position: 7,
                                                  message: "expected \")\" to close the \"(\" at position 0, found the end of the filter")) {
                try q.filter("(id = 1").all()
            }
            #expect(throws: ORMError.filterSyntax(filter: "id = 1; DROP TABLE dog", position: 6, message: "unexpected character \";\"")) {
                try q.filter("id = 1; DROP TABLE dog").all()
            }
            #expect(throws: ORMError.unknownColumn(model: "Dog", name: "nickname")) { try q.filter("nickname = 'x'").all() }
            #expect(throws: ORMError.unknownColumn(model: "Dog", name: "weight")) { try q.orderBy("weight").all() }
            #expect(throws: ORMError.unknownColumn(model: "Person", name: "dog.owner")) {
                try amigo.query(Person.self).orderBy("dog.owner").all()
            }
            #expect(throws: ORMError.unknownRelationship(model: "Dog", name: "cats")) {
                try amigo.query(Person.self).using(try #require(try q.get(1))).relationship("cats").all()
            }
            #expect(throws: ORMError.unknownRelationship(model: "Person", name: "label")) {
                try amigo.query(Person.self).selectRelated("label").all()
            }
            #expect(throws: ORMError.unmappedType("MyModel")) { try amigo.query(AmigoSeed.MyModel.self).all() }
            #expect(throws: ORMError.self) { try q.filter("id = 'seven'").all() }
            #expect(throws: ORMError.self) { try q.filter("id = ?").all() }
            // The table is untouched.
            #expect(try q.count() == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func queryAndExecuteOutsideASession(_ backend: Backend) throws {
        let (dog, person) = AmigoSeed.dogPerson()
        try withAmigo(backend, [dog, person]) { amigo, _ in
            try seed(amigo)
            let labels = try amigo.execute("SELECT label FROM dog WHERE id > ? ORDER BY id", [1]) { row in
                try row.decode(String.self, column: "label")
            }
            #expect(labels == ["Rex", "Max"])
            #expect(try amigo.execute("UPDATE dog SET label = ? WHERE id = ?", ["Lucy!", 1]) == 1)
            #expect(try amigo.query(Dog.self).get(1)?.label == "Lucy!")
        }
    }
}
