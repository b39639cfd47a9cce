import Foundation
import Testing
import UnityORM

/// Every spelling of the filter language against literal id lists, so that an operator read
/// as its neighbour (`<` as `<=`, `!=` as `=`), a side swapped or a NULL mishandled fails.
@Suite struct ORMFilterTests {
    typealias Row = AmigoSeed.AllTypes

    /// Rows 1…5: int 10…50, double 0.5…4.5, decimal 1.10…5.50, string "a"…"e", bool true on
    /// the odd ids, note "x" on ids 2 and 4 (NULL elsewhere).
    func seed(_ amigo: Amigo) throws {
        let session = try amigo.session
        for i in 1...5 {
            let r = Row()
            r.int = i * 10
            r.double = Double(i) - 0.5
            r.decimal = Decimal(string: "\(i).\(i)0")!
            r.string = ["a", "b", "c", "d", "e"][i - 1]
            r.bool = i % 2 == 1
            r.note = i % 2 == 0 ? "x" : nil
            try session.add(r)
        }
        try session.commit()
    }

    func ids(_ amigo: Amigo, _ filter: String, _ arguments: any DatabaseValueConvertible...) throws -> [Int] {
        var q = amigo.query(Row.self).orderBy("id")
        q = arguments.isEmpty ? q.filter(filter) : q.filter(filter, arguments[0])
        return try q.all().map(\.id)
    }

