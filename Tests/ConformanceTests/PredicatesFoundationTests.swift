import Foundation
import Testing
import Unity
import UnityPredicates

// Models whose plain values also hold their related values (not stored by the container), so
// that a `#Predicate` can follow the relations and `predicate.evaluate` can check the answer.

struct FpPublisher: ManagedObjectConvertible, Equatable {
    var name = ""
    var city: String?
    static let entityName = "FpPublisher"
    static let attributes: Set<Attribute<FpPublisher>> = [Attribute(\.name, "name"), Attribute(\.city, "city")]
    struct Relations: RelationSet {
        let novels = ToManyRelation<FpNovel>("novels", inverse: "publisher")
        var all: [RelationDeclaration] { [novels.declaration] }
    }
    static let relations = Relations()
}

struct FpTag: ManagedObjectConvertible, Equatable {
    var label = ""
    static let entityName = "FpTag"
    static let attributes: Set<Attribute<FpTag>> = [Attribute(\.label, "label")]
    struct Relations: RelationSet {
        let novels = ToManyRelation<FpNovel>("novels", inverse: "tags")
        var all: [RelationDeclaration] { [novels.declaration] }
    }
    static let relations = Relations()
}

struct FpReview: ManagedObjectConvertible, Equatable {
    var stars = 0
    static let entityName = "FpReview"
    static let attributes: Set<Attribute<FpReview>> = [Attribute(\.stars, "stars")]
    struct Relations: RelationSet {
        let novel = ToOneRelation<FpNovel>("novel", inverse: "reviews", column: "novel_pk")
        var all: [RelationDeclaration] { [novel.declaration] }
    }
    static let relations = Relations()
}

struct FpNovel: ManagedObjectConvertible, Equatable {
    var code = 0
    var title = ""
    var year: Int?
    var price: Decimal = 0
    var released = Date(timeIntervalSince1970: 0)
    var publisher = FpPublisher()
    var tags: [FpTag] = []
    var reviews: [FpReview] = []
    /// A computed property: no column holds it.
    var loudTitle: String { title.uppercased() }

    static let entityName = "FpNovel"
    static let attributes: Set<Attribute<FpNovel>> = [
        Attribute(\.code, "code", unique: true), Attribute(\.title, "title"), Attribute(\.year, "year"),
        Attribute(\.price, "price"), Attribute(\.released, "released"),
    ]
    struct Relations: RelationSet {
        let publisher = ToOneRelation<FpPublisher>("publisher", inverse: "novels", column: "publisher_pk")
        let tags = ToManyRelation<FpTag>("tags", inverse: "novels")
        let reviews = ToManyRelation<FpReview>("reviews", inverse: "novel", deleteRule: .cascade)
        var all: [RelationDeclaration] { [publisher.declaration, tags.declaration, reviews.declaration] }
    }
    static let relations = Relations()
    static let relationKeyPaths: [RelationKeyPath<FpNovel>] = [
        .toOne(\.publisher, \.publisher),
        .toMany(\.tags, \.tags),
        .toMany(\.reviews, \.reviews),
    ]
}

/// A to-one relation kept in a link table (no `column:`): a predicate cannot follow it.
struct FpShelf: ManagedObjectConvertible, Equatable {
    var label = ""
    var owner: FpPublisher?
    static let entityName = "FpShelf"
    static let attributes: Set<Attribute<FpShelf>> = [Attribute(\.label, "label")]
    struct Relations: RelationSet {
        let owner = ToOneRelation<FpPublisher>("owner")
        var all: [RelationDeclaration] { [owner.declaration] }
    }
    static let relations = Relations()
    static let relationKeyPaths: [RelationKeyPath<FpShelf>] = [.toOne(\.owner, \.owner)]
}

/// A model without relations (`batchDelete` takes only those).
struct FpStamp: ManagedObjectConvertible, Equatable {
    var code = ""
    var value: Int?
    static let entityName = "FpStamp"
    static let attributes: Set<Attribute<FpStamp>> = [Attribute(\.code, "code"), Attribute(\.value, "value")]
}

var foundationModels: [any ManagedObjectConvertible.Type] { [FpPublisher.self, FpTag.self, FpReview.self, FpNovel.self, FpStamp.self] }

