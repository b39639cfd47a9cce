import Foundation
import Testing
import UnityPredicates

// The code of the UnityPredicates article "Filtering with #Predicate", compiled and run on
// both backends (DocumentationExamplesTests checks that every block stands here).

struct Imprint: ManagedObjectConvertible {
    var name = ""
    static let entityName = "Imprint"
    static let attributes: Set<Attribute<Imprint>> = [Attribute(\.name, "name")]
    struct Relations: RelationSet {
        let novels = ToManyRelation<Novel>("novels", inverse: "imprint")
        var all: [RelationDeclaration] { [novels.declaration] }
    }
    static let relations = Relations()
}

struct Critique: ManagedObjectConvertible {
    var stars = 0
    static let entityName = "Critique"
    static let attributes: Set<Attribute<Critique>> = [Attribute(\.stars, "stars")]
    struct Relations: RelationSet {
        let novel = ToOneRelation<Novel>("novel", inverse: "critiques", column: "novel_pk")
        var all: [RelationDeclaration] { [novel.declaration] }
    }
    static let relations = Relations()
}

struct Novel: ManagedObjectConvertible {
    var title = ""
    var year: Int?
    var imprint = Imprint()          // read by predicates, not stored
    var critiques: [Critique] = []   // read by predicates, not stored

    static let entityName = "Novel"
    static let attributes: Set<Attribute<Novel>> = [Attribute(\.title, "title"), Attribute(\.year, "year")]
    struct Relations: RelationSet {
        let imprint = ToOneRelation<Imprint>("imprint", inverse: "novels", column: "imprint_pk")
        let critiques = ToManyRelation<Critique>("critiques", inverse: "novel")
        var all: [RelationDeclaration] { [imprint.declaration, critiques.declaration] }
    }
    static let relations = Relations()
    static let relationKeyPaths: [RelationKeyPath<Novel>] = [
        .toOne(\.imprint, \.imprint),
        .toMany(\.critiques, \.critiques),
    ]
}

@Suite("Documentation: Filtering with #Predicate")
struct PredicatesFilteringExamples {
    /// Ace publishes Dune (1965, five stars) and Emma (no year, no critique); Bix publishes
    /// Solaris (1961, four stars and two).
    static func shelve(_ container: PersistentContainer) throws {
        try container.perform { ctx in
            let ace = try ctx.insert(Imprint(name: "Ace"))
            let bix = try ctx.insert(Imprint(name: "Bix"))
            for (title, year, imprint, stars) in [("Dune", 1965, ace, [5]), ("Emma", nil, ace, []), ("Solaris", 1961, bix, [4, 2])] {
                let novel = try ctx.insert(Novel(title: title, year: year))
                try novel.set(\.imprint, imprint)
                for s in stars { try ctx.insert(Critique(stars: s)).set(\.novel, novel) }
            }
        }
    }

    static func fetchWellReviewed(_ container: PersistentContainer) throws -> [String] {
        let titles = try container.perform { ctx in
            try ctx.fetch(Novel.all
                .where(#Predicate<Novel> { $0.year != 1965 && $0.critiques.contains { $0.stars >= 4 } })
                .sort(SortDescriptor(\Novel.title)))
                .map { try $0.decode(\.title) }
        }
        return titles
    }

    static func composed(_ container: PersistentContainer) throws -> [String] {
        let older = Novel.all.where(\Novel.year < 2000 && QueryPredicate(#Predicate<Novel> { $0.imprint.name == "Ace" }))
        return try container.perform { ctx in try ctx.fetch(older, \.title) }
    }

    static func uncritiqued(_ container: PersistentContainer) async throws -> Int {
        let count = try await container.schedule { ctx in
            try ctx.count(of: Novel.all.where(#Predicate<Novel> { $0.critiques.isEmpty }))
        }
        return count
    }

    static func untranslatable(_ container: PersistentContainer) throws -> String? {
        var reason: String?
        do {
            _ = try container.perform { ctx in try ctx.fetch(Novel.all.where(#Predicate<Novel> { ($0.year as Any?) is Int })) }
        } catch let error as PredicateTranslationError {
            reason = error.reason   // a type cast has no SQL translation
        }
        return reason
    }

    @Test(arguments: Backend.allCases)
    func theArticlesExamples(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let container = PersistentContainer(database: test.database, models: [Imprint.self, Critique.self, Novel.self])
        try Self.shelve(container)
        // Emma's nil year is not 1965, as in Swift, but Emma has no critique.
        #expect(try Self.fetchWellReviewed(container) == ["Solaris"])
        #expect(try Self.composed(container) == ["Dune"])
        #expect(try await Self.uncritiqued(container) == 1)
        #expect(try Self.untranslatable(container) != nil)
    }
}
