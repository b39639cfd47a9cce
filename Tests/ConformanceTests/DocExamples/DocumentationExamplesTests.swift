import Foundation
import Testing

/// Every ```swift block of the documentation stands, line for line, in a Swift file where it is
/// compiled and run on both backends: an article's in `Tests/ConformanceTests/DocExamples/`, the
/// README's in `Tests/ReadmeExamples/`; so an example that no longer compiles or no longer does
/// what it says fails CI. Indentation and blank lines do not count. A block whose first line is
/// `// Package.swift` is exempt (it is a manifest, not code to run). The README's links to files
/// of the repository must lead to files that exist.
@Suite("Documentation: every example is compiled and run")
struct DocumentationExamplesTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The documentation files: every article of every DocC catalog under Sources.
    static func documents() throws -> [URL] {
        var found: [URL] = []
        let sources = root.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [] }
        for case let url as URL in walker where url.pathExtension == "md" && url.path.contains(".docc/") {
            found.append(url)
        }
        return found.sorted { $0.path < $1.path }
    }

    /// The lines of each ```swift block in `text`.
    static func swiftBlocks(_ text: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil {
                if trimmed == "```swift" { current = [] }
            } else if trimmed == "```" {
                blocks.append(current ?? [])
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func normalized(_ lines: [String]) -> [String] {
        lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The normalized lines of every Swift file in `folder`.
    static func exampleFiles(_ folder: String) throws -> [[String]] {
        let url = root.appendingPathComponent(folder)
        return try FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }
            .map { normalized(try String(contentsOf: $0.resolvingSymlinksInPath(), encoding: .utf8).components(separatedBy: "\n")) }
    }

    /// The blocks of `document` that stand in none of `examples`; and how many blocks were checked.
    static func missingBlocks(of document: URL, in examples: [[String]]) throws -> (missing: [[String]], checked: Int) {
        var missing: [[String]] = []
        var checked = 0
        for block in swiftBlocks(try String(contentsOf: document, encoding: .utf8)) {
            let lines = normalized(block)
            if lines.first == "// Package.swift" || lines.isEmpty { continue }
            checked += 1
            let found = examples.contains { file in
                guard file.count >= lines.count else { return false }
                return (0...(file.count - lines.count)).contains { start in
                    Array(file[start..<(start + lines.count)]) == lines
                }
            }
            if !found { missing.append(block) }
        }
        return (missing, checked)
    }

    @Test func everyArticleExampleIsCompiledAndRun() throws {
        let examples = try Self.exampleFiles("Tests/ConformanceTests/DocExamples")
        let documents = try Self.documents()
        #expect(!documents.isEmpty, "no DocC articles found under Sources")
        var checked = 0
        for document in documents {
            let result = try Self.missingBlocks(of: document, in: examples)
            checked += result.checked
            for block in result.missing {
                Issue.record("\(document.lastPathComponent): this example is not in Tests/ConformanceTests/DocExamples:\n\(block.joined(separator: "\n"))")
            }
        }
        #expect(checked > 0)
    }

    @Test func everyReadmeExampleIsCompiledAndRun() throws {
        let examples = try Self.exampleFiles("Tests/ReadmeExamples")
        let result = try Self.missingBlocks(of: Self.root.appendingPathComponent("README.md"), in: examples)
        #expect(result.checked >= 7, "the README's flavor examples were not found")
        for block in result.missing {
            Issue.record("README.md: this example is not in Tests/ReadmeExamples:\n\(block.joined(separator: "\n"))")
        }
    }

    /// The targets of the Markdown links in `text` that point into the repository (not a URL,
    /// not an anchor), without any `#fragment`.
    static func relativeLinks(_ text: String) -> [String] {
        var links: [String] = []
        var rest = Substring(text)
        while let open = rest.range(of: "](") {
            rest = rest[open.upperBound...]
            guard let close = rest.firstIndex(of: ")") else { break }
            let target = String(rest[..<close])
            rest = rest[close...]
            if target.contains("://") || target.hasPrefix("#") || target.hasPrefix("mailto:") { continue }
            links.append(String(target.split(separator: "#", maxSplits: 1).first ?? ""))
        }
        return links
    }

    @Test func theReadmesLinksLeadToFilesThatExist() throws {
        for name in ["README.md", "Benchmarks/README.md"] {
            let document = Self.root.appendingPathComponent(name)
            let folder = document.deletingLastPathComponent()
            let links = Self.relativeLinks(try String(contentsOf: document, encoding: .utf8))
            if name == "README.md" { #expect(links.count >= 20, "the README's documentation links were not found") }
            for link in links where !link.isEmpty {
                let exists = FileManager.default.fileExists(atPath: folder.appendingPathComponent(link).path)
                #expect(exists, "\(name) links to \(link), which does not exist")
            }
        }
    }
}