/// `#Predicate` and `SortDescriptor` in UnityPredicates requests: every answer is checked against
/// a literal list and against `predicate.evaluate` over the same values in Swift.
@Suite("Predicates: Foundation's #Predicate and SortDescriptor")
struct PredicatesFoundationTests {
    static let ace = FpPublisher(name: "Ace", city: "Paris")
    static let bix = FpPublisher(name: "Bix", city: nil)
    static let sf = FpTag(label: "sf")
    static let old = FpTag(label: "old")

    /// The novels, with their relations, as Swift sees them. Titles hold NFC and NFD text.
    static let novels: [FpNovel] = [
        FpNovel(code: 1, title: "Dune", year: 1965, price: Decimal(string: "9.99")!,
               released: Date(timeIntervalSince1970: -134_000_000), publisher: ace, tags: [sf, old],
               reviews: [FpReview(stars: 5), FpReview(stars: 4)]),
        FpNovel(code: 2, title: "Emma", year: nil, price: Decimal(string: "12.50")!,
               released: Date(timeIntervalSince1970: -5_000_000_000), publisher: bix, tags: [old], reviews: []),
        FpNovel(code: 3, title: "Caf\u{E9} Noir", year: 2001, price: Decimal(string: "10.000000000000000000001")!,
               released: Date(timeIntervalSince1970: 1_000_000_000), publisher: ace, tags: [],
               reviews: [FpReview(stars: 2)]),
        FpNovel(code: 4, title: "Cafe\u{301} Blanc", year: 1999, price: 10,
               released: Date(timeIntervalSince1970: 930_000_000), publisher: bix, tags: [sf],
               reviews: [FpReview(stars: 1), FpReview(stars: 3), FpReview(stars: 4)]),
        FpNovel(code: 5, title: "", year: -3, price: -1, released: Date(timeIntervalSince1970: 0),
               publisher: FpPublisher(), tags: [], reviews: []),
    ]

    /// Stores `novels`: the publishers (code 5 has none: its publisher column is NULL), the
    /// tags through the link table, the reviews through their foreign-key column.
    static func seed(_ container: PersistentContainer) throws {
        try container.perform { ctx in
            let publishers = [ace.name: try ctx.insert(ace), bix.name: try ctx.insert(bix)]
            let tags = [sf.label: try ctx.insert(sf), old.label: try ctx.insert(old)]
            for novel in novels {
                let stored = try ctx.insert(novel)
                if let publisher = publishers[novel.publisher.name] { try stored.set(\.publisher, publisher) }
                for tag in novel.tags { if let t = tags[tag.label] { try stored.tags.add(t) } }
                for review in novel.reviews { try ctx.insert(review).set(\.novel, stored) }
            }
            _ = try ctx.insert(FpStamp(code: "a", value: 1))
            _ = try ctx.insert(FpStamp(code: "b", value: nil))
            _ = try ctx.insert(FpStamp(code: "c", value: 3))
        }
    }

    /// The codes `predicate` keeps, from SQL (ordered by code) — checked against `expected`
    /// and against Swift's own answer over the same values.
    static func check(_ predicate: Predicate<FpNovel>, _ expected: [Int], in container: PersistentContainer,
                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let sql = try container.perform { ctx in
            try ctx.fetch(FpNovel.all.where(predicate).sort(\.code), \.code)
        }
        let swift = try novels.filter { try predicate.evaluate($0) }.map(\.code)
        #expect(sql == expected, sourceLocation: sourceLocation)
        #expect(swift == expected, sourceLocation: sourceLocation)
    }

