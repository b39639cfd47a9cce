import Foundation
import Testing
import UnityORM

/// The ORM on a schema it did not create: updates keep the foreign keys they did not load, and
/// decimals compare and sort as numbers whatever the column's declared type.
@Suite struct ORMExistingSchemaTests {
    typealias Track = Catalogue.Track
    typealias Genre = Catalogue.Genre
    typealias Album = Catalogue.Album

    func withCatalogue(_ backend: Backend, _ body: (Amigo, Database) throws -> Void) throws {
        try withAmigo(backend, Catalogue.models(), createAll: false) { amigo, test in
            try Catalogue.create(test.database, backend)
            try body(amigo, test.database)
        }
    }

    /// A fetched object updated without `selectRelated` keeps both foreign keys (a NOT NULL one
    /// and a nullable one); only the changed column changes. The single, array, upsert and batch
    /// paths all keep them.
    @Test(arguments: Backend.allCases)
    func anUpdateKeepsForeignKeysItDidNotLoad(_ backend: Backend) throws {
        try withCatalogue(backend) { amigo, db in
            let session = try amigo.session
            let five = try #require(try session.query(Track.self).get(5))
            #expect(five.album == nil)
            #expect(five.genre == nil)
            #expect(five.storedForeignKey("album") == .integer(10))
            #expect(five.storedForeignKey("Genre") == .integer(1))
            five.price = Decimal(string: "1.99")!
            try session.add(five)
            let six = try #require(try session.query(Track.self).get(6))
            #expect(six.storedForeignKey("genre") == nil)
            six.name = "Six (live)"
            try session.add([six], upsert: true)
            let seven = try #require(try session.query(Track.self).get(7))
            let eight = try #require(try session.query(Track.self).get(8))
            seven.name = "Seven (edit)"
            eight.name = "Eight (edit)"
            try session.batch { b in
                b.add(seven)
                b.add([eight], upsert: true)
            }
            try session.commit()
            #expect(try Catalogue.keys(db, track: 5) == [.integer(10), .integer(1)])
            #expect(try Catalogue.keys(db, track: 6) == [.integer(11), .null])
            #expect(try Catalogue.keys(db, track: 7) == [.integer(10), .integer(2)])
            #expect(try Catalogue.keys(db, track: 8) == [.integer(11), .integer(1)])
            let names = try db.fetchAll(sql: "SELECT name FROM track ORDER BY id").map { $0[0] }
            #expect(names == [.text("Five"), .text("Six (live)"), .text("Seven (edit)"), .text("Eight (edit)")])
            let back = try #require(try amigo.query(Track.self).get(5))
            #expect(back.price == Decimal(string: "1.99")!)
        }
    }

    /// A loaded to-one set to nil clears its column; an unloaded one is cleared only by
    /// `clearRelationship`; an object assigned replaces the id; after an assignment has been
    /// written, nil clears.
    @Test(arguments: Backend.allCases)
    func clearingAReferenceTakesALoadOrAnExplicitCall(_ backend: Backend) throws {
        try withCatalogue(backend) { amigo, db in
            let session = try amigo.session
            // Loaded by selectRelated, then set to nil: the nullable key is cleared, the
            // unloaded NOT NULL one kept.
            let five = try #require(try session.query(Track.self).selectRelated("genre").filter("id = 5").first())
            #expect(five.genre?.name == "Rock")
            #expect(five.storedForeignKey("genre") == nil)
            five.genre = nil
            try session.add(five)
            try session.commit()
            #expect(try Catalogue.keys(db, track: 5) == [.integer(10), .null])
            // Unloaded: nil keeps it until clearRelationship.
            let seven = try #require(try session.query(Track.self).get(7))
            seven.genre = nil
            try session.add(seven)
            try session.commit()
            #expect(try Catalogue.keys(db, track: 7) == [.integer(10), .integer(2)])
            try seven.clearRelationship("genre")
            #expect(seven.storedForeignKey("genre") == nil)
            try session.add(seven)
            try session.commit()
            #expect(try Catalogue.keys(db, track: 7) == [.integer(10), .null])
            // Assigned: the new id; then nil clears it.
            let eight = try #require(try session.query(Track.self).get(8))
            let jazz = try #require(try session.query(Genre.self).get(2))
            eight.genre = jazz
            try session.add(eight)
            try session.commit()
            #expect(try Catalogue.keys(db, track: 8) == [.integer(11), .integer(2)])
            eight.genre = nil
            try session.add(eight)
            try session.commit()
            #expect(try Catalogue.keys(db, track: 8) == [.integer(11), .null])
            // Clearing a NOT NULL reference fails in the database and leaves the row as it was.
            let six = try #require(try session.query(Track.self).get(6))
            try six.clearRelationship("album")
            #expect(throws: DatabaseError.self) { try session.add(six) }
            try session.commit()
            #expect(try Catalogue.keys(db, track: 6) == [.integer(11), .null])
            // A name that is no to-one property.
            #expect(throws: ORMError.unknownRelationship(model: "Track", name: "name")) { try six.clearRelationship("name") }
            #expect(throws: ORMError.unknownRelationship(model: "Track", name: "artist")) { try six.clearRelationship("artist") }
            try session.commit()
        }
    }

