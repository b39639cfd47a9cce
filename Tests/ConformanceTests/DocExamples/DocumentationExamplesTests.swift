import Foundation
import Testing

/// Every ```swift block of the documentation stands, line for line, in a file of
/// `Tests/ConformanceTests/DocExamples/`, where it is compiled and run on both backends; so an
/// example that no longer compiles or no longer does what it says fails CI. Indentation and
/// blank lines do not count. A block whose first line is `// Package.swift` is exempt (it is
/// a manifest, not code to run).
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

    @Test func everyArticleExampleIsCompiledAndRun() throws {
        let examplesFolder = Self.root.appendingPathComponent("Tests/ConformanceTests/DocExamples")
        let exampleFiles = try FileManager.default.contentsOfDirectory(at: examplesFolder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "swift" }
        let examples = try exampleFiles.map { Self.normalized(try String(contentsOf: $0, encoding: .utf8).components(separatedBy: "\n")) }
        let documents = try Self.documents()
        #expect(!documents.isEmpty, "no DocC articles found under Sources")
        var checked = 0
        for document in documents {
            let text = try String(contentsOf: document, encoding: .utf8)
            for block in Self.swiftBlocks(text) {
                let lines = Self.normalized(block)
                if lines.first == "// Package.swift" || lines.isEmpty { continue }
                checked += 1
                let found = examples.contains { file in
                    guard file.count >= lines.count else { return false }
                    return (0...(file.count - lines.count)).contains { start in
                        Array(file[start..<(start + lines.count)]) == lines
                    }
                }
                #expect(found, "\(document.lastPathComponent): this example is not in Tests/ConformanceTests/DocExamples:\n\(block.joined(separator: "\n"))")
            }
        }
        #expect(checked > 0)
    }
}