    @Test(arguments: Backend.allCases)
    func attributesMeanWhatSwiftMeans(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            try Self.check(#Predicate<FpNovel> { $0.code >= 4 }, [4, 5], in: c)
            try Self.check(#Predicate<FpNovel> { $0.title == "Dune" || $0.code == 5 }, [1, 5], in: c)
            try Self.check(#Predicate<FpNovel> { !($0.code < 3) }, [3, 4, 5], in: c)
            // `!=` keeps the nil year, as Swift does.
            try Self.check(#Predicate<FpNovel> { $0.year != 1965 }, [2, 3, 4, 5], in: c)
            try Self.check(#Predicate<FpNovel> { $0.year == nil }, [2], in: c)
            try Self.check(#Predicate<FpNovel> { ($0.year ?? 0) < 0 }, [5], in: c)
            try Self.check(#Predicate<FpNovel> { $0.year.flatMap { $0 > 1990 } ?? false }, [3, 4], in: c)
            try Self.check(#Predicate<FpNovel> { $0.title.contains("Noir") }, [3], in: c)
            try Self.check(#Predicate<FpNovel> { $0.title.starts(with: "D") }, [1], in: c)
            try Self.check(#Predicate<FpNovel> { $0.title.isEmpty }, [5], in: c)
            try Self.check(#Predicate<FpNovel> { [2, 5, 9].contains($0.code) }, [2, 5], in: c)
            try Self.check(#Predicate<FpNovel> { (2...4).contains($0.code) }, [2, 3, 4], in: c)
            try Self.check(#Predicate<FpNovel> { $0.code * 2 - 1 == 5 }, [3], in: c)
            try Self.check(#Predicate<FpNovel> { $0.code > 3 ? $0.price < 0 : $0.title == "Emma" }, [2, 5], in: c)
            // Decimals compare as numbers, past a double's precision.
            let ten = Decimal(10)
            try Self.check(#Predicate<FpNovel> { $0.price > ten }, [2, 3], in: c)
            try Self.check(#Predicate<FpNovel> { $0.price == ten }, [4], in: c)
            // Dates before 1970.
            let epoch = Date(timeIntervalSince1970: 0)
            try Self.check(#Predicate<FpNovel> { $0.released < epoch }, [1, 2], in: c)
        }
    }

    /// Where SQL cannot mean what Swift means, the answers differ as the documentation says.
    @Test(arguments: Backend.allCases)
    func documentedDifferencesFromSwift(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            func sql(_ predicate: Predicate<FpNovel>) throws -> [Int] {
                try c.perform { ctx in try ctx.fetch(FpNovel.all.where(predicate).sort(\.code), \.code) }
            }
            func swift(_ predicate: Predicate<FpNovel>) throws -> [Int] {
                try Self.novels.filter { try predicate.evaluate($0) }.map(\.code)
            }
            // String == is canonical equivalence in Swift, code points in SQL.
            let nfc = #Predicate<FpNovel> { $0.title.starts(with: "Caf\u{E9}") }
            #expect(try swift(nfc) == [3, 4])
            #expect(try sql(nfc) == [3])
            // count is grapheme clusters in Swift, code points in SQL.
            let short = #Predicate<FpNovel> { $0.title.count == 10 }
            #expect(try swift(short) == [4])
            #expect(try sql(short) == [])
        }
    }

    @Test(arguments: Backend.allCases)
    func relationshipsAreFollowed(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            // To-one, through the novel's publisher_pk column.
            try Self.check(#Predicate<FpNovel> { $0.publisher.name == "Ace" }, [1, 3], in: c)
            try Self.check(#Predicate<FpNovel> { $0.publisher.city == nil }, [2, 4, 5], in: c)
            // To-many through the reviews' novel_pk column.
            try Self.check(#Predicate<FpNovel> { $0.reviews.contains { $0.stars >= 4 } }, [1, 4], in: c)
            try Self.check(#Predicate<FpNovel> { $0.reviews.allSatisfy { $0.stars > 1 } }, [1, 2, 3, 5], in: c)
            try Self.check(#Predicate<FpNovel> { $0.reviews.isEmpty }, [2, 5], in: c)
            try Self.check(#Predicate<FpNovel> { $0.reviews.count == 2 }, [1], in: c)
            // Many-to-many through the link table.
            try Self.check(#Predicate<FpNovel> { $0.tags.contains { $0.label == "sf" } }, [1, 4], in: c)
            try Self.check(#Predicate<FpNovel> { $0.tags.count == 1 }, [2, 4], in: c)
            try Self.check(#Predicate<FpNovel> { !$0.tags.isEmpty && $0.reviews.isEmpty }, [2], in: c)
        }
    }

    @Test(arguments: Backend.allCases)
    func sortDescriptorsOrderAsSwiftDoes(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            func codes(_ request: Request<FpNovel>) throws -> [Int] {
                try c.perform { ctx in try ctx.fetch(request, \.code) }
            }
            // nil first in forward order, last in reverse, as Swift's SortDescriptor.
            #expect(try codes(FpNovel.all.sort(SortDescriptor(\FpNovel.year))) == [2, 5, 1, 4, 3])
            #expect(try codes(FpNovel.all.sort(SortDescriptor(\FpNovel.year, order: .reverse))) == [3, 4, 1, 5, 2])
            // Code-point order: "C" < "D" < "E", and the empty title first.
            #expect(try codes(FpNovel.all.sort(SortDescriptor(\FpNovel.title))) == [5, 4, 3, 1, 2])
            #expect(try codes(FpNovel.all.sort(SortDescriptor(\FpNovel.price))) == [5, 1, 4, 3, 2])
            // Through the to-one relation (novel 5 has no publisher: nil first), then by code.
            let byPublisher = FpNovel.all.sort(SortDescriptor(\FpNovel.publisher.name, order: .reverse)).sort(SortDescriptor(\FpNovel.code))
            #expect(try codes(byPublisher) == [2, 4, 1, 3, 5])
            // The same order as Swift's own sort of the values (the stored nil publisher is
            // Swift's empty name here, which sorts first as nil does).
            let swiftOrder = Self.novels.sorted(using: [SortDescriptor(\FpNovel.publisher.name, order: .reverse), SortDescriptor(\FpNovel.code)])
            #expect(swiftOrder.map(\.code) == [2, 4, 1, 3, 5])
        }
    }

    @Test(arguments: Backend.allCases)
    func composesWithTheFlavorsFiltersAndOrdering(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            try c.perform { ctx in
                // AND-ed with a key-path operator, OR-ed with a raw SQL condition.
                let recent = QueryPredicate(#Predicate<FpNovel> { $0.year != 1965 })
                #expect(try ctx.fetch(FpNovel.all.where(recent && \FpNovel.price > Decimal(0)).sort(\.code), \.code) == [2, 3, 4])
                #expect(try ctx.fetch(FpNovel.all.where(recent || "code = 1").sort(\.code), \.code) == [1, 2, 3, 4, 5])
                // The flavor's own != leaves the NULL year out (upstream's meaning).
                #expect(try ctx.fetch(FpNovel.all.where(\FpNovel.year != 1965).sort(\.code), \.code) == [3, 4, 5])
                // Inside Query.any: a #Predicate over the relation's destination.
                let byAce = Query.any(FpNovel.self, \.publisher, QueryPredicate(#Predicate<FpPublisher> { $0.city == "Paris" }))
                #expect(try ctx.fetch(FpNovel.all.where(byAce).sort(\.code), \.code) == [1, 3])
                // A later where replaces the earlier one, as every where does.
                let replaced = FpNovel.all.where(\FpNovel.code == 1).where(#Predicate<FpNovel> { $0.code == 2 })
                #expect(try ctx.fetch(replaced, \.code) == [2])
                // A SortDescriptor is appended to the key-path sorts, and a key-path sort to it.
                #expect(try ctx.fetch(FpNovel.all.sort(\.year, ascending: false).sort(SortDescriptor(\FpNovel.title)), \.code)
                    == [3, 4, 1, 5, 2])
                #expect(try ctx.fetch(FpNovel.all.sort(SortDescriptor(\FpNovel.publisher.name)).sort(\.code, ascending: false), \.code)
                    == [5, 3, 1, 4, 2])
                // Limit and offset; count(of:) counts within them.
                let page = FpNovel.all.where(#Predicate<FpNovel> { $0.code != 3 }).sort(SortDescriptor(\FpNovel.code, order: .reverse))
                #expect(try ctx.fetch(page.offset(1).limit(2), \.code) == [4, 2])
                #expect(try ctx.count(of: page) == 4)
                #expect(try ctx.count(of: page.offset(1).limit(2)) == 2)
                #expect(try ctx.fetchOne(page)?.decode(\.title) == "")
                // forEach streams the same objects.
                var seen: [Int] = []
                try ctx.forEach(FpNovel.all.where(#Predicate<FpNovel> { $0.reviews.isEmpty }).sort(\.code)) { seen.append(try $0.decode(\.code)) }
                #expect(seen == [2, 5])
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func deletesWhatThePredicateKeeps(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            // delete(_:) applies the delete rules: the novels' reviews go with them (cascade).
            try c.perform { ctx in try ctx.delete(FpNovel.all.where(#Predicate<FpNovel> { $0.publisher.name == "Bix" })) }
            let left = try c.perform { ctx in
                (try ctx.fetch(FpNovel.all.sort(\.code), \.code), try ctx.fetch(FpReview.all.sort(\.stars), \.stars))
            }
            #expect(left.0 == [1, 3, 5])
            #expect(left.1 == [2, 4, 5])
            // batchDelete: one statement; `!=` keeps the NULL value, so "b" goes too.
            let deleted = try c.perform { ctx in try ctx.batchDelete(FpStamp.all.where(#Predicate<FpStamp> { $0.value != 3 })) }
            #expect(deleted == 2)
            #expect(try c.perform { ctx in try ctx.fetch(FpStamp.all, \.code) } == ["c"])
        }
    }

    @Test(arguments: Backend.allCases)
    func theAsyncFormTakesThem(_ backend: Backend) async throws {
        let test = try TestDatabase(backend)
        defer { test.tearDown() }
        let c = PersistentContainer(database: test.database, models: foundationModels)
        try Self.seed(c)
        let titles = try await c.schedule { ctx in
            try ctx.fetch(FpNovel.all.where(#Predicate<FpNovel> { $0.tags.contains { $0.label == "old" } })
                .sort(SortDescriptor(\FpNovel.title, order: .reverse)), \FpNovel.title)
        }
        #expect(titles == ["Emma", "Dune"])
    }

    /// What SQL cannot express throws before any SQL runs, and the database stays as it was.
    @Test(arguments: Backend.allCases)
    func untranslatableThrowsAndChangesNothing(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let c = PersistentContainer(database: db, models: foundationModels)
            try Self.seed(c)
            let computed = #Predicate<FpNovel> { $0.loudTitle == "DUNE" }
            let error = #expect(throws: PredicateTranslationError.self) {
                try c.perform { ctx in try ctx.delete(FpNovel.all.where(computed)) }
            }
            #expect(error?.reason.contains("FpNovel.attributes") == true)
            #expect(throws: PredicateTranslationError.self) {
                try c.perform { ctx in try ctx.batchDelete(FpStamp.all.where(#Predicate<FpStamp> { ($0.value as Any?) is Int })) }
            }
            #expect(throws: PredicateTranslationError.self) {
                try c.perform { ctx in try ctx.count(of: FpNovel.all.where(#Predicate<FpNovel> { $0.price + $0.price > 1 })) }
            }
            // A sort by a computed property.
            #expect(throws: PredicateTranslationError.self) {
                try c.perform { ctx in try ctx.fetch(FpNovel.all.sort(SortDescriptor(\FpNovel.loudTitle))) }
            }
            // A write made earlier in the same perform is not flushed by the failing delete,
            // and the perform's rollback takes it away.
            #expect(throws: PredicateTranslationError.self) {
                try c.perform { ctx in
                    _ = try ctx.insert(FpStamp(code: "z", value: 9))
                    try ctx.delete(FpStamp.all.where(#Predicate<FpStamp> { ($0.value as Any?) is Int }))
                }
            }
            let state = try c.perform { ctx in
                (try ctx.count(of: FpNovel.all), try ctx.count(of: FpReview.all), try ctx.fetch(FpStamp.all.sort(\.code), \.code))
            }
            // A to-one relation kept in a link table cannot be followed: the error says so.
            let c2 = PersistentContainer(database: db, models: foundationModels + [FpShelf.self])
            let linked = #expect(throws: PredicateTranslationError.self) {
                try c2.perform { ctx in try ctx.count(of: FpShelf.all.where(#Predicate<FpShelf> { $0.owner?.name == "Ace" })) }
            }
            #expect(linked?.reason.contains("FpShelf.owner is kept in a link table") == true)
            #expect(state.0 == 5)
            #expect(state.1 == 6)
            #expect(state.2 == ["a", "b", "c"])
        }
    }
}
