import Foundation
import Testing
import Unity
import UnityPredicates

/// A model whose `Relations` struct forgets `RelationSet`.
struct PForgetful: ManagedObjectConvertible, Equatable {
    var title = ""
    static let entityName = "PForgetful"
    static let attributes: Set<Attribute<PForgetful>> = [Attribute(\.title, "title")]
    struct Relations {
        let author = ToOneRelation<PAuthor>("author")
    }
    static let relations = Relations()
}

/// A book whose `RelationSet` leaves its relation out of `all`, and its author.
struct PHalfBook: ManagedObjectConvertible {
    var title = ""
    static let entityName = "PHalfBook"
    static let attributes: Set<Attribute<PHalfBook>> = [Attribute(\.title, "title")]
    struct Relations: RelationSet {
        let author = ToOneRelation<PHalfAuthor>("author", inverse: "books")
        var all: [RelationDeclaration] { [] }
    }
    static let relations = Relations()
}

struct PHalfAuthor: ManagedObjectConvertible {
    var name = ""
    static let entityName = "PHalfAuthor"
    static let attributes: Set<Attribute<PHalfAuthor>> = [Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let books = ToManyRelation<PHalfBook>("books", inverse: "author")
        var all: [RelationDeclaration] { [books.declaration] }
    }
    static let relations = Relations()
}

/// Runs `body` and checks that it throws ``PredicatesError/wrongContext(_:)``.
func expectWrongContext(_ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("\(what) did not throw", sourceLocation: sourceLocation)
    } catch PredicatesError.wrongContext {
    } catch {
        Issue.record("\(what) threw \(error), not wrongContext", sourceLocation: sourceLocation)
    }
}

/// The stored state of the library the context tests use: authors' names, and each book's
/// title with its author's name (or "-").
func libraryState(_ c: PersistentContainer) throws -> (authors: [String], books: [String]) {
    try c.perform { ctx in
        let authors = try ctx.fetch(PAuthor.all.sort(\.name), \.name)
        let books = try ctx.fetch(PBook.all.sort(\.title)).map { book in
            "\(try book.decode(\.title)):\(try book.author?.decode(\.name) ?? "-")"
        }
        return (authors, books)
    }
}

