import Foundation
import Testing
import UnityORMFields

// The code of the Upserts article of the UnityORM catalog, compiled and run on both backends
// (DocumentationExamplesTests checks that every block stands here line for line).

@ORMFields
final class Badge: AmigoModel {
    var id = 0
    var code = ""
    var label = ""
    var level = 0
}

@Suite struct ORMUpsertExamples {
    static func models() -> [ORMModel] {
        let badgeModel = ORMModel(Badge.self,
            Column("id", type: Int.self, primaryKey: true),
            Column("code", type: String.self, unique: true),
            Column("label", type: String.self),
            Column("level", type: Int.self)
        )
        return [badgeModel]
    }

    @Test(arguments: Backend.allCases)
    func theArticleRunsAsWritten(_ backend: Backend) throws {
        let models = Self.models()
        try withAmigo(backend, models) { amigo, test in
            let gold = Badge()
            gold.code = "gold"
            gold.label = "Gold"
            gold.level = 3
            let session = try amigo.session
            try session.insertOrIgnore(gold, onConflict: ["code"])       // .inserted; gold.id is now 1

            let goldAgain = Badge()
            goldAgain.code = "gold"
            goldAgain.label = "Golden"
            goldAgain.level = 5
            try session.insertOrUpdate(goldAgain, onConflict: ["code"], updating: ["label"])   // .updated
            // goldAgain.id == 1, goldAgain.label == "Golden", goldAgain.level == 3: the row as stored
            try session.commit()
            #expect(gold.id == 1)
            #expect(goldAgain.id == 1)
            #expect(goldAgain.level == 3)
            #expect(goldAgain.label == "Golden")

            let demoted = Badge()
            demoted.code = "gold"
            demoted.label = "Gold"
            demoted.level = 1
            let outcome = try session.insertOrUpdate(demoted, onConflict: ["code"],
                                                     where: session.query(Badge.self).filter("level < ?", 3))
            // outcome == .unchanged: the stored level is 3; demoted.level is 3 again
            #expect(outcome == .unchanged)
            #expect(demoted.level == 3)
            #expect(demoted.label == "Golden")
            try session.commit()
            let stored = try test.database.fetchAll(sql: "SELECT id, code, label, level FROM \"\(models[0].tableName)\"")
            #expect(stored.map { Array($0.values) } == [[.integer(1), .text("gold"), .text("Golden"), .integer(3)]])
        }
    }
}
