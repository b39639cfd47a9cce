import Foundation
import Testing
import Unity

/// The SQL-first flavor encodes each `Codable` model against the columns the last model of
/// its type encoded. A model whose `encode(to:)` writes other columns, in another order, or a
/// column twice must still be saved with exactly its own values, alone and in a batch.
@Suite("ModelDef: models of one type that encode different columns")
struct ModelDefEncodingShapeTests {
    /// Stored in the `Thing` table; how it encodes itself depends on `shape`.
    struct ShiftingThing: ModelDef {
        enum Shape: Int { case plain, reversed, withoutName, nameTwice, nameFirstAndLast }
        var tid: String
        var name: String?
        var shape: Shape = .plain

        typealias ModelType = ShiftingThing
        static let tableName = "Thing"
        var existsInDatabase = false
        var primaryKeys: [any CodingKey] { [CodingKeys.tid] }
        var secondaryKeys: [any CodingKey] { [] }
        static let syncable = false

        enum CodingKeys: String, CodingKey { case tid, name }

        init(tid: String, name: String?, shape: Shape) {
            self.tid = tid
            self.name = name
            self.shape = shape
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            tid = try container.decode(String.self, forKey: .tid)
            name = try container.decodeIfPresent(String.self, forKey: .name)
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            switch shape {
            case .plain:
                try container.encode(tid, forKey: .tid)
                try container.encode(name, forKey: .name)
            case .reversed:
                try container.encode(name, forKey: .name)
                try container.encode(tid, forKey: .tid)
            case .withoutName:
                try container.encode(tid, forKey: .tid)
            case .nameTwice:
                try container.encode(tid, forKey: .tid)
                try container.encode("overwritten", forKey: .name)
                try container.encode(name, forKey: .name)
            case .nameFirstAndLast:
                try container.encode("overwritten", forKey: .name)
                try container.encode(tid, forKey: .tid)
                try container.encode(name, forKey: .name)
            }
        }
    }

    /// The shapes in an order that starts, leaves and comes back to the expected columns.
    static let shapes: [ShiftingThing.Shape] = [.plain, .plain, .nameTwice, .reversed, .plain, .withoutName,
                                                .nameFirstAndLast, .plain, .withoutName, .plain]

    static func things(_ count: Int, prefix: String) -> [ShiftingThing] {
        (0..<count).map { i in
            ShiftingThing(tid: String(format: "\(prefix)%04d", i), name: "name \(i)", shape: shapes[i % shapes.count])
        }
    }

    /// What the table holds for `thing`: its name, or NULL when its encoding left the column out.
    static func storedName(_ thing: ShiftingThing) -> String? {
        thing.shape == .withoutName ? nil : thing.name
    }

    @Test(arguments: Backend.allCases)
    func eachModelIsSavedWithItsOwnValues(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try ModelDefFixtures.migrate(db, backend)
            // One at a time, then as one batch large enough for COPY on PostgreSQL.
            let single = Self.things(Self.shapes.count * 2, prefix: "s")
            for thing in single { try thing.save(in: db) }
            let batch = Self.things(max(Connection.copyThreshold, 300) + 7, prefix: "b")
            try DBManager.executeStatements(batch.map { try $0.createSaveStatement() }, in: db)

            let stored = try ModelDefFixtures.Thing.allInstances(orderedBy: [.ascending("tid")], in: db)
            let expected = (batch + single).map { (tid: $0.tid, name: Self.storedName($0)) }
            #expect(stored.map(\.tid) == expected.map(\.tid))
            #expect(stored.map(\.name) == expected.map(\.name))
            // Known literals, beside the comparison with the models.
            #expect(stored.first { $0.tid == "s0002" }?.name == "name 2")
            #expect(stored.first { $0.tid == "s0003" }?.name == "name 3")
            #expect(stored.first { $0.tid == "s0005" }?.name == nil)
            #expect(stored.first { $0.tid == "s0006" }?.name == "name 6")
            #expect(stored.first { $0.tid == "b0016" }?.name == "name 16")
            #expect(stored.first { $0.tid == "b0015" }?.name == nil)
            #expect(try ModelDefFixtures.Thing.numberOfInstancesWhere("name = ?", "overwritten", in: db) == 0)
        }
    }
}
