import Foundation
import Unity
import UnityORMFields

/// The ORM-session flavor (Amigo's API): the seed's Dog/Person and Parent/Child.
enum ORMDemo {
    @ORMFields // the accessor table KVC made unnecessary in Amigo
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
    final class Parent: AmigoModel {
        var id: Int?
        var label: String?
    }

    @ORMFields
    final class Child: AmigoModel {
        var id: Int?
        var label: String?
    }

    static func run(_ db: Database) throws {
        print("\n== ORM session (UnityORM, Amigo's API)")
        let dog = ORMModel(Dog.self, table: "orm_dog",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self, indexed: true),
            OneToMany("people", using: Person.self)
        )
        let person = ORMModel(Person.self, table: "orm_person",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            Column("dog", type: ForeignKey(dog))
        )
        let parent = ORMModel(Parent.self, table: "orm_parent",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self),
            ManyToMany("children", using: Child.self)
        )
        let child = ORMModel(Child.self, table: "orm_child",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self)
        )
        let amigo = try Amigo([dog, person, parent, child], database: db)
        try amigo.createAll()
        try amigo.createAll()  // recorded by the migrator: the second run changes nothing

        let session = try amigo.session
        let d1 = Dog()
        d1.label = "Lucy"
        let p1 = Person()
        p1.label = "Foo"
        p1.dog = d1
        let p2 = Person()
        p2.label = "Bar"
        p2.dog = d1
        try session.add(d1, p1, p2)
        print("added Lucy and her people: ids \(d1.id), \(p1.id), \(p2.id)")
        let people = try session.query(Person.self).using(d1).relationship("people").orderBy("label").all()
        print("Lucy's people: \(people.map(\.label))")
        let withDogs = try session.query(Person.self).filter("dog.label = 'Lucy'").selectRelated("dog").all()
        print("people with their dog in one query: \(withDogs.map { "\($0.label) → \($0.dog?.label ?? "-")" })")

        let pa = Parent()
        pa.label = "Foo"
        let c1 = Child()
        c1.label = "Baz"
        let c2 = Child()
        c2.label = "Qux"
        try session.add(pa, c1, c2)
        try session.using(pa).relationship("children").add(c1, c2)
        let children = try session.query(Child.self).using(pa).relationship("children").all()
        print("the parent's children: \(children.compactMap(\.label))")
        try session.commit()  // without it, the session's work would be rolled back when it is released
        print("committed; dogs counted by the database: \(try amigo.query(Dog.self).count())")
        do {
            _ = try amigo.query(Dog.self).filter("label = 'Lucy").all()
        } catch {
            print("a bad filter is a clear error: \(error)")
        }
    }
}
