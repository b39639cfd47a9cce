import Testing
@testable import Unity

/// Splitting scripts into statements and finding transaction control in them, as the
/// migrator does before it runs anything.
@Suite struct SQLScriptScannerTests {
    func texts(_ script: String, _ dialect: SQLDialect) -> [String] {
        SQLTextScanner.statements(in: script, dialect: dialect).map(\.text)
    }

    @Test(arguments: [SQLDialect.sqlite, .postgres])
    func semicolonsInQuotesAndCommentsDoNotEndAStatement(_ dialect: SQLDialect) {
        let script = """
            CREATE TABLE "a;b" (v TEXT DEFAULT 'x;y'); -- one; two
            /* three; */ INSERT INTO "a;b" VALUES ('COMMIT;');
            ;
            """
        #expect(texts(script, dialect) == [
            #"CREATE TABLE "a;b" (v TEXT DEFAULT 'x;y')"#,
            "-- one; two\n/* three; */ INSERT INTO \"a;b\" VALUES ('COMMIT;')",
        ])
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: dialect) == nil)
    }

    @Test func aTriggerBodyIsOneStatementWithItsCaseEnds() {
        let script = """
            CREATE TRIGGER t_audit AFTER INSERT ON t BEGIN
              INSERT INTO audit VALUES (CASE WHEN new.v > 0 THEN 'up' ELSE 'down' END);
              UPDATE t SET n = n + 1 WHERE id = new.id;
            END;
            CREATE TABLE after_trigger (begin INTEGER, "end" TEXT);
            END TRANSACTION;
            """
        let statements = SQLTextScanner.statements(in: script, dialect: .sqlite)
        #expect(statements.count == 3)
        #expect(statements[0].text.hasPrefix("CREATE TRIGGER") && statements[0].text.hasSuffix("END"))
        #expect(statements[1].leadingWords == ["CREATE", "TABLE"])
        // A trigger's END is not transaction control; a statement that starts with END is.
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: .sqlite) == "END TRANSACTION")
    }

    @Test func postgresBodiesInDollarQuotesAndBeginAtomic() {
        let script = """
            DO $$ BEGIN PERFORM 1; COMMIT; END $$;
            CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 2 END; END;
            CREATE FUNCTION g() RETURNS trigger AS $body$ BEGIN RETURN NEW; END; $body$ LANGUAGE plpgsql;
            """
        #expect(texts(script, .postgres).count == 3)
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: .postgres) == nil)
    }

    @Test(arguments: [
        ("BEGIN;\nCREATE TABLE t (id INTEGER);\nCOMMIT;", "BEGIN"),
        ("begin transaction; create table t (id integer); end;", "begin transaction"),
        ("CREATE TABLE t (id INTEGER);\nCOMMIT", "COMMIT"),
        ("START TRANSACTION; SELECT 1", "START TRANSACTION"),
        ("SAVEPOINT s; ROLLBACK TO SAVEPOINT s; RELEASE s; ROLLBACK", "ROLLBACK"),
        ("/* setup */ ABORT;", "/* setup */ ABORT"),
    ])
    func transactionControlIsFound(script: String, statement: String) {
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: .postgres) == statement)
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: .sqlite) == statement)
    }

    @Test func savepointsAndTheWordsElsewhereAreAllowed() {
        let script = "SAVEPOINT s; CREATE TABLE commits (id INTEGER); ROLLBACK TO s; RELEASE SAVEPOINT s; SELECT 'BEGIN'"
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: .sqlite) == nil)
        #expect(SQLTextScanner.firstTransactionControl(in: script, dialect: .postgres) == nil)
    }
}
