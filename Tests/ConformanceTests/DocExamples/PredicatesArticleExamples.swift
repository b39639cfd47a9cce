import DriverPostgres
import DriverSQLite
import Foundation
import Testing
import UnityPredicates

// The code of the UnityPredicates catalog's articles, compiled and run on both backends. Every
// ```swift block of those articles stands here line for line (DocumentationExamplesTests checks
// that), so an example that drifts from the API fails the build or a test.

// MARK: From "Getting started" (Sworm's basic usage, ported)

struct Author {
    var id: UUID?
    var name: String = ""
}

struct Book {
    var id: UUID?
    var name: String = ""
    var date: Date?
}

extension Author: ManagedObjectConvertible {
    static let entityName = "Author"

    static let attributes: Set<Attribute<Author>> = [
        .init(\.id, "id"),
        .init(\.name, "name"),
    ]

    struct Relations: RelationSet {
        let books = ToManyRelation<Book>("books", inverse: "authors")
        var all: [RelationDeclaration] { [books.declaration] }
    }

    static let relations = Relations()
}

extension Book: ManagedObjectConvertible {
    static let entityName = "Book"

    static let attributes: Set<Attribute<Book>> = [
        .init(\.id, "id"),
        .init(\.name, "name"),
        .init(\.date, "date"),
    ]

    struct Relations: RelationSet {
        let authors = ToManyRelation<Author>("authors", inverse: "books")
        var all: [RelationDeclaration] { [authors.declaration] }
    }

    static let relations = Relations()
}

func openLibrary(_ location: String) throws -> Database {
    if location.hasPrefix("postgresql://") || location.hasPrefix("postgres://") {
        return try Database(driver: PostgresDriver(location))
    }
    return try Database(driver: SQLiteDriver(path: location))   // a file path, or ":memory:"
}

final class DataLayer: Sendable {
    private let db: PersistentContainer

    init(database: Database) {
        self.db = PersistentContainer(database: database, models: [Author.self, Book.self],
                                      logError: { print("data layer:", $0) })
    }

    func allBooks() throws -> [Book] {
        try self.db.perform { ctx in
            try ctx.fetch(Book.all).map { try $0.decode() }
        }
    }

    func insert(book: Book) throws {
        try self.db.perform { ctx in
            _ = try ctx.insert(book)
        }
    }
}

// MARK: From "Predicates and sorting"

struct Product: ManagedObjectConvertible {
    enum Kind: String, SupportedAttributeType { case book, music, toy }

    var name = ""
    var marker: String?
    var amount = 0
    var price: Decimal = 0
    var kind = Kind.book
    var note = ""   // not an attribute: not stored

    static let entityName = "Product"
    static let attributes: Set<Attribute<Product>> = [
        Attribute(\.name, "name", unique: true),
        Attribute(\.marker, "marker"),
        Attribute(\.amount, "amount"),
        Attribute(\.price, "price"),
        Attribute(\.kind, "kind"),
    ]
}

struct ReleaseVersion: SupportedAttributeType, Equatable {
    var major = 0, minor = 0
    func encodePrimitiveValue() -> String { "\(major).\(minor)" }
    static func decode(primitiveValue: String) throws -> ReleaseVersion {
        let parts = primitiveValue.split(separator: ".").compactMap { Int($0) }
        guard parts.count == 2 else { throw AttributeError.badInput(primitiveValue) }
        return ReleaseVersion(major: parts[0], minor: parts[1])
    }
}

struct Release: ManagedObjectConvertible {
    var app = ""
    var version = ReleaseVersion()
    static let entityName = "Release"
    static let attributes: Set<Attribute<Release>> = [Attribute(\.app, "app"), Attribute(\.version, "version")]
}

// MARK: From "Relations"

struct Artist: ManagedObjectConvertible {
    var name = ""
    static let entityName = "Artist"
    static let attributes: Set<Attribute<Artist>> = [Attribute(\.name, "name", unique: true)]
    struct Relations: RelationSet {
        let records = ToManyRelation<Record>("records", inverse: "artist", deleteRule: .cascade)
        var all: [RelationDeclaration] { [records.declaration] }
    }
    static let relations = Relations()
}

