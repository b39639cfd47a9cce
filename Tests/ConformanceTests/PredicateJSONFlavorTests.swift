import Foundation
import Testing
import Unity
import UnityORMFields
import UnityPersistable
import UnityPredicates

extension PjAddress: PrimitiveAttribute, SupportedAttributeType {}

/// `#Predicate` through a key path into a `Codable` property in the Persistable, ORM and
/// Predicates flavors (the SQL-first flavor's are in `PredicateSQLJSONTests`), on the shared
/// addresses: each answer checked against literal ids and against `predicate.evaluate`.
@Suite("Each flavor: #Predicate into JSON documents")
struct PredicateJSONFlavorTests {
    // MARK: Persistable

    struct PjHome: Persistable, PredicateMappable, Sendable {
        var id: Int?
        var address: PjAddress
        var previous: PjAddress?
        static var tableName: String { "pj_home" }
        init(address: PjAddress, previous: PjAddress?) {
            self.address = address
            self.previous = previous
        }
        init(databaseRow: DatabaseRow) throws {
            id = try databaseRow.read("id")
            address = try databaseRow.read("address")
            previous = try databaseRow.read("previous")
        }
        func valuesToPersist() -> [String: (any DatabaseValueConvertible)?] { ["address": address, "previous": previous] }
        static let predicateSchema = PredicateSchema(PjHome.self)
            .column(\PjHome.id, "id")
            .column(\PjHome.address, "address")
            .column(\PjHome.previous, "previous")
    }

    @Test(arguments: Backend.allCases)
    func persistable(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("pj_home", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("address", .json, notNull: true),
                    SQLColumnDefinition("previous", .json),
                ])))
            }
            for (index, address) in PjFixture.addresses.enumerated() {
                _ = try PjHome(address: address, previous: PjFixture.previous[index + 1]).saveOrThrow(db)
            }
            try PjFixture.writeExplicitNulls(table: "pj_home", in: db)
            let homes = try Query<PjHome>().order("id", .orderedAscending).allOrThrow(db)
            func check(_ predicate: Predicate<PjHome>, _ expected: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
                let swift = try homes.filter { try predicate.evaluate($0) }.compactMap(\.id)
                let sql = try Query<PjHome>().filter(predicate).order("id", .orderedAscending).allOrThrow(db).compactMap(\.id)
                #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
                #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
            }
            try check(#Predicate<PjHome> { $0.address.city == "Oslo" }, [1])
            try check(#Predicate<PjHome> { $0.address.zip != "0150" }, [2, 3, 4, 5])
            try check(#Predicate<PjHome> { $0.address.geo?.level == nil && $0.address.number >= 0 }, [1, 5])
            let epoch = Date(timeIntervalSince1970: 0)
            try check(#Predicate<PjHome> { $0.address.since < epoch }, [1, 2, 5])
            try check(#Predicate<PjHome> { $0.previous?.city == "Troms\u{F8}" }, [4])
        }
    }

    // MARK: ORM

    @ORMFields
    final class PjResident: AmigoModel {
        var id = 0
        var address: PjAddress?
    }

    static func residentModel() -> ORMModel {
        ORMModel(PjResident.self, table: "pj_resident",
                 Column("id", type: Int.self, primaryKey: true),
                 Column("address", type: PjAddress.self))
    }

    @Test(arguments: Backend.allCases)
    func orm(_ backend: Backend) throws {
        try withAmigo(backend, [Self.residentModel()]) { amigo, _ in
            let session = try amigo.session
            let residents = PjFixture.addresses.map { address in
                let resident = PjResident()
                resident.address = address
                return resident
            } + [PjResident()]   // 6: no address at all
            try session.add(residents)
            #expect(residents.map(\.id) == [1, 2, 3, 4, 5, 6])
            func check(_ predicate: Predicate<PjResident>, _ expected: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
                let swift = try residents.filter { try predicate.evaluate($0) }.map(\.id)
                let sql = try session.query(PjResident.self).filter(predicate).orderBy("id").all().map(\.id)
                #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
                #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
            }
            try check(#Predicate<PjResident> { $0.address?.city == "Oslo" }, [1])
            try check(#Predicate<PjResident> { $0.address?.city != "Oslo" }, [2, 3, 4, 5, 6])
            try check(#Predicate<PjResident> { $0.address == nil }, [6])
            try check(#Predicate<PjResident> { $0.address?.zip == nil }, [2, 4, 6])
            let low = Decimal(string: "12345678901234567890.12") ?? 0
            try check(#Predicate<PjResident> { ($0.address?.price ?? 0) >= low }, [1, 3])
            try check(#Predicate<PjResident> { $0.address?.verified == true }, [1, 3])
        }
    }

    // MARK: Predicates

    struct PjPlace: ManagedObjectConvertible, Equatable {
        var code = 0
        var address: PjAddress?
        static let entityName = "PjPlace"
        static let attributes: Set<Attribute<PjPlace>> = [Attribute(\.code, "code"), Attribute(\.address, "address")]
    }

    @Test(arguments: Backend.allCases)
    func predicates(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: [PjPlace.self])
            let places = PjFixture.addresses.enumerated().map { PjPlace(code: $0.offset + 1, address: $0.element) } + [PjPlace(code: 6)]
            try container.perform { ctx in
                for place in places { _ = try ctx.insert(place) }
            }
            func check(_ predicate: Predicate<PjPlace>, _ expected: [Int], sourceLocation: SourceLocation = #_sourceLocation) throws {
                let swift = try places.filter { try predicate.evaluate($0) }.map(\.code)
                let sql = try container.perform { ctx in try ctx.fetch(PjPlace.all.where(predicate).sort(\.code), \.code) }
                #expect(swift == expected, "Swift's own answer", sourceLocation: sourceLocation)
                #expect(sql == expected, "the SQL answer", sourceLocation: sourceLocation)
            }
            try check(#Predicate<PjPlace> { $0.address?.city == "Oslo" }, [1])
            try check(#Predicate<PjPlace> { $0.address?.geo?.lat != 59.9 }, [2, 3, 4, 5, 6])
            try check(#Predicate<PjPlace> { ($0.address?.number ?? 0) < 0 }, [2, 4])
            let home: PjKind? = .home
            try check(#Predicate<PjPlace> { $0.address?.kind == home }, [1, 4, 5])
        }
    }
}
