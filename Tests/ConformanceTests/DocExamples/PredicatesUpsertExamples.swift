import Foundation
import Testing
import Unity
import UnityPredicates

// The code of the Upserts article of the UnityPredicates catalog, compiled and run on both
// backends (DocumentationExamplesTests checks that every block stands here line for line).

struct Topic: ManagedObjectConvertible, Equatable {
    var slug = ""
    var title = ""
    var views = 0
    static let entityName = "Topic"
    static let attributes: Set<Attribute<Topic>> = [
        Attribute(\.slug, "slug", unique: true), Attribute(\.title, "title"), Attribute(\.views, "views"),
    ]
}

@Suite struct PredicatesUpsertExamples {
    @Test(arguments: Backend.allCases)
    func theArticleRunsAsWritten(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            let container = PersistentContainer(database: db, models: [Topic.self])
            let outcomes = try container.perform { context in
                let first = try context.insertOrIgnore(Topic(slug: "swift", title: "Swift", views: 10), onConflict: [\Topic.slug])
                let again = try context.insertOrIgnore(Topic(slug: "swift", title: "Taylor", views: 0), onConflict: [\Topic.slug])
                // again.value.decode() is the stored topic: title "Swift", 10 views
                let renamed = try context.insertOrUpdate(Topic(slug: "swift", title: "Swift 6", views: 0),
                                                         onConflict: [\Topic.slug], updating: [\Topic.title])
                return [first.outcome, again.outcome, renamed.outcome]   // [.inserted, .unchanged, .updated]
            }
            #expect(outcomes == [.inserted, .unchanged, .updated])
            // What `again` returned: the stored topic, read back inside the perform.
            let stored = try container.perform { context in
                try context.insertOrIgnore(Topic(slug: "swift", title: "Taylor", views: 0), onConflict: [\Topic.slug]).value.decode()
            }
            #expect(stored == Topic(slug: "swift", title: "Swift 6", views: 10))

            let kept = try container.perform { context in
                try context.insertOrUpdate(Topic(slug: "swift", title: "Old news", views: 0), onConflict: [\Topic.slug],
                                           where: \Topic.views < 5).outcome
            }
            // kept == .unchanged: the stored topic has 10 views
            #expect(kept == .unchanged)
            #expect(try container.perform { context in try context.fetch(Topic.all).map { try $0.decode() } }
                == [Topic(slug: "swift", title: "Swift 6", views: 10)])
        }
    }
}
