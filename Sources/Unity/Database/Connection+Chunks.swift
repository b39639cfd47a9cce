import Foundation

extension Connection {
    /// Runs `body` on consecutive chunks of the elements that `next` hands out (nil at the end),
    /// all in one transaction (a savepoint when one is open), so that nothing of the batch is
    /// kept when `next` or `body` throws.
    ///
    /// A chunk holds at most `maxElements` elements, and an element whose key (`key`; nil for
    /// an element that can share a chunk with any other) is already in the chunk starts the
    /// next one. Elements are taken one at a time, so a batch of any size holds one chunk.
    func inChunks<Element, Key: Hashable>(
        of maxElements: Int, keyedBy key: (Element) -> Key?,
        next: () throws -> Element?, _ body: (_ conn: Connection, _ chunk: [Element]) throws -> Void
    ) throws {
        let limit = max(1, maxElements)
        try transaction(.immediate) { conn in
            var chunk: [Element] = []
            chunk.reserveCapacity(Swift.min(limit, 1_024))
            var keys = Set<Key>()
            while let element = try next() {
                let elementKey = key(element)
                if chunk.count == limit || elementKey.map({ keys.contains($0) }) == true {
                    try body(conn, chunk)
                    chunk.removeAll(keepingCapacity: true)
                    keys.removeAll(keepingCapacity: true)
                }
                if let elementKey { keys.insert(elementKey) }
                chunk.append(element)
            }
            if !chunk.isEmpty { try body(conn, chunk) }
        }
    }

    /// ``inChunks(of:keyedBy:next:_:)`` for elements that can share any chunk.
    func inChunks<Element>(
        of maxElements: Int, next: () throws -> Element?, _ body: (_ conn: Connection, _ chunk: [Element]) throws -> Void
    ) throws {
        try inChunks(of: maxElements, keyedBy: { (_: Element) -> Int? in nil }, next: next, body)
    }
}
