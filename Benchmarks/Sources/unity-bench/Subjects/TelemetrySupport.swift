import Foundation
import Unity
#if Telemetry
import Metrics
import Tracing
import UnityTelemetry
#endif

/// What `core-telemetry` turns on (built only with `--traits Telemetry`): Unity's
/// `TelemetryInstrumentation` with an in-memory metrics backend that aggregates as a real one
/// does (a sum per counter, a count and a sum per timer, the last value per meter, each behind
/// a lock) and a tracer whose spans keep their attributes and status until they end, then
/// are dropped. So the cost measured is the instrumentation's own plus a minimal backend's,
/// not an exporter's.
enum BenchTelemetry {
    /// The instrumentation; nil in a build without the trait (then no subject asks for it).
    static func instrumentation() -> (any DatabaseInstrumentation)? {
        #if Telemetry
        TelemetryInstrumentation(metrics: AggregatingMetrics(), tracer: DiscardingTracer(), databaseName: "bench")
        #else
        nil
        #endif
    }
}

#if Telemetry

private final class AggregatingMetrics: MetricsFactory, @unchecked Sendable {
    // @unchecked: `handlers` is guarded by `lock`.
    private let lock = NSLock()
    private var handlers: [String: AnyObject] = [:]

    private func handler<H: AnyObject>(_ label: String, _ dimensions: [(String, String)], _ make: () -> H) -> H {
        let key = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        return lock.withLock {
            if let found = handlers[key] as? H { return found }
            let made = make()
            handlers[key] = made
            return made
        }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler { handler(label, dimensions) { Aggregate() } }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler {
        handler(label, dimensions) { Aggregate() }
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler { handler(label, dimensions) { Aggregate() } }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        handler(label, dimensions) { Aggregate() }
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler { handler(label, dimensions) { Aggregate() } }
    func destroyCounter(_ handler: CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    func destroyMeter(_ handler: MeterHandler) {}
    func destroyRecorder(_ handler: RecorderHandler) {}
    func destroyTimer(_ handler: TimerHandler) {}
}

/// One series: a count, a sum and a last value.
private final class Aggregate: CounterHandler, FloatingPointCounterHandler, MeterHandler, RecorderHandler, TimerHandler,
    @unchecked Sendable
{
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var count: Int64 = 0
    private var sum: Double = 0
    private var last: Double = 0

    private func add(_ value: Double) { lock.withLock { count += 1; sum += value; last = value } }
    func increment(by amount: Int64) { add(Double(amount)) }
    func increment(by amount: Double) { add(amount) }
    func decrement(by amount: Double) { add(-amount) }
    func reset() { lock.withLock { count = 0; sum = 0 } }
    func set(_ value: Int64) { add(Double(value)) }
    func set(_ value: Double) { add(value) }
    func record(_ value: Int64) { add(Double(value)) }
    func record(_ value: Double) { add(value) }
    func recordNanoseconds(_ duration: Int64) { add(Double(duration)) }
}

private struct DiscardingTracer: Tracer {
    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> DiscardedSpan {
        DiscardedSpan(operationName: operationName, context: context())
    }
    func forceFlush() {}
    func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}
    func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}
}

private final class DiscardedSpan: Span, @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    let context: ServiceContext
    private var name: String
    private var stored: SpanAttributes = [:]
    private var status: SpanStatus?

    init(operationName: String, context: ServiceContext) {
        self.name = operationName
        self.context = context
    }

    var operationName: String {
        get { lock.withLock { name } }
        set { lock.withLock { name = newValue } }
    }
    var attributes: SpanAttributes {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    var isRecording: Bool { true }
    func setStatus(_ status: SpanStatus) { lock.withLock { self.status = status } }
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
    func addLink(_ link: SpanLink) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { _ = instant() }
}
#endif
