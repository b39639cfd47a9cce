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
            let seen = ReadmeLocked<[[String]]>([])
            let observer = Task { try await followOldBooks(in: db) { titles in seen.withLock { $0.append(titles) } } }
            defer { observer.cancel() }
            // The first result, then a commit that adds a third old book.
            try await waitUntil(seconds: 60) { seen.withLock { $0.count } >= 1 }
            try await db.execute(sql: #"INSERT INTO "book" ("id", "title", "year") VALUES (3, 'Solaris', 1961)"#)
            try await withTimeout(seconds: 60) { try await observer.value }
            let results = seen.withLock { $0 }
            #expect(results.first.map { Set($0) } == ["Dune", "Emma"])
            #expect(results.last.map { Set($0) } == ["Dune", "Emma", "Solaris"])
        }
    }
}

/// A value shared with the observing task.
final class ReadmeLocked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

struct ReadmeTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Polls `condition` until it holds; throws after `seconds`.
func waitUntil(seconds: Double, _ condition: @Sendable () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { throw ReadmeTimeout(description: "a condition did not hold within \(seconds) s") }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
}

/// Runs `body`, throwing if it has not finished after `seconds` (and cancelling it).
func withTimeout<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw ReadmeTimeout(description: "not finished within \(seconds) s")
        }
        return value
    }
}