    /// `selectRelated` of one to-one keeps the ids of the others it did not load, and saving
    /// the object keeps both.
    @Test(arguments: Backend.allCases)
    func relatedObjectsKeepTheirOwnUnloadedKeys(_ backend: Backend) throws {
        try withCatalogue(backend) { amigo, db in
            let session = try amigo.session
            let tracks = try session.query(Track.self).selectRelated("album").orderBy("id").all()
            #expect(tracks.map(\.id) == [5, 6, 7, 8])
            #expect(tracks.map { $0.album?.title } == ["Ten", "Eleven", "Ten", "Eleven"])
            #expect(tracks.map { $0.storedForeignKey("album") } == [nil, nil, nil, nil])
            #expect(tracks.map { $0.storedForeignKey("genre") } == [.integer(1), nil, .integer(2), .integer(1)])
            tracks[0].name = "Five again"
            try session.add(tracks[0])
            try session.commit()
            #expect(try Catalogue.keys(db, track: 5) == [.integer(10), .integer(1)])
            #expect(try db.fetchOne(sql: "SELECT name FROM track WHERE id = 5")?[0] == .text("Five again"))
        }
    }

    /// A `Decimal` property on a column declared TEXT on SQLite (NUMERIC(10,2) on PostgreSQL)
    /// compares and sorts as a number in filters and `orderBy`, with PostgreSQL's answers:
    /// 9.91 < 10.00 < 100.5, and 10.00 equals 10.
    @Test(arguments: Backend.allCases)
    func decimalsCompareAndSortAsNumbersOnATextColumn(_ backend: Backend) throws {
        try withCatalogue(backend) { (amigo: Amigo, _: Database) throws in
            let q = amigo.query(Track.self)
            // Prices: 5 → 9.91, 6 → 10.00, 7 → 8.94, 8 → 100.5.
            #expect(try q.orderBy("price", ascending: false).all().map(\.id) == [8, 6, 5, 7])
            #expect(try q.orderBy("price").all().map(\.id) == [7, 5, 6, 8])
            let expected: [(String, [Int])] = [
                ("price >= 10", [6, 8]), ("price > 10", [8]), ("price < 10", [5, 7]), ("price <= 9.91", [5, 7]),
                ("price = 10", [6]), ("price == '10.0'", [6]), ("price != 10", [5, 7, 8]), ("price > 9.5", [5, 6, 8]),
                ("100 > price", [5, 6, 7]), ("price < 100.5", [5, 6, 7]), ("price >= 100.50", [8]),
            ]
            for (filter, ids) in expected {
                #expect(try q.filter(filter).orderBy("id").all().map(\.id) == ids, "\(filter)")
            }
            #expect(try q.filter("price >= ?", Decimal(10)).count() == 2)
            #expect(try q.filter("price < ?", Decimal(string: "9.92")!).orderBy("id").all().map(\.id) == [5, 7])
            // After an order across a foreign key: by album title, then dearest first.
            #expect(try q.orderBy("album.title").orderBy("price", ascending: false).all().map(\.id) == [8, 6, 5, 7])
        }
    }
}
