import Foundation
import Metrics
import Tracing
import Unity

/// A swift-metrics backend that keeps every value in memory: one handler per label and
/// dimensions (sorted), as real backends share a series.
final class RecordingMetrics: MetricsFactory, @unchecked Sendable {
    // @unchecked: `handlers` is guarded by `lock`; each handler guards itself.
    private let lock = NSLock()
    private var handlers: [String: AnyObject] = [:]

    private static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        label + "{" + dimensions.sorted { $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }

    private func handler<H: AnyObject>(_ label: String, _ dimensions: [(String, String)], make: () -> H) -> H {
        lock.lock()
        defer { lock.unlock() }
        let key = Self.key(label, dimensions)
        if let found = handlers[key] as? H { return found }
        let made = make()
        handlers[key] = made
        return made
    }

    private func find<H: AnyObject>(_ type: H.Type, _ label: String, _ dimensions: [(String, String)]) -> H? {
        lock.lock()
        defer { lock.unlock() }
        return handlers[Self.key(label, dimensions)] as? H
    }

    /// Every series kept, as `label{dimension=value,…}` (dimensions sorted by name).
    var seriesKeys: [String] {
        lock.lock()
        defer { lock.unlock() }
        return handlers.keys.sorted()
    }

    /// A counter's total, or nil when no such series was made.
    func counter(_ label: String, _ dimensions: [(String, String)]) -> Int64? {
        find(RecordingCounter.self, label, dimensions)?.total
    }

    /// A meter's last value, or nil.
    func meter(_ label: String, _ dimensions: [(String, String)]) -> Double? {
        find(RecordingMeter.self, label, dimensions)?.values.last
    }

    /// Every value a meter was set to, in order.
    func meterHistory(_ label: String, _ dimensions: [(String, String)]) -> [Double] {
        find(RecordingMeter.self, label, dimensions)?.values ?? []
    }

    /// Every duration a timer recorded, in nanoseconds, or nil when no such series was made.
    func timer(_ label: String, _ dimensions: [(String, String)]) -> [Int64]? {
        find(RecordingTimer.self, label, dimensions)?.values
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        handler(label, dimensions) { RecordingCounter() }
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler {
        handler(label, dimensions) { RecordingFloatingCounter() }
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler {
        handler(label, dimensions) { RecordingMeter() }
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        handler(label, dimensions) { RecordingRecorder() }
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        handler(label, dimensions) { RecordingTimer() }
    }

    func destroyCounter(_ handler: CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    func destroyMeter(_ handler: MeterHandler) {}
    func destroyRecorder(_ handler: RecorderHandler) {}
    func destroyTimer(_ handler: TimerHandler) {}
}

private final class RecordingCounter: CounterHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int64 = 0
    var total: Int64 { lock.withLock { value } }
    func increment(by amount: Int64) { lock.withLock { value += amount } }
    func reset() { lock.withLock { value = 0 } }
}

private final class RecordingFloatingCounter: FloatingPointCounterHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var value: Double = 0
    func increment(by amount: Double) { lock.withLock { value += amount } }
    func reset() { lock.withLock { value = 0 } }
}

private final class RecordingMeter: MeterHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var history: [Double] = []
    var values: [Double] { lock.withLock { history } }
    func set(_ value: Int64) { lock.withLock { history.append(Double(value)) } }
    func set(_ value: Double) { lock.withLock { history.append(value) } }
    func increment(by amount: Double) { lock.withLock { history.append((history.last ?? 0) + amount) } }
    func decrement(by amount: Double) { lock.withLock { history.append((history.last ?? 0) - amount) } }
}

private final class RecordingRecorder: RecorderHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var history: [Double] = []
    func record(_ value: Int64) { lock.withLock { history.append(Double(value)) } }
    func record(_ value: Double) { lock.withLock { history.append(value) } }
}

private final class RecordingTimer: TimerHandler, @unchecked Sendable {
    private let lock = NSLock()
    private var history: [Int64] = []
    var values: [Int64] { lock.withLock { history } }
    func recordNanoseconds(_ duration: Int64) { lock.withLock { history.append(duration) } }
}

/// The id of the test span a context belongs to.
enum TestSpanIDKey: ServiceContextKey {
    typealias Value = Int
}

/// A tracer that keeps every span in memory, each with the id of its parent (read from the
/// context it was started in).
final class RecordingTracer: Tracer, @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var started: [RecordingSpan] = []
    private var nextID = 1

    /// Every span started, in order.
    var spans: [RecordingSpan] { lock.withLock { started } }

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> RecordingSpan {
        let parent = context()
        let id = lock.withLock {
            defer { nextID += 1 }
            return nextID
        }
        var own = parent
        own[TestSpanIDKey.self] = id
        let span = RecordingSpan(operationName: operationName, kind: kind, id: id, parentID: parent[TestSpanIDKey.self], context: own)
        lock.withLock { started.append(span) }
        return span
    }

    func forceFlush() {}

    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}

    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
}

/// A span kept by ``RecordingTracer``.
final class RecordingSpan: Span, @unchecked Sendable {
    // @unchecked: mutable fields are guarded by `lock`.
    private let lock = NSLock()
    let kind: SpanKind
    let id: Int
    let parentID: Int?
    let context: ServiceContext
    private var name: String
    private var storedAttributes: SpanAttributes = [:]
    private var storedStatus: SpanStatus?
    private var storedErrors: [String] = []
    private var endCount = 0

    init(operationName: String, kind: SpanKind, id: Int, parentID: Int?, context: ServiceContext) {
        self.name = operationName
        self.kind = kind
        self.id = id
        self.parentID = parentID
        self.context = context
    }

    var operationName: String {
        get { lock.withLock { name } }
        set { lock.withLock { name = newValue } }
    }

    var attributes: SpanAttributes {
        get { lock.withLock { storedAttributes } }
        set { lock.withLock { storedAttributes = newValue } }
    }

    var status: SpanStatus? { lock.withLock { storedStatus } }
    /// The errors recorded, as text.
    var errors: [String] { lock.withLock { storedErrors } }
    /// How many times the span was ended (1 when all went well).
    var ended: Int { lock.withLock { endCount } }
    var isRecording: Bool { true }

    func setStatus(_ status: SpanStatus) { lock.withLock { storedStatus = status } }
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        lock.withLock { storedErrors.append(String(describing: error)) }
    }
    func addLink(_ link: SpanLink) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { lock.withLock { endCount += 1 } }

    /// A string attribute's value (nil when absent or not a string).
    func string(_ key: String) -> String? {
        if case .string(let value)? = attributes.get(key) { return value }
        return nil
    }

    /// An integer attribute's value.
    func int(_ key: String) -> Int64? {
        if case .int64(let value)? = attributes.get(key) { return value }
        return nil
    }
}
