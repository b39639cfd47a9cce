import Foundation
import UnityORMFields

// From the ORM flavor's example.
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

func lucysPeople(in db: Database) throws -> [String] {
    let dog = ORMModel(Dog.self, Column("id", type: Int.self, primaryKey: true), Column("label", type: String.self))
    let person = ORMModel(Person.self, Column("id", type: Int.self, primaryKey: true), Column("label", type: String.self),
                          Column("dog", type: ForeignKey(dog)))
    let amigo = try Amigo([dog, person], database: db)
    try amigo.createAll()
    let session = try amigo.session          // a transaction begins here
    let lucy = Dog(); lucy.label = "Lucy"
    let ann = Person(); ann.label = "Ann"; ann.dog = lucy
    let bo = Person(); bo.label = "Bo"; bo.dog = lucy
    try session.add(lucy, ann, bo)
    try session.commit()
    return try amigo.session.query(Person.self).filter("dog.label = 'Lucy'").orderBy("label").all().map(\.label)
}
