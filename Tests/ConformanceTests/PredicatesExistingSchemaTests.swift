import Foundation
import Testing
import Unity
import UnityPredicates

// Models mapped onto tables the flavor did not create (a Chinook-like schema made with raw
// SQL): keys are the tables' own columns, to-one relations are foreign-key columns.

struct CArtist: ManagedObjectConvertible, Equatable {
    var id: Int64 = 0
    var name = ""
    static let entityName = "artist"
    static let keyColumn = "artist_id"
    static let attributes: Set<Attribute<CArtist>> = [Attribute(\.id, "artist_id"), Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let albums = ToManyRelation<CAlbum>("albums", inverse: "artist", deleteRule: .cascade)
        var all: [RelationDeclaration] { [albums.declaration] }
    }
    static let relations = Relations()
}

struct CAlbum: ManagedObjectConvertible, Equatable {
    var id: Int64 = 0
    var title = ""
    /// The NOT NULL foreign key, also an attribute so that an insert can fill it.
    var artistID: Int64 = 0
    static let entityName = "album"
    static let keyColumn = "album_id"
    static let attributes: Set<Attribute<CAlbum>> = [
        Attribute(\.id, "album_id"), Attribute(\.title, "title"), Attribute(\.artistID, "artist_id"),
    ]
    struct Relations: RelationSet {
        let artist = ToOneRelation<CArtist>("artist", inverse: "albums", column: "artist_id")
        let tracks = ToManyRelation<CTrack>("tracks", inverse: "album")
        var all: [RelationDeclaration] { [artist.declaration, tracks.declaration] }
    }
    static let relations = Relations()
}

struct CTrack: ManagedObjectConvertible, Equatable {
    var id: Int64 = 0
    var name = ""
    var price: Decimal = 0
    static let entityName = "track"
    static let keyColumn = "track_id"
    static let attributes: Set<Attribute<CTrack>> = [
        Attribute(\.id, "track_id"), Attribute(\.name, "name"), Attribute(\.price, "unit_price"),
    ]
    struct Relations: RelationSet {
        let album = ToOneRelation<CAlbum>("album", inverse: "tracks", column: "album_id")
        var all: [RelationDeclaration] { [album.declaration] }
    }
    static let relations = Relations()
}

var chinookModels: [any ManagedObjectConvertible.Type] { [CArtist.self, CAlbum.self, CTrack.self] }

// The same shapes kept in link tables, in tables the flavor creates.

struct LArtist: ManagedObjectConvertible, Equatable {
    var name = ""
    static let entityName = "LArtist"
    static let attributes: Set<Attribute<LArtist>> = [Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let albums = ToManyRelation<LAlbum>("albums", inverse: "artist", deleteRule: .cascade)
        var all: [RelationDeclaration] { [albums.declaration] }
    }
    static let relations = Relations()
}

struct LAlbum: ManagedObjectConvertible, Equatable {
    var title = ""
    static let entityName = "LAlbum"
    static let attributes: Set<Attribute<LAlbum>> = [Attribute(\.title, "title")]
    struct Relations: RelationSet {
        let artist = ToOneRelation<LArtist>("artist", inverse: "albums")
        var all: [RelationDeclaration] { [artist.declaration] }
    }
    static let relations = Relations()
}

