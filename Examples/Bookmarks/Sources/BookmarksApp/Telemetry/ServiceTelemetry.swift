import Foundation
import Hummingbird
import Logging
import Metrics
import ServiceLifecycle
import Tracing
import Unity
import UnityTelemetry

/// Where the service's metrics and spans go: the logging backends of this example
/// (``LoggingMetrics``, ``LoggingTracer``), passed explicitly rather than bootstrapped
/// process-wide, so that tests can start several services in one process.
///
/// With it, each request gets a server span (`GET /bookmarks`) and the
/// `http.server.request.duration` timer, and the database reports its pool, statements and
/// transactions through Unity's `TelemetryInstrumentation`: each statement's span is a child
/// of its request's span.
public struct ServiceTelemetry: Sendable {
    /// The metrics backend.
    public var metrics: LoggingMetrics
    /// The tracer, or nil for metrics alone.
    public var tracer: LoggingTracer?
    /// How often the metrics are written to the log (and once more at shutdown).
    public var reportInterval: Duration
    /// Where the metrics report goes.
    public var logger: Logger

    /// Creates the telemetry of one service.
    public init(metrics: LoggingMetrics = LoggingMetrics(), tracer: LoggingTracer?, reportInterval: Duration = .seconds(60),
                logger: Logger) {
        self.metrics = metrics
        self.tracer = tracer
        self.reportInterval = reportInterval
        self.logger = logger
    }

    /// Unity's instrumentation for the database of `configuration`.
    func instrumentation(for configuration: AppConfiguration) -> TelemetryInstrumentation {
        TelemetryInstrumentation(metrics: metrics, tracer: tracer, databaseName: configuration.databaseName)
    }
}

extension AppConfiguration {
    /// The database's name for `db.namespace`: the PostgreSQL database in the URL's path, or
    /// the SQLite file's name.
    var databaseName: String? {
        if isPostgres {
            let name = URLComponents(string: databaseURL)?.path.split(separator: "/").first.map(String.init)
            return name?.isEmpty == false ? name : nil
        }
        return URL(fileURLWithPath: databaseURL).lastPathComponent
    }
}

/// A server span and the `http.server.request.duration` timer per request, named after the
/// OpenTelemetry HTTP conventions (`http.request.method`, `http.route`,
/// `http.response.status_code`). The span is the task's `ServiceContext` while the route runs,
/// so the database statements it causes become its children.
struct RequestTelemetryMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: LoggingMetrics
    let tracer: LoggingTracer?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let route = context.endpointPath ?? "unmatched"
        let method = request.method.rawValue
        var status = 500
        defer {
            let elapsed = ContinuousClock.now - start
            let nanoseconds = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
            metrics.makeTimer(label: "http.server.request.duration", dimensions: [
                ("http.request.method", method), ("http.route", route), ("http.response.status_code", String(status)),
            ]).recordNanoseconds(nanoseconds)
        }
        guard let tracer else {
            let response = try await next(request, context)
            status = response.status.code
            return response
        }
        return try await tracer.withSpan("\(method) \(route)", ofKind: .server) { span in
            span.attributes["http.request.method"] = method
            span.attributes["http.route"] = route
            do {
                let response = try await next(request, context)
                status = response.status.code
                span.attributes["http.response.status_code"] = status
                if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
                return response
            } catch let error as any HTTPResponseError {
                status = error.status.code
                span.attributes["http.response.status_code"] = status
                throw error
            }
        }
    }
}

/// Writes the metrics to the log every ``ServiceTelemetry/reportInterval`` and once more when
/// the service stops (after the pool has closed, so the last report shows it empty).
struct MetricsReporter: Service {
    let telemetry: ServiceTelemetry

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: telemetry.reportInterval)
                } catch {
                    return
                }
                telemetry.metrics.log(to: telemetry.logger)
            }
        }
        telemetry.metrics.log(to: telemetry.logger)
    }
}
