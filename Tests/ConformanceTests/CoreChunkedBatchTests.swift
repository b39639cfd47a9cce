import Foundation
import Testing
@testable import Unity

/// The runner behind the core's chunked batches (upserts, loads on a backend without COPY):
/// where chunks end, and that a failed batch keeps nothing.
@Suite("Core: chunked batches")
struct CoreChunkedBatchTests {
    /// Runs `elements` through the runner with a limit of three and each positive element as
    /// its own key, inserting each chunk into `log`; returns the chunks.
    static func run(_ elements: [Int], on conn: Connection, failingAt failure: Int? = nil) throws -> [[Int]] {
        struct BodyFailed: Error {}
        var chunks: [[Int]] = []
        var position = 0
        try conn.inChunks(of: 3, keyedBy: { $0 > 0 ? $0 : nil }, next: {
            guard position < elements.count else { return nil }
            defer { position += 1 }
            return elements[position]
        }) { conn, chunk in
            chunks.append(chunk)
            try conn.execute(.insert(SQLInsert(into: "log", columns: ["n"], values: chunk.map { [.bind(.integer(Int64($0)))] })))
            if chunks.count == failure { throw BodyFailed() }
        }
        return chunks
    }

    static func logged(_ db: Database) throws -> [Int] {
        try db.read { try $0.fetchAll(sql: "SELECT n FROM log ORDER BY n").map { try $0.decode(Int.self, at: 0) } }
    }

    @Test(arguments: Backend.allCases)
    func chunksEndAtTheLimitAndBeforeAKeyTheyHold(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try $0.execute(sql: "CREATE TABLE log (n BIGINT)") }
            let chunks = try db.withConnection { conn in try Self.run([1, 1, 2, 3, 3, -1, -1, 4, 5, 6, 7], on: conn) }
            // Keyless elements (here the negative ones) share a chunk with anything.
            #expect(chunks == [[1], [1, 2, 3], [3, -1, -1], [4, 5, 6], [7]])
            #expect(try Self.logged(db) == [-1, -1, 1, 1, 2, 3, 3, 4, 5, 6, 7])
        }
    }

    @Test(arguments: Backend.allCases)
    func aFailedChunkKeepsNothingOfTheBatch(_ backend: Backend) throws {
        try withTestDatabase(backend) { db in
            try db.write { try $0.execute(sql: "CREATE TABLE log (n BIGINT)") }
            // Alone: its own transaction, rolled back.
            #expect(throws: (any Error).self) {
                try db.withConnection { conn in try Self.run([1, 2, 3, 4, 5], on: conn, failingAt: 2) }
            }
            #expect(try Self.logged(db).isEmpty)
            // Inside a transaction that goes on: a savepoint, only the batch undone.
            try db.write { conn in
                try conn.execute(sql: "INSERT INTO log (n) VALUES (100)")
                #expect(throws: (any Error).self) { try Self.run([1, 2, 3, 4, 5, 6, 7], on: conn, failingAt: 3) }
                try conn.execute(sql: "INSERT INTO log (n) VALUES (200)")
            }
            #expect(try Self.logged(db) == [100, 200])
        }
    }
}
