import Foundation
import Testing
import Unity

/// `#Predicate` through relationships, on the core's `PredicateSchema`: to-one key paths (as
/// scalar subqueries), optional to-one chains, to-many `contains(where:)` / `allSatisfy`
/// (EXISTS / NOT EXISTS), `isEmpty`, `count`, a link table, and sorting through a to-one.
@Suite("#Predicate through relationships")
struct PredicateSQLRelationshipTests {
    struct PdAuthor: Sendable, Equatable {
        var id: Int
        var name: String
        var books: [PdBook] = []
        var tags: [PdTag] = []
    }

    struct PdBook: Sendable, Equatable {
        var id: Int
        var title: String
        var author: PdAuthor
        var coauthor: PdAuthor?
    }

    struct PdTag: Sendable, Equatable {
        var id: Int
        var label: String
    }

    static let authorSchema: PredicateSchema = PredicateSchema(table: "pd_author")
        .column(\PdAuthor.id, "id")
        .column(\PdAuthor.name, "name")
        .toMany(\PdAuthor.books, .foreignKey("author_id"), target: { bookSchema })
        .toMany(\PdAuthor.tags, .through(table: "pd_author_tag", parentColumn: "author_id", targetColumn: "tag_id"),
                target: { tagSchema })
    static let bookSchema: PredicateSchema = PredicateSchema(table: "pd_book")
        .column(\PdBook.id, "id")
        .column(\PdBook.title, "title")
        .toOne(\PdBook.author, foreignKey: "author_id", target: { authorSchema })
        .toOne(\PdBook.coauthor, foreignKey: "coauthor_id", target: { authorSchema })
    static let tagSchema: PredicateSchema = PredicateSchema(table: "pd_tag")
        .column(\PdTag.id, "id")
        .column(\PdTag.label, "label")

    // Ann (id 1): Dune, Emma; Bo (2): Neuromancer (with Ann as coauthor); Cy (3): no books.
    static let tags = [PdTag(id: 1, label: "sf"), PdTag(id: 2, label: "classic")]
    static let plainAuthors = [PdAuthor(id: 1, name: "Ann"), PdAuthor(id: 2, name: "Bo"), PdAuthor(id: 3, name: "Cy")]
    static let books = [
        PdBook(id: 1, title: "Dune", author: plainAuthors[0], coauthor: nil),
        PdBook(id: 2, title: "Emma", author: plainAuthors[0], coauthor: nil),
        PdBook(id: 3, title: "Neuromancer", author: plainAuthors[1], coauthor: plainAuthors[0]),
    ]
    static let authorTags: [(author: Int, tag: Int)] = [(1, 1), (1, 2), (2, 1)]
    static var authors: [PdAuthor] {
        plainAuthors.map { author in
            var a = author
            a.books = books.filter { $0.author.id == author.id }
            a.tags = authorTags.filter { $0.author == author.id }.compactMap { link in tags.first { $0.id == link.tag } }
            return a
        }
    }

