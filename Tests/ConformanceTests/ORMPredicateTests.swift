import Foundation
import Testing
import UnityORMFields

/// Foundation's `#Predicate` and `SortDescriptor` in the ORM's query sets: every case checked
/// against a literal list of ids and against `predicate.evaluate` over the same objects in
/// Swift, on both backends; composition with filter strings, `orderBy`, `limit`, `offset`,
/// `count`, `first` and `using(_:).relationship(_:)`; the relationships the mapping declares
/// (a foreign key, a `OneToMany`, a `ManyToMany`); untranslatable predicates; nil semantics.
@Suite("ORM: #Predicate and SortDescriptor")
struct ORMPredicateTests {
    @ORMFields
    final class PqOwner: AmigoModel {
        var id = 0
        var name: String?
        var age: Int?
        var pets: [PqPet] = []
    }

    @ORMFields
    final class PqPet: AmigoModel {
        var id = 0
        var name = ""
        var weight: Double?
        var price: Decimal?
        var born: Date?
        var good: Bool?
        var owner: PqOwner?
        var tags: [PqTag] = []
        /// Stored, listed by `@ORMFields`, but mapped to no column.
        var nickname: String?
        /// Computed: no column.
        var shout: String { name.uppercased() }
    }

    @ORMFields
    final class PqTag: AmigoModel {
        var id = 0
        var label = ""
    }

    static func models() -> [ORMModel] {
        let owner = ORMModel(PqOwner.self, table: "pq_owner",
            Column("id", type: Int.self, primaryKey: true),
            Column("name", type: String.self),
            Column("age", type: Int.self),
            OneToMany("pets", using: PqPet.self)
        )
        let tag = ORMModel(PqTag.self, table: "pq_tag",
            Column("id", type: Int.self, primaryKey: true),
            Column("label", type: String.self)
        )
        let pet = ORMModel(PqPet.self, table: "pq_pet",
            Column("id", type: Int.self, primaryKey: true),
            Column("name", type: String.self, optional: false),
            Column("weight", type: Double.self),
            Column("price", type: Decimal.self),
            Column("born", type: Date.self),
            Column("good", type: Bool.self),
            Column("owner", type: ForeignKey(owner)),
            ManyToMany("tags", using: PqTag.self)
        )
        return [owner, tag, pet]
    }

    /// The stored objects, as Swift holds them (relationships filled in both directions).
    struct World {
        var owners: [PqOwner]
        var pets: [PqPet]
        var tags: [PqTag]
    }

    static func date(_ text: String) -> Date {
        ISO8601DateFormatter().date(from: text) ?? Date(timeIntervalSince1970: 0)
    }

    // Owners: 1 Ann (30), 2 Bob (age nil), 3 nil (45), 4 Zoë (30).
    // Pets: 1 Rex (Ann; small, loud), 2 Fido (Ann; small), 3 Ace (Bob), 4 Bolt (no owner; loud),
    // 5 "" (owner 3), 6 rex (Zoë), 7 "Cafe\u{301}" (NFD, no owner).
    static func populate(_ session: AmigoSession) throws -> World {
        func owner(_ name: String?, _ age: Int?) -> PqOwner {
            let o = PqOwner()
            o.name = name
            o.age = age
            return o
        }
        let owners = [owner("Ann", 30), owner("Bob", nil), owner(nil, 45), owner("Zo\u{EB}", 30)]
        func tag(_ label: String) -> PqTag {
            let t = PqTag()
            t.label = label
            return t
        }
        let tags = [tag("small"), tag("loud")]
        func pet(_ name: String, _ weight: Double?, _ price: String?, _ born: String?, _ good: Bool?, _ owner: PqOwner?,
                 _ tags: [PqTag]) -> PqPet {
            let p = PqPet()
            p.name = name
            p.weight = weight
            p.price = price.flatMap { Decimal(string: $0) }
            p.born = born.map(date)
            p.good = good
            p.owner = owner
            p.tags = tags
            p.nickname = "nick " + name
            owner?.pets.append(p)
            return p
        }
        let pets = [
            pet("Rex", 10.5, "12.50", "1965-03-01T00:00:00Z", true, owners[0], [tags[0], tags[1]]),
            pet("Fido", nil, nil, nil, false, owners[0], [tags[0]]),
            pet("Ace", 3, "100.10", "2001-01-01T12:00:00Z", nil, owners[1], []),
            pet("Bolt", 25, "0.01", nil, true, nil, [tags[1]]),
            pet("", -1.5, "-3", "1999-12-31T23:59:59Z", false, owners[2], []),
            pet("rex", 10.5, "12.5", "2020-06-15T08:30:00Z", true, owners[3], []),
            pet("Cafe\u{301}", 0, "99999999999999999999.5", "1969-12-31T23:59:59Z", nil, nil, []),
        ]
        try session.add(owners)
        try session.add(tags)
        try session.add(pets)
        for p in pets where !p.tags.isEmpty {
            for t in p.tags { try session.using(p).relationship("tags").add(t) }
        }
        #expect(owners.map(\.id) == [1, 2, 3, 4])
        #expect(pets.map(\.id) == [1, 2, 3, 4, 5, 6, 7])
        return World(owners: owners, pets: pets, tags: tags)
    }

