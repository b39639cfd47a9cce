import Foundation
import Logging
import Tracing

/// A swift-distributed-tracing backend that writes each span to a logger when it ends: its
/// name, duration, trace and parent, attributes, status and errors. A stand-in for an
/// OpenTelemetry exporter that needs no collector.
///
/// A span started inside another (the task's `ServiceContext` holds the parent) keeps the
/// parent's trace id, so a request's span and the database statements it ran share one.
public struct LoggingTracer: Tracer {
    /// The spans it makes.
    public typealias Span = LoggingSpan

    let logger: Logger
    let level: Logger.Level

    /// Creates a tracer that logs ended spans to `logger` at `level`.
    public init(logger: Logger, level: Logger.Level = .debug) {
        self.logger = logger
        self.level = level
    }

    /// Starts a span, a child of the context's span when it has one (same trace id).
    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> LoggingSpan {
        var context = context()
        let parent = context.loggingSpanIdentity
        let identity = LoggingSpanIdentity(traceID: parent?.traceID ?? Self.randomID(bytes: 16), spanID: Self.randomID(bytes: 8))
        context.loggingSpanIdentity = identity
        return LoggingSpan(operationName: operationName, kind: kind, context: context, identity: identity,
                           parentSpanID: parent?.spanID, start: instant().nanosecondsSinceEpoch, tracer: self)
    }

    /// Spans are not looked up by context here.
    public func activeSpan(identifiedBy context: ServiceContext) -> LoggingSpan? { nil }

    /// Nothing is buffered: each span is logged when it ends.
    public func forceFlush() {}

    // Propagation across processes (W3C trace context headers) is out of this example's scope.
    /// Injects nothing.
    public func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {}

    /// Extracts nothing.
    public func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {}

    static func randomID(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    func write(_ span: LoggingSpan.Ended) {
        var metadata: Logger.Metadata = [
            "trace_id": .string(span.identity.traceID),
            "span_id": .string(span.identity.spanID),
            "kind": .string("\(span.kind)"),
            "duration_ms": .string(String(format: "%.3f", Double(span.durationNanoseconds) / 1_000_000)),
        ]
        if let parent = span.parentSpanID { metadata["parent_id"] = .string(parent) }
        if let status = span.status { metadata["status"] = .string("\(status.code)") }
        if !span.errors.isEmpty { metadata["errors"] = .array(span.errors.map { .string($0) }) }
        span.attributes.forEach { name, value in metadata[name] = .string(LoggingSpan.text(value)) }
        logger.log(level: level, "span \(span.operationName)", metadata: metadata)
    }
}

/// The ids of a ``LoggingSpan``, kept in the `ServiceContext` of the code it wraps.
public struct LoggingSpanIdentity: Sendable, Equatable {
    /// The trace's id (32 hex digits), shared by a span and its descendants.
    public var traceID: String
    /// The span's own id (16 hex digits).
    public var spanID: String
}

private enum LoggingSpanIdentityKey: ServiceContextKey {
    typealias Value = LoggingSpanIdentity
}

extension ServiceContext {
    /// The ``LoggingSpan`` this context belongs to, if any.
    public var loggingSpanIdentity: LoggingSpanIdentity? {
        get { self[LoggingSpanIdentityKey.self] }
        set { self[LoggingSpanIdentityKey.self] = newValue }
    }
}

/// A span of ``LoggingTracer``: it collects what is set on it and is logged when it ends.
public final class LoggingSpan: Tracing.Span, @unchecked Sendable {
    // @unchecked: the mutable state is only touched under `lock`.
    /// The context of the code the span wraps (it carries the span's ids).
    public let context: ServiceContext
    let identity: LoggingSpanIdentity
    let kind: SpanKind
    let parentSpanID: String?
    let start: UInt64
    let tracer: LoggingTracer
    private let lock = NSLock()
    private var name: String
    private var storedAttributes: SpanAttributes = [:]
    private var status: SpanStatus?
    private var errors: [String] = []
    private var ended = false

    init(operationName: String, kind: SpanKind, context: ServiceContext, identity: LoggingSpanIdentity,
         parentSpanID: String?, start: UInt64, tracer: LoggingTracer) {
        self.name = operationName
        self.kind = kind
        self.context = context
        self.identity = identity
        self.parentSpanID = parentSpanID
        self.start = start
        self.tracer = tracer
    }

    /// What is logged when a span ends.
    struct Ended {
        var operationName: String
        var kind: SpanKind
        var identity: LoggingSpanIdentity
        var parentSpanID: String?
        var durationNanoseconds: UInt64
        var attributes: SpanAttributes
        var status: SpanStatus?
        var errors: [String]
    }

    /// The span's name.
    public var operationName: String {
        get { locked { name } }
        set { locked { name = newValue } }
    }

    /// The attributes logged with the span.
    public var attributes: SpanAttributes {
        get { locked { storedAttributes } }
        set { locked { storedAttributes = newValue } }
    }

    /// True until the span ends.
    public var isRecording: Bool { locked { !ended } }

    /// Sets the status logged with the span.
    public func setStatus(_ status: SpanStatus) { locked { self.status = status } }

    /// Events are not logged.
    public func addEvent(_ event: SpanEvent) {}

    /// Links are not logged.
    public func addLink(_ link: SpanLink) {}

    /// Adds the error to the ones logged with the span.
    public func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        let text = "\(error)"
        locked { errors.append(text) }
    }

    /// Logs the span (once).
    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let end = instant().nanosecondsSinceEpoch
        let ended: Ended? = locked {
            guard !self.ended else { return nil }
            self.ended = true
            return Ended(operationName: name, kind: kind, identity: identity, parentSpanID: parentSpanID,
                         durationNanoseconds: end >= start ? end - start : 0, attributes: storedAttributes,
                         status: status, errors: errors)
        }
        if let ended { tracer.write(ended) }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    static func text(_ attribute: SpanAttribute) -> String {
        switch attribute {
        case .string(let value): return value
        case .int64(let value): return String(value)
        case .int32(let value): return String(value)
        case .double(let value): return String(value)
        case .bool(let value): return String(value)
        default: return "\(attribute)"
        }
    }
}
