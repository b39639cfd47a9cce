import Foundation
import Testing
import Unity

/// The same fault is the same `DatabaseError` case on both backends.
@Suite("Core: error mapping")
struct CoreErrorTests {
    func makeSchema(_ db: Database) throws {
        try db.write { conn in
            try conn.execute(.createTable(SQLCreateTable("parent", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("code", .text, notNull: true, unique: true),
            ])))
            try conn.execute(.createTable(SQLCreateTable("child", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain),
                SQLColumnDefinition("parent_id", .int64, references: SQLForeignKeyReference("parent", columns: ["id"], onDelete: .cascade)),
                SQLColumnDefinition("qty", .int64, check: SQLExpression.column("qty").greaterThanOrEquals(0)),
            ])))
            try conn.execute(.insert(SQLInsert(into: "parent", values: ["id": 1, "code": "a"])))
        }
    }

    func expectConstraint(_ kind: ConstraintKind, _ db: Database, _ statement: SQLStatement) {
        do {
            try db.write { try $0.execute(statement) }
            Issue.record("expected a \(kind) violation")
        } catch let error as DatabaseError {
            guard case .constraintViolation(let got, let context) = error else {
                Issue.record("expected .constraintViolation(.\(kind)), got \(error)")
                return
            }
            #expect(got == kind)
            #expect(context.sql != nil)
            #expect(!context.message.isEmpty)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test(arguments: Backend.allCases)
    func constraintViolationsMapToTheSameCase(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeSchema(db)
            expectConstraint(.unique, db, .insert(SQLInsert(into: "parent", values: ["id": 1, "code": "b"])))  // primary key
            expectConstraint(.unique, db, .insert(SQLInsert(into: "parent", values: ["id": 2, "code": "a"])))  // unique column
            expectConstraint(.notNull, db, .insert(SQLInsert(into: "parent", values: ["id": 3, "code": nil])))
            expectConstraint(.foreignKey, db, .insert(SQLInsert(into: "child", values: ["id": 1, "parent_id": 99, "qty": 1])))
            expectConstraint(.check, db, .insert(SQLInsert(into: "child", values: ["id": 1, "parent_id": 1, "qty": -1])))
            // Nothing of the failed statements was kept.
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM parent") } == 1)
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM child") } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func foreignKeyCascadeDeletes(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeSchema(db)
            try db.write { try $0.execute(.insert(SQLInsert(into: "child", values: ["id": 1, "parent_id": 1, "qty": 1]))) }
            try db.write { try $0.execute(.delete(SQLDelete(from: "parent", where: SQLExpression.column("id").equals(1)))) }
            #expect(try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM child") } == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func syntaxAndMissingObjects(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try makeSchema(db)
            func kind(_ sql: String) -> String {
                do {
                    _ = try db.read { try $0.fetchAll(sql: sql) }
                    return "no error"
                } catch let e as DatabaseError {
                    switch e {
                    case .syntax: return "syntax"
                    case .undefinedTable: return "undefinedTable"
                    case .undefinedColumn: return "undefinedColumn"
                    default: return "other: \(e)"
                    }
                } catch {
                    return "foreign: \(error)"
                }
            }
            #expect(kind("SELEC 1") == "syntax")
            #expect(kind("SELECT * FROM no_such_table") == "undefinedTable")
            #expect(kind("SELECT no_such_column FROM parent") == "undefinedColumn")
        }
    }

    @Test(arguments: Backend.allCases)
    func errorsCarryTheSQL(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            do {
                _ = try db.read { try $0.fetchAll(sql: "SELECT * FROM missing_table_xyz") }
                Issue.record("no error")
            } catch let e as DatabaseError {
                #expect(e.context?.sql?.contains("missing_table_xyz") == true)
                #expect(String(describing: e).contains("missing_table_xyz"))
            }
        }
    }
}

/// Lock contention between two handles on the same database is `.busy` on both backends.
@Suite("Core: lock contention")
struct CoreBusyTests {
    @Test(arguments: Backend.allCases)
    func aLockHeldElsewhereIsBusy(_ backend: Backend) throws {
        try withTestDatabaseHandle(backend) { (test: TestDatabase) throws in
            let db = test.database
            try db.write { try $0.execute(.createTable(SQLCreateTable("t", columns: [
                SQLColumnDefinition("id", .int64, primaryKey: .plain), SQLColumnDefinition("v", .int64)]))) }
            try db.write { try $0.execute(.insert(SQLInsert(into: "t", values: ["id": 1, "v": 0]))) }
            let other = try test.openAgain(busyTimeout: 0.1)
            defer { other.close() }
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                _ = try? db.write { conn in
                    try conn.execute(.update(SQLUpdate("t", set: [SQLAssignment("v", value: 1)], where: SQLExpression.column("id").equals(1))))
                    holding.signal()
                    release.wait()
                }
                done.signal()
            }
            holding.wait()
            defer {
                release.signal()
                done.wait()
            }
            do {
                try other.write { conn in
                    if backend == .postgres {
                        // Fail fast instead of waiting for the row lock (SQLSTATE 55P03).
                        try conn.execute(sql: "SET LOCAL lock_timeout = '100ms'")
                    }
                    try conn.execute(.update(SQLUpdate("t", set: [SQLAssignment("v", value: 2)], where: SQLExpression.column("id").equals(1))))
                }
                Issue.record("the second writer was not blocked")
            } catch let error as DatabaseError {
                guard case .busy = error else {
                    Issue.record("expected .busy, got \(error)")
                    return
                }
            }
        }
    }
}
