import Foundation
import Unity

/// The service's reads and writes, each one transaction through the `async` API (its
/// closure runs on Unity's own threads, never blocking Swift's cooperative pool).
///
/// Inside a closure, the SQL-first calls (`save(in:)`, `deleteWhere(…, in:)`) are given the
/// same `Database`: on the thread it lent a connection to, the database lends that same
/// connection again, so they join the closure's transaction (as savepoints).
struct BookmarkStore: Sendable {
    let database: Database

    // MARK: Bookmarks

    /// One page of bookmarks that match `query`, and how many match in all (one snapshot).
    func list(_ query: BookmarkQuery) async throws -> BookmarkPageJSON {
        var conditions: [SQLExpression] = []
        if let folderID = query.folderID {
            conditions.append(SQLExpression.column("folder_id").equals(folderID))
        }
        if let search = query.search {
            // Taken literally (`%` and `_` are escaped), ASCII letters in any case, on both backends.
            conditions.append(SQLExpression.column("title").contains(search, caseInsensitive: true)
                || SQLExpression.column("url").contains(search, caseInsensitive: true))
        }
        let ordering: [SQLOrdering]
        switch query.sort {
        case .newest: ordering = [SQLExpression.column("created_at").desc, SQLExpression.column("id").desc]
        case .oldest: ordering = [SQLExpression.column("created_at").asc, SQLExpression.column("id").asc]
        // Code-point order on both backends, whatever the server's collation.
        case .title: ordering = [SQLExpression.codePointOrdered(.column("title")).asc, SQLExpression.column("id").asc]
        case .titleDescending: ordering = [SQLExpression.codePointOrdered(.column("title")).desc, SQLExpression.column("id").desc]
        }
        let condition = conditions.isEmpty ? nil : SQLExpression.all(conditions)
        return try await database.read { conn in
            var count = SQLSelect(from: Bookmark.tableName).columns(.expression(.countAll))
            var page = SQLSelect(from: Bookmark.tableName)
            if let condition {
                count = count.where(condition)
                page = page.where(condition)
            }
            page.orderBy = ordering
            page = page.limit(query.limit, offset: query.offset)
            let total = try conn.fetchValue(Int.self, .select(count)) ?? 0
            let items = try conn.fetchAll(Bookmark.self, .select(page))
            return BookmarkPageJSON(items: items.map(BookmarkJSON.init), total: total, limit: query.limit, offset: query.offset)
        }
    }

    /// The bookmark with `id`, or nil.
    func bookmark(id: String) async throws -> Bookmark? {
        try await database.read { conn in try Self.bookmark(id: id, on: conn) }
    }

    /// Inserts a new bookmark. A URL already in that folder throws
    /// `ModelError<Bookmark>.duplicate(existing:)` with the stored row, left as it was; a
    /// folder that does not exist throws the database's foreign-key violation.
    func create(folderID: String, url: String, title: String, notes: String?) async throws -> Bookmark {
        let database = database
        let now = Date()
        let bookmark = Bookmark(id: Bookmark.generateUUID(), folderID: folderID, url: url, title: title,
                                notes: notes, createdAt: now, updatedAt: now)
        return try await database.write { _ in try bookmark.save(in: database) }
    }

    /// The changes of a `PATCH`; nil fields are left as they are.
    struct Change: Sendable {
        var folderID: String?
        var url: String?
        var title: String?
        /// nil: unchanged; `.some(nil)`: cleared.
        var notes: String??
    }

    /// Applies `change` to the bookmark with `id`; nil when there is none. Moving onto a URL
    /// that its folder already has throws `ModelError<Bookmark>.duplicate(existing:)` naming
    /// that other row, and nothing is written.
    func update(id: String, _ change: Change) async throws -> Bookmark? {
        let database = database
        return try await database.write { conn in
            guard var bookmark = try Self.bookmark(id: id, on: conn) else { return nil }
            if let folderID = change.folderID { bookmark.folderID = folderID }
            if let url = change.url { bookmark.url = url }
            if let title = change.title { bookmark.title = title }
            if let notes = change.notes { bookmark.notes = notes }
            bookmark.updatedAt = Date()
            return try bookmark.save(in: database)
        }
    }

