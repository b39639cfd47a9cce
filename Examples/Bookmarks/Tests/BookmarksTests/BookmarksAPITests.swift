import BookmarksApp
import Foundation
import HummingbirdTesting
import Testing
import Unity

/// The fixture every listing test starts from: two folders, seven bookmarks (one URL in both
/// folders, and a title with LIKE's wildcards in it).
struct Fixture {
    var reading: String
    var tools: String
    /// By title.
    var bookmarks: [String: BookmarkBody]

    static func make(_ client: any TestClientProtocol) async throws -> Fixture {
        let reading = try await client.createFolder("Reading")
        let tools = try await client.createFolder("Tools")
        var bookmarks: [String: BookmarkBody] = [:]
        for (folder, url, title) in [
            (reading, "https://swift.org/documentation/", "Swift Documentation"),
            (reading, "https://www.postgresql.org/docs/", "PostgreSQL Docs"),
            (reading, "https://sqlite.org/lang.html", "SQLite SQL Syntax"),
            (reading, "https://hummingbird.codes/", "Hummingbird"),
            (reading, "https://example.com/sale", "50% Off_Sale"),
            (tools, "https://github.com/", "GitHub"),
            (tools, "https://swift.org/documentation/", "Swift Docs (tools copy)"),
        ] {
            bookmarks[title] = try await client.createBookmark(folder: folder, url: url, title: title)
        }
        return Fixture(reading: reading, tools: tools, bookmarks: bookmarks)
    }
}

@Suite("Bookmarks API")
struct BookmarksAPITests {
    @Test("health answers 200 with the backend's name", arguments: Backend.allCases)
    func health(_ backend: Backend) async throws {
        try await withService(backend) { client, _ in
            let response = try await client.send(.get, "/health")
            #expect(response.status == .ok)
            #expect(response.text == (backend == .sqlite ? #"{"backend":"sqlite","status":"ok"}"# : #"{"backend":"postgresql","status":"ok"}"#))
        }
    }

    @Test("migrations run at start, once", arguments: Backend.allCases)
    func migrationsAtStart(_ backend: Backend) async throws {
        try await withService(backend) { _, db in
            let migrator = try bookmarksMigrator()
            #expect(try migrator.appliedMigrations(db).map(\.name) == ["0001_folders_and_bookmarks"])
            #expect(try migrator.pendingMigrations(db) == [])
            #expect(try migrator.migrate(db) == [])
        }
    }