    static func withWorld(_ backend: Backend, _ body: (Amigo, AmigoSession, World) throws -> Void) throws {
        try withAmigo(backend, models()) { amigo, _ in
            let session = try amigo.session
            let world = try populate(session)
            try body(amigo, session, world)
        }
    }

    /// The ids the query selects, in id order, checked against `expected` and against Swift's own answer.
    static func checkPets(_ session: AmigoSession, _ world: World, _ predicate: Predicate<PqPet>, _ expected: [Int],
                          sourceLocation: SourceLocation = #_sourceLocation) throws {
        let swift = try world.pets.filter { try predicate.evaluate($0) }.map(\.id)
        let sql = try session.query(PqPet.self).filter(predicate).orderBy("id").all().map(\.id)
        #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
        #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
        #expect(try session.query(PqPet.self).filter(predicate).count() == expected.count, sourceLocation: sourceLocation)
    }

    static func checkOwners(_ session: AmigoSession, _ world: World, _ predicate: Predicate<PqOwner>, _ expected: [Int],
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let swift = try world.owners.filter { try predicate.evaluate($0) }.map(\.id)
        let sql = try session.query(PqOwner.self).filter(predicate).orderBy("id").all().map(\.id)
        #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
        #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
    }

    @Test(arguments: Backend.allCases)
    func valuesAndOperators(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.name == "Rex" }, [1])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.name < "B" }, [3, 5])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.weight ?? 0 > 5 }, [1, 4, 6])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.weight ?? 0 >= 10.5 && $0.good == true }, [1, 4, 6])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.id == 2 || $0.id > 5 }, [2, 6, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { !($0.id <= 5) }, [6, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.id * 2 - 1 == 5 }, [3])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.good == false }, [2, 5])
            try Self.checkPets(s, w, #Predicate<PqPet> { ["Ace", "Bolt", "nobody"].contains($0.name) }, [3, 4])
            try Self.checkPets(s, w, #Predicate<PqPet> { (2...4).contains($0.id) }, [2, 3, 4])
            try Self.checkPets(s, w, #Predicate<PqPet> { ($0.good == true ? $0.id : 0) > 3 }, [4, 6])
            // Decimals compare as numbers, past a double's precision.
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.price ?? 0 > 12.4 }, [1, 3, 6, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.price == 12.5 }, [1, 6])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.price ?? 0 < 0 }, [5])
            // Dates, before 1970 too.
            let y2k = Self.date("2000-01-01T00:00:00Z")
            let epoch = Date(timeIntervalSince1970: 0)
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.born ?? y2k < y2k }, [1, 5, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.born ?? epoch < epoch }, [1, 7])
            // Strings: case-sensitive, by code point.
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.name.contains("x") }, [1, 6])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.name.starts(with: "R") }, [1])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.name.isEmpty }, [5])
        }
    }

    /// `!=` keeps the rows whose value is nil, as Swift does; `== nil` and optional chains.
    @Test(arguments: Backend.allCases)
    func nilMeansSwiftsNil(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.weight != 10.5 }, [2, 3, 4, 5, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.good != true }, [2, 3, 5, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.weight == nil }, [2])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.born != nil }, [1, 3, 5, 6, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.price.flatMap { $0 > 50 } ?? false }, [3, 7])
            try Self.checkOwners(s, w, #Predicate<PqOwner> { $0.name != "Ann" }, [2, 3, 4])
            try Self.checkOwners(s, w, #Predicate<PqOwner> { $0.age != 30 }, [2, 3])
            try Self.checkOwners(s, w, #Predicate<PqOwner> {
                if let name = $0.name { name.count > 3 } else { true }
            }, [3])
        }
    }

    /// A foreign key is a to-one key path; a `OneToMany` and a `ManyToMany` whose model has an
    /// array property of the same name are to-many ones.
    @Test(arguments: Backend.allCases)
    func relationships(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.owner?.name == "Ann" }, [1, 2])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.owner?.name != "Ann" }, [3, 4, 5, 6, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.owner?.id == nil }, [4, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.owner?.id != nil && $0.owner?.name == nil }, [5])
            try Self.checkPets(s, w, #Predicate<PqPet> { ($0.owner?.age ?? 0) >= 30 }, [1, 2, 5, 6])
            // ManyToMany (a link table).
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.tags.contains { $0.label == "loud" } }, [1, 4])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.tags.isEmpty }, [3, 5, 6, 7])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.tags.count >= 2 }, [1])
            try Self.checkPets(s, w, #Predicate<PqPet> { $0.tags.allSatisfy { $0.label == "small" } }, [2, 3, 5, 6, 7])
            // OneToMany (the pets' foreign key to their owner).
            try Self.checkOwners(s, w, #Predicate<PqOwner> { $0.pets.contains { $0.name == "Fido" } }, [1])
            try Self.checkOwners(s, w, #Predicate<PqOwner> { $0.pets.count == 1 }, [2, 3, 4])
            try Self.checkOwners(s, w, #Predicate<PqOwner> { $0.pets.contains { $0.tags.contains { $0.label == "small" } } }, [1])
            try Self.checkOwners(s, w, #Predicate<PqOwner> { $0.pets.allSatisfy { $0.weight ?? 0 > 5 } }, [4])
        }
    }

    /// A predicate is AND-ed with filter strings and the relationship followed; sorting is
    /// appended to the other orders; limit, offset, count and first apply to the filtered set.
    @Test(arguments: Backend.allCases)
    func composesWithTheQuerySet(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            let heavy = #Predicate<PqPet> { $0.weight ?? 0 > 5 }
            #expect(try s.query(PqPet.self).filter("name != ?", "Bolt").filter(heavy).orderBy("id").all().map(\.id) == [1, 6])
            #expect(try s.query(PqPet.self).filter(heavy).filter("owner.name = 'Ann'").all().map(\.id) == [1])
            // Two predicates: AND.
            #expect(try s.query(PqPet.self).filter(heavy).filter(#Predicate<PqPet> { $0.good == true })
                .filter(#Predicate<PqPet> { $0.name != "Bolt" }).orderBy("id").all().map(\.id) == [1, 6])
            // String order first, then the descriptors, in the order given.
            let weightThenName = try s.query(PqPet.self).filter(#Predicate<PqPet> { $0.id != 7 })
                .orderBy("good", ascending: false).orderBy(SortDescriptor(\PqPet.weight, order: .reverse), SortDescriptor(\PqPet.name))
                .all().map(\.id)
            // good: true (1, 4, 6), false (2, 5), NULL (3); each block by weight descending, nil last.
            let goodFirst: [Int] = backend == .postgres ? [3, 4, 1, 6, 5, 2] : [4, 1, 6, 5, 2, 3]
            #expect(weightThenName == goodFirst)
            // A descriptor first, then a string order.
            #expect(try s.query(PqPet.self).orderBy(SortDescriptor(\PqPet.weight)).orderBy("name").all().map(\.id)
                == [2, 5, 7, 3, 1, 6, 4])
            // limit, offset, count and first over the filtered, sorted set.
            let sorted = s.query(PqPet.self).filter(#Predicate<PqPet> { $0.born != nil }).orderBy(SortDescriptor(\PqPet.born))
            #expect(try sorted.all().map(\.id) == [1, 7, 5, 3, 6])
            #expect(w.pets.filter { $0.born != nil }.sorted(using: SortDescriptor(\PqPet.born)).map(\.id) == [1, 7, 5, 3, 6])
            #expect(try sorted.limit(2).offset(1).all().map(\.id) == [7, 5])
            #expect(try sorted.limit(2).offset(1).count() == 2)
            #expect(try sorted.count() == 5)
            #expect(try sorted.first()?.id == 1)
            // Following a relationship.
            #expect(try s.query(PqPet.self).using(w.owners[0]).relationship("pets").filter(heavy).all().map(\.id) == [1])
            #expect(try s.query(PqTag.self).using(w.pets[0]).filter(#Predicate<PqTag> { $0.label != "loud" })
                .relationship("tags").all().map(\.id) == [1])
            #expect(try s.query(PqPet.self).using(w.owners[0]).orderBy(SortDescriptor(\PqPet.name)).relationship("pets")
                .all().map(\.id) == [2, 1])
            // selectRelated loads the owners of the selected pets.
            let loaded = try s.query(PqPet.self).selectRelated("owner").filter(#Predicate<PqPet> { $0.owner?.age == 30 })
                .orderBy(SortDescriptor(\PqPet.id, order: .reverse)).all()
            #expect(loaded.map(\.id) == [6, 2, 1])
            #expect(loaded.map { $0.owner?.name } == ["Zo\u{EB}", "Ann", "Ann"])
        }
    }

    /// Strings sort by code point, nil first in forward order and last in reverse, as Swift's
    /// `SortDescriptor` sorts them.
    @Test(arguments: Backend.allCases)
    func sortingAsSwiftSorts(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            for descriptor in [SortDescriptor(\PqPet.name), SortDescriptor(\PqPet.name, order: .reverse)] {
                let swift = w.pets.sorted(using: descriptor).map(\.id)
                #expect(try s.query(PqPet.self).orderBy(descriptor).all().map(\.id) == swift)
            }
            #expect(w.pets.sorted(using: SortDescriptor(\PqPet.name)).map(\.id) == [5, 3, 4, 7, 2, 1, 6])
            #expect(try s.query(PqPet.self).orderBy(SortDescriptor(\PqPet.name)).all().map(\.id) == [5, 3, 4, 7, 2, 1, 6])
            let byPrice = [SortDescriptor(\PqPet.price, order: .reverse), SortDescriptor(\PqPet.id)]
            #expect(try s.query(PqPet.self).orderBy(byPrice).all().map(\.id) == [7, 3, 1, 6, 4, 5, 2])
            #expect(w.pets.sorted(using: byPrice).map(\.id) == [7, 3, 1, 6, 4, 5, 2])
            let byOwnerAge = [SortDescriptor(\PqOwner.age), SortDescriptor(\PqOwner.id, order: .reverse)]
            #expect(try s.query(PqOwner.self).orderBy(byOwnerAge).all().map(\.id) == [2, 4, 1, 3])
            #expect(w.owners.sorted(using: byOwnerAge).map(\.id) == [2, 4, 1, 3])
        }
    }

    /// Sorting through a foreign key: `SortDescriptor(\PqPet.owner!.name)`. Swift traps on a
    /// pet without an owner, so Swift's order is checked over the pets that have one; in SQL the
    /// others sort as nil (first in forward order, last in reverse).
    @Test(arguments: Backend.allCases)
    func sortingThroughAForeignKey(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            let byOwnerName = [SortDescriptor(\PqPet.owner!.name, order: .reverse), SortDescriptor(\PqPet.id)]
            let owned = #Predicate<PqPet> { $0.owner?.id != nil }
            #expect(try s.query(PqPet.self).filter(owned).orderBy(byOwnerName).all().map(\.id) == [6, 3, 1, 2, 5])
            #expect(try w.pets.filter { try owned.evaluate($0) }.sorted(using: byOwnerName).map(\.id) == [6, 3, 1, 2, 5])
            // All pets: no owner (4, 7) sorts as nil, as does an owner without a name (5): last in
            // reverse order, first in forward order.
            #expect(try s.query(PqPet.self).orderBy(byOwnerName).all().map(\.id) == [6, 3, 1, 2, 4, 5, 7])
            let byAge = [SortDescriptor(\PqPet.owner!.age), SortDescriptor(\PqPet.name)]
            #expect(try s.query(PqPet.self).orderBy(byAge).all().map(\.id) == [3, 4, 7, 2, 1, 6, 5])
            // Composed with a string order before it and a filter through the same relationship.
            #expect(try s.query(PqPet.self).filter(#Predicate<PqPet> { $0.owner?.age == 30 }).orderBy("good")
                .orderBy(SortDescriptor(\PqPet.owner!.name, order: .reverse)).all().map(\.id) == [2, 6, 1])
        }
    }

    /// What cannot be translated throws a typed error naming it, before any SQL runs; the
    /// database is left as it was and the session stays usable.
    @Test(arguments: Backend.allCases)
    func untranslatableThrowsAndChangesNothing(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            let before = try s.query(PqPet.self).orderBy("id").all().map(\.name)
            // A stored property without a Column.
            let unmapped = #Predicate<PqPet> { $0.nickname == "nick Rex" }
            #expect(try unmapped.evaluate(w.pets[0]))
            do {
                _ = try s.query(PqPet.self).filter(unmapped).all()
                Issue.record("an unmapped key path was translated")
            } catch let error as PredicateTranslationError {
                #expect(error.reason.contains("maps to no column of \"pq_pet\""))
                #expect(error.reason.contains("map it with a Column in PqPet's ORMModel"))
            }
            // A computed property.
            #expect(throws: PredicateTranslationError.self) {
                try s.query(PqPet.self).filter(#Predicate<PqPet> { $0.shout == "REX" }).count()
            }
            // A string filter that is fine does not save a bad predicate.
            #expect(throws: PredicateTranslationError.self) {
                try s.query(PqPet.self).filter("id > ?", 0).filter(unmapped).first()
            }
            // Sorting by an unmapped key path.
            #expect(throws: PredicateTranslationError.self) {
                try s.query(PqPet.self).orderBy(SortDescriptor(\PqPet.nickname)).all()
            }
            // Through a to-one relationship, a key path with an optional chain cannot be matched.
            #expect(throws: PredicateTranslationError.self) {
                try s.query(PqPet.self).orderBy(SortDescriptor(\PqPet.owner?.name)).all()
            }
            #expect(try s.query(PqPet.self).orderBy("id").all().map(\.name) == before)
            try s.commit()
            #expect(try s.query(PqPet.self).count() == 7)
        }
    }

    /// Where SQL cannot mean what Swift means: `String ==` is canonical equivalence in Swift and
    /// code-point equality in SQL; `count` counts grapheme clusters in Swift, code points in SQL.
    @Test(arguments: Backend.allCases)
    func documentedDifferences(_ backend: Backend) throws {
        try Self.withWorld(backend) { _, s, w throws in
            let nfc = "Caf\u{E9}"
            let equal = #Predicate<PqPet> { $0.name == nfc }
            #expect(try w.pets.filter { try equal.evaluate($0) }.map(\.id) == [7])
            #expect(try s.query(PqPet.self).filter(equal).all().map(\.id) == [])
            let long = #Predicate<PqPet> { $0.name.count == 5 }
            #expect(try w.pets.filter { try long.evaluate($0) }.map(\.id) == [])
            #expect(try s.query(PqPet.self).filter(long).all().map(\.id) == [7])
        }
    }
}