    /// Deletes the bookmark with `id`; false when there was none.
    func delete(id: String) async throws -> Bool {
        let database = database
        return try await database.write { _ in try Bookmark.deleteWhere("id = ?", id, in: database) } > 0
    }

    /// What ``move(ids:toFolder:)`` found wrong before moving anything.
    enum MoveFailure: Error, Sendable {
        case missingBookmarks([String])
    }

    /// Moves the bookmarks with `ids` to the folder `folderID`, in the order listed, all or
    /// none, in one transaction: a bookmark whose URL that folder already holds throws
    /// `ModelError<Bookmark>.duplicate(existing:)` with that folder's bookmark, and the
    /// bookmarks moved before it go back where they were.
    func move(ids: [String], toFolder folderID: String) async throws -> Int {
        let database = database
        return try await database.write { conn in
            let found = try conn.fetchAll(Bookmark.self, .select(SQLSelect(from: Bookmark.tableName)
                .where(SQLExpression.column("id").isIn(ids))))
            let byID = Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let missing = Set(ids).subtracting(byID.keys)
            if !missing.isEmpty { throw MoveFailure.missingBookmarks(missing.sorted()) }
            let now = Date()
            var moved = 0
            var seen = Set<String>()
            // In the order the request lists them.
            for id in ids where seen.insert(id).inserted {
                guard var bookmark = byID[id], bookmark.folderID != folderID else { continue }
                bookmark.folderID = folderID
                bookmark.updatedAt = now
                try bookmark.save(in: database)
                moved += 1
            }
            return moved
        }
    }

    private static func bookmark(id: String, on conn: Connection) throws -> Bookmark? {
        try conn.fetchAll(Bookmark.self, .select(SQLSelect(from: Bookmark.tableName)
            .where(SQLExpression.column("id").equals(id)).limit(1))).first
    }

    // MARK: Folders

    /// Every folder with the number of bookmarks in it, by name.
    func folders() async throws -> [FolderJSON] {
        try await database.read { conn in
            let select = SQLSelect(from: Folder.tableName, as: "f")
                .columns(.column("f", "id"), .column("f", "name"), .column("f", "created_at"),
                         SQLExpression.count(.column("b", "id")).as("bookmark_count"))
                .join(.left, Bookmark.tableName, as: "b", on: SQLExpression.column("b", "folder_id").equals(.column("f", "id")))
                .groupBy(.column("f", "id"), .column("f", "name"), .column("f", "created_at"))
                .orderBy(SQLExpression.codePointOrdered(.column("f", "name")).asc)
            return try conn.fetchAll(.select(select)).map { row in
                FolderJSON(id: try row.decode(String.self, column: "id"), name: try row.decode(String.self, column: "name"),
                           createdAt: try row.decode(Date.self, column: "created_at"),
                           bookmarkCount: try row.decode(Int.self, column: "bookmark_count"))
            }
        }
    }

    /// Creates a folder; a taken name throws `ModelError<Folder>.duplicate(existing:)`.
    func createFolder(name: String) async throws -> Folder {
        let database = database
        let folder = Folder(id: Folder.generateUUID(), name: name, createdAt: Date())
        return try await database.write { _ in try folder.save(in: database) }
    }

    /// True when a folder has `id`.
    func folderExists(id: String) async throws -> Bool {
        try await database.read { conn in
            try conn.fetchValue(Int.self, .select(SQLSelect(from: Folder.tableName).columns(.expression(.countAll))
                .where(SQLExpression.column("id").equals(id)))) ?? 0 > 0
        }
    }

    /// Deletes a folder and (by the foreign key's `ON DELETE CASCADE`) its bookmarks; false
    /// when there was none.
    func deleteFolder(id: String) async throws -> Bool {
        let database = database
        return try await database.write { _ in try Folder.deleteWhere("id = ?", id, in: database) } > 0
    }

    // MARK: Health

    /// Runs `SELECT 1`, giving up after `timeout`.
    func ping(timeout: Duration) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await database.fetchOne(sql: "SELECT 1") }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw PingTimeout(timeout: timeout)
            }
            defer { group.cancelAll() }
            _ = try await group.next()
        }
    }

    /// The database did not answer `SELECT 1` in time.
    struct PingTimeout: Error, CustomStringConvertible {
        var timeout: Duration
        var description: String { "the database did not answer within \(timeout)" }
    }
}
