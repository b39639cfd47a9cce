// unity-observe-writer: a second process that commits to a database at a steady pace, for the
// observation tests and the `observe` benchmark workload.
//
//   unity-observe-writer sqlite PATH        --table T --commits N [--rate R] [--lockstep] [--rollbacks]
//   unity-observe-writer postgres URL SCHEMA --table T --commits N [--rate R] [--lockstep] [--rollbacks]
//
// The table must exist as (id INTEGER PRIMARY KEY, value INTEGER NOT NULL) with a row id = 1.
// Commit i sets that row's value to i (i = 1…N). It prints `ready` once connected, then
// `commit i T` after each commit (T: seconds since 1970, when the COMMIT returned).
// --rate R: R commits per second (0, the default: as fast as it can).
// --lockstep: before each commit, waits for a line on standard input.
// --rollbacks: before each commit, runs a transaction that sets the value to -i and rolls back.
// Exits 0 when done, 2 on a usage error, 1 on a database error.
import DriverPostgres
import DriverSQLite
import Foundation
import Unity

struct Usage: Error, CustomStringConvertible {
    let description: String
}

struct Rollback: Error {}

/// Writes a line to standard output at once (the reader waits for each).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func parse() throws -> (Database, table: String, commits: Int, rate: Double, lockstep: Bool, rollbacks: Bool) {
    var args = Array(CommandLine.arguments.dropFirst())
    guard args.count >= 2 else { throw Usage(description: "usage: unity-observe-writer sqlite PATH | postgres URL SCHEMA, then options") }
    let backend = args.removeFirst()
    let db: Database
    switch backend {
    case "sqlite":
        db = try Database(driver: SQLiteDriver(path: args.removeFirst(), readers: 1))
    case "postgres":
        guard args.count >= 2 else { throw Usage(description: "postgres needs a URL and a schema") }
        let url = args.removeFirst()
        let schema = args.removeFirst()
        db = try Database(driver: PostgresDriver(url, connections: 1, searchPath: schema))
    default:
        throw Usage(description: "unknown backend \(backend): sqlite or postgres")
    }
    var table: String?
    var commits: Int?
    var rate = 0.0
    var lockstep = false
    var rollbacks = false
    while !args.isEmpty {
        let flag = args.removeFirst()
        switch flag {
        case "--table": table = args.isEmpty ? nil : args.removeFirst()
        case "--commits": commits = args.isEmpty ? nil : Int(args.removeFirst())
        case "--rate": rate = args.isEmpty ? -1 : (Double(args.removeFirst()) ?? -1)
        case "--lockstep": lockstep = true
        case "--rollbacks": rollbacks = true
        default: throw Usage(description: "unknown option \(flag)")
        }
    }
    guard let table, let commits, commits >= 0, rate >= 0 else {
        throw Usage(description: "--table and --commits are required; --rate takes a number ≥ 0")
    }
    return (db, table, commits, rate, lockstep, rollbacks)
}

func run() -> Int32 {
    let setup: (Database, table: String, commits: Int, rate: Double, lockstep: Bool, rollbacks: Bool)
    do {
        setup = try parse()
    } catch let usage as Usage {
        FileHandle.standardError.write(Data("\(usage)\n".utf8))
        return 2
    } catch {
        FileHandle.standardError.write(Data("could not open the database: \(error)\n".utf8))
        return 1
    }
    let (db, table, commits, rate, lockstep, rollbacks) = setup
    func update(_ value: Int) -> SQLStatement {
        .update(SQLUpdate(table, set: [SQLAssignment("value", value: value)], where: .column("id").equals(1)))
    }
    say("ready")
    let start = Date()
    do {
        for i in 1...max(1, commits) where commits > 0 {
            if lockstep, readLine() == nil { return 0 }
            if rate > 0 {
                let due = start.addingTimeInterval(Double(i - 1) / rate)
                let wait = due.timeIntervalSinceNow
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
            if rollbacks {
                do {
                    try db.write { conn in
                        try conn.execute(update(-i))
                        throw Rollback()
                    }
                } catch is Rollback {}
            }
            try db.write { conn in _ = try conn.execute(update(i)) }
            say("commit \(i) \(Date().timeIntervalSince1970)")
        }
    } catch {
        FileHandle.standardError.write(Data("write failed: \(error)\n".utf8))
        return 1
    }
    return 0
}

exit(run())
