import Foundation
import Testing
import Unity

// The code of the "Bulk writes and exports" article, compiled and run on both backends.

struct SensorReading {
    var sensor: String
    var at: Date
    var celsius: Double
}

@Suite("Documentation: bulk writes and exports")
struct BulkWriteExamples {
    @Test(arguments: Backend.allCases)
    func loadingAndExporting(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try db.write { conn in
                try conn.execute(.createTable(SQLCreateTable("reading", columns: [
                    SQLColumnDefinition("id", .int64, primaryKey: .autoIncrement),
                    SQLColumnDefinition("sensor", .text, notNull: true),
                    SQLColumnDefinition("at", .date, notNull: true),
                    SQLColumnDefinition("celsius", .double, notNull: true),
                ])))
            }
            let start = Date(timeIntervalSince1970: 1_700_000_000)
            let readings = (0..<3).map { SensorReading(sensor: "s\($0)", at: start.addingTimeInterval(Double(-$0 - 1)), celsius: 18.5 + Double($0)) }

            let written = try db.copy(into: "reading", columns: ["sensor", "at", "celsius"], rows: readings.map { reading in
                [.text(reading.sensor), .date(reading.at), .double(reading.celsius)]
            })
            #expect(written == 3)

            var next = 0
            try db.withConnection { conn in
                try conn.copy(into: "reading", columns: ["sensor", "at", "celsius"]) { row in
                    guard next < 10_000 else { return false }
                    row = [.text("s\(next % 10)"), .date(start.addingTimeInterval(Double(next))), .double(20 + Double(next % 7))]
                    next += 1
                    return true
                }
            }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT count(*) FROM reading") } == 10_003)

            var lines: [String] = []
            let exported = try db.copyOut(SQLSelect(from: "reading").orderBy(SQLExpression.column("at").asc)) { row in
                lines.append("\(try row.decode(String.self, column: "sensor")),\(try row.decode(Double.self, column: "celsius"))")
            }
            #expect(exported == 10_003)
            #expect(lines.prefix(4) == ["s2,20.5", "s1,19.5", "s0,18.5", "s0,20.0"])
            #expect(lines.last == "s9,23.0")
        }
    }

    @Test func theCopyStatementRendersQuoted() throws {
        let sql = try SQLDialect.postgres.renderUncached(.copyFrom(SQLCopyFrom(into: "reading", columns: ["sensor", "at", "celsius"]))).sql
        #expect(sql == "COPY \"reading\" (\"sensor\", \"at\", \"celsius\") FROM STDIN (FORMAT binary)")
    }
}