struct Record: ManagedObjectConvertible {
    var title = ""
    var year = 0
    static let entityName = "Record"
    static let attributes: Set<Attribute<Record>> = [Attribute(\.title, "title"), Attribute(\.year, "year")]
    struct Relations: RelationSet {
        let artist = ToOneRelation<Artist>("artist", inverse: "records")
        let tracks = ToManyOrderedRelation<Track>("tracks", deleteRule: .cascade)
        var all: [RelationDeclaration] { [artist.declaration, tracks.declaration] }
    }
    static let relations = Relations()
}

struct Track: ManagedObjectConvertible {
    var title = ""
    static let entityName = "Track"
    static let attributes: Set<Attribute<Track>> = [Attribute(\.title, "title")]
}

struct RecordLabel: ManagedObjectConvertible {
    var name = ""
    static let entityName = "RecordLabel"
    static let attributes: Set<Attribute<RecordLabel>> = [Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let artists = ToManyRelation<Artist>("artists", deleteRule: .deny)
        var all: [RelationDeclaration] { [artists.declaration] }
    }
    static let relations = Relations()
}

var musicModels: [any ManagedObjectConvertible.Type] { [Artist.self, Record.self, Track.self, RecordLabel.self] }

// MARK: From "Containers and existing schemas"

struct Client: ManagedObjectConvertible {
    var id: Int64 = 0
    var name = ""
    static let entityName = "client"
    static let keyColumn = "client_id"
    static let attributes: Set<Attribute<Client>> = [Attribute(\.id, "client_id"), Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let invoices = ToManyRelation<Invoice>("invoices", inverse: "client")
        var all: [RelationDeclaration] { [invoices.declaration] }
    }
    static let relations = Relations()
}

struct Invoice: ManagedObjectConvertible {
    var id: Int64 = 0
    var clientID: Int64 = 0
    var total: Decimal = 0
    static let entityName = "invoice"
    static let keyColumn = "invoice_id"
    static let attributes: Set<Attribute<Invoice>> = [
        Attribute(\.id, "invoice_id"), Attribute(\.clientID, "client_id"), Attribute(\.total, "total"),
    ]
    struct Relations: RelationSet {
        let client = ToOneRelation<Client>("client", inverse: "invoices", column: "client_id")
        var all: [RelationDeclaration] { [client.declaration] }
    }
    static let relations = Relations()
}

