import DriverPostgres
import DriverSQLite
import Foundation
import Testing
@testable import Unity

/// Migrations that check foreign keys once, before their commit (`-- unity: foreign_keys =
/// deferred`, `Migration.ForeignKeys.deferred`): SQLite's table rebuild of a referenced table,
/// rows inserted child first, and violations rolled back with a typed error on both backends.
@Suite("Migrations with foreign keys deferred")
struct MigrationForeignKeyTests {
    /// `parent` and `child` (which references it), with two rows each. The reference is
    /// DEFERRABLE (both engines accept the clause) so that PostgreSQL can defer it too.
    static let schema = Migration("0001_schema", sql: """
        CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE child (
            id INTEGER PRIMARY KEY,
            parent_id INTEGER NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY IMMEDIATE
        );
        INSERT INTO parent (id, name) VALUES (1, 'one'), (2, 'two');
        INSERT INTO child (id, parent_id) VALUES (10, 1), (20, 2);
        """)

    /// SQLite's documented way to change a table: create the new one, copy, drop the old one,
    /// rename. PostgreSQL changes the table in place; both files carry the same header.
    static func rebuild(header: Bool) -> Migration {
        let top = header ? "-- Rebuild parent with a new column.\n-- unity: foreign_keys = deferred\n\n" : ""
        return Migration("0002_rebuild", sql: [
            "sqlite": top + """
                CREATE TABLE parent_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, note TEXT NOT NULL DEFAULT '');
                INSERT INTO parent_new (id, name) SELECT id, name FROM parent;
                DROP TABLE parent;
                ALTER TABLE parent_new RENAME TO parent;
                """,
            "postgres": top + """
                ALTER TABLE parent ADD COLUMN note TEXT NOT NULL DEFAULT '';
                """,
        ])
    }

    func count(_ db: Database, _ table: String) throws -> Int {
        try db.read { try $0.fetchValue(Int.self, sql: "SELECT COUNT(*) FROM \(table)") ?? -1 }
    }

    /// After a deferred migration, foreign keys are enforced again on the pooled connection.
    func expectForeignKeysEnforced(_ db: Database) {
        do {
            try db.write { _ = try $0.execute(sql: "INSERT INTO child (id, parent_id) VALUES (99, 999)") }
            Issue.record("an orphan row was accepted: foreign keys are off")
        } catch DatabaseError.constraintViolation(.foreignKey, _) {
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test(arguments: Backend.allCases)
    func rebuildOfAReferencedTable(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            try Migrator(migrations: [Self.schema]).migrate(db)
            if backend == .sqlite {
                // Without the header SQLite's rebuild fails on the reference, as it always did.
                do {
                    try Migrator(migrations: [Self.schema, Self.rebuild(header: false)]).migrate(db)
                    Issue.record("the rebuild ran with foreign keys enforced")
                } catch MigrationError.failed(let name, let underlying) {
                    #expect(name == "0002_rebuild")
                    #expect(underlying == .constraintViolation(.foreignKey, underlying.context ?? DatabaseErrorContext(message: "")))
                }
                #expect(try count(db, "parent") == 2)
            }
            let applied = try Migrator(migrations: [Self.schema, Self.rebuild(header: true)]).migrate(db)
            #expect(applied == ["0002_rebuild"])
            #expect(try count(db, "parent") == 2)
            #expect(try count(db, "child") == 2)
            let notes = try db.fetchAll(sql: "SELECT note FROM parent ORDER BY id").map { try $0.decode(String.self, at: 0) }
            #expect(notes == ["", ""])
            // The reference still points at the rebuilt table, and is enforced again.
            expectForeignKeysEnforced(db)
            try db.write { _ = try $0.execute(sql: "INSERT INTO child (id, parent_id) VALUES (30, 2)") }
            #expect(try count(db, "child") == 3)
        }
    }

    /// The same text on both backends: rows inserted child first, valid at the commit.
    @Test(arguments: Backend.allCases)
    func sharedTextChildBeforeParent(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let reorder = Migration("0002_reorder", sql: """
                -- unity: foreign_keys = deferred
                INSERT INTO child (id, parent_id) VALUES (30, 3);
                INSERT INTO parent (id, name) VALUES (3, 'three');
                """)
            #expect(try Migrator(migrations: [Self.schema, reorder]).migrate(db) == ["0001_schema", "0002_reorder"])
            #expect(try count(db, "child") == 3)
            expectForeignKeysEnforced(db)

            // The option on an AST migration and on a closure migration.
            let ast = Migration("0003_ast", statements: [
                .insert(SQLInsert(into: "child", values: ["id": .integer(40), "parent_id": .integer(4)])),
                .insert(SQLInsert(into: "parent", values: ["id": .integer(4), "name": .text("four")])),
            ], foreignKeys: .deferred)
            let closure = Migration("0004_code", checksum: "1", foreignKeys: .deferred) { conn in
                try conn.execute(sql: "INSERT INTO child (id, parent_id) VALUES (50, 5)")
                try conn.execute(sql: "INSERT INTO parent (id, name) VALUES (5, 'five')")
            }
            #expect(try Migrator(migrations: [Self.schema, reorder, ast, closure]).migrate(db) == ["0003_ast", "0004_code"])
            #expect(try count(db, "child") == 5)
            expectForeignKeysEnforced(db)
        }
    }

