import Foundation
import Testing
import Unity
import UnityPredicates

@Suite("Predicates: relations")
struct PredicatesRelationTests {
    @Test(arguments: Backend.allCases)
    func toOneAndToManyKeepInversesInStep(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { ctx in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                let bob = try ctx.insert(PAuthor(name: "Bob"))
                let b1 = try ctx.insert(PBook(title: "B1"))
                let b2 = try ctx.insert(PBook(title: "B2"))
                let b3 = try ctx.insert(PBook(title: "B3"))
                try ann.books.add(b1)
                try ann.books.add(b2)
                try ann.books.add(b2) // no-op
                try b3.set(\.author, bob)
                #expect(try ann.books.count() == 2)
                #expect(try b1.author?.decode(\.name) == "Ann")
                #expect(try bob.books.objects().map { try $0.decode(\.title) } == ["B3"])
                // Setting the to-one side moves the book from Ann's set to Bob's.
                try b2.set(\.author, bob)
                #expect(try ann.books.objects().map { try $0.decode(\.title) } == ["B1"])
                #expect(try bob.books.objects().map { try $0.decode(\.title) }.sorted() == ["B2", "B3"])
                // Adding on the to-many side moves it back.
                try ann.books.add(b2)
                #expect(try b2.author?.decode(\.name) == "Ann")
                #expect(try bob.books.count() == 1)
                // Removing and clearing.
                try ann.books.remove(b1)
                #expect(try b1.author == nil)
                try b3.set(\.author, nil)
                #expect(try bob.books.count() == 0)
            }
            // The links survive the transaction.
            let titles = try c.perform { ctx in
                try ctx.fetchOne(PAuthor.all.where(\PAuthor.name == "Ann"))?.books.objects().map { try $0.decode(\.title) }
            }
            #expect(titles == ["B2"])
        }
    }

    @Test(arguments: Backend.allCases)
    func orderedToManyKeepsInsertionOrder(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { ctx in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                let books = try ["Zed", "Alpha", "Mid", "Beta"].map { try ctx.insert(PBook(title: $0)) }
                // Added in an order that is neither the keys' nor the titles'.
                for i in [2, 0, 3, 1] { try ann.favorites.add(books[i]) }
                try ann.favorites.remove(books[3])
            }
            let order = try c.perform { ctx in
                try ctx.fetchOne(PAuthor.all)?.favorites.objects().map { try $0.decode(\.title) }
            }
            #expect(order == ["Mid", "Zed", "Alpha"])
            let iterated = try c.perform { ctx in
                try #require(try ctx.fetchOne(PAuthor.all)).favorites.map { try $0.decode(\.title) }
            }
            #expect(iterated == ["Mid", "Zed", "Alpha"])
        }
    }

    @Test(arguments: Backend.allCases)
    func deleteRules(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { ctx in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                let agent = try ctx.insert(PAgent(name: "Agent"))
                try ann.set(\.agent, agent)
                for t in ["A1", "A2"] { try ann.books.add(try ctx.insert(PBook(title: t))) }
                let other = try ctx.insert(PBook(title: "Other"))
                try ann.favorites.add(other)
            }
            // .deny: the agent still has a client.
            #expect(throws: PredicatesError.self) {
                try c.perform { ctx in try ctx.delete(PAgent.all) }
            }
            #expect(try c.perform { ctx in try ctx.count(of: PAgent.all) } == 1)
            // .cascade: Ann's books go with her; .nullify: the favourite and the agent stay.
            try c.perform { ctx in try ctx.delete(try #require(try ctx.fetchOne(PAuthor.all))) }
            #expect(try c.perform { ctx in try ctx.fetch(PBook.all.sort(\.title), \.title) } == ["Other"])
            #expect(try c.perform { ctx in try ctx.fetch(PAgent.all, \.name) } == ["Agent"])
            // With no client left, the agent can go.
            try c.perform { ctx in try ctx.delete(PAgent.all) }
            #expect(try c.perform { ctx in try ctx.count(of: PAgent.all) } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func uniqueViolationRollsBackWholePerform(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { ctx in _ = try ctx.insert(PAuthor(name: "Ann", email: "ann@x")) }
            #expect(throws: DatabaseError.self) {
                try c.perform { ctx in
                    let bob = try ctx.insert(PAuthor(name: "Bob", email: "bob@x"))
                    try bob.books.add(try ctx.insert(PBook(title: "Bob's")))
                    _ = try ctx.insert(PAuthor(name: "Ann 2", email: "ann@x"))
                }
            }
            #expect(try c.perform { ctx in try ctx.fetch(PAuthor.all, \.name) } == ["Ann"])
            #expect(try c.perform { ctx in try ctx.count(of: PBook.all) } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func relationsInPredicates(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { ctx in
                for (author, titles) in [("Ann", ["A-1", "A-2"]), ("Bob", ["B-1"]), ("Ámelie", ["Á-1"])] {
                    let a = try ctx.insert(PAuthor(name: author))
                    for t in titles { try a.books.add(try ctx.insert(PBook(title: t))) }
                }
                _ = try ctx.insert(PBook(title: "Orphan"))
            }
            // The books of authors whose name begins with "A" (accent-insensitive: Ámelie too).
            let books = try c.perform { ctx in
                try ctx.fetch(PBook.all.where(Query.any(PBook.self, \.author, Query.beginsWith(\PAuthor.name, "a"))).sort(\.title), \.title)
            }
            #expect(books == ["A-1", "A-2", "Á-1"])
            // Authors with a book titled "B-1"; authors without any book.
            let authors = try c.perform { ctx in
                try ctx.fetch(PAuthor.all.where(Query.any(PAuthor.self, \.books, \PBook.title == "B-1")), \.name)
            }
            #expect(authors == ["Bob"])
            let orphans = try c.perform { ctx in
                try ctx.fetch(PBook.all.where(!Query.any(PBook.self, \.author, "1 = 1")), \.title)
            }
            #expect(orphans == ["Orphan"])
            // The @count of a to-many relation, over the link table's columns as the README
            // writes it ("PAuthor.books" sorts first: the author is in a_pk).
            let prolific = try c.perform { ctx in
                try ctx.fetch(PAuthor.all.where("(SELECT COUNT(*) FROM \"PAuthor_books_PBook_author\" l WHERE l.a_pk = \"PAuthor\".\"Z_PK\") > 1"), \.name)
            }
            #expect(prolific == ["Ann"])
        }
    }

    @Test(arguments: Backend.allCases)
    func inconsistentRelationsAreTypedErrors(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            // PBook without PAuthor: its relation points outside the container's models.
            let c = PersistentContainer(database: db, models: [PBook.self])
            #expect(throws: PredicatesError.self) { try c.createSchema() }
            let applied = try Migrator(migrations: []).appliedMigrations(db)
            #expect(applied.isEmpty)
        }
    }
}
