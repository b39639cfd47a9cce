import Foundation
import Testing
@testable import Unity

/// `RowLayout.index(of:)`: the inlined fast path (same UTF-8 length, then `==`) and the full
/// lookup behind it must find what the full lookup alone found.
@Suite("Row layout: column lookup by name")
struct RowLayoutLookupTests {
    @Test func exactNamesAreFoundAtTheirPositions() {
        let layout = RowLayout(columnNames: ["id", "name", "rank", "score", "created_at", "payload"])
        #expect(layout.index(of: "id") == 0)
        #expect(layout.index(of: "rank") == 2)  // same length as "name", found by comparing
        #expect(layout.index(of: "name") == 1)
        #expect(layout.index(of: "payload") == 5)
        #expect(layout.index(of: "missing") == nil)
        #expect(layout.index(of: "") == nil)
    }

    @Test func caseAndCanonicalEquivalenceStillMatch() {
        // "é" as one scalar in the result, looked up as "e" + a combining accent: another UTF-8
        // length, still the same Swift string, found by the full lookup.
        let layout = RowLayout(columnNames: ["id", "caf\u{E9}", "Kind"])
        #expect(layout.index(of: "cafe\u{301}") == 1)
        #expect(layout.index(of: "kind") == 2)
        #expect(layout.index(of: "KIND") == 2)
        // A name in the result with a different case from an exact one: the exact one wins.
        let both = RowLayout(columnNames: ["Name", "name"])
        #expect(both.index(of: "name") == 1)
        #expect(both.index(of: "NAME") == 0)
    }

    @Test func duplicateNamesFindTheLeftmost() {
        let layout = RowLayout(columnNames: ["id", "name", "id"])
        #expect(layout.index(of: "id") == 0)
    }

    @Test func wideResultsUseTheHashedLookup() {
        let names = (0..<40).map { "column_\($0)" }
        let layout = RowLayout(columnNames: names + ["Upper"])
        for (i, name) in names.enumerated() { #expect(layout.index(of: name) == i) }
        #expect(layout.index(of: "upper") == 40)
        #expect(layout.index(of: "column_40") == nil)
    }
}
