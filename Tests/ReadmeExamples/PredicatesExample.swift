import Foundation
import UnityPredicates

// From the key-path predicates flavor's example.
struct Book: ManagedObjectConvertible {
    var title = ""
    var year = 0
    static let entityName = "Book"
    static let attributes: Set<Attribute<Book>> = [Attribute(\.title, "title"), Attribute(\.year, "year")]
}

func recentTitles(in db: Database) throws -> [String] {
    let container = PersistentContainer(database: db, models: [Book.self])
    return try container.perform { context in
        for (title, year) in [("Dune", 1965), ("Emma", 1815), ("Neuromancer", 1984)] {
            _ = try context.insert(Book(title: title, year: year))
        }
        return try context.fetch(Book.all.where(\Book.year > 1900).sort(\.year, ascending: false)).map { try $0.decode(\.title) }
    }
}
