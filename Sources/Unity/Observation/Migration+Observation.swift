extension Migration {
    /// The PostgreSQL channel observation listens on; each notification's payload is the
    /// changed table as `schema.table`.
    public static let changeNotificationChannel = "unity_changes"
    /// The name of the trigger (PostgreSQL) and the prefix of the triggers (SQLite) that
    /// ``observeChanges(of:name:)`` installs.
    public static let changeTriggerName = "unity_observe_changes"
    /// The SQLite table of per-table change counters that ``observeChanges(of:name:)``
    /// creates and its triggers bump.
    public static let changeCounterTable = "unity_change_counters"

    /// A migration that makes commits to `tables` visible to observers in other processes or
    /// clients. Add it to your migrations after the migration that creates the tables.
    ///
    /// - PostgreSQL: one statement-level trigger per table, `AFTER INSERT OR UPDATE OR DELETE
    ///   OR TRUNCATE`, that calls `pg_notify` with the table's name (notifications are
    ///   transactional: a rolled-back transaction sends none). Observation requires it and
    ///   says so when it is missing. A table without it costs writers nothing.
    /// - SQLite: a change counter per table (in `unity_change_counters`), bumped by row
    ///   triggers. Without counters a commit by another process refetches every observed
    ///   query; with them only the queries that read a table it changed. This process's
    ///   commits are seen without them.
    ///
    /// The generated SQL, for a migration tool of your own:
    /// `try Migration.observeChanges(of: ["todos"]).script(for: .postgres)`.
    /// - Parameters:
    ///   - tables: the tables to observe, named as your statements name them.
    ///   - name: the migration's name; by default `unity_observe_` and the sorted table names.
    public static func observeChanges(of tables: [String], name: String? = nil) -> Migration {
        let sorted = Array(Set(tables)).sorted()
        let name = name ?? "unity_observe_" + sorted.joined(separator: "_")
        return Migration(name, sql: ["sqlite": sqliteChangeCounters(sorted), "postgres": postgresChangeTriggers(sorted)])
    }

    /// `name` as a quoted identifier (embedded quotes doubled).
    private static func identifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// `text` as a string literal (embedded quotes doubled).
    private static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    private static func sqliteChangeCounters(_ tables: [String]) -> String {
        var sql = "CREATE TABLE IF NOT EXISTS \(changeCounterTable) (\n"
            + "    table_name TEXT PRIMARY KEY NOT NULL,\n"
            + "    changes INTEGER NOT NULL DEFAULT 0\n);\n"
        for table in tables {
            let key = literal(table.lowercased())
            sql += "INSERT INTO \(changeCounterTable) (table_name, changes) VALUES (\(key), 0) ON CONFLICT (table_name) DO NOTHING;\n"
            for event in ["INSERT", "UPDATE", "DELETE"] {
                let trigger = identifier("\(changeTriggerName)_\(table)_\(event.lowercased())")
                sql += "CREATE TRIGGER IF NOT EXISTS \(trigger) AFTER \(event) ON \(identifier(table)) BEGIN\n"
                    + "    UPDATE \(changeCounterTable) SET changes = changes + 1 WHERE table_name = \(key);\nEND;\n"
            }
        }
        return sql
    }

    private static func postgresChangeTriggers(_ tables: [String]) -> String {
        var sql = "CREATE OR REPLACE FUNCTION unity_notify_change() RETURNS trigger LANGUAGE plpgsql AS $unity$\n"
            + "BEGIN\n"
            + "    PERFORM pg_notify(\(literal(changeNotificationChannel)), TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME);\n"
            + "    RETURN NULL;\n"
            + "END\n$unity$;\n"
        for table in tables {
            sql += "DROP TRIGGER IF EXISTS \(changeTriggerName) ON \(identifier(table));\n"
                + "CREATE TRIGGER \(changeTriggerName) AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON \(identifier(table))\n"
                + "    FOR EACH STATEMENT EXECUTE FUNCTION unity_notify_change();\n"
        }
        return sql
    }
}
