/// The service's settings: where the database is and where to listen.
///
/// Each comes from a command-line option, else an environment variable, else a default:
///
/// | option | environment | default |
/// |---|---|---|
/// | `--database-url` | `DATABASE_URL` | `bookmarks.sqlite` |
/// | `--host` | `HOST` | `127.0.0.1` |
/// | `--port` | `PORT` | `8080` |
/// | `--telemetry on\|off` | `TELEMETRY` | `on` |
///
/// A database URL that starts with `postgres://` or `postgresql://` is a PostgreSQL server
/// (any libpq URL); anything else is the path of a SQLite file.
public struct AppConfiguration: Sendable, Equatable {
    /// A SQLite path or a PostgreSQL URL.
    public var databaseURL: String
    /// The address to bind.
    public var host: String
    /// The port to bind (0 picks a free one).
    public var port: Int
    /// How many connections the PostgreSQL pool opens (SQLite has one writer and this many readers).
    public var connections: Int
    /// A PostgreSQL schema to put first on every connection's `search_path` (the tests give
    /// each test a schema of its own); nil keeps the server's default.
    public var postgresSchema: String?
    /// Whether requests and the database report metrics and spans (to the log: the spans at
    /// `debug`, the metrics every minute at `info`).
    public var telemetry: Bool

    /// Creates a configuration.
    public init(databaseURL: String = "bookmarks.sqlite", host: String = "127.0.0.1", port: Int = 8080,
                connections: Int = 8, postgresSchema: String? = nil, telemetry: Bool = true) {
        self.telemetry = telemetry
        self.databaseURL = databaseURL
        self.host = host
        self.port = port
        self.connections = connections
        self.postgresSchema = postgresSchema
    }

    /// True when ``databaseURL`` names a PostgreSQL server.
    public var isPostgres: Bool {
        databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://")
    }

    /// Reads the settings from command-line `arguments` (without the program name) and the
    /// `environment`; an option given on the command line wins.
    ///
    /// - Throws: ``ConfigurationError`` for an unknown option, an option without its value,
    ///   or a port that is not a number from 0 to 65535.
    public static func parse(arguments: [String], environment: [String: String]) throws -> AppConfiguration {
        var configuration = AppConfiguration()
        if let url = environment["DATABASE_URL"], !url.isEmpty { configuration.databaseURL = url }
        if let host = environment["HOST"], !host.isEmpty { configuration.host = host }
        if let port = environment["PORT"], !port.isEmpty { configuration.port = try parsePort(port, from: "PORT") }
        if let telemetry = environment["TELEMETRY"], !telemetry.isEmpty {
            configuration.telemetry = try parseSwitch(telemetry, from: "TELEMETRY")
        }

        var rest = arguments[...]
        while let option = rest.popFirst() {
            // `--name=value` and `--name value` are both accepted.
            var name = option
            var inlineValue: String?
            if let equals = option.firstIndex(of: "="), option.hasPrefix("--") {
                name = String(option[..<equals])
                inlineValue = String(option[option.index(after: equals)...])
            }
            guard ["--database-url", "--host", "--port", "--telemetry"].contains(name) else {
                throw ConfigurationError.unknownOption(option)
            }
            guard let value = inlineValue ?? rest.popFirst(), !value.isEmpty, !value.hasPrefix("--") else {
                throw ConfigurationError.missingValue(name)
            }
            switch name {
            case "--database-url": configuration.databaseURL = value
            case "--host": configuration.host = value
            case "--telemetry": configuration.telemetry = try parseSwitch(value, from: "--telemetry")
            default: configuration.port = try parsePort(value, from: "--port")
            }
        }
        return configuration
    }

    private static func parseSwitch(_ text: String, from source: String) throws -> Bool {
        switch text.lowercased() {
        case "on", "true", "1": return true
        case "off", "false", "0": return false
        default: throw ConfigurationError.invalidSwitch(text, source: source)
        }
    }

    private static func parsePort(_ text: String, from source: String) throws -> Int {
        guard let port = Int(text), (0...65_535).contains(port) else {
            throw ConfigurationError.invalidPort(text, source: source)
        }
        return port
    }
}

/// A command line or environment the service cannot start with.
public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// An option the service does not know.
    case unknownOption(String)
    /// An option given without its value.
    case missingValue(String)
    /// A port that is not a number from 0 to 65535.
    case invalidPort(String, source: String)
    /// An on/off setting that is neither.
    case invalidSwitch(String, source: String)

    /// What went wrong and what the service accepts.
    public var description: String {
        switch self {
        case .unknownOption(let option):
            return "unknown option \(option); the options are --database-url URL, --host HOST, --port PORT and --telemetry on|off"
        case .missingValue(let option):
            return "\(option) needs a value"
        case .invalidPort(let text, let source):
            return "\(source): \(text) is not a port (a number from 0 to 65535)"
        case .invalidSwitch(let text, let source):
            return "\(source): \(text) is neither on nor off"
        }
    }
}