@Suite("Predicates: objects and their perform")
struct PredicatesContextTests {
    @Test(arguments: Backend.allCases)
    func objectsUsedAfterTheirPerformThrowAndChangeNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            let (ann, b1, b2, books, ctx1) = try c.perform { ctx in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                let b1 = try ctx.insert(PBook(title: "B1"))
                let b2 = try ctx.insert(PBook(title: "B2"))
                try ann.books.add(b1)
                return (ann, b1, b2, ann.books, ctx)
            }
            expectWrongContext("encode(_:_:)") { try ann.encode(\.name, "Changed") }
            expectWrongContext("encode(_:)") { try ann.encode(PAuthor(name: "Changed")) }
            expectWrongContext("decode()") { _ = try ann.decode() }
            expectWrongContext("decode(_:)") { _ = try ann.decode(\.name) }
            expectWrongContext("to-one read") { _ = try b1.author }
            expectWrongContext("to-one set") { try b1.set(\.author, nil) }
            expectWrongContext("to-one set(value:context:)") { try b1.set(\.author, value: PAuthor(name: "New"), context: ctx1) }
            expectWrongContext("to-one delete(_:context:)") { try b1.delete(\.author, context: ctx1) }
            expectWrongContext("to-many add") { try ann.books.add(b2) }
            expectWrongContext("to-many remove") { try ann.books.remove(b1) }
            expectWrongContext("to-many count") { _ = try ann.books.count() }
            expectWrongContext("to-many objects") { _ = try ann.books.objects() }
            expectWrongContext("to-many delete(_:context:)") { try ann.books.delete(b1, context: ctx1) }
            expectWrongContext("ordered add") { try ann.favorites.add(b2) }
            expectWrongContext("context fetch") { _ = try ctx1.fetch(PAuthor.all) }
            expectWrongContext("context insert") { _ = try ctx1.insert(PAuthor(name: "Late")) }
            expectWrongContext("context delete") { try ctx1.delete(b2) }
            // The set kept from the perform yields what it held when the perform ended;
            // its objects are as unusable as the others.
            let kept = Array(books)
            #expect(kept.count == 1)
            expectWrongContext("a kept set's object") { _ = try kept.first?.decode() }
            let state = try libraryState(c)
            #expect(state.authors == ["Ann"])
            #expect(state.books == ["B1:Ann", "B2:-"])
        }
    }

    @Test(arguments: Backend.allCases)
    func objectsOfAnotherPerformAreRefusedAndRolledBack(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws -> Void in
            let c = PersistentContainer(database: db, models: predicateModels)
            let (ann, b1, ctx1) = try c.perform { (ctx: ManagedObjectContext) throws -> (ManagedObject<PAuthor>, ManagedObject<PBook>, ManagedObjectContext) in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                let b1 = try ctx.insert(PBook(title: "B1"))
                try ann.books.add(b1)
                return (ann, b1, ctx)
            }
            // Each refused call is the first of its perform: nothing else is written, and the
            // perform fails with the error.
            expectWrongContext("ctx2.delete(objectOfCtx1)") {
                try c.perform { (ctx: ManagedObjectContext) throws -> Void in try ctx.delete(b1) }
            }
            expectWrongContext("a set of ctx2 given an object of ctx1") {
                try c.perform { (ctx: ManagedObjectContext) throws -> Void in
                    let bob = try ctx.insert(PAuthor(name: "Bob"))
                    try bob.books.add(b1)
                }
            }
            expectWrongContext("a to-one of ctx2 given an object of ctx1") {
                try c.perform { (ctx: ManagedObjectContext) throws -> Void in
                    let b2 = try ctx.insert(PBook(title: "B2"))
                    try b2.set(\.author, ann)
                }
            }
            expectWrongContext("set(value:context:) with another context") {
                try c.perform { (ctx: ManagedObjectContext) throws -> Void in try b1.set(\.author, value: PAuthor(name: "New"), context: ctx) }
            }
            expectWrongContext("a set's delete with another context") {
                try c.perform { (ctx: ManagedObjectContext) throws -> Void in
                    let fresh = try #require(try ctx.fetchOne(PAuthor.all))
                    let book = try #require(try fresh.books.objects().first)
                    try fresh.books.delete(book, context: ctx1)
                }
            }
            let state = try libraryState(c)
            #expect(state.authors == ["Ann"])
            #expect(state.books == ["B1:Ann"])
        }
    }

    @Test(arguments: Backend.allCases)
    func objectsOfARunningOuterPerformAreRefusedInANestedOne(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws -> Void in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { (outer: ManagedObjectContext) throws -> Void in
                let ann = try outer.insert(PAuthor(name: "Ann"))
                let b1 = try outer.insert(PBook(title: "B1"))
                try ann.books.add(b1)
                // A nested perform (a savepoint of the outer one) has a context of its own.
                expectWrongContext("inner delete of an outer object") {
                    try c.perform { (inner: ManagedObjectContext) throws -> Void in try inner.delete(b1) }
                }
                expectWrongContext("inner set given an outer object") {
                    try c.perform { (inner: ManagedObjectContext) throws -> Void in
                        let bob = try inner.insert(PAuthor(name: "Bob"))
                        try bob.books.add(b1)
                    }
                }
                expectWrongContext("inner to-one given an outer object") {
                    try c.perform { (inner: ManagedObjectContext) throws -> Void in
                        let b2 = try inner.insert(PBook(title: "B2"))
                        try b2.set(\.author, ann)
                    }
                }
                expectWrongContext("set(value:context:) with the inner context") {
                    try c.perform { (inner: ManagedObjectContext) throws -> Void in
                        try b1.set(\.author, value: PAuthor(name: "New"), context: inner)
                    }
                }
                expectWrongContext("delete(_:context:) with the inner context") {
                    try c.perform { (inner: ManagedObjectContext) throws -> Void in try b1.delete(\.author, context: inner) }
                }
                expectWrongContext("a set's delete with the inner context") {
                    try c.perform { (inner: ManagedObjectContext) throws -> Void in try ann.books.delete(b1, context: inner) }
                }
                // The outer objects still work in their own perform.
                #expect(try b1.author?.decode(\.name) == "Ann")
            }
            let state = try libraryState(c)
            #expect(state.authors == ["Ann"])
            #expect(state.books == ["B1:Ann"])
        }
    }

    @Test(arguments: Backend.allCases)
    func toManySetsAreSequences(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            let titles = try c.perform { ctx in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                for t in ["Zed", "Alpha", "Mid"] {
                    let book = try ctx.insert(PBook(title: t))
                    try ann.books.add(book)
                    try ann.favorites.add(book)
                }
                var seen: [String] = []
                for book in ann.books { seen.append(try book.decode(\.title)) }
                let favorites = try ann.favorites.map { try $0.decode(\.title) }
                return (seen, favorites)
            }
            // A set in key order (insertion order here), an ordered set in list order.
            #expect(titles.0 == ["Zed", "Alpha", "Mid"])
            #expect(titles.1 == ["Zed", "Alpha", "Mid"])
            // Iterating a set whose read fails makes its perform fail and roll back (nothing is
            // silently empty).
            try db.withConnection { _ = try $0.execute(sql: "DROP TABLE \"PAuthor_books_PBook_author\"") }
            #expect(throws: DatabaseError.self) {
                try c.perform { ctx in
                    let ann = try #require(try ctx.fetchOne(PAuthor.all))
                    try ann.encode(\.name, "Changed")
                    var n = 0
                    for _ in ann.books { n += 1 }
                    #expect(n == 0)
                }
            }
            #expect(try c.perform { ctx in try ctx.fetch(PAuthor.all, \.name) } == ["Ann"])
        }
    }

    @Test(arguments: Backend.allCases)
    func relationsTypeWithoutRelationSetIsNamedAtFirstCall(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            for createsSchema in [true, false] {
                let log = ErrorLog()
                let c = PersistentContainer(database: db, models: predicateModels + [PForgetful.self],
                                            createsSchema: createsSchema, logError: log.log)
                do {
                    try c.perform { ctx in _ = try ctx.insert(PForgetful(title: "x")) }
                    Issue.record("perform did not throw")
                } catch PredicatesError.invalidRelation(let message) {
                    #expect(message.contains("PForgetful.Relations"))
                    #expect(message.contains("RelationSet"))
                    #expect(!message.contains("inverse"))
                }
                #expect(throws: PredicatesError.self) { try c.createSchema() }
                #expect(log.all.count == 2)
            }
            // A relation left out of `all`: the inverse that names it is refused, saying so.
            do {
                try PersistentContainer(database: db, models: [PHalfBook.self, PHalfAuthor.self]).createSchema()
                Issue.record("createSchema did not throw")
            } catch PredicatesError.invalidRelation(let message) {
                #expect(message.contains("PHalfBook.author"))
                #expect(message.contains("`all`"))
            }
            // Nothing was created.
            #expect(try Migrator(migrations: []).appliedMigrations(db).isEmpty)
        }
    }
}

