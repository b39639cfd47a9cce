import Foundation

extension Migrator {
    /// Creates a migrator from `.sql` files: one migration per file name without `.sql`
    /// (and without a `.sqlite`/`.postgres` variant suffix), ordered by that name whatever
    /// the order of `sqlFilePaths`. See the type's documentation for per-backend variants.
    /// The files are read now, so later edits need a new migrator.
    ///
    /// - Throws: ``MigrationError/unreadableFile(path:reason:)`` for a path that is not a
    ///   readable UTF-8 `.sql` file, ``MigrationError/duplicateName(_:)`` for two files that
    ///   are the same migration for the same backend (from two directories, say).
    public init(sqlFilePaths: [String]) throws {
        var shared: [String: String] = [:]
        var variants: [String: [String: String]] = [:]
        for path in sqlFilePaths {
            let fileName = URL(fileURLWithPath: path).lastPathComponent
            guard fileName.hasSuffix(".sql"), fileName.count > 4 else {
                throw MigrationError.unreadableFile(path: path, reason: "a migration file's name must end in .sql")
            }
            var name = String(fileName.dropLast(4))
            var backend: String?
            for candidate in Migration.knownBackends where name.hasSuffix("." + candidate) && name.count > candidate.count + 1 {
                backend = candidate
                name = String(name.dropLast(candidate.count + 1))
                break
            }
            let text = try Migrator.readScript(path)
            if let backend {
                guard variants[name, default: [:]][backend] == nil else { throw MigrationError.duplicateName(name) }
                variants[name, default: [:]][backend] = text
            } else {
                guard shared[name] == nil else { throw MigrationError.duplicateName(name) }
                shared[name] = text
            }
        }
        let names = Set(shared.keys).union(variants.keys).sorted()
        self.init(migrations: names.map { name in
            if let perBackend = variants[name] {
                return Migration(name, sql: perBackend, shared: shared[name])
            }
            return Migration(name, sql: shared[name] ?? "")
        })
    }

    /// Creates a migrator from every `*.sql` file in the directory at `path` (not its
    /// subdirectories; hidden files, such as editors' lock files, are skipped), as
    /// ``init(sqlFilePaths:)`` does.
    ///
    /// - Throws: ``MigrationError/unreadableFile(path:reason:)`` when the directory cannot
    ///   be listed or a file cannot be read.
    public static func directory(_ path: String) throws -> Migrator {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw MigrationError.unreadableFile(path: path, reason: "cannot list the directory: \(error.localizedDescription)")
        }
        let base = URL(fileURLWithPath: path, isDirectory: true)
        let files = entries
            .filter { $0.hasSuffix(".sql") && !$0.hasPrefix(".") }
            .map { base.appendingPathComponent($0).path }
        return try Migrator(sqlFilePaths: files)
    }

    /// Reads a script as UTF-8, without a leading byte-order mark (which SQL parsers reject).
    private static func readScript(_ path: String) throws -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw MigrationError.unreadableFile(path: path, reason: error.localizedDescription)
        }
        guard var text = String(data: data, encoding: .utf8) else {
            throw MigrationError.unreadableFile(path: path, reason: "the file is not valid UTF-8")
        }
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        return text
    }
}
