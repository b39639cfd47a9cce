import DriverSQLite
import Foundation
import Testing

@Suite("SQLite error mapping")
struct SQLiteErrorTests {
    func schema() throws -> any DriverConnection {
        let db = try memoryConnection()
        try db.executeScript("""
            CREATE TABLE parent (id INTEGER PRIMARY KEY, code TEXT UNIQUE);
            CREATE TABLE child (
                id INTEGER PRIMARY KEY,
                parent_id INTEGER REFERENCES parent(id),
                name TEXT NOT NULL,
                age INTEGER CONSTRAINT age_positive CHECK (age > 0)
            );
            CREATE TABLE guarded (v INTEGER);
            CREATE TRIGGER guard BEFORE INSERT ON guarded BEGIN SELECT RAISE(ABORT, 'guarded is read-only'); END;
            INSERT INTO parent (id, code) VALUES (1, 'a');
            """)
        return db
    }

    func expectConstraint(_ kind: ConstraintKind, code: String, _ body: () throws -> Void) {
        let error = databaseError(body)
        guard case .constraintViolation(let actual, let context)? = error else {
            Issue.record("expected a \(kind) constraint violation, got \(String(describing: error))")
            return
        }
        #expect(actual == kind)
        #expect(context.code == code)
        #expect(context.sql != nil)
        #expect(!context.message.isEmpty)
    }

    @Test func uniqueViolation() throws {
        let db = try schema()
        expectConstraint(.unique, code: "2067") { try db.run("INSERT INTO parent (id, code) VALUES (2, 'a')") }
    }

    @Test func primaryKeyViolationIsUnique() throws {
        let db = try schema()
        try db.run("CREATE TABLE keyed (k TEXT PRIMARY KEY)")
        try db.run("INSERT INTO keyed VALUES ('x')")
        expectConstraint(.unique, code: "1555") { try db.run("INSERT INTO keyed VALUES (?)", ["x"]) }
    }

    @Test func foreignKeyIsEnforced() throws {
        let db = try schema()
        expectConstraint(.foreignKey, code: "787") {
            try db.run("INSERT INTO child (parent_id, name, age) VALUES (?, ?, ?)", [99, "orphan", 3])
        }
        #expect(try db.run("INSERT INTO child (parent_id, name, age) VALUES (?, ?, ?)", [1, "kid", 3]) == 1)
        expectConstraint(.foreignKey, code: "787") { try db.run("DELETE FROM parent") }
    }

    @Test func notNullViolation() throws {
        let db = try schema()
        expectConstraint(.notNull, code: "1299") { try db.run("INSERT INTO child (name) VALUES (NULL)") }
    }

    @Test func checkViolationNamesTheConstraint() throws {
        let db = try schema()
        let error = databaseError { try db.run("INSERT INTO child (name, age) VALUES ('x', -1)") }
        guard case .constraintViolation(.check, let context)? = error else {
            Issue.record("expected a check violation, got \(String(describing: error))")
            return
        }
        #expect(context.code == "275")
        #expect(context.constraint == "age_positive")
    }

    @Test func triggerAbortIsOtherConstraint() throws {
        let db = try schema()
        expectConstraint(.other, code: "1811") { try db.run("INSERT INTO guarded VALUES (1)") }
    }

    @Test func syntaxErrors() throws {
        let db = try schema()
        for sql in ["SELEC 1", "SELECT * FROM parent WHERE", "SELECT (1"] {
            let error = databaseError { try db.run(sql) }
            guard case .syntax(let context)? = error else {
                Issue.record("expected .syntax for \(sql), got \(String(describing: error))")
                continue
            }
            #expect(context.sql == sql)
            #expect(context.code == "1")
        }
        let scriptError = databaseError { try db.executeScript("CREATE TABLE x (a); SELEC 1;") }
        guard case .syntax? = scriptError else {
            Issue.record("expected .syntax from a script, got \(String(describing: scriptError))")
            return
        }
    }

    @Test func undefinedTableAndColumn() throws {
        let db = try schema()
        let table = databaseError { try db.run("SELECT * FROM nowhere") }
        guard case .undefinedTable(let context)? = table else {
            Issue.record("expected .undefinedTable, got \(String(describing: table))")
            return
        }
        #expect(context.message.contains("nowhere"))
        let column = databaseError { try db.run("SELECT missing FROM parent") }
        guard case .undefinedColumn(let columnContext)? = column else {
            Issue.record("expected .undefinedColumn, got \(String(describing: column))")
            return
        }
        #expect(columnContext.message.contains("missing"))
    }

    @Test func bindingCountMismatchIsMisuse() throws {
        let db = try schema()
        let error = databaseError { try db.run("SELECT ?, ?", [1]) }
        guard case .misuse(let message)? = error else {
            Issue.record("expected .misuse, got \(String(describing: error))")
            return
        }
        #expect(message.contains("2 parameter"))
    }

    @Test func severalStatementsInExecuteAreMisuse() throws {
        let db = try schema()
        let error = databaseError { try db.run("INSERT INTO parent (id) VALUES (5); DELETE FROM parent") }
        guard case .misuse? = error else {
            Issue.record("expected .misuse, got \(String(describing: error))")
            return
        }
        #expect(try db.scalar("SELECT count(*) FROM parent") == .integer(1))
        // Trailing semicolons and comments are not a second statement.
        #expect(try db.scalar("SELECT count(*) FROM parent; -- trailing comment\n  ;") == .integer(1))
    }

    @Test func emptySQLIsMisuse() throws {
        let db = try schema()
        guard case .misuse? = databaseError({ try db.run("  -- nothing") }) else {
            Issue.record("expected .misuse for empty SQL")
            return
        }
    }

    @Test func openFailureNamesThePath() throws {
        let path = "/nonexistent-\(UUID().uuidString)/db.sqlite"
        let error = databaseError { _ = try SQLiteDriver(path: path).connect(role: .writer) }
        guard case .connectionFailed(let context)? = error else {
            Issue.record("expected .connectionFailed, got \(String(describing: error))")
            return
        }
        #expect(context.message.contains(path))
        #expect(context.message.contains("unable to open"))
    }

    @Test func closedConnectionIsMisuse() throws {
        let db = try memoryConnection()
        #expect(db.isUsable)
        db.close()
        db.close()
        #expect(!db.isUsable)
        guard case .misuse? = databaseError({ try db.run("SELECT 1") }) else {
            Issue.record("expected .misuse on a closed connection")
            return
        }
    }
}
