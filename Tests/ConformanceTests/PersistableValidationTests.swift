import Foundation
import Testing
import Unity
import UnityPersistable

private typealias Hat = PersistableFixtures.Hat
private typealias Order = PersistableFixtures.Order

@Suite("Persistable validations and enums")
struct PersistableValidationTests {
    @Test
    func presenceAndRanges() throws {
        let hat = Hat(color: "", brimSize: 20, storeId: 1)
        let validation = Validation("hat")
            .validate(presenceOf: "color", hat.color)
            .validate("brimSize", hat.brimSize, inRange: 5...15)
        #expect(!validation.valid)
        #expect(validation.errors == [
            ValidationError(modelName: "hat", key: "color", message: "blank"),
            ValidationError(modelName: "hat", key: "brimSize", message: "tooHigh", data: ["max": "15"]),
        ])
        #expect(validation["color"].map(\.message) == ["blank"])
        #expect(validation["store"].isEmpty)
        let nilString: String? = nil
        #expect(Validation("hat").validate(presenceOf: "color", nilString).errors.map(\.message) == ["blank"])
        #expect(Validation("hat").validate(presenceOf: "color", nil).errors.map(\.message) == ["blank"])
        #expect(Validation("hat").validate(presenceOf: "color", "red").valid)
        #expect(Validation("hat").validate(presenceOf: "size", 0).valid)
        #expect(Validation("hat").validate("brimSize", 4, inBounds: 5...15).errors
            == [ValidationError(modelName: "hat", key: "brimSize", message: "tooLow", data: ["min": "5"])])
        #expect(Validation("hat").validate("brimSize", 15, inRange: 5...15).valid)
        // Half-open: the upper bound is out.
        #expect(Validation("hat").validate("brimSize", 15, inRange: 5..<15).errors.map(\.message) == ["tooHigh"])
        #expect(Validation("hat").validate("brimSize", 14, inBounds: 5..<15).valid)
        #expect(Validation(Hat.self).modelName == "hat")
        // Messages are Tailor's; only the localization keys are snake-cased.
        let low = try #require(Validation("hat").validate("brimSize", 4, inRange: 5...15).errors.first)
        #expect(low.message == "tooLow")
        #expect(low.localizationKeys == ["hat.errors.brim_size.too_low", "hat.errors.too_low",
                                         "model.errors.brim_size.too_low", "model.errors.too_low"])
        #expect(low.localize(DictionaryLocalization(["model.errors.too_low": "at least \\(min)"])) == "at least 5")
        let high = try #require(Validation("hat").validate("brimSize", 16, inRange: 5..<15).errors.first)
        #expect(high.localizationKeys.first == "hat.errors.brim_size.too_high")
    }

    /// One check of a range: the value, and the error it must give (nil: valid).
    struct RangeCase: Sendable, CustomStringConvertible {
        let value: Int
        let expected: ValidationError?
        var description: String { "\(value) → \(expected.map(\.message) ?? "valid")" }
    }

    static func tooLow(_ min: Int) -> ValidationError {
        ValidationError(modelName: "hat", key: "brimSize", message: "tooLow", data: ["min": "\(min)"])
    }

    static func tooHigh(_ max: Int) -> ValidationError {
        ValidationError(modelName: "hat", key: "brimSize", message: "tooHigh", data: ["max": "\(max)"])
    }

    /// `5...15`: both bounds are in; one step beyond either is out, with Tailor's message and data.
    static let closedCases: [RangeCase] = [
        RangeCase(value: Int.min, expected: tooLow(5)),
        RangeCase(value: 4, expected: tooLow(5)),
        RangeCase(value: 5, expected: nil),
        RangeCase(value: 6, expected: nil),
        RangeCase(value: 14, expected: nil),
        RangeCase(value: 15, expected: nil),
        RangeCase(value: 16, expected: tooHigh(15)),
        RangeCase(value: Int.max, expected: tooHigh(15)),
    ]

    /// `5..<15`: the lower bound is in, the upper bound is out.
    static let halfOpenCases: [RangeCase] = [
        RangeCase(value: Int.min, expected: tooLow(5)),
        RangeCase(value: 4, expected: tooLow(5)),
        RangeCase(value: 5, expected: nil),
        RangeCase(value: 6, expected: nil),
        RangeCase(value: 14, expected: nil),
        RangeCase(value: 15, expected: tooHigh(15)),
        RangeCase(value: 16, expected: tooHigh(15)),
    ]

    @Test(arguments: closedCases)
    func closedRangeBounds(_ check: RangeCase) {
        let expected = check.expected.map { [$0] } ?? []
        #expect(Validation("hat").validate("brimSize", check.value, inRange: 5...15).errors == expected)
        #expect(Validation("hat").validate("brimSize", check.value, inBounds: 5...15).errors == expected)
    }

    @Test(arguments: halfOpenCases)
    func halfOpenRangeBounds(_ check: RangeCase) {
        let expected = check.expected.map { [$0] } ?? []
        #expect(Validation("hat").validate("brimSize", check.value, inRange: 5..<15).errors == expected)
        #expect(Validation("hat").validate("brimSize", check.value, inBounds: 5..<15).errors == expected)
    }

    @Test
    func rangeBoundsOfOtherComparables() {
        // Doubles: the bound itself, and the next representable value past it.
        #expect(Validation("hat").validate("weight", 0.5, inRange: 0.5...2.0).valid)
        #expect(Validation("hat").validate("weight", 2.0, inRange: 0.5...2.0).valid)
        #expect(Validation("hat").validate("weight", 0.5.nextDown, inRange: 0.5...2.0).errors.map(\.message) == ["tooLow"])
        #expect(Validation("hat").validate("weight", 2.0.nextUp, inRange: 0.5...2.0).errors.map(\.message) == ["tooHigh"])
        #expect(Validation("hat").validate("weight", 2.0.nextDown, inRange: 0.5..<2.0).valid)
        #expect(Validation("hat").validate("weight", 2.0, inRange: 0.5..<2.0).errors
            == [ValidationError(modelName: "hat", key: "weight", message: "tooHigh", data: ["max": "2.0"])])
        // Strings compare as Swift compares them; a one-value range holds only that value.
        #expect(Validation("hat").validate("size", "m", inRange: "m"..."m").valid)
        #expect(Validation("hat").validate("size", "l", inRange: "m"..."m").errors.map(\.message) == ["tooLow"])
        #expect(Validation("hat").validate("size", "n", inRange: "m"..."m").errors.map(\.message) == ["tooHigh"])
        // An empty half-open range holds nothing: its bound is too high.
        #expect(Validation("hat").validate("size", 3, inRange: 3..<3).errors.map(\.message) == ["tooHigh"])
        // Errors accumulate in order, each on its own key.
        let both = Validation("hat").validate("a", 0, inRange: 1...2).validate("b", 3, inRange: 1..<3)
        #expect(both.errors.map(\.key) == ["a", "b"])
        #expect(both.errors.map(\.message) == ["tooLow", "tooHigh"])
    }

    @Test
    func customBlocksWithErrorAndLocalization() {
        let validation = Validation("hat")
            .validate { [("color", "ugly", ["shade": "puce"])] }
            .withError("brimSize", "tooLow", data: ["min": "5"])
        #expect(validation.errors.count == 2)
        #expect(validation.errors[0] == ValidationError(modelName: "hat", key: "color", message: "ugly", data: ["shade": "puce"]))
        let brim = validation.errors[1]
        #expect(brim.localizationKeys == ["hat.errors.brim_size.too_low", "hat.errors.too_low",
                                         "model.errors.brim_size.too_low", "model.errors.too_low"])
        // The lookup chain, most specific first, with data interpolated.
        let table: [String: String] = [
            "hat.errors.brim_size.too_low": "a hat's brim must be at least \\(min)",
            "hat.errors.too_low": "hat value too low",
            "model.errors.brim_size.too_low": "brim too low",
            "model.errors.too_low": "must be at least \\(min)",
        ]
        var remaining = table
        let expected = ["a hat's brim must be at least 5", "hat value too low", "brim too low", "must be at least 5"]
        for text in expected {
            #expect(brim.localize(DictionaryLocalization(remaining)) == text)
            if let key = brim.localizationKeys.first(where: { remaining[$0] != nil }) { remaining[key] = nil }
        }
        #expect(brim.localize(DictionaryLocalization(remaining)) == "tooLow")
        #expect(validation.errors[0].localize(DictionaryLocalization(["model.errors.ugly": "is \\(shade)"])) == "is puce")
    }

    @Test(arguments: Backend.allCases)
    func uniqueness(_ backend: Backend) throws {
        let (configuration, logged) = PersistableFixtures.capturingConfiguration()
        try PersistableFixtures.withWorld(backend, configuration: configuration) { db in
            let red = try Hat(color: "red", brimSize: 10, storeId: 1).saveOrThrow()
            let candidate = Hat(color: "red", brimSize: 12, storeId: 1)
            #expect(Validation("hat").validate(uniquenessOf: ["color": candidate.color], on: candidate).errors
                == [ValidationError(modelName: "hat", key: "color", message: "taken")])
            // The record's own row does not count.
            #expect(Validation("hat").validate(uniquenessOf: ["color": red.color], on: red).valid)
            // Several fields: all must match; the key is the sorted names joined with _.
            #expect(Validation("hat").validate(uniquenessOf: ["color": "red", "brim_size": 12], on: candidate).valid)
            #expect(Validation("hat").validate(uniquenessOf: ["store_id": 1, "color": "red"], on: candidate, db).errors.map(\.key)
                == ["color_store_id"])
            // nil matches a stored NULL (Tailor's choice, unlike SQL's =).
            _ = try Order(hatId: 1, customerId: nil).saveOrThrow()
            let other = Order(hatId: 2, customerId: nil)
            #expect(Validation("order").validate(uniquenessOf: ["customer_id": nil], on: other).errors.map(\.message) == ["taken"])
            #expect(Validation("order").validate(uniquenessOf: ["customer_id": 9], on: other).valid)
            // A check the database cannot answer fails the validation and is logged.
            let broken = Validation("order").validate(uniquenessOf: ["no_such_column": 1], on: other)
            #expect(broken.errors.map(\.message) == ["unchecked"])
            #expect(logged.value.contains { $0.contains("could not be checked") })
        }
    }

    enum HatStyle: StringPersistableEnum, Equatable {
        case fedora, DarkBlue, wideBrim
        static let cases: [HatStyle] = [.fedora, .DarkBlue, .wideBrim]
    }

    enum Shade: String, StringPersistableEnum {
        case lightGray = "LG"
        case red = "R"
        static let cases: [Shade] = [.lightGray, .red]
    }

    enum PlainShade: String, DatabaseValueConvertible {
        case lightGray = "LG"
    }

    @Test(arguments: Backend.allCases)
    func persistableEnums(_ backend: Backend) throws {
        #expect(HatStyle.DarkBlue.databaseValue == .text("dark_blue"))
        #expect(HatStyle.wideBrim.databaseValue == .text("wide_brim"))
        #expect(Shade.lightGray.databaseValue == .text("light_gray"))
        #expect(PlainShade.lightGray.databaseValue == .text("LG"))
        #expect(HatStyle.fromDatabaseValue(.text("fedora")) == .fedora)
        #expect(HatStyle.fromDatabaseValue(.text("Fedora")) == nil)
        #expect(Shade.fromDatabaseValue(.text("LG")) == nil)
        try withTestDatabase(backend) { db in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("styles", columns: [
                    SQLColumnDefinition("style", .text), SQLColumnDefinition("shade", .text),
                ])))
                try conn.execute(.insert(SQLInsert(into: "styles", values: [
                    "style": HatStyle.DarkBlue.databaseValue, "shade": Shade.red.databaseValue,
                ])))
            }
            let row = DatabaseRow(row: try #require(try db.read { try $0.fetchOne(sql: "SELECT style, shade FROM styles") }))
            #expect(row["style"] == .text("dark_blue"))
            #expect(row["shade"] == .text("red"))
            let style: HatStyle = try row.read("style")
            let shade: Shade? = try row.read("shade")
            #expect(style == .DarkBlue && shade == .red)
            #expect(throws: PersistableError.fieldType(name: "shade", actualType: "text", desiredType: "HatStyle")) {
                let _: HatStyle = try row.read("shade")
            }
        }
    }
}