/// The schema and rows: five artists (one without albums), six albums, four tracks.
func createChinook(_ db: Database, _ backend: Backend) throws {
    let money = backend == .sqlite ? "TEXT" : "NUMERIC(10,2)"
    try db.withConnection { conn in
        for sql in [
            "CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
            "CREATE TABLE album (album_id INTEGER PRIMARY KEY, title TEXT NOT NULL, artist_id INTEGER NOT NULL REFERENCES artist (artist_id))",
            "CREATE TABLE track (track_id INTEGER PRIMARY KEY, name TEXT NOT NULL, album_id INTEGER REFERENCES album (album_id), unit_price \(money) NOT NULL)",
            "INSERT INTO artist VALUES (1, 'Abba'), (2, 'Accept'), (3, 'Aerosmith'), (4, 'Alanis'), (5, 'Nobody')",
            "INSERT INTO album VALUES (1, 'For Those About', 1), (2, 'Balls to the Wall', 2), (3, 'Restless', 2), (4, 'Let There Be Rock', 1), (5, 'Big Ones', 3), (6, 'Jagged', 4)",
            "INSERT INTO track VALUES (1, 'Rock', 1, '9.91'), (2, 'Put The Finger', 1, '10.00'), (3, 'Fast', 3, '8.94'), (4, 'Loose', NULL, '100.5')",
        ] { _ = try conn.execute(sql: sql) }
    }
}

/// The link-table twin of the Chinook rows above (artists and albums), made through the flavor.
func fillLinkTwin(_ c: PersistentContainer) throws {
    try c.perform { ctx in
        var artists: [String: ManagedObject<LArtist>] = [:]
        for name in ["Abba", "Accept", "Aerosmith", "Alanis", "Nobody"] { artists[name] = try ctx.insert(LArtist(name: name)) }
        for (title, artist) in [("For Those About", "Abba"), ("Balls to the Wall", "Accept"), ("Restless", "Accept"),
                                ("Let There Be Rock", "Abba"), ("Big Ones", "Aerosmith"), ("Jagged", "Alanis")] {
            let album = try ctx.insert(LAlbum(title: title))
            try album.set(\.artist, artists[artist])
        }
    }
}

/// One column of the rows `sql` selects, as text ("NULL" for NULL).
func column(_ db: Database, _ sql: String) throws -> [String] {
    try db.withConnection { conn in
        try conn.fetchAll(sql: sql).map { row in
            switch row[0] {
            case .null: return "NULL"
            case .integer(let i): return "\(i)"
            case .text(let t): return t
            default: return "\(row[0])"
            }
        }
    }
}

struct FArtist: ManagedObjectConvertible {
    var name = ""
    static let entityName = "FArtist"
    static let attributes: Set<Attribute<FArtist>> = [Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let albums = ToManyRelation<FAlbum>("albums", inverse: "artist")
        var all: [RelationDeclaration] { [albums.declaration] }
    }
    static let relations = Relations()
}

struct FAlbum: ManagedObjectConvertible {
    var title = ""
    static let entityName = "FAlbum"
    static let attributes: Set<Attribute<FAlbum>> = [Attribute(\.title, "title")]
    struct Relations: RelationSet {
        let artist = ToOneRelation<FArtist>("artist", inverse: "albums", column: "artist_pk")
        var all: [RelationDeclaration] { [artist.declaration] }
    }
    static let relations = Relations()
}

struct PMany: ManagedObjectConvertible {
    var x = 0
    static let entityName = "PMany"
    static let attributes: Set<Attribute<PMany>> = [Attribute(\.x, "x")]
    struct Relations: RelationSet {
        let ordered = ToManyOrderedRelation<POne>("ordered", inverse: "owner")
        var all: [RelationDeclaration] { [ordered.declaration] }
    }
    static let relations = Relations()
}

struct POne: ManagedObjectConvertible {
    var y = 0
    static let entityName = "POne"
    static let attributes: Set<Attribute<POne>> = [Attribute(\.y, "y")]
    struct Relations: RelationSet {
        let owner = ToOneRelation<PMany>("owner", inverse: "ordered", column: "owner_id")
        var all: [RelationDeclaration] { [owner.declaration] }
    }
    static let relations = Relations()
}

/// A one-to-one kept in the book's column, deleting the book deletes its cover.
struct FBook: ManagedObjectConvertible {
    var title = ""
    static let entityName = "FBook"
    static let attributes: Set<Attribute<FBook>> = [Attribute(\.title, "title")]
    struct Relations: RelationSet {
        let cover = ToOneRelation<FCover>("cover", inverse: "book", deleteRule: .cascade, column: "cover_pk")
        var all: [RelationDeclaration] { [cover.declaration] }
    }
    static let relations = Relations()
}

