import Foundation
import Unity
import UnityPredicates

// MARK: - The key-path predicate flavor (Sworm): models declared in code

struct DemoAuthor: ManagedObjectConvertible {
    var name = ""
    static let entityName = "DemoAuthor"
    static let attributes: Set<Attribute<DemoAuthor>> = [Attribute(\.name, "name", unique: true)]
    struct Relations: RelationSet {
        let books = ToManyRelation<DemoBook>("books", inverse: "author", deleteRule: .cascade)
        var all: [RelationDeclaration] { [books.declaration] }
    }
    static let relations = Relations()
}

struct DemoBook: ManagedObjectConvertible {
    var title = ""
    var year = 0
    var rating: Double?
    static let entityName = "DemoBook"
    static let attributes: Set<Attribute<DemoBook>> = [
        Attribute(\.title, "title"), Attribute(\.year, "year"), Attribute(\.rating, "rating"),
    ]
    struct Relations: RelationSet {
        let author = ToOneRelation<DemoAuthor>("author", inverse: "books")
        var all: [RelationDeclaration] { [author.declaration] }
    }
    static let relations = Relations()
}

/// A tour of UnityPredicates on `database`.
func predicatesDemo(_ database: Database) throws {
    section("Key-path predicates (UnityPredicates)")
    let db = PersistentContainer(database: database, models: [DemoAuthor.self, DemoBook.self],
                                 logError: { print("logged: \($0)") })
    print("schema through the migrator: \(try db.createSchema())")
    try db.perform { ctx in
        let library: [(String, [(String, Int, Double?)])] = [
            ("Émile Zola", [("Germinal", 1885, 4.5), ("L'Assommoir", 1877, nil)]),
            ("Anna Akhmatova", [("Requiem", 1963, 4.8)]),
            ("Aleksandr Pushkin", [("Евгений Онегин", 1833, 4.7)]),
        ]
        for (name, books) in library {
            let author = try ctx.insert(DemoAuthor(name: name))
            for (title, year, rating) in books {
                try author.books.add(try ctx.insert(DemoBook(title: title, year: year, rating: rating)))
            }
        }
    }
    let query = DemoBook.all
        .where(\DemoBook.year > 1850 || Query.contains(\DemoBook.title, "ЕВГЕНИЙ"))
        .sort(\.rating, ascending: false)
        .limit(3)
    let titles = try db.perform { ctx in try ctx.fetch(query).map { try $0.decode().title } }
    print("after 1850 or containing 'ЕВГЕНИЙ', best rated first: \(titles)")
    let byA = try db.perform { ctx in
        try ctx.fetch(DemoBook.all.where(Query.any(DemoBook.self, \.author, Query.beginsWith(\DemoAuthor.name, "a"))).sort(\.title), \.title)
    }
    print("books of authors whose name begins with 'a': \(byA)")
    let emile = try db.perform { ctx in try ctx.fetch(DemoAuthor.all.where(Query.beginsWith(\DemoAuthor.name, "emile")), \.name) }
    print("'emile' finds \(emile) (case and accents folded alike on both backends)")
    do {
        try db.perform { ctx in
            _ = try ctx.insert(DemoAuthor(name: "Somebody"))
            _ = try ctx.insert(DemoAuthor(name: "Anna Akhmatova"))
        }
    } catch {
        let count = try db.perform { ctx in try ctx.count(of: DemoAuthor.all) }
        print("a unique name broken inside perform rolls the whole closure back: \(count) authors")
    }
    try db.perform { ctx in
        if let zola = try ctx.fetchOne(DemoAuthor.all.where(\DemoAuthor.name == "Émile Zola")) { try ctx.delete(zola) }
    }
    print("deleting Zola cascades to his books: \(try db.perform { ctx in try ctx.count(of: DemoBook.all) }) books left")
}
