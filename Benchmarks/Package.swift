// swift-tools-version:6.1
import PackageDescription

// The benchmark suite is a package of its own so the library's Package.swift stays lean:
// GRDB and postgres-nio are peers to measure against, never dependencies of Unity.
//
// - GRDB 7: the SQLite peer (module names GRDB / GRDBSQLite; no clash with Unity's CSQLite).
// - postgres-nio: the PostgreSQL peer (module PostgresNIO).
// - Fluent (fluent-kit + the SQLite and PostgreSQL drivers): Vapor's ORM, a peer on both
//   backends. It is behind the `Fluent` trait, off by default, so a plain build never compiles
//   it: `swift build -c release --product unity-bench --traits Fluent`.
// - UnityTelemetry (with swift-metrics and swift-distributed-tracing): the `core-telemetry`
//   subject, behind the `Telemetry` trait, off by default, so CI's build stays as it was.
// - RawSQLite / RawLibPQ: the raw C baselines. They wrap the same system headers as the root
//   package's CSQLite / CLibPQ under different module names, so both can be linked together.
let package = Package(
    name: "UnityBenchmarks",
    platforms: [.macOS(.v13)],
    traits: [
        .trait(
            name: "Fluent",
            description: "Adds the `fluent` subject (fluent-kit with its SQLite and PostgreSQL drivers)."
        ),
        .trait(
            name: "Telemetry",
            description: "Adds the `core-telemetry` subject: Unity with UnityTelemetry's metrics and tracing on."
        ),
    ],
    dependencies: [
        .package(name: "Unity", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Only built with `--traits Fluent` (see the target's conditional dependencies).
        .package(url: "https://github.com/vapor/fluent-kit.git", from: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-sqlite-driver.git", from: "4.9.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver.git", from: "2.14.0"),
        // Only built with `--traits Telemetry`.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        .systemLibrary(
            name: "RawSQLite",
            path: "Sources/RawSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .systemLibrary(
            name: "RawLibPQ",
            path: "Sources/RawLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .executableTarget(
            name: "unity-bench",
            dependencies: [
                "RawSQLite",
                "RawLibPQ",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // The Unity subjects ("core", "modeldef", later the flavors) use these:
                .product(name: "Unity", package: "Unity"),
                .product(name: "DriverSQLite", package: "Unity"),
                .product(name: "DriverPostgres", package: "Unity"),
                .product(name: "UnityPersistable", package: "Unity"),
                .product(name: "UnityPredicates", package: "Unity"),
                .product(name: "UnityORM", package: "Unity"),
                // The state flavor's runtime (no macros: the benchmark writes its conformance).
                .product(name: "UnityStateRuntime", package: "Unity"),
                // The `core-telemetry` subject (Subjects/TelemetrySupport.swift, inside `#if Telemetry`).
                .product(name: "UnityTelemetry", package: "Unity", condition: .when(traits: ["Telemetry"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Telemetry"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Telemetry"])),
                // The `fluent` subject (Subjects/FluentSubject.swift, inside `#if Fluent`).
                .product(name: "FluentKit", package: "fluent-kit", condition: .when(traits: ["Fluent"])),
                // FluentSQL (in fluent-kit): the SQLKit bridge the upsert workload uses.
                .product(name: "FluentSQL", package: "fluent-kit", condition: .when(traits: ["Fluent"])),
                .product(
                    name: "FluentSQLiteDriver", package: "fluent-sqlite-driver",
                    condition: .when(traits: ["Fluent"])
                ),
                .product(
                    name: "FluentPostgresDriver", package: "fluent-postgres-driver",
                    condition: .when(traits: ["Fluent"])
                ),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