struct FCover: ManagedObjectConvertible {
    var color = ""
    static let entityName = "FCover"
    static let attributes: Set<Attribute<FCover>> = [Attribute(\.color, "color")]
    struct Relations: RelationSet {
        let book = ToOneRelation<FBook>("book", inverse: "cover")
        var all: [RelationDeclaration] { [book.declaration] }
    }
    static let relations = Relations()
}

/// A model without relations, pointed at by another's foreign-key column (no inverse).
struct FTag: ManagedObjectConvertible {
    var id: Int64 = 0
    var name = ""
    static let entityName = "ftag"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<FTag>> = [Attribute(\.id, "id"), Attribute(\.name, "name")]
}

struct FNote: ManagedObjectConvertible {
    var id: Int64 = 0
    var body = ""
    static let entityName = "fnote"
    static let keyColumn = "id"
    static let attributes: Set<Attribute<FNote>> = [Attribute(\.id, "id"), Attribute(\.body, "body")]
    struct Relations: RelationSet {
        let tag = ToOneRelation<FTag>("tag", column: "tag_pk")
        var all: [RelationDeclaration] { [tag.declaration] }
    }
    static let relations = Relations()
}

@Suite("Predicates: an existing schema, relations over foreign-key columns")
struct PredicatesExistingSchemaTests {
    @Test(arguments: Backend.allCases)
    func readsThroughForeignKeysMatchTheLinkTableForm(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try createChinook(db, backend)
            let fk = PersistentContainer(database: db, models: chinookModels, createsSchema: false)
            let link = PersistentContainer(database: db, models: [LArtist.self, LAlbum.self])
            try fillLinkTwin(link)

            // The to-one side and its to-many inverse.
            let fkAnswers = try fk.perform { ctx in
                let restless = try #require(try ctx.fetchOne(CAlbum.all.where(\CAlbum.title == "Restless")))
                let accept = try #require(try ctx.fetchOne(CArtist.all.where(\CArtist.name == "Accept")))
                let nobody = try #require(try ctx.fetchOne(CArtist.all.where(\CArtist.name == "Nobody")))
                return [try restless.artist?.decode(\.name) ?? "-",
                        try accept.albums.objects().map { try $0.decode(\.title) }.joined(separator: "|"),
                        "\(try accept.albums.count())", "\(try nobody.albums.count())",
                        accept.albums.map { (try? $0.decode(\.title)) ?? "?" }.joined(separator: "|")]
            }
            let linkAnswers = try link.perform { ctx in
                let restless = try #require(try ctx.fetchOne(LAlbum.all.where(\LAlbum.title == "Restless")))
                let accept = try #require(try ctx.fetchOne(LArtist.all.where(\LArtist.name == "Accept")))
                let nobody = try #require(try ctx.fetchOne(LArtist.all.where(\LArtist.name == "Nobody")))
                return [try restless.artist?.decode(\.name) ?? "-",
                        try accept.albums.objects().map { try $0.decode(\.title) }.joined(separator: "|"),
                        "\(try accept.albums.count())", "\(try nobody.albums.count())",
                        accept.albums.map { (try? $0.decode(\.title)) ?? "?" }.joined(separator: "|")]
            }
            let expected = ["Accept", "Balls to the Wall|Restless", "2", "0", "Balls to the Wall|Restless"]
            #expect(fkAnswers == expected)
            #expect(linkAnswers == expected)

            // Typed traversal both ways, negated, sorted.
            let fkQueries = try fk.perform { ctx in
                [try ctx.fetch(CAlbum.all.where(Query.any(CAlbum.self, \.artist, \CArtist.name == "Abba")).sort(\.title, ascending: false), \.title),
                 try ctx.fetch(CArtist.all.where(Query.any(CArtist.self, \.albums, Query.beginsWith(\CAlbum.title, "b"))).sort(\.name), \.name),
                 try ctx.fetch(CArtist.all.where(!Query.any(CArtist.self, \.albums, "1 = 1")), \.name),
                 try ctx.fetch(CArtist.all.where("(SELECT COUNT(*) FROM album WHERE album.artist_id = artist.artist_id) > 1").sort(\.name), \.name)]
            }
            let linkQueries = try link.perform { ctx in
                [try ctx.fetch(LAlbum.all.where(Query.any(LAlbum.self, \.artist, \LArtist.name == "Abba")).sort(\.title, ascending: false), \.title),
                 try ctx.fetch(LArtist.all.where(Query.any(LArtist.self, \.albums, Query.beginsWith(\LAlbum.title, "b"))).sort(\.name), \.name),
                 try ctx.fetch(LArtist.all.where(!Query.any(LArtist.self, \.albums, "1 = 1")), \.name),
                 // The link table's columns: a_pk holds the end whose "Entity.relation" sorts first.
                 try ctx.fetch(LArtist.all.where("(SELECT COUNT(*) FROM \"LAlbum_artist_LArtist_albums\" l WHERE l.b_pk = \"LArtist\".\"Z_PK\") > 1").sort(\.name), \.name)]
            }
            let expectedQueries = [["Let There Be Rock", "For Those About"], ["Accept", "Aerosmith"], ["Nobody"], ["Abba", "Accept"]]
            #expect(fkQueries == expectedQueries)
            #expect(linkQueries == expectedQueries)
        }
    }

    @Test(arguments: Backend.allCases)
    func writesThroughForeignKeysChangeTheColumns(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try createChinook(db, backend)
            let c = PersistentContainer(database: db, models: chinookModels, createsSchema: false)
            try c.perform { ctx in
                let restless = try #require(try ctx.fetchOne(CAlbum.all.where(\CAlbum.id == 3)))
                let alanis = try #require(try ctx.fetchOne(CArtist.all.where(\CArtist.id == 4)))
                try restless.set(\.artist, alanis)                  // the to-one side
                let ac = try #require(try ctx.fetchOne(CArtist.all.where(\CArtist.id == 1)))
                let bigOnes = try #require(try ctx.fetchOne(CAlbum.all.where(\CAlbum.id == 5)))
                try ac.albums.add(bigOnes)                          // the to-many side
                let loose = try #require(try ctx.fetchOne(CTrack.all.where(\CTrack.id == 4)))
                let jagged = try #require(try ctx.fetchOne(CAlbum.all.where(\CAlbum.id == 6)))
                try jagged.tracks.add(loose)
                let fast = try #require(try ctx.fetchOne(CTrack.all.where(\CTrack.id == 3)))
                try fast.set(\.album, nil)                          // a nullable column cleared
                let first = try #require(try ctx.fetchOne(CAlbum.all.where(\CAlbum.id == 1)))
                let rock = try #require(try ctx.fetchOne(CTrack.all.where(\CTrack.id == 1)))
                try first.tracks.remove(rock)
            }
            #expect(try column(db, "SELECT artist_id FROM album ORDER BY album_id") == ["1", "2", "4", "1", "1", "4"])
            #expect(try column(db, "SELECT album_id FROM track ORDER BY track_id") == ["NULL", "1", "NULL", "6"])

            // A NOT NULL foreign key cannot be cleared: a typed error, and the row keeps its value.
            #expect(throws: DatabaseError.self) {
                try c.perform { ctx in
                    let album = try #require(try ctx.fetchOne(CAlbum.all.where(\CAlbum.id == 2)))
                    try album.set(\.artist, nil)
                }
            }
            #expect(try column(db, "SELECT artist_id FROM album WHERE album_id = 2") == ["2"])

            // Deleting: the album's tracks are nullified (their column cleared), an artist's
            // albums cascade.
            try c.perform { ctx in
                try ctx.delete(CAlbum.all.where(\CAlbum.id == 6))
            }
            #expect(try column(db, "SELECT album_id FROM track ORDER BY track_id") == ["NULL", "1", "NULL", "NULL"])
            try c.perform { ctx in try ctx.delete(CArtist.all.where(\CArtist.id == 1)) }
            #expect(try column(db, "SELECT album_id FROM album ORDER BY album_id") == ["2", "3"])
            #expect(try column(db, "SELECT name FROM artist ORDER BY artist_id") == ["Accept", "Aerosmith", "Alanis", "Nobody"])
            #expect(try column(db, "SELECT album_id FROM track ORDER BY track_id") == ["NULL", "NULL", "NULL", "NULL"])
        }
    }

    @Test(arguments: Backend.allCases)
    func foreignKeyRelationsInTablesTheFlavorCreates(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            // The flavor creates the column (nullable, referencing the artist, indexed).
            // The album comes first in the list: its table is still created after the artist's.
            let c = PersistentContainer(database: db, models: [FAlbum.self, FArtist.self])
            try c.perform { ctx in
                let ann = try ctx.insert(FArtist(name: "Ann"))
                for t in ["A1", "A2"] { try ann.albums.add(try ctx.insert(FAlbum(title: t))) }
                _ = try ctx.insert(FAlbum(title: "Loose"))
            }
            #expect(try column(db, "SELECT artist_pk FROM \"FAlbum\" ORDER BY \"Z_PK\"") == ["1", "1", "NULL"])
            try c.perform { ctx in try ctx.delete(FArtist.all) }
            #expect(try column(db, "SELECT artist_pk FROM \"FAlbum\" ORDER BY \"Z_PK\"") == ["NULL", "NULL", "NULL"])
        }
    }

    @Test(arguments: Backend.allCases)
    func oneToOneOverAColumnMovesAndCascades(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [FBook.self, FCover.self])
            try c.perform { ctx in
                let b1 = try ctx.insert(FBook(title: "B1"))
                let b2 = try ctx.insert(FBook(title: "B2"))
                let red = try ctx.insert(FCover(color: "red"))
                let blue = try ctx.insert(FCover(color: "blue"))
                try b1.set(\.cover, red)
                try b2.set(\.cover, red)          // one-to-one: red leaves B1
                #expect(try b1.cover == nil)
                try blue.set(\.book, b1)          // from the side without the column
                #expect(try b1.cover?.decode(\.color) == "blue")
                #expect(try red.book?.decode(\.title) == "B2")
                #expect(try ctx.count(of: FBook.all.where(Query.any(FBook.self, \.cover, \FCover.color == "red"))) == 1)
            }
            #expect(try column(db, "SELECT cover_pk FROM \"FBook\" ORDER BY \"Z_PK\"") == ["2", "1"])
            // Deleting B2 cascades to its cover; deleting the blue cover clears B1's column.
            try c.perform { ctx in try ctx.delete(FBook.all.where(\FBook.title == "B2")) }
            #expect(try column(db, "SELECT color FROM \"FCover\" ORDER BY \"Z_PK\"") == ["blue"])
            try c.perform { ctx in try ctx.delete(FCover.all) }
            #expect(try column(db, "SELECT cover_pk FROM \"FBook\" ORDER BY \"Z_PK\"") == ["NULL"])
        }
    }

    @Test(arguments: Backend.allCases)
    func deletingARowClearsTheColumnsThatPointAtIt(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            // No foreign-key constraint: nothing in the database would clear the column.
            try db.withConnection { conn in
                for sql in ["CREATE TABLE ftag (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
                            "CREATE TABLE fnote (id INTEGER PRIMARY KEY, body TEXT NOT NULL, tag_pk INTEGER)",
                            "INSERT INTO ftag VALUES (1, 'a'), (2, 'b'), (3, 'c')",
                            "INSERT INTO fnote VALUES (1, 'n1', 1), (2, 'n2', 2), (3, 'n3', 1), (4, 'n4', 3)"] {
                    _ = try conn.execute(sql: sql)
                }
            }
            let c = PersistentContainer(database: db, models: [FTag.self, FNote.self], createsSchema: false)
            #expect(try c.perform { ctx in try ctx.fetch(FNote.all.where(Query.any(FNote.self, \.tag, \FTag.name == "a")).sort(\.id), \.id) } == [1, 3])
            #expect(try c.perform { ctx in try ctx.batchDelete(FTag.all.where(\FTag.name == "a")) } == 1)
            #expect(try column(db, "SELECT tag_pk FROM fnote ORDER BY id") == ["NULL", "2", "NULL", "3"])
            try c.perform { ctx in try ctx.delete(FTag.all.where(\FTag.name == "b")) }
            #expect(try column(db, "SELECT tag_pk FROM fnote ORDER BY id") == ["NULL", "NULL", "NULL", "3"])
            #expect(try column(db, "SELECT name FROM ftag ORDER BY id") == ["c"])
        }
    }

    @Test(arguments: Backend.allCases)
    func columnRelationsThatCannotWorkAreRefused(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: [PMany.self, POne.self])
            do {
                try c.perform { _ in }
                Issue.record("an ordered relation over a column was accepted")
            } catch PredicatesError.invalidRelation(let message) {
                #expect(message.contains("PMany.ordered"))
            }
            #expect(try Migrator(migrations: []).appliedMigrations(db).isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func decimalsInATextColumnCompareAndSortAsNumbers(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            // SQLite's column is declared TEXT (as the sample database's SQLite schema does);
            // PostgreSQL's NUMERIC(10,2).
            try createChinook(db, backend)
            let c = PersistentContainer(database: db, models: chinookModels, createsSchema: false)
            func names(_ request: Request<CTrack>) throws -> [String] {
                try c.perform { ctx in try ctx.fetch(request, \.name) }
            }
            #expect(try names(CTrack.all.sort(\.price, ascending: false)) == ["Loose", "Put The Finger", "Rock", "Fast"])
            #expect(try names(CTrack.all.sort(\.price)) == ["Fast", "Rock", "Put The Finger", "Loose"])
            #expect(try names(CTrack.all.sort(\.price, ascending: false).limit(2)) == ["Loose", "Put The Finger"])
            #expect(try names(CTrack.all.where(\CTrack.price >= Decimal(10)).sort(\.id)) == ["Put The Finger", "Loose"])
            #expect(try names(CTrack.all.where(\CTrack.price > Decimal(string: "9.91")!).sort(\.id)) == ["Put The Finger", "Loose"])
            #expect(try names(CTrack.all.where(\CTrack.price < Decimal(10)).sort(\.id)) == ["Rock", "Fast"])
            #expect(try names(CTrack.all.where(\CTrack.price <= Decimal(string: "9.91")!).sort(\.id)) == ["Rock", "Fast"])
            #expect(try names(CTrack.all.where(\CTrack.price == Decimal(10)).sort(\.id)) == ["Put The Finger"])
            #expect(try names(CTrack.all.where(\CTrack.price != Decimal(10)).sort(\.id)) == ["Rock", "Fast", "Loose"])
            #expect(try names(CTrack.all.where(\CTrack.price === [Decimal(10), Decimal(string: "8.94")!]).sort(\.id)) == ["Put The Finger", "Fast"])
            #expect(try c.perform { ctx in try ctx.count(of: CTrack.all.where(\CTrack.price >= Decimal(10))) } == 2)
            #expect(try c.perform { ctx in try ctx.fetch(CTrack.all.sort(\.id), \.price) }
                == [Decimal(string: "9.91")!, Decimal(10), Decimal(string: "8.94")!, Decimal(string: "100.5")!])
        }
    }
}
