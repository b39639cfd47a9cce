// swift-tools-version:6.1
import PackageDescription

// A bookmarks JSON API on Hummingbird 2, written with Unity's SQL-first flavor. It is a package
// of its own so that Unity's users never build Hummingbird: Unity comes in by path.
//
// - hummingbird: the HTTP server and router; HummingbirdTesting (in the same package) drives
//   the app over real HTTP in the tests. Its `ConfigurationSupport` trait is left off: the
//   service reads its three settings itself, so swift-configuration is not built.
// - swift-service-lifecycle: runs the server and the database pool as services, with graceful
//   shutdown on SIGTERM / SIGINT.
// - swift-log: the service's logging (Unity's `echo` logs through it too).
// - swift-metrics / swift-distributed-tracing: the service's metrics and spans, and Unity's
//   (its UnityTelemetry product), go to logging backends of its own (Sources/BookmarksApp/Telemetry).
let package = Package(
    name: "Bookmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "bookmarks", targets: ["bookmarks"]),
    ],
    dependencies: [
        .package(name: "Unity", path: "../.."),
        .package(
            url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1",
            traits: ["FullFoundation"]
        ),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .target(
            name: "BookmarksApp",
            dependencies: [
                .product(name: "Unity", package: "Unity"),
                .product(name: "UnityRowCoding", package: "Unity"),
                .product(name: "DriverSQLite", package: "Unity"),
                .product(name: "DriverPostgres", package: "Unity"),
                .product(name: "UnityTelemetry", package: "Unity"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(name: "bookmarks", dependencies: ["BookmarksApp"]),
        .testTarget(
            name: "BookmarksTests",
            dependencies: [
                "BookmarksApp",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