    /// A deferred migration that leaves an orphan is rolled back with a typed error naming the
    /// table; nothing of it stays, it is not recorded, and foreign keys are enforced again.
    @Test(arguments: Backend.allCases)
    func violationRollsBackWithTheTableNamed(_ backend: Backend) throws {
        try withTestDatabase(backend) { (db: Database) throws in
            let orphan = Migration("0002_orphan", sql: """
                -- unity: foreign_keys = deferred
                INSERT INTO parent (id, name) VALUES (7, 'seven');
                INSERT INTO child (id, parent_id) VALUES (70, 8);
                """)
            let migrator = Migrator(migrations: [Self.schema, orphan])
            do {
                try migrator.migrate(db)
                Issue.record("an orphan was committed")
            } catch MigrationError.foreignKeyViolation(let name, let table, let detail) {
                #expect(name == "0002_orphan")
                #expect(table == "child")
                #expect(!detail.isEmpty)
            }
            #expect(try migrator.appliedMigrations(db).map(\.name) == ["0001_schema"])
            #expect(try count(db, "parent") == 2)
            #expect(try count(db, "child") == 2)
            expectForeignKeysEnforced(db)
            // A closure migration breaking a non-deferred path the same way.
            let closure = Migration("0002_orphan", checksum: "x", foreignKeys: .deferred) { conn in
                try conn.execute(sql: "DELETE FROM parent WHERE id = 1")
            }
            #expect(throws: MigrationError.self) { try Migrator(migrations: [Self.schema, closure]).migrate(db) }
            #expect(try count(db, "parent") == 2)
        }
    }

    @Test func headerIsRecognizedOnlyAtTheTop() {
        #expect(Migration.headerDefersForeignKeys("-- unity: foreign_keys = deferred\nDROP TABLE x;"))
        #expect(Migration.headerDefersForeignKeys("\n-- a comment\r\n--UNITY:FOREIGN_KEYS=DEFERRED\nSELECT 1;"))
        #expect(!Migration.headerDefersForeignKeys("SELECT 1;\n-- unity: foreign_keys = deferred"))
        #expect(!Migration.headerDefersForeignKeys("-- unity: foreign_keys = on\nSELECT 1;"))
        #expect(Migrator.referencingTable(in: #"update or delete on table "parent" violates foreign key constraint "c" on table "child""#) == "child")
        #expect(Migrator.referencingTable(in: #"insert or update on table "child" violates foreign key constraint "c""#) == "child")
    }
}
