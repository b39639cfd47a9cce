import Foundation
import Testing
@testable import Unity

/// Inline string literals and identifiers are safe on every dialect and server setting.
@Suite("SQL literals and identifiers at the edges")
struct SQLLiteralSafetyTests {
    @Test("PostgreSQL spells a string with a backslash as E'' with backslashes and quotes doubled")
    func postgresEscapeStrings() throws {
        func note(_ s: String) -> SQLStatement {
            .createTable(SQLCreateTable("t", columns: [SQLColumnDefinition("note", .text, default: .value(s))]))
        }
        #expect(try sqlText(note(#"a\'; DROP TABLE t; --"#), .postgres)
                == #"CREATE TABLE "t" ("note" TEXT COLLATE "C" DEFAULT E'a\\''; DROP TABLE t; --')"#)
        #expect(try sqlText(note(#"a\'; DROP TABLE t; --"#), .sqlite)
                == #"CREATE TABLE "t" ("note" TEXT DEFAULT 'a\''; DROP TABLE t; --')"#)
        #expect(try sqlText(note("plain 'q'"), .postgres) == #"CREATE TABLE "t" ("note" TEXT COLLATE "C" DEFAULT 'plain ''q''')"#)
    }

    @Test("a quote followed by a combining mark is still doubled (per byte, not per Character)")
    func combiningMarks() {
        let hostile = "x'\u{301}; DROP TABLE t; --"
        for style in [SQLStringLiteralStyle.standard, .escapeStringWhenBackslash] {
            let quoted = SQLRenderer.quoteString(hostile, style: style)
            #expect(Array(quoted.utf8) == Array("'x''\u{301}; DROP TABLE t; --'".utf8))
        }
        let backslash = SQLRenderer.quoteString("\\\u{301}'\u{301}", style: .escapeStringWhenBackslash)
        #expect(Array(backslash.utf8) == Array("E'\\\\\u{301}''\u{301}'".utf8))
    }

    @Test("identifiers over 63 bytes are refused on both dialects; 63 bytes are fine")
    func longIdentifiers() throws {
        let ok = String(repeating: "a", count: 63)
        let long = String(repeating: "a", count: 64)
        let longMultibyte = String(repeating: "é", count: 32)  // 64 bytes, 32 characters
        for dialect in [SQLDialect.sqlite, .postgres] {
            _ = try dialect.render(.select(SQLSelect(from: ok)))
            for name in [long, longMultibyte] {
                do {
                    _ = try dialect.render(.select(SQLSelect(from: name)))
                    Issue.record("\(dialect.name) rendered a \(name.utf8.count)-byte identifier")
                } catch let error as DatabaseError {
                    guard case .misuse(let message) = error else {
                        Issue.record("expected .misuse, got \(error)")
                        continue
                    }
                    #expect(message.contains("64 bytes"))
                }
            }
        }
    }

    @Test("PostgreSQL text columns are declared COLLATE \"C\"; CAST keeps the bare type name")
    func textCollation() throws {
        let t = SQLCreateTable("t", columns: [SQLColumnDefinition("a", .text), SQLColumnDefinition("b", .varchar(5)), SQLColumnDefinition("c", .json)])
        #expect(try sqlText(.createTable(t), .postgres) == #"CREATE TABLE "t" ("a" TEXT COLLATE "C", "b" VARCHAR(5) COLLATE "C", "c" JSONB)"#)
        #expect(try sqlText(.createTable(t), .sqlite) == #"CREATE TABLE "t" ("a" TEXT, "b" TEXT, "c" TEXT)"#)
        let cast = try whereSQL(.binary(.cast(.column("a"), .text), .equal, .bind(.text("x"))), .postgres)
        #expect(cast.sql.contains(#"CAST("a" AS TEXT) = $1"#), "\(cast.sql)")
    }
}