/// The shop's own tables, made by its own SQL (as another tool would have made them).
func createShopTables(_ database: Database, moneyType: String) throws {
    try database.execute(sql: "CREATE TABLE client (client_id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
    try database.execute(sql: "CREATE TABLE invoice (invoice_id INTEGER PRIMARY KEY, "
        + "client_id INTEGER NOT NULL REFERENCES client (client_id), total \(moneyType) NOT NULL)")
}

@Suite("Documentation: the UnityPredicates catalog's examples")
struct PredicatesArticleExamples {
    // MARK: Getting started

    @Test(arguments: Backend.allCases)
    func openingTheLibrary(_ backend: Backend) throws {
        let location = backend == .sqlite ? ":memory:" : try #require(postgresURL)
        let database = try openLibrary(location)
        defer { database.close() }
        #expect(try database.read { try $0.fetchValue(Int.self, sql: "SELECT 40 + 2") } == 42)
    }

    @Test(arguments: Backend.allCases)
    func gettingStartedDataLayer(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let layer = DataLayer(database: database)
            let book = Book(id: UUID(), name: "best book", date: Date())
            try layer.insert(book: book)
            let books = try layer.allBooks()

            #expect(books.map(\.name) == ["best book"])
            #expect(books.first?.id == book.id)
            // The container created the tables through the core's migrator.
            let applied = try database.fetchAll(sql: "SELECT name FROM unity_migrations ORDER BY name")
                .map { try $0.decode(String.self, at: 0) }
            #expect(applied.contains("flavor:predicates/create/Author"))
            #expect(applied.contains("flavor:predicates/create/Book"))
        }
    }

    @Test(arguments: Backend.allCases)
    func gettingStartedWriteQueryUpdateDelete(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Author.self, Book.self])

            try db.perform { ctx in
                let tolkien: ManagedObject<Author> = try ctx.insert(Author(name: "J. R. R. Tolkien"))
                let books: ManagedObjectSet<Book> = tolkien.books
                try books.add(ctx.insert(Book(id: UUID(), name: "The Hobbit")))
                try books.add(ctx.insert(Book(id: UUID(), name: "The Silmarillion")))
                try ctx.insert(Book(id: UUID(), name: "Beowulf"))
            }

            let titles = try db.perform { ctx in
                try ctx.fetch(Book.all.where(Query.beginsWith(\Book.name, "the")).sort(\.name))
                    .map { try $0.decode(\.name) }
            }
            // ["The Hobbit", "The Silmarillion"]: beginsWith ignores case by default

            try db.perform { ctx in
                guard let hobbit = try ctx.fetchOne(Book.all.where(\Book.name == "The Hobbit")) else { return }
                try hobbit.encode(\.name, "The Hobbit, or There and Back Again")
            }

            let left = try db.perform { ctx in
                try ctx.delete(Book.all.where(\Book.name == "Beowulf"))
                return try ctx.fetch(Book.all.sort(\.name), \.name)
            }
            // ["The Hobbit, or There and Back Again", "The Silmarillion"]

            #expect(titles == ["The Hobbit", "The Silmarillion"])
            #expect(left == ["The Hobbit, or There and Back Again", "The Silmarillion"])
            let written = try db.perform { ctx in
                try ctx.fetchOne(Author.all)?.books.map { try $0.decode(\.name) }.sorted()
            }
            #expect(written == ["The Hobbit, or There and Back Again", "The Silmarillion"])
        }
    }

    // MARK: Predicates and sorting

    static func stock(_ db: PersistentContainer) throws {
        try db.perform { ctx in
            try ctx.insert(Product(name: "Codex", marker: "a", amount: 3, price: Decimal(string: "9.91")!, kind: .book))
            try ctx.insert(Product(name: "Café Music", marker: nil, amount: 12, price: Decimal(string: "10.00")!, kind: .music))
            try ctx.insert(Product(name: "Robot", marker: "d", amount: 7, price: Decimal(string: "100.5")!, kind: .toy))
            try ctx.insert(Product(name: "Atlas", marker: "b", amount: 1, price: Decimal(string: "8.94")!, kind: .book))
        }
    }

    @Test(arguments: Backend.allCases)
    func swormsQueryExample(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let query = Product.all
                .where(\Product.marker === ["a", "d"] || \Product.amount > 10 || Query.endsWith(\Product.name, "ex"))
                .sort(\.name)
                .limit(5)
            let result = try db.perform { ctx in
                try ctx.fetch(query).map { try $0.decode() }
            }
            // Café Music (amount 12), Codex (marker "a"), Robot (marker "d")

            #expect(result.map(\.name) == ["Café Music", "Codex", "Robot"])
        }
    }

    @Test(arguments: Backend.allCases)
    func comparisonsAndNull(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let names = try db.perform { ctx in
                (
                    unmarked: try ctx.fetch(Product.all.where(\Product.marker == nil), \.name),
                    notA: try ctx.fetch(Product.all.where(\Product.marker != "a").sort(\.name), \.name),
                    notAOrNull: try ctx.fetch(Product.all.where(\Product.marker != "a" || \Product.marker == nil).sort(\.name), \.name),
                    cheap: try ctx.fetch(Product.all.where(\Product.price < Decimal(10)).sort(\.price), \.name),
                    books: try ctx.fetch(Product.all.where(\Product.kind == .book && !(\Product.amount >= 3)), \.name)
                )
            }
            // unmarked: ["Café Music"]
            // notA: ["Atlas", "Robot"] (the NULL marker is left out)
            // notAOrNull: ["Atlas", "Café Music", "Robot"]
            // cheap: ["Atlas", "Codex"] (8.94 and 9.91: compared as numbers)
            // books: ["Atlas"]

            #expect(names.unmarked == ["Café Music"])
            #expect(names.notA == ["Atlas", "Robot"])
            #expect(names.notAOrNull == ["Atlas", "Café Music", "Robot"])
            #expect(names.cheap == ["Atlas", "Codex"])
            #expect(names.books == ["Atlas"])
        }
    }

    @Test(arguments: Backend.allCases)
    func textMatches(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let found = try db.perform { ctx in
                (
                    folded: try ctx.fetch(Product.all.where(Query.contains(\Product.name, "CAFE")), \.name),
                    exact: try ctx.fetch(Product.all.where(Query.contains(\Product.name, "CAFE", caseInsensitive: false)), \.name),
                    prefix: try ctx.fetch(Product.all.where(Query.beginsWith(\Product.name, "r")), \.name),
                    same: try ctx.fetch(Product.all.where(Query.matches(\Product.name, "cafe music")), \.name)
                )
            }
            // folded: ["Café Music"]; exact: []; prefix: ["Robot"]; same: ["Café Music"]

            #expect(found.folded == ["Café Music"])
            #expect(found.exact == [])
            #expect(found.prefix == ["Robot"])
            #expect(found.same == ["Café Music"])
        }
    }

    @Test(arguments: Backend.allCases)
    func sortingAndPaging(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let pages = try db.perform { ctx in
                (
                    byKind: try ctx.fetch(Product.all.sort(\.kind).sort(\.price, ascending: false), \.name),
                    byMarker: try ctx.fetch(Product.all.sort(\.marker), \.name),
                    second: try ctx.fetch(Product.all.sort(\.amount).limit(2).offset(1), \.name)
                )
            }
            // byKind: ["Codex", "Atlas", "Café Music", "Robot"] (book, music, toy; dearest first)
            // byMarker: ["Café Music", "Codex", "Atlas", "Robot"] (nil first when ascending)
            // second: ["Codex", "Robot"]

            #expect(pages.byKind == ["Codex", "Atlas", "Café Music", "Robot"])
            #expect(pages.byMarker == ["Café Music", "Codex", "Atlas", "Robot"])
            #expect(pages.second == ["Codex", "Robot"])
        }
    }

    @Test(arguments: Backend.allCases)
    func rawSQLFragments(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let raw = try db.perform { ctx in
                (
                    literal: try ctx.fetch(Product.all.where(\Product.amount > 1 && !"amount > 10").sort(\.name), \.name),
                    bound: try ctx.fetch(Product.all.where(QueryPredicate.raw("amount > ?", 10)), \.name),
                    replaced: try ctx.fetch(Product.all.where(\Product.amount > 100).where(raw: "amount BETWEEN ? AND ?", 2, 5), \.name)
                )
            }
            // literal: ["Codex", "Robot"]; bound: ["Café Music"]; replaced: ["Codex"]

            #expect(raw.literal == ["Codex", "Robot"])
            #expect(raw.bound == ["Café Music"])
            #expect(raw.replaced == ["Codex"])
        }
    }

    @Test(arguments: Backend.allCases)
    func customAttributeTypes(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Release.self])

            let latest = try db.perform { ctx in
                try ctx.insert(Release(app: "Unity", version: ReleaseVersion(major: 1, minor: 2)))
                return try ctx.fetchOne(Release.all.where(\Release.version == ReleaseVersion(major: 1, minor: 2)), \.version)
            }
            // ReleaseVersion(major: 1, minor: 2), stored as the text "1.2"

            do {
                try database.execute(sql: "UPDATE \"Release\" SET version = 'one'")
                _ = try db.perform { ctx in try ctx.fetch(Release.all).map { try $0.decode() } }
            } catch PredicatesError.conversion(let column, _, let value) {
                print("column \(column) holds \(value)")   // version, 'one'
            }

            #expect(latest == ReleaseVersion(major: 1, minor: 2))
            #expect(try database.read { try $0.fetchValue(String.self, sql: "SELECT version FROM \"Release\"") } == "one")
            #expect {
                try db.perform { ctx in try ctx.fetch(Release.all).map { try $0.decode() } }
            } throws: { error in
                guard case PredicatesError.conversion(let column, _, let value) = error else { return false }
                return column == "version" && value == .text("one")
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func unknownAttributes(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            do {
                _ = try db.perform { ctx in try ctx.fetch(Product.all.where(\Product.note == "x")) }
            } catch PredicatesError.unknownAttribute(let entity, let keyPath) {
                print("\(keyPath) is no attribute of \(entity)")   // \Product.note, Product
            }

            #expect {
                try db.perform { ctx in try ctx.fetch(Product.all.where(\Product.note == "x")).count }
            } throws: { error in
                guard case PredicatesError.unknownAttribute(let entity, _) = error else { return false }
                return entity == "Product"
            }
        }
    }

    // MARK: Relations

    @Test(arguments: Backend.allCases)
    func toOneAndToMany(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: musicModels)

            let (titles, owner) = try db.perform { ctx in
                let ella = try ctx.insert(Artist(name: "Ella"))
                let louis = try ctx.insert(Artist(name: "Louis"))
                let album = try ctx.insert(Record(title: "Ella and Louis", year: 1956))
                try album.set(\.artist, ella)               // the inverse follows: ella.records holds it
                try louis.records.add(try ctx.insert(Record(title: "Satchmo", year: 1954)))
                try ella.records.add(try ctx.insert(Record(title: "Lullabies", year: 1955)))
                let titles = try ella.records.map { try $0.decode(\.title) }
                return (titles, try album.artist?.decode(\.name))
            }
            // titles: ["Ella and Louis", "Lullabies"] (key order); owner: "Ella"

            #expect(titles == ["Ella and Louis", "Lullabies"])
            #expect(owner == "Ella")
            let counts = try db.perform { ctx in
                try ctx.fetch(Artist.all.sort(\.name)).map { try $0.records.count() }
            }
            #expect(counts == [2, 1])
        }
    }

    @Test(arguments: Backend.allCases)
    func orderedRelations(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: musicModels)

            let tracks = try db.perform { ctx in
                let album = try ctx.insert(Record(title: "Blue", year: 1971))
                for title in ["River", "Blue", "All I Want"] {
                    try album.tracks.add(try ctx.insert(Track(title: title)))
                }
                let blue = try album.tracks.objects()[1]
                try album.tracks.remove(blue)
                try album.tracks.add(blue)
                return try album.tracks.objects().map { try $0.decode(\.title) }
            }
            // ["River", "All I Want", "Blue"]: the order they were added in

            #expect(tracks == ["River", "All I Want", "Blue"])
        }
    }

    @Test(arguments: Backend.allCases)
    func swormsRelationCalls(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: musicModels)

            let state = try db.perform { ctx in
                let album = try ctx.insert(Record(title: "Kind of Blue", year: 1959))
                try album.set(\.artist, value: Artist(name: "Miles"), context: ctx)   // inserts and links
                try album.set(\.artist, value: Artist(name: "Miles Davis"), context: ctx)   // writes into it
                let renamed = try album.artist?.decode(\.name)
                try album.delete(\.artist, context: ctx)   // unlinks and deletes the artist
                return (renamed, try ctx.count(of: Artist.all), try ctx.count(of: Record.all))
            }
            // ("Miles Davis", 0, 1): unlinked first, so the artist's cascade rule does not reach the album

            #expect(state.0 == "Miles Davis")
            #expect(state.1 == 0)
            #expect(state.2 == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func deleteRules(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: musicModels)
            try db.perform { ctx in
                let label = try ctx.insert(RecordLabel(name: "Verve"))
                let ella = try ctx.insert(Artist(name: "Ella"))
                try label.artists.add(ella)
                let album = try ctx.insert(Record(title: "Ella and Louis", year: 1956))
                try ella.records.add(album)
                try album.tracks.add(try ctx.insert(Track(title: "Cheek to Cheek")))
            }

            do {
                try db.perform { ctx in
                    if let verve = try ctx.fetchOne(RecordLabel.all) { try ctx.delete(verve) }
                }
            } catch PredicatesError.deleteDenied(let entity, let relation) {
                print("\(entity).\(relation) still holds artists")   // RecordLabel.artists
            }

            let left = try db.perform { ctx in
                if let ella = try ctx.fetchOne(Artist.all.where(\Artist.name == "Ella")) {
                    try ctx.delete(ella)   // cascades to her records, and on to their tracks
                }
                return [try ctx.count(of: Artist.all), try ctx.count(of: Record.all), try ctx.count(of: Track.all)]
            }
            // [0, 0, 0]

            #expect(left == [0, 0, 0])
            #expect(try db.perform { ctx in try ctx.count(of: RecordLabel.all) } == 1)
            #expect {
                try db.perform { ctx in
                    try ctx.insert(Artist(name: "Oscar"))
                    guard let verve = try ctx.fetchOne(RecordLabel.all),
                          let oscar = try ctx.fetchOne(Artist.all) else { return }
                    try verve.artists.add(oscar)
                    try ctx.delete(verve)
                }
            } throws: { error in
                guard case PredicatesError.deleteDenied(let entity, let relation) = error else { return false }
                return entity == "RecordLabel" && relation == "artists"
            }
            // The denied delete rolled back the whole perform: Oscar was not kept either.
            #expect(try db.perform { ctx in try ctx.count(of: Artist.all) } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func traversingRelations(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: musicModels)
            try db.perform { ctx in
                let ella = try ctx.insert(Artist(name: "Ella"))
                let louis = try ctx.insert(Artist(name: "Louis"))
                try ella.records.add(try ctx.insert(Record(title: "Ella and Louis", year: 1956)))
                try ella.records.add(try ctx.insert(Record(title: "Lullabies", year: 1955)))
                try louis.records.add(try ctx.insert(Record(title: "Satchmo", year: 1954)))
            }

            let found = try db.perform { ctx in
                (
                    byElla: try ctx.fetch(Record.all.where(Query.any(Record.self, \.artist, \Artist.name == "Ella")).sort(\.title), \.title),
                    with1954: try ctx.fetch(Artist.all.where(Query.any(Artist.self, \.records, \Record.year == 1954)), \.name),
                    prolific: try ctx.fetch(Artist.all.where(
                        "(SELECT COUNT(*) FROM \"Artist_records_Record_artist\" l WHERE l.a_pk = \"Artist\".\"Z_PK\") > 1"), \.name)
                )
            }
            // byElla: ["Ella and Louis", "Lullabies"]; with1954: ["Louis"]; prolific: ["Ella"]

            #expect(found.byElla == ["Ella and Louis", "Lullabies"])
            #expect(found.with1954 == ["Louis"])
            #expect(found.prolific == ["Ella"])
        }
    }

    // MARK: Contexts, perform and transactions

    @Test(arguments: Backend.allCases)
    func performIsOneTransaction(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            do {
                try db.perform { ctx in
                    try ctx.insert(Product(name: "Kite", amount: 2))
                    try ctx.fetchOne(Product.all.where(\Product.name == "Codex"))?.encode(\.name, "Atlas")   // UNIQUE
                    _ = try ctx.count(of: Product.all)   // the change is written before this statement
                }
            } catch DatabaseError.constraintViolation(.unique, _) {
                // Rolled back: no Kite, and Codex keeps its name.
            }

            let names = try db.perform { ctx in try ctx.fetch(Product.all.sort(\.name), \.name) }
            // ["Atlas", "Café Music", "Codex", "Robot"]

            #expect(names == ["Atlas", "Café Music", "Codex", "Robot"])
        }
    }

    @Test(arguments: Backend.allCases)
    func scheduleIsTheAsyncForm(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (database: Database) async throws in
            let db = PersistentContainer(database: database, models: [Product.self])

            let total = try await db.schedule { ctx in
                try ctx.insert(Product(name: "Kite", amount: 2))
                try ctx.insert(Product(name: "Yo-yo", amount: 5))
                return try ctx.fetch(Product.all, \.amount).reduce(0, +)
            }
            // 7

            #expect(total == 7)
        }
    }

    @Test(arguments: Backend.allCases)
    func readingCalls(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let answers = try db.perform { ctx in
                var streamed: [String] = []
                try ctx.forEach(Product.all.sort(\.name)) { product in
                    streamed.append(try product.decode(\.name))
                }
                return (
                    count: try ctx.count(of: Product.all.where(\Product.kind == .book)),
                    first: try ctx.fetchOne(Product.all.sort(\.amount, ascending: false), \.name),
                    streamed: streamed
                )
            }
            // count: 2; first: "Café Music"; streamed: ["Atlas", "Café Music", "Codex", "Robot"]

            #expect(answers.count == 2)
            #expect(answers.first == "Café Music")
            #expect(answers.streamed == ["Atlas", "Café Music", "Codex", "Robot"])
        }
    }

    @Test(arguments: Backend.allCases)
    func deletingAndBatchDeleting(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let (removed, left) = try db.perform { ctx in
                if let robot = try ctx.fetchOne(Product.all.where(\Product.name == "Robot")) {
                    try ctx.delete(robot)
                }
                let removed = try ctx.batchDelete(Product.all.where(\Product.kind == .book))
                return (removed, try ctx.fetch(Product.all, \.name))
            }
            // removed: 2; left: ["Café Music"]

            #expect(removed == 2)
            #expect(left == ["Café Music"])
        }
    }

    @Test(arguments: Backend.allCases)
    func objectsBelongToTheirPerform(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: [Product.self])
            try Self.stock(db)

            let kept = try db.perform { ctx in try ctx.fetchOne(Product.all.where(\Product.name == "Codex")) }
            do {
                _ = try kept?.decode()   // its perform has ended
            } catch PredicatesError.wrongContext(let message) {
                print(message)   // "this Product object was used after the perform that made it ended: ..."
            }
            let name = try db.perform { ctx in try ctx.fetchOne(Product.all.where(\Product.name == "Codex"))?.decode(\.name) }
            // "Codex": return values from perform, not objects

            #expect(name == "Codex")
            #expect(throws: PredicatesError.self) { try kept?.decode() }
            #expect(throws: PredicatesError.self) { try kept?.encode(\.amount, 99) }
            #expect(try db.perform { ctx in try ctx.fetchOne(Product.all.where(\Product.name == "Codex"), \.amount) } == 3)
        }
    }

    // MARK: Containers and existing schemas

    @Test(arguments: Backend.allCases)
    func containersCreateTheirSchema(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let db = PersistentContainer(database: database, models: musicModels)
            let applied = try db.createSchema()
            let again = try db.createSchema()
            // applied: a migration per entity, then one per link table; again: []

            #expect(applied == ["flavor:predicates/create/Artist", "flavor:predicates/create/Record",
                                "flavor:predicates/create/Track", "flavor:predicates/create/RecordLabel",
                                "flavor:predicates/link/Artist_records_Record_artist", "flavor:predicates/link/Record_tracks",
                                "flavor:predicates/link/RecordLabel_artists"])
            #expect(again == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func aDatabaseFactoryAndLoggedErrors(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            let errors = ErrorCollector()

            let db = PersistentContainer(databaseFactory: { database }, models: [Product.self],
                                         logError: { errors.append($0) })
            try? db.perform { ctx in
                try ctx.insert(Product(name: "Kite"))
                try ctx.insert(Product(name: "Kite"))   // UNIQUE: logged, rethrown, rolled back
            }
            // errors.all: one DatabaseError.constraintViolation

            #expect(errors.all.count == 1)
            if case DatabaseError.constraintViolation(.unique, _)? = errors.all.first {} else {
                Issue.record("expected a unique violation, got \(errors.all)")
            }
            #expect(try db.perform { ctx in try ctx.count(of: Product.all) } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func existingSchema(_ backend: Backend) throws {
        try withTestDatabase(backend) { (database: Database) throws in
            try createShopTables(database, moneyType: database.dialect == .sqlite ? "TEXT" : "NUMERIC(10,2)")
            let shop = PersistentContainer(database: database, models: [Client.self, Invoice.self], createsSchema: false)

            let big = try shop.perform { ctx in
                let ada = try ctx.insert(Client(id: 1, name: "Ada"))
                try ctx.insert(Invoice(id: 10, clientID: 1, total: Decimal(string: "9.91")!))
                try ctx.insert(Invoice(id: 11, clientID: 1, total: Decimal(string: "100.50")!))
                try ctx.insert(Invoice(id: 12, clientID: 1, total: Decimal(string: "10.00")!))
                let count = try ada.invoices.count()
                let big = try ctx.fetch(Invoice.all.where(\Invoice.total >= Decimal(10)).sort(\.total), \.id)
                return (count, big)
            }
            // (3, [12, 11]): totals compare as numbers, even in a TEXT column on SQLite

            #expect(big.0 == 3)
            #expect(big.1 == [12, 11])
            let owner = try shop.perform { ctx in
                try ctx.fetchOne(Invoice.all.where(\Invoice.id == 11))?.client?.decode(\.name)
            }
            #expect(owner == "Ada")
            #expect(try database.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM client") } == 1)
        }
    }
}

/// The errors a container logged.
final class ErrorCollector: @unchecked Sendable {
    // @unchecked: `errors` is only touched under `lock`.
    private let lock = NSLock()
    private var errors: [any Error] = []
    func append(_ error: any Error) { lock.withLock { errors.append(error) } }
    var all: [any Error] { lock.withLock { errors } }
}