    static func withLibrary(_ backend: Backend, _ body: (Database) throws -> Void) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("pd_author", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("name", .text, notNull: true)])))
                try conn.execute(.createTable(SQLCreateTable("pd_book", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("title", .text, notNull: true),
                    SQLColumnDefinition("author_id", .int64, notNull: true), SQLColumnDefinition("coauthor_id", .int64)])))
                try conn.execute(.createTable(SQLCreateTable("pd_tag", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("label", .text, notNull: true)])))
                try conn.execute(.createTable(SQLCreateTable("pd_author_tag", columns: [
                    SQLColumnDefinition("author_id", .int64, notNull: true), SQLColumnDefinition("tag_id", .int64, notNull: true)])))
                try conn.execute(.insert(SQLInsert(into: "pd_author", columns: ["id", "name"],
                                                   values: plainAuthors.map { [.value($0.id), .value($0.name)] })))
                try conn.execute(.insert(SQLInsert(into: "pd_book", columns: ["id", "title", "author_id", "coauthor_id"],
                                                   values: books.map { [.value($0.id), .value($0.title), .value($0.author.id), .value($0.coauthor?.id)] })))
                try conn.execute(.insert(SQLInsert(into: "pd_tag", columns: ["id", "label"], values: tags.map { [.value($0.id), .value($0.label)] })))
                try conn.execute(.insert(SQLInsert(into: "pd_author_tag", columns: ["author_id", "tag_id"],
                                                   values: authorTags.map { [.value($0.author), .value($0.tag)] })))
            }
            try body(db)
        }
    }

    static func ids(_ db: Database, _ table: String, _ condition: SQLExpression, orderBy: [SQLOrdering]? = nil) throws -> [Int] {
        try db.read { conn in
            var query = SQLSelect(from: table).columns(.column(table, "id")).where(condition)
            query.orderBy = orderBy ?? [SQLOrdering(.column(table, "id"))]
            return try conn.fetchAll(.select(query)).map { try $0.decode(Int.self, at: 0) }
        }
    }

    static func checkBooks(_ predicate: Predicate<PdBook>, _ expected: [Int], in db: Database,
                           sourceLocation: SourceLocation = #_sourceLocation) throws {
        let swift = try books.filter { try predicate.evaluate($0) }.map(\.id)
        let sql = try ids(db, "pd_book", try PredicateSQL.condition(predicate, schema: bookSchema))
        #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
        #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
    }

    static func checkAuthors(_ predicate: Predicate<PdAuthor>, _ expected: [Int], in db: Database,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        let swift = try authors.filter { try predicate.evaluate($0) }.map(\.id)
        let sql = try ids(db, "pd_author", try PredicateSQL.condition(predicate, schema: authorSchema))
        #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
        #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
    }

    @Test(arguments: Backend.allCases)
    func toOne(_ backend: Backend) throws {
        try Self.withLibrary(backend) { (db: Database) throws in
            try Self.checkBooks(#Predicate<PdBook> { $0.author.name == "Ann" }, [1, 2], in: db)
            try Self.checkBooks(#Predicate<PdBook> { $0.author.name != "Ann" && $0.title.contains("o") }, [3], in: db)
            try Self.checkBooks(#Predicate<PdBook> { $0.coauthor == nil }, [1, 2], in: db)
            try Self.checkBooks(#Predicate<PdBook> { $0.coauthor?.name == "Ann" }, [3], in: db)
            try Self.checkBooks(#Predicate<PdBook> { $0.coauthor?.name != "Ann" }, [1, 2], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func toMany(_ backend: Backend) throws {
        try Self.withLibrary(backend) { (db: Database) throws in
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.books.contains { $0.title.starts(with: "E") } }, [1], in: db)
            // Cy has no books, so every one of them satisfies anything.
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.books.allSatisfy { $0.title != "Dune" } }, [2, 3], in: db)
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.books.isEmpty }, [3], in: db)
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.books.count >= 2 }, [1], in: db)
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.tags.contains { $0.label == "sf" } }, [1, 2], in: db)
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.tags.count == 1 }, [2], in: db)
            // A nested relationship inside the subquery: authors with a book coauthored by Ann.
            try Self.checkAuthors(#Predicate<PdAuthor> { $0.books.contains { $0.coauthor?.name == "Ann" } }, [2], in: db)
        }
    }

    @Test(arguments: Backend.allCases)
    func sortingThroughAToOneRelationship(_ backend: Backend) throws {
        try Self.withLibrary(backend) { (db: Database) throws in
            let order = [SortDescriptor(\PdBook.author.name, order: .reverse), SortDescriptor(\PdBook.title)]
            let sql = try Self.ids(db, "pd_book", .literal(.bool(true)), orderBy: try PredicateSQL.ordering(order, schema: Self.bookSchema))
            #expect(sql == [3, 1, 2])
            #expect(Self.books.sorted(using: order).map(\.id) == [3, 1, 2])
        }
    }
}
