// swift-tools-version:6.0
import CompilerPluginSupport
import PackageDescription

// Dependencies come from the local package mirror; each one is justified:
// - swift-log: `echo` logs every statement through the standard server-side logging API.
// - swift-docc-plugin: builds the documentation (scripts/docs); it adds no code to a build.
// - swift-syntax: the `@RowCoded` macro (target UnityMacros) that generates row coding. Only
//   the UnityRowCoding module (and the tests) depend on it; `Unity` itself builds without it.
//   The state flavor's `@Model` / `@Command` macros live there too (module UnityState; its
//   runtime, UnityStateRuntime, builds without swift-syntax).
// - swift-metrics, swift-distributed-tracing: only the UnityTelemetry module (metrics and
//   tracing, opt-in) depends on them, so an app that does not use that product never builds them.
// - swift-argument-parser: only the `unity` command (migrations at the command line).
let package = Package(
    name: "Unity",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "Unity", targets: ["Unity"]),
        .library(name: "UnityRowCoding", targets: ["UnityRowCoding"]),
        .library(name: "UnityPersistable", targets: ["UnityPersistable"]),
        .library(name: "UnityORM", targets: ["UnityORM"]),
        .library(name: "UnityORMFields", targets: ["UnityORMFields"]),
        .library(name: "UnityState", targets: ["UnityState"]),
        .library(name: "UnityStateRuntime", targets: ["UnityStateRuntime"]),
        .library(name: "UnityPredicates", targets: ["UnityPredicates"]),
        .library(name: "DriverSQLite", targets: ["DriverSQLite"]),
        .library(name: "DriverPostgres", targets: ["DriverPostgres"]),
        .library(name: "UnityTelemetry", targets: ["UnityTelemetry"]),
        .executable(name: "unity", targets: ["UnityCLI"]),
        .executable(name: "unity-demo", targets: ["unity-demo"]),
        .executable(name: "unity-observe-writer", targets: ["unity-observe-writer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.1"),
        // swift-docc-plugin: `scripts/docs` builds each module's DocC catalog into a static site.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .target(
            name: "Unity",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .macro(
            name: "UnityMacros",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        .target(name: "UnityRowCoding", dependencies: ["Unity", "UnityMacros"]),
        .target(name: "DriverSQLite", dependencies: ["Unity", "CSQLite"]),
        .target(name: "DriverPostgres", dependencies: ["Unity", "CLibPQ"]),
        .target(
            name: "UnityPersistable",
            dependencies: ["Unity", .product(name: "Logging", package: "swift-log")]
        ),
        .target(name: "UnityORM", dependencies: ["Unity", .product(name: "Logging", package: "swift-log")]),
        .target(name: "UnityORMFields", dependencies: ["UnityORM", "UnityMacros"]),
        // The state flavor: its runtime builds without swift-syntax (the benchmark uses it with
        // hand-written conformances); `UnityState` adds the macros and re-exports the runtime.
        .target(name: "UnityStateRuntime", dependencies: ["Unity"]),
        .target(name: "UnityState", dependencies: ["UnityStateRuntime", "UnityMacros"]),
        .target(name: "UnityPredicates", dependencies: ["Unity"]),
        // Metrics and tracing: a separate product, so that only the apps that turn them on
        // build swift-metrics and swift-distributed-tracing.
        .target(
            name: "UnityTelemetry",
            dependencies: [
                "Unity",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // `unity migrate …`: the migrator at the command line (the command in a library the
        // tests import, the executable a `main.swift` that runs it).
        .target(
            name: "UnityCommandLine",
            dependencies: [
                "Unity", "DriverSQLite", "DriverPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "UnityCLI",
            dependencies: ["UnityCommandLine"]
        ),
        .executableTarget(
            name: "unity-demo",
            dependencies: [
                "Unity", "DriverSQLite", "DriverPostgres",
                "UnityPersistable", "UnityORMFields", "UnityState", "UnityPredicates",
            ]
        ),
        // A second process that commits at a steady pace: observation's tests and benchmark.
        .executableTarget(name: "unity-observe-writer", dependencies: ["Unity", "DriverSQLite", "DriverPostgres"]),
        .testTarget(name: "UnityCoreTests", dependencies: ["Unity"]),
        .testTarget(
            name: "UnityMacrosTests",
            dependencies: [
                "UnityMacros",
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(name: "DriverSQLiteTests", dependencies: ["Unity", "DriverSQLite"]),
        .testTarget(name: "DriverPostgresTests", dependencies: ["Unity", "DriverPostgres"]),
        .testTarget(
            name: "ConformanceTests",
            dependencies: [
                "Unity", "DriverSQLite", "DriverPostgres", "UnityRowCoding",
                "UnityPersistable", "UnityORM", "UnityORMFields", "UnityState", "UnityPredicates",
                "UnityTelemetry", "UnityCommandLine",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "ReadmeExamples",
            dependencies: [
                "Unity", "DriverSQLite", "DriverPostgres", "UnityPersistable", "UnityORMFields",
                "UnityState", "UnityPredicates",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
