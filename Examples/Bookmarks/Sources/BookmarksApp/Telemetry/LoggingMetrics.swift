import Foundation
import Logging
import Metrics

/// A swift-metrics backend that keeps every metric in memory and writes them to a logger:
/// a stand-in for Prometheus or OpenTelemetry that needs no collector.
///
/// Counters add up, meters keep their last value, recorders and timers keep a count, a sum,
/// a minimum and a maximum. ``log(to:)`` writes one line per metric; ``MetricsReporter``
/// calls it on a schedule and once more at shutdown.
public final class LoggingMetrics: MetricsFactory, @unchecked Sendable {
    // @unchecked: every mutable state is behind `lock` (here and in each handler).
    private let lock = NSLock()
    private var handlers: [MetricKey: MetricBox] = [:]

    /// Creates an empty backend.
    public init() {}

    /// One metric's identity: its label and its dimensions, sorted by name.
    public struct MetricKey: Hashable, Sendable, Comparable, CustomStringConvertible {
        /// The metric's label.
        public var label: String
        /// Its dimensions as `name=value`, sorted.
        public var dimensions: [String]

        init(_ label: String, _ dimensions: [(String, String)]) {
            self.label = label
            self.dimensions = dimensions.map { "\($0.0)=\($0.1)" }.sorted()
        }

        /// By label, then dimensions.
        public static func < (lhs: MetricKey, rhs: MetricKey) -> Bool {
            (lhs.label, lhs.dimensions.joined(separator: ",")) < (rhs.label, rhs.dimensions.joined(separator: ","))
        }

        /// `label{name=value,…}`.
        public var description: String {
            dimensions.isEmpty ? label : "\(label){\(dimensions.joined(separator: ","))}"
        }
    }

    /// What a metric holds now.
    public struct Value: Sendable, Equatable {
        /// `counter`, `meter`, `recorder` or `timer`.
        public var kind: String
        /// A counter's total, a meter's or recorder's last value, a timer's last duration (ns).
        public var last: Double
        /// How many values were recorded (a counter: how many increments).
        public var count: Int
        /// The sum of the values recorded (a counter: of its increments).
        public var sum: Double
        /// The smallest value (a counter or meter: of its running value).
        public var min: Double
        /// The largest value.
        public var max: Double
    }

    private func box(_ label: String, _ dimensions: [(String, String)], _ kind: String) -> MetricBox {
        let key = MetricKey(label, dimensions)
        lock.lock()
        defer { lock.unlock() }
        if let existing = handlers[key] { return existing }
        let created = MetricBox(kind: kind)
        handlers[key] = created
        return created
    }

    /// A counter: the sum of its increments.
    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        box(label, dimensions, "counter")
    }

    /// A meter: its last value.
    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        box(label, dimensions, "meter")
    }

    /// A recorder: count, sum, minimum and maximum of its values.
    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        box(label, dimensions, "recorder")
    }

    /// A timer: count, sum, minimum and maximum of its durations, in nanoseconds.
    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        box(label, dimensions, "timer")
    }

    // Metrics live as long as the process: a destroyed handle's values stay in the report.
    /// Keeps the counter's values (see above).
    public func destroyCounter(_ handler: any CounterHandler) {}
    /// Keeps the meter's values.
    public func destroyMeter(_ handler: any MeterHandler) {}
    /// Keeps the recorder's values.
    public func destroyRecorder(_ handler: any RecorderHandler) {}
    /// Keeps the timer's values.
    public func destroyTimer(_ handler: any TimerHandler) {}

    /// Every metric and its value, sorted by label and dimensions.
    public func snapshot() -> [(key: MetricKey, value: Value)] {
        lock.lock()
        let entries = handlers
        lock.unlock()
        return entries.map { (key: $0.key, value: $0.value.value) }.sorted { $0.key < $1.key }
    }

    /// The value of one metric, or nil when nothing made it. `dimensions` must list all of
    /// the metric's dimensions, in any order.
    public func value(_ label: String, _ dimensions: [(String, String)] = []) -> Value? {
        let key = MetricKey(label, dimensions)
        lock.lock()
        defer { lock.unlock() }
        return handlers[key]?.value
    }

    /// Writes one line per metric to `logger` at `level`.
    public func log(to logger: Logger, level: Logger.Level = .info) {
        for (key, value) in snapshot() {
            let text: String
            switch value.kind {
            case "counter":
                text = "\(Int64(value.last))"
            case "meter":
                text = Self.format(value.last)
            case "timer":
                text = value.count == 0 ? "count=0" : "count=\(value.count) mean=\(Self.milliseconds(value.sum / Double(value.count))) "
                    + "min=\(Self.milliseconds(value.min)) max=\(Self.milliseconds(value.max))"
            default:
                text = value.count == 0 ? "count=0" : "count=\(value.count) mean=\(Self.format(value.sum / Double(value.count))) "
                    + "min=\(Self.format(value.min)) max=\(Self.format(value.max))"
            }
            logger.log(level: level, "metric \(key) \(value.kind) \(text)")
        }
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.3f", value)
    }

    private static func milliseconds(_ nanoseconds: Double) -> String {
        String(format: "%.3fms", nanoseconds / 1_000_000)
    }
}

/// One metric's storage; it is every kind of handler, and the factory hands it out as the
/// kind that was asked for.
final class MetricBox: CounterHandler, MeterHandler, RecorderHandler, TimerHandler, @unchecked Sendable {
    // @unchecked: `state` is only touched under `lock`.
    private let lock = NSLock()
    private var state: LoggingMetrics.Value

    init(kind: String) {
        state = LoggingMetrics.Value(kind: kind, last: 0, count: 0, sum: 0, min: 0, max: 0)
    }

    var value: LoggingMetrics.Value {
        lock.lock()
        defer { lock.unlock() }
        return state
    }

    private func record(_ value: Double, accumulate: Bool) {
        lock.lock()
        defer { lock.unlock() }
        // A counter or meter changed by an amount: its min and max are of its running value.
        state.last = accumulate ? state.last + value : value
        state.min = state.count == 0 ? state.last : Swift.min(state.min, state.last)
        state.max = state.count == 0 ? state.last : Swift.max(state.max, state.last)
        state.count += 1
        state.sum += value
    }

    // CounterHandler
    func increment(by amount: Int64) { record(Double(amount), accumulate: true) }
    func reset() {
        lock.lock()
        defer { lock.unlock() }
        state = LoggingMetrics.Value(kind: state.kind, last: 0, count: 0, sum: 0, min: 0, max: 0)
    }

    // MeterHandler
    func set(_ value: Int64) { record(Double(value), accumulate: false) }
    func set(_ value: Double) { record(value, accumulate: false) }
    func increment(by amount: Double) { record(amount, accumulate: true) }
    func decrement(by amount: Double) { record(-amount, accumulate: true) }

    // RecorderHandler
    func record(_ value: Int64) { record(Double(value), accumulate: false) }
    func record(_ value: Double) { record(value, accumulate: false) }

    // TimerHandler
    func recordNanoseconds(_ duration: Int64) { record(Double(duration), accumulate: false) }
}