    @Test("list: filters, sorting and pages", arguments: Backend.allCases)
    func listing(_ backend: Backend) async throws {
        try await withService(backend) { client, _ in
            let fixture = try await Fixture.make(client)
            func titles(_ query: String) async throws -> (titles: [String], total: Int) {
                let response = try await client.send(.get, "/bookmarks" + query)
                try #require(response.status == .ok, "\(query): \(response.text)")
                let page = try response.decode(PageBody.self)
                return (page.items.map(\.title), page.total)
            }
            // Newest first by default.
            let all = try await titles("")
            #expect(all.titles == ["Swift Docs (tools copy)", "GitHub", "50% Off_Sale", "Hummingbird",
                                   "SQLite SQL Syntax", "PostgreSQL Docs", "Swift Documentation"])
            #expect(all.total == 7)
            #expect(try await titles("?sort=created").titles == all.titles.reversed())
            // By title in code-point order, three to a page.
            #expect(try await titles("?sort=title&limit=3") == (["50% Off_Sale", "GitHub", "Hummingbird"], 7))
            #expect(try await titles("?sort=title&limit=3&offset=3")
                == (["PostgreSQL Docs", "SQLite SQL Syntax", "Swift Docs (tools copy)"], 7))
            #expect(try await titles("?sort=title&limit=3&offset=6") == (["Swift Documentation"], 7))
            #expect(try await titles("?sort=title&limit=3&offset=7") == ([], 7))
            #expect(try await titles("?sort=-title&limit=2") == (["Swift Documentation", "Swift Docs (tools copy)"], 7))
            // Filters, bound as values: a folder, text in the title or URL in any case.
            #expect(try await titles("?folder=\(fixture.tools)&sort=title") == (["GitHub", "Swift Docs (tools copy)"], 2))
            #expect(try await titles("?q=swift&sort=title") == (["Swift Docs (tools copy)", "Swift Documentation"], 2))
            #expect(try await titles("?q=SQL&sort=title") == (["PostgreSQL Docs", "SQLite SQL Syntax"], 2))
            #expect(try await titles("?q=swift&folder=\(fixture.reading)") == (["Swift Documentation"], 1))
            #expect(try await titles("?q=GITHUB.COM") == (["GitHub"], 1))   // in the URL only
            #expect(try await titles("?q=off_sale") == (["50% Off_Sale"], 1))   // in the title only
            // LIKE's wildcards are taken literally.
            #expect(try await titles("?q=%25") == (["50% Off_Sale"], 1))
            #expect(try await titles("?q=_") == (["50% Off_Sale"], 1))
            #expect(try await titles("?q=%27%3B%20DROP%20TABLE%20bookmarks%3B--") == ([], 0))
            #expect(try await titles("?folder=nope") == ([], 0))
            #expect(try await titles("").total == 7)

            // The folders, with their counts.
            let folders = try await client.send(.get, "/folders").decode([FolderBody].self)
            #expect(folders == [FolderBody(id: fixture.reading, name: "Reading", bookmarkCount: 5),
                                FolderBody(id: fixture.tools, name: "Tools", bookmarkCount: 2)])
        }
    }

    @Test("list: bad parameters are a 400 naming each", arguments: Backend.allCases)
    func listingValidation(_ backend: Backend) async throws {
        try await withService(backend) { client, _ in
            let cases: [(String, [String: String])] = [
                ("?limit=0", ["limit": "a whole number from 1 to 100"]),
                ("?limit=101", ["limit": "a whole number from 1 to 100"]),
                ("?limit=ten", ["limit": "a whole number from 1 to 100"]),
                ("?offset=-1", ["offset": "a whole number from 0 up"]),
                ("?sort=rating", ["sort": "one of -created, created, title, -title"]),
                ("?page=2&limit=0", ["page": "unknown parameter; the parameters are folder, q, sort, limit, offset",
                                     "limit": "a whole number from 1 to 100"]),
            ]
            for (query, fields) in cases {
                let response = try await client.send(.get, "/bookmarks" + query)
                #expect(response.status == .badRequest, "\(query)")
                let body = try response.decode(ErrorBody.self)
                #expect(body.error == "validation")
                #expect(body.fields == fields, "\(query)")
            }
        }
    }

    @Test("create, read, update and delete a bookmark", arguments: Backend.allCases)
    func crud(_ backend: Backend) async throws {
        try await withService(backend) { client, db in
            let folder = try await client.createFolder("Reading")
            let created = try await client.send(.post, "/bookmarks", json: """
                {"folderId": "\(folder)", "url": "https://swift.org/", "title": "  Swift  ", "notes": "the language"}
                """)
            #expect(created.status == .created)
            let bookmark = try created.decode(BookmarkBody.self)
            #expect(created.headers[.location] == "/bookmarks/\(bookmark.id)")
            #expect(bookmark.folderId == folder)
            #expect(bookmark.url == "https://swift.org/")
            #expect(bookmark.title == "Swift")   // trimmed
            #expect(bookmark.notes == "the language")
            #expect(bookmark.createdAt == bookmark.updatedAt)
            #expect(try await bookmarkRows(db) == [[folder, "https://swift.org/", "Swift"]])

            let read = try await client.send(.get, "/bookmarks/\(bookmark.id)")
            #expect(read.status == .ok)
            #expect(try read.decode(BookmarkBody.self) == bookmark)

            // A PATCH changes the fields it names and nothing else.
            let patched = try await client.send(.patch, "/bookmarks/\(bookmark.id)", json: #"{"title": "Swift.org"}"#)
            #expect(patched.status == .ok)
            let afterPatch = try patched.decode(BookmarkBody.self)
            #expect(afterPatch.title == "Swift.org")
            #expect(afterPatch.url == "https://swift.org/")
            #expect(afterPatch.notes == "the language")
            #expect(afterPatch.createdAt == bookmark.createdAt)
            #expect(afterPatch.updatedAt >= bookmark.updatedAt)   // ISO 8601 in UTC sorts as text
            let stamps = try await db.read { conn in
                try conn.fetchOne(sql: "SELECT created_at, updated_at FROM bookmarks").map {
                    (try $0.decode(Date.self, column: "created_at"), try $0.decode(Date.self, column: "updated_at"))
                }
            }
            let (createdAt, updatedAt) = try #require(stamps)
            #expect(updatedAt > createdAt)   // to the microsecond
            // `"notes": null` clears the notes.
            let cleared = try await client.send(.patch, "/bookmarks/\(bookmark.id)", json: #"{"notes": null}"#)
            #expect(try cleared.decode(BookmarkBody.self).notes == nil)
            #expect(try cleared.object()["notes"] == nil)
            let notes = try await db.read { try $0.fetchOne(sql: "SELECT notes FROM bookmarks")?.decodeIfPresent(String.self, column: "notes") }
            #expect(notes == .some(nil))

            let deleted = try await client.send(.delete, "/bookmarks/\(bookmark.id)")
            #expect(deleted.status == .noContent)
            #expect(try await client.send(.get, "/bookmarks/\(bookmark.id)").status == .notFound)
            #expect(try await client.send(.delete, "/bookmarks/\(bookmark.id)").status == .notFound)
            #expect(try await client.send(.patch, "/bookmarks/\(bookmark.id)", json: "{}").status == .notFound)
            #expect(try await bookmarkRows(db) == [])
        }
    }

    @Test("invalid input is a 400 naming every bad field, and writes nothing", arguments: Backend.allCases)
    func validation(_ backend: Backend) async throws {
        try await withService(backend) { client, db in
            let folder = try await client.createFolder("Reading")
            let bad = try await client.send(.post, "/bookmarks", json: #"{"folderId": " ", "url": "ftp://files.example.com/", "title": "   "}"#)
            #expect(bad.status == .badRequest)
            let body = try bad.decode(ErrorBody.self)
            #expect(body.error == "validation")
            #expect(body.fields == ["folderId": "required", "url": "not an absolute http or https URL", "title": "required"])
            #expect(body.message == "invalid request: folderId: required; title: required; url: not an absolute http or https URL")

            let long = String(repeating: "x", count: 201)
            let tooLong = try await client.send(.post, "/bookmarks", json: #"{"folderId": "\#(folder)", "url": "https://a.example/", "title": "\#(long)"}"#)
            #expect(try tooLong.decode(ErrorBody.self).fields == ["title": "longer than 200 characters"])

            let notJSON = try await client.send(.post, "/bookmarks", json: #"{"folderId": "#)
            #expect(notJSON.status == .badRequest)
            #expect(try notJSON.decode(ErrorBody.self).error == "invalid_json")
            let wrongType = try await client.send(.post, "/bookmarks", json: #"{"folderId": 12}"#)
            #expect(wrongType.status == .badRequest)
            #expect(try wrongType.decode(ErrorBody.self).message == "the body is not the JSON expected: folderId: wrong type")

            // A folder that does not exist: the foreign key says so, and nothing is kept.
            let noFolder = try await client.send(.post, "/bookmarks", json: #"{"folderId": "missing", "url": "https://a.example/", "title": "A"}"#)
            #expect(noFolder.status == .badRequest)
            #expect(try noFolder.decode(ErrorBody.self).fields == ["folderId": "no folder has this id"])

            let emptyFolder = try await client.send(.post, "/folders", json: #"{"name": ""}"#)
            #expect(try emptyFolder.decode(ErrorBody.self).fields == ["name": "required"])
            #expect(try await bookmarkRows(db) == [])
            #expect(try await db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM folders") } == 1)
        }
    }

    @Test("a URL already in the folder is a 409 naming the stored bookmark, which is left as it was", arguments: Backend.allCases)
    func duplicateURL(_ backend: Backend) async throws {
        try await withService(backend) { client, db in
            let fixture = try await Fixture.make(client)
            let before = try await bookmarkRows(db)
            #expect(before.count == 7)
            let original = try #require(fixture.bookmarks["Swift Documentation"])

            let response = try await client.send(.post, "/bookmarks", json: """
                {"folderId": "\(fixture.reading)", "url": "https://swift.org/documentation/", "title": "Swift, again", "notes": "x"}
                """)
            #expect(response.status == .conflict)
            let body = try response.decode(ErrorBody.self)
            #expect(body.error == "conflict")
            #expect(body.constraint == "bookmarks_url_per_folder")
            #expect(body.message == "a bookmark with the URL https://swift.org/documentation/ is already in this folder")
            #expect(body.existingBookmark == original)
            // Nothing was written: the stored row kept its title, no row was added.
            #expect(try await bookmarkRows(db) == before)

            // An update that would take another bookmark's URL in its folder: 409, nothing written.
            let hummingbird = try #require(fixture.bookmarks["Hummingbird"])
            let update = try await client.send(.patch, "/bookmarks/\(hummingbird.id)",
                                               json: #"{"url": "https://swift.org/documentation/", "title": "renamed"}"#)
            #expect(update.status == .conflict)
            #expect(try update.decode(ErrorBody.self).existingBookmark == original)
            #expect(try await bookmarkRows(db) == before)
            #expect(try await client.send(.get, "/bookmarks/\(hummingbird.id)").decode(BookmarkBody.self) == hummingbird)

            // A folder name that is taken.
            let folder = try await client.send(.post, "/folders", json: #"{"name": "Tools"}"#)
            #expect(folder.status == .conflict)
            #expect(try folder.object()["constraint"] as? String == "folders_name_unique")
            #expect(try await db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM folders") } == 2)
        }
    }

    @Test("a move is all or none: a conflict on the last bookmark puts the others back", arguments: Backend.allCases)
    func moveAllOrNone(_ backend: Backend) async throws {
        try await withService(backend) { client, db in
            let fixture = try await Fixture.make(client)
            let before = try await bookmarkRows(db)
            func id(_ title: String) throws -> String { try #require(fixture.bookmarks[title]).id }
            // Two bookmarks move first; the third's URL is already in Tools.
            let ids = [try id("PostgreSQL Docs"), try id("Hummingbird"), try id("Swift Documentation")]
            let conflict = try await client.send(.post, "/bookmarks/move",
                                                 json: #"{"ids": ["\#(ids.joined(separator: #"", ""#))"], "folderId": "\#(fixture.tools)"}"#)
            #expect(conflict.status == .conflict)
            #expect(try conflict.decode(ErrorBody.self).existingBookmark == fixture.bookmarks["Swift Docs (tools copy)"])
            #expect(try await bookmarkRows(db) == before)

            // A bookmark that does not exist: 404, nothing moved.
            let missing = try await client.send(.post, "/bookmarks/move",
                                                json: #"{"ids": ["\#(ids[0])", "nope"], "folderId": "\#(fixture.tools)"}"#)
            #expect(missing.status == .notFound)
            #expect(try missing.decode(ErrorBody.self).message == "no bookmark has id nope; nothing was moved")
            #expect(try await bookmarkRows(db) == before)

            let moved = try await client.send(.post, "/bookmarks/move",
                                              json: #"{"ids": ["\#(ids[0])", "\#(ids[1])"], "folderId": "\#(fixture.tools)"}"#)
            #expect(moved.status == .ok)
            #expect(moved.text == #"{"moved":2}"#)
            let folders = try await client.send(.get, "/folders").decode([FolderBody].self)
            #expect(folders.map(\.bookmarkCount) == [3, 4])

            // Deleting a folder deletes its bookmarks (ON DELETE CASCADE).
            #expect(try await client.send(.delete, "/folders/\(fixture.tools)").status == .noContent)
            #expect(try await bookmarkRows(db).map { $0[2] }.sorted() == ["50% Off_Sale", "SQLite SQL Syntax", "Swift Documentation"])
            #expect(try await client.send(.delete, "/folders/\(fixture.tools)").status == .notFound)
        }
    }
}
