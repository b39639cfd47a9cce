import Foundation
import Testing
import Unity

// From "Results that follow the database".
struct OldBook: Decodable, Sendable {
    var title: String
}

func followOldBooks(in db: Database, show: @Sendable ([String]) -> Void) async throws {
    // Other processes' commits reach observers through what this migration installs
    // (triggers on PostgreSQL, change counters on SQLite).
    _ = try Migrator(migrations: [Migration.observeChanges(of: ["book"])]).migrate(db)

    let old = SQLSelect(from: "book").columns(.column("title")).where(SQLExpression.column("year").lessThan(1970))
    for try await books in db.observe(.select(old), as: OldBook.self) {
        show(books.map(\.title))   // now, then after each commit that changes "book"
        if books.count == 3 { break }
    }
}

@Suite("README: results that follow the database")
struct ReadmeObservationTests {
    @Test(arguments: Backend.allCases)
    func anObservedQueryFollowsAnotherDatabasesCommit(_ backend: Backend) async throws {
        try await withTestDatabase(backend) { (db: Database) async throws in
            try await db.execute(sql: #"CREATE TABLE "book" ("id" INTEGER PRIMARY KEY, "title" TEXT NOT NULL, "year" INTEGER)"#)
            try await db.execute(sql: #"INSERT INTO "book" ("id", "title", "year") VALUES (1, 'Dune', 1965), (2, 'Emma', 1815)"#)
            let seen = Locked<[[String]]>([])
            let observer = Task { try await followOldBooks(in: db) { titles in seen.withLock { $0.append(titles) } } }
            defer { observer.cancel() }
            // The first result, then a commit that adds a third old book.
            try await waitUntil(60, "the first result") { seen.current.count >= 1 }
            try await db.execute(sql: #"INSERT INTO "book" ("id", "title", "year") VALUES (3, 'Solaris', 1961)"#)
            try await within(60, "the observer to see three books") { try await observer.value }
            let results = seen.current
            #expect(results.first.map { Set($0) } == ["Dune", "Emma"])
            #expect(results.last.map { Set($0) } == ["Dune", "Emma", "Solaris"])
        }
    }
}