    @Test(arguments: Backend.allCases)
    func everyComparisonSpelling(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, _ in
            try seed(amigo)
            let expected: [(String, [Int])] = [
                ("id < 3", [1, 2]), ("id <= 3", [1, 2, 3]), ("id =< 3", [1, 2, 3]),
                ("id > 3", [4, 5]), ("id >= 3", [3, 4, 5]), ("id => 3", [3, 4, 5]),
                ("id = 3", [3]), ("id == 3", [3]), ("id != 3", [1, 2, 4, 5]), ("id <> 3", [1, 2, 4, 5]),
                // The column on the right: the operator keeps its direction.
                ("3 > id", [1, 2]), ("3 >= id", [1, 2, 3]), ("3 < id", [4, 5]), ("3 =< id", [3, 4, 5]),
                ("3 => id", [1, 2, 3]), ("3 <= id", [3, 4, 5]), ("3 <> id", [1, 2, 4, 5]), ("3 == id", [3]),
                // Each column type.
                ("int < 30", [1, 2]), ("int >= 40", [4, 5]), ("double < 2.5", [1, 2]), ("double <= 2.5", [1, 2, 3]),
                ("decimal > 3.3", [4, 5]), ("decimal >= 3.3", [3, 4, 5]), ("decimal = 2.2", [2]),
                ("string < 'c'", [1, 2]), ("string >= \"c\"", [3, 4, 5]), ("string != 'c'", [1, 2, 4, 5]),
                ("bool = true", [1, 3, 5]), ("bool == false", [2, 4]), ("bool = yes", [1, 3, 5]), ("bool != 1", [2, 4]),
                // Two columns.
                ("double < id", [1, 2, 3, 4, 5]), ("double > id", []), ("int > id", [1, 2, 3, 4, 5]),
                // Negative numbers and exponents.
                ("id > -1", [1, 2, 3, 4, 5]), ("double < 2e0", [1, 2]), ("id >= 4.0", [4, 5]),
            ]
            for (filter, ids) in expected {
                #expect(try self.ids(amigo, filter) == ids, "\(filter)")
            }
            #expect(try ids(amigo, "id < ?", 3) == [1, 2])
            #expect(try ids(amigo, "? <= id", 4) == [4, 5])
            #expect(try ids(amigo, "string = ?", "d") == [4])
        }
    }

    /// A fraction compared with an integer column is compared as a number, as NSPredicate and
    /// SQL do; only what cannot be a number is refused.
    @Test(arguments: Backend.allCases)
    func aFractionComparesWithAnIntegerColumnAsANumber(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, _ in
            try seed(amigo)
            let expected: [(String, [Int])] = [
                ("id < 2.5", [1, 2]), ("id <= 2.5", [1, 2]), ("id > 2.5", [3, 4, 5]), ("id >= 2.5", [3, 4, 5]),
                ("id = 2.5", []), ("id != 2.5", [1, 2, 3, 4, 5]), ("2.5 > id", [1, 2]), ("id < '2.5'", [1, 2]),
                ("int > 25.5", [3, 4, 5]), ("id > -0.5", [1, 2, 3, 4, 5]), ("id < 1e1", [1, 2, 3, 4, 5]),
            ]
            for (filter, ids) in expected {
                #expect(try self.ids(amigo, filter) == ids, "\(filter)")
            }
            #expect(try ids(amigo, "id < ?", 2.5) == [1, 2])
            #expect(try ids(amigo, "id >= ?", Decimal(string: "4.5")!) == [5])
            #expect(try ids(amigo, "id = ?", Decimal(4)) == [4])
            // What no number can be is refused before the database sees it.
            for filter in ["id = 'seven'", "bool = 2", "double = 'x'", "id < '2.5.1'"] {
                #expect(throws: ORMError.self, "\(filter)") { try self.ids(amigo, filter) }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func nullAndTheLogicalOperators(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, _ in
            try seed(amigo)
            let expected: [(String, [Int])] = [
                ("note = nil", [1, 3, 5]), ("note == NULL", [1, 3, 5]), ("nil = note", [1, 3, 5]),
                ("note != nil", [2, 4]), ("note <> null", [2, 4]), ("NULL != note", [2, 4]),
                ("note = 'x'", [2, 4]), ("note != 'x'", []),
                ("id > 1 AND id < 4", [2, 3]), ("id > 1 && id < 4", [2, 3]), ("id > 1 and id < 4", [2, 3]),
                ("id = 1 OR id = 5", [1, 5]), ("id = 1 || id = 5", [1, 5]), ("id = 1 or id = 5", [1, 5]),
                ("NOT id = 1", [2, 3, 4, 5]), ("!(id = 1)", [2, 3, 4, 5]), ("not (id < 3)", [3, 4, 5]),
                // AND binds tighter than OR; parentheses change it.
                ("id = 1 OR id = 2 AND bool = true", [1]), ("(id = 1 OR id = 2) AND bool = false", [2]),
                ("id = 5 OR id < 3 AND id > 1", [2, 5]), ("NOT id = 1 AND NOT id = 2", [3, 4, 5]),
            ]
            for (filter, ids) in expected {
                #expect(try self.ids(amigo, filter) == ids, "\(filter)")
            }
            // Chained filters AND together.
            #expect(try amigo.query(Row.self).filter("id > 1").filter("id < 4").orderBy("id").all().map(\.id) == [2, 3])
        }
    }

    @Test(arguments: Backend.allCases)
    func orderLimitAndOffset(_ backend: Backend) throws {
        try withAmigo(backend, [AmigoSeed.allTypes()]) { amigo, _ in
            try seed(amigo)
            let q = amigo.query(Row.self)
            #expect(try q.orderBy("decimal", ascending: false).all().map(\.id) == [5, 4, 3, 2, 1])
            #expect(try q.orderBy("bool").orderBy("id", ascending: false).all().map(\.id) == [4, 2, 5, 3, 1])
            #expect(try q.orderBy("id").limit(2).offset(1).all().map(\.id) == [2, 3])
            #expect(try q.orderBy("id").offset(4).all().map(\.id) == [5])
            #expect(try q.orderBy("id").limit(0).all().map(\.id) == [])
            #expect(try q.filter("id > 1").limit(2).count() == 2)
            #expect(try q.filter("id > 1").offset(3).count() == 1)
            #expect(try q.filter("id > 1").count() == 4)
            #expect(try q.orderBy("id", ascending: false).first()?.id == 5)
        }
    }
}
