import BookmarksApp
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test("options win over the environment, which wins over the defaults")
    func precedence() throws {
        #expect(try AppConfiguration.parse(arguments: [], environment: [:])
            == AppConfiguration(databaseURL: "bookmarks.sqlite", host: "127.0.0.1", port: 8080))
        let environment = ["DATABASE_URL": "postgresql://u@db/bookmarks", "HOST": "0.0.0.0", "PORT": "9000"]
        let fromEnvironment = try AppConfiguration.parse(arguments: [], environment: environment)
        #expect(fromEnvironment == AppConfiguration(databaseURL: "postgresql://u@db/bookmarks", host: "0.0.0.0", port: 9000))
        #expect(fromEnvironment.isPostgres)
        let fromOptions = try AppConfiguration.parse(
            arguments: ["--database-url", "/var/lib/b.sqlite", "--host=::1", "--port", "0"], environment: environment)
        #expect(fromOptions == AppConfiguration(databaseURL: "/var/lib/b.sqlite", host: "::1", port: 0))
        #expect(!fromOptions.isPostgres)
        #expect(try AppConfiguration.parse(arguments: ["--telemetry", "off"], environment: [:]).telemetry == false)
        #expect(try AppConfiguration.parse(arguments: [], environment: ["TELEMETRY": "off"]).telemetry == false)
        #expect(try AppConfiguration.parse(arguments: ["--telemetry=on"], environment: ["TELEMETRY": "off"]).telemetry)
    }

    @Test("a bad command line is a typed error that says what is accepted")
    func errors() {
        #expect(throws: ConfigurationError.unknownOption("--db")) { try AppConfiguration.parse(arguments: ["--db", "x"], environment: [:]) }
        #expect(throws: ConfigurationError.missingValue("--port")) { try AppConfiguration.parse(arguments: ["--port"], environment: [:]) }
        #expect(throws: ConfigurationError.missingValue("--host")) {
            try AppConfiguration.parse(arguments: ["--host", "--port", "1"], environment: [:])
        }
        #expect(throws: ConfigurationError.invalidPort("65536", source: "--port")) {
            try AppConfiguration.parse(arguments: ["--port", "65536"], environment: [:])
        }
        #expect(throws: ConfigurationError.invalidPort("http", source: "PORT")) {
            try AppConfiguration.parse(arguments: [], environment: ["PORT": "http"])
        }
        #expect(throws: ConfigurationError.invalidSwitch("maybe", source: "--telemetry")) {
            try AppConfiguration.parse(arguments: ["--telemetry", "maybe"], environment: [:])
        }
        #expect(ConfigurationError.unknownOption("--db").description
            == "unknown option --db; the options are --database-url URL, --host HOST, --port PORT and --telemetry on|off")
    }
}
