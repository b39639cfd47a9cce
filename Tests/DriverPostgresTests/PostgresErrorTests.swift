import DriverPostgres
import Foundation
import Testing

@Suite("PostgreSQL errors")
struct PostgresErrorTests {
    @Test("constraint violations map to their kinds with message, SQL, code, detail and constraint")
    func constraints() throws {
        try withSchema { _, db in
            try db.executeScript("""
                CREATE TABLE parent (id INT PRIMARY KEY);
                CREATE TABLE child (
                    id INT CONSTRAINT child_pk PRIMARY KEY,
                    parent_id INT CONSTRAINT child_parent_fk REFERENCES parent(id),
                    name TEXT NOT NULL DEFAULT 'x',
                    qty INT CONSTRAINT qty_positive CHECK (qty > 0),
                    area CIRCLE,
                    EXCLUDE USING gist (area WITH &&)
                );
                INSERT INTO parent VALUES (1);
                INSERT INTO child (id, parent_id, qty) VALUES (1, 1, 1);
                """)
            let insert = "INSERT INTO child (id, parent_id, name, qty) VALUES ($1, $2, $3, $4)"

            let unique = databaseError { try db.execute(insert, bindings: [1, 1, "a", 1], onRow: nil) }
            guard case .constraintViolation(.unique, let c) = unique else {
                Issue.record("expected unique violation, got \(String(describing: unique))")
                return
            }
            #expect(c.code == "23505")
            #expect(c.sql == insert)
            #expect(c.constraint == "child_pk")
            #expect(c.detail?.contains("(id)=(1)") == true)
            #expect(c.message.contains("duplicate key"))

            let cases: [(ConstraintKind, String, [DatabaseValue], String?)] = [
                (.foreignKey, insert, [2, 99, "a", 1], "child_parent_fk"),
                (.notNull, insert, [3, 1, .null, 1], nil),
                (.check, insert, [4, 1, "a", 0], "qty_positive"),
            ]
            for (kind, sql, bindings, constraint) in cases {
                let error = databaseError { try db.execute(sql, bindings: bindings, onRow: nil) }
                guard case .constraintViolation(let got, let context) = error else {
                    Issue.record("expected \(kind) violation, got \(String(describing: error))")
                    continue
                }
                #expect(got == kind)
                if let constraint { #expect(context.constraint == constraint) }
            }
            try db.executeScript("UPDATE child SET area = circle '((0,0),1)'")
            let exclusion = databaseError {
                try db.execute("INSERT INTO child (id, area) VALUES (5, circle '((0.5,0),1)')", bindings: [], onRow: nil)
            }
            guard case .constraintViolation(.other, let ex) = exclusion else {
                Issue.record("an exclusion violation should be .constraintViolation(.other), got \(String(describing: exclusion))")
                return
            }
            #expect(ex.code == "23P01")
            #expect(try scalar(db, "SELECT count(*) FROM child") == .integer(1))
        }
    }

    @Test("syntax errors, unknown tables and unknown columns")
    func statementErrors() throws {
        try withSchema { _, db in
            try db.executeScript("CREATE TABLE t (a INT)")
            let syntax = databaseError { try db.execute("SELEC 1", bindings: [], onRow: nil) }
            guard case .syntax(let c) = syntax else {
                Issue.record("expected .syntax, got \(String(describing: syntax))")
                return
            }
            #expect(c.code == "42601")
            #expect(c.sql == "SELEC 1")
            let table = databaseError { try db.execute("SELECT * FROM missing_table", bindings: [], onRow: nil) }
            guard case .undefinedTable(let t) = table else {
                Issue.record("expected .undefinedTable, got \(String(describing: table))")
                return
            }
            #expect(t.message.contains("missing_table"))
            let column = databaseError { try db.execute("SELECT missing_column FROM t", bindings: [], onRow: nil) }
            guard case .undefinedColumn = column else {
                Issue.record("expected .undefinedColumn, got \(String(describing: column))")
                return
            }
            let scriptError = databaseError { try db.executeScript("SELECT 1; SELECT * FROM nope; SELECT 2") }
            guard case .undefinedTable = scriptError else {
                Issue.record("expected .undefinedTable from a script, got \(String(describing: scriptError))")
                return
            }
            #expect(db.isUsable)
            #expect(try scalar(db, "SELECT 1") == .integer(1))
        }
    }

    @Test("raised SQLSTATEs map to busy, read-only, cancelled, connection and other cases", arguments: [
        ("40001", "busy"), ("40P01", "busy"), ("55P03", "busy"), ("25006", "readOnly"), ("57014", "cancelled"),
        ("08006", "connectionLost"), ("23000", "constraint.other"), ("22012", "other"), ("P0001", "other"),
    ])
    func raisedStates(state: String, expected: String) throws {
        try withSchema { _, db in
            let sql = "DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '\(state)'; END $$"
            let error = databaseError { try db.execute(sql, bindings: [], onRow: nil) }
            let got: String
            switch error {
            case .busy?: got = "busy"
            case .readOnly?: got = "readOnly"
            case .cancelled?: got = "cancelled"
            case .connectionLost?: got = "connectionLost"
            case .constraintViolation(.other, _)?: got = "constraint.other"
            case .other?: got = "other"
            default: got = String(describing: error)
            }
            #expect(got == expected)
            #expect(error?.context?.code == state)
            #expect(error?.context?.message == "raised")
            // A raised 08xxx does not break the socket: the connection goes on.
            #expect(db.isUsable)
        }
    }

    @Test("a real lock conflict with NOWAIT is .busy")
    func lockConflict() throws {
        try withSchema { schema, db in
            try db.executeScript("CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1)")
            let other = try schema.connect()
            defer { other.close() }
            try other.executeScript("BEGIN; SELECT * FROM t FOR UPDATE")
            let error = databaseError { try db.execute("SELECT * FROM t FOR UPDATE NOWAIT", bindings: [], onRow: nil) }
            guard case .busy(let c) = error else {
                Issue.record("expected .busy, got \(String(describing: error))")
                return
            }
            #expect(c.code == "55P03")
            try other.executeScript("ROLLBACK")
        }
    }

    @Test("a failed statement in a transaction leaves it .failed until rollback")
    func transactionStates() throws {
        try withSchema { _, db in
            #expect(db.transactionStatus == .idle)
            try db.executeScript("BEGIN")
            #expect(db.transactionStatus == .active)
            _ = databaseError { try db.execute("SELECT 1/0", bindings: [], onRow: nil) }
            #expect(db.transactionStatus == .failed)
            try db.executeScript("ROLLBACK")
            #expect(db.transactionStatus == .idle)
        }
    }

    @Test("interrupting pg_sleep(10) gives .cancelled quickly and the connection goes on")
    func interruptSleep() throws {
        try withSchema { _, db in
            let interrupt = db.makeInterrupter()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { interrupt() }
            let start = Date()
            let error = databaseError { try db.execute("SELECT pg_sleep(10)", bindings: [], onRow: nil) }
            guard case .cancelled(let c) = error else {
                Issue.record("expected .cancelled, got \(String(describing: error))")
                return
            }
            #expect(c.code == "57014")
            #expect(Date().timeIntervalSince(start) < 5)
            #expect(db.isUsable)
            let after = try scalar(db, "SELECT 2")
            #expect(after == .integer(2))
            db.close()
            interrupt()  // harmless after close
            #expect(!db.isUsable)
        }
    }

    @Test("a connection terminated by the server reports .connectionLost and is no longer usable")
    func killedConnection() throws {
        try withSchema { schema, _ in
            let victim = try schema.connect()
            defer { victim.close() }
            let pid = try scalar(victim, "SELECT pg_backend_pid()")
            #expect(try scalar(schema.admin, "SELECT pg_terminate_backend($1::int, 5000)", [pid]) == .bool(true))
            let error = databaseError { try victim.execute("SELECT 1", bindings: [], onRow: nil) }
            guard case .connectionLost = error else {
                Issue.record("expected .connectionLost, got \(String(describing: error))")
                return
            }
            #expect(!victim.isUsable)
            let again = databaseError { try victim.execute("SELECT 1", bindings: [], onRow: nil) }
            guard case .connectionLost = again else {
                Issue.record("a dead connection should keep reporting .connectionLost, got \(String(describing: again))")
                return
            }
        }
    }

    @Test("a closed connection refuses work with .misuse")
    func closedConnection() throws {
        try withSchema { _, db in
            db.close()
            db.close()
            let error = databaseError { try db.execute("SELECT 1", bindings: [], onRow: nil) }
            guard case .misuse = error else {
                Issue.record("expected .misuse, got \(String(describing: error))")
                return
            }
        }
    }
}
