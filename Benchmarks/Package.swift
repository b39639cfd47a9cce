// swift-tools-version:6.0
import PackageDescription

// The benchmark suite is a package of its own so the library's Package.swift stays lean:
// GRDB and postgres-nio are peers to measure against, never dependencies of Unity.
//
// - GRDB 7: the SQLite peer (module names GRDB / GRDBSQLite; no clash with Unity's CSQLite).
// - postgres-nio: the PostgreSQL peer (module PostgresNIO).
// - RawSQLite / RawLibPQ: the raw C baselines. They wrap the same system headers as the root
//   package's CSQLite / CLibPQ under different module names, so both can be linked together.
let package = Package(
    name: "UnityBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Unity", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
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
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
