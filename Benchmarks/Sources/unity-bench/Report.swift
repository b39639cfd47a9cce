import Foundation

/// Renders results as the text table and as `--json`.
enum Report {
    /// The text table, one line per case.
    static func table(_ results: [CaseResult], baseline: String = "raw") -> String {
        let header = ["backend", "workload", "rows", "subject", "median", "rows/s", "vs \(baseline)", "spread", "peak mem", "check"]
        var lines: [[String]] = [header]
        for result in results {
            var check: String
            switch result.status {
            case .measured: check = "ok"
            case .skipped(let reason): check = "skipped: \(reason)"
            case .failed(let message): check = "FAILED: \(message)"
            }
            if case .measured = result.status, let checksum = result.checksum { check = "ok (\(checksum.count))" }
            lines.append([
                result.backend.rawValue, (result.label ?? result.workload.rawValue), grouped(result.rows), result.subject,
                result.medianSeconds.map(seconds) ?? "-",
                result.rowsPerSecond.map { grouped(Int($0.rounded())) } ?? "-",
                result.ratioToRaw.map { String(format: "%.2fx", $0) } ?? "-",
                result.ratioSpread.map { String(format: "%.2f–%.2f", $0.low, $0.high) } ?? "-",
                result.peakMemoryBytes.map(megabytes) ?? "-",
                check,
            ])
        }
        let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
        let rightAligned: Set<Int> = [2, 4, 5, 6, 7, 8]
        return lines.enumerated().map { index, line in
            let cells = line.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return column == line.count - 1 ? cell : (rightAligned.contains(column) ? padding + cell : cell + padding)
            }
            let text = cells.joined(separator: "  ")
            return index == 0 ? text + "\n" + String(repeating: "-", count: text.count) : text
        }.joined(separator: "\n")
    }

    /// The JSON report: `{"results": [{backend, workload, subject, rows, median_seconds, ratio_to_raw,
    /// min_seconds, max_seconds, peak_memory_bytes}]}`, one object per measured case (skipped and failed cases are left out
    /// of `results` and listed under `skipped` / `failed` with their reason).
    static func json(_ results: [CaseResult]) throws -> Data {
        struct Entry: Encodable {
            var backend: String
            var workload: String
            var subject: String
            var rows: Int
            var median_seconds: Double
            var ratio_to_raw: Double?
            var min_seconds: Double?
            var max_seconds: Double?
            var peak_memory_bytes: Int?
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(backend, forKey: .backend)
                try container.encode(workload, forKey: .workload)
                try container.encode(subject, forKey: .subject)
                try container.encode(rows, forKey: .rows)
                try container.encode(median_seconds, forKey: .median_seconds)
                try container.encode(ratio_to_raw, forKey: .ratio_to_raw) // null when raw did not run
                try container.encode(min_seconds, forKey: .min_seconds)
                try container.encode(max_seconds, forKey: .max_seconds)
                try container.encode(peak_memory_bytes, forKey: .peak_memory_bytes) // null where not measured
            }
            enum CodingKeys: String, CodingKey {
                case backend, workload, subject, rows, median_seconds, ratio_to_raw, min_seconds, max_seconds, peak_memory_bytes
            }
        }
        struct Omitted: Encodable {
            var backend: String
            var workload: String
            var subject: String
            var rows: Int
            var reason: String
        }
        struct Document: Encodable {
            var results: [Entry] = []
            var skipped: [Omitted] = []
            var failed: [Omitted] = []
        }
        var document = Document()
        for result in results {
            switch result.status {
            case .measured:
                guard let median = result.medianSeconds else { continue }
                document.results.append(Entry(
                    backend: result.backend.rawValue, workload: (result.label ?? result.workload.rawValue), subject: result.subject,
                    rows: result.rows, median_seconds: median, ratio_to_raw: result.ratioToRaw,
                    min_seconds: result.minSeconds, max_seconds: result.maxSeconds,
                    peak_memory_bytes: result.peakMemoryBytes))
            case .skipped(let reason):
                document.skipped.append(Omitted(backend: result.backend.rawValue, workload: (result.label ?? result.workload.rawValue),
                                                subject: result.subject, rows: result.rows, reason: reason))
            case .failed(let reason):
                document.failed.append(Omitted(backend: result.backend.rawValue, workload: (result.label ?? result.workload.rawValue),
                                               subject: result.subject, rows: result.rows, reason: reason))
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(document)
    }

    private static func grouped(_ value: Int) -> String {
        let digits = String(value)
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return result
    }

    private static func seconds(_ value: Double) -> String {
        value >= 1 ? String(format: "%.3f s", value) : String(format: "%.2f ms", value * 1_000)
    }

    private static func megabytes(_ bytes: Int) -> String {
        String(format: "%.1f MB", Double(bytes) / 1_048_576)
    }
}