@Suite("Predicates: Sworm's APIs")
struct PredicatesSwormAPITests {
    @Test(arguments: Backend.allCases)
    func customAttributeTypesPortAsWrittenForSworm(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [PVersioned.self])
            try c.perform { ctx in
                try ctx.insert(PVersioned(id: 1, version: PVersion(major: 1, minor: 2), previous: nil))
                try ctx.insert(PVersioned(id: 2, version: PVersion(major: 10, minor: 0), previous: PVersion(major: 9, minor: 9)))
                try ctx.insert(PVersioned(id: 3, version: PVersion(major: 2, minor: 0), previous: PVersion(major: 1, minor: 2)))
            }
            // Stored as its primitive value; compared and sorted as it (text: "10.0" < "2.0").
            #expect(try column(db, "SELECT version FROM \"PVersioned\" ORDER BY id") == ["1.2", "10.0", "2.0"])
            #expect(try column(db, "SELECT previous FROM \"PVersioned\" ORDER BY id") == ["NULL", "9.9", "1.2"])
            let read = try c.perform { ctx in try ctx.fetch(PVersioned.all.sort(\.version)).map { try $0.decode() } }
            #expect(read.map(\.id) == [1, 2, 3])
            #expect(read[2] == PVersioned(id: 3, version: PVersion(major: 2, minor: 0), previous: PVersion(major: 1, minor: 2)))
            #expect(try c.perform { ctx in try ctx.fetch(PVersioned.all.where(\PVersioned.version == PVersion(major: 2, minor: 0)), \.id) } == [3])
            #expect(try c.perform { ctx in try ctx.fetch(PVersioned.all.where(\PVersioned.previous == nil), \.id) } == [1])
            #expect(try c.perform { ctx in try ctx.fetch(PVersioned.all.where(\PVersioned.previous > PVersion(major: 1, minor: 5)), \.id) } == [2])
            #expect(try c.perform { ctx in try ctx.fetch(PVersioned.all.sort(\.previous, ascending: false), \.id) } == [2, 3, 1])
            // A stored value decode refuses: the error names the column, the value and why.
            try db.withConnection { _ = try $0.execute(sql: "UPDATE \"PVersioned\" SET version = 'one' WHERE id = 1") }
            try db.withConnection { _ = try $0.execute(sql: "UPDATE \"PVersioned\" SET previous = 'bad-input' WHERE id = 2") }
            try c.perform { ctx in
                let objects = try ctx.fetch(PVersioned.all.sort(\.id))
                do {
                    _ = try objects[0].decode()
                    Issue.record("decoding 'one' should throw")
                } catch PredicatesError.invalidValue(let column, _, let value, let reason) {
                    #expect(column == "version")
                    #expect(value == .text("one"))
                    #expect(reason == "'one' is not major.minor")
                }
                do {
                    _ = try objects[1].decode(\.previous)
                    Issue.record("decoding 'bad-input' should throw")
                } catch PredicatesError.conversion(let column, _, let value) {
                    #expect(column == "previous")
                    #expect(value == .text("bad-input"))
                }
                #expect(try objects[2].decode(\.previous) == PVersion(major: 1, minor: 2))
                #expect(throws: PredicatesError.self) { _ = try ctx.fetch(PVersioned.all.sort(\.id), \.version) }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func toOneValueSetterAndDeletes(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: predicateModels)
            try c.perform { ctx in
                let b1 = try ctx.insert(PBook(title: "B1"))
                // No author yet: one is inserted and linked.
                try b1.set(\.author, value: PAuthor(name: "Ann"), context: ctx)
                #expect(try b1.author?.decode() == PAuthor(name: "Ann"))
                // An author already: it is changed in place (no second row).
                try b1.set(\.author, value: PAuthor(name: "Anne", email: "anne@x"), context: ctx)
                #expect(try ctx.count(of: PAuthor.all) == 1)
                #expect(try b1.author?.decode() == PAuthor(name: "Anne", email: "anne@x"))
                let b2 = try ctx.insert(PBook(title: "B2"))
                try b2.set(\.author, try b1.author)
            }
            #expect(try libraryState(c).books == ["B1:Anne", "B2:Anne"])
            // nil unlinks and deletes the related object (as Sworm: unlinked first, so its
            // cascade rule takes its other books, not this one).
            try c.perform { ctx in
                let b1 = try #require(try ctx.fetchOne(PBook.all.where(\PBook.title == "B1")))
                try b1.set(\.author, value: nil, context: ctx)
            }
            #expect(try libraryState(c).authors == [])
            #expect(try libraryState(c).books == ["B1:-"])
            try c.perform { ctx in
                let ann = try ctx.insert(PAuthor(name: "Ann"))
                for t in ["A1", "A2", "A3"] { try ann.books.add(try ctx.insert(PBook(title: t))) }
                let agent = try ctx.insert(PAgent(name: "Agent"))
                try ann.set(\.agent, agent)
                // The set's delete removes and deletes the book.
                let a2 = try #require(try ann.books.objects().first { try $0.decode(\.title) == "A2" })
                try ann.books.delete(a2, context: ctx)
                // A to-one delete unlinks and deletes the agent.
                try ann.delete(\.agent, context: ctx)
                #expect(try ann.agent == nil)
                // Deleting an empty to-one is nothing.
                try ann.delete(\.agent, context: ctx)
            }
            #expect(try libraryState(c).books == ["A1:Ann", "A3:Ann", "B1:-"])
            #expect(try c.perform { ctx in try ctx.count(of: PAgent.all) } == 0)
        }
    }
}
