// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "SessionStorage",
  platforms: [.macOS(.v15), .iOS(.v18)],
  products: [
    .library(name: "SessionStorage", targets: ["SessionStorage"]),
    .library(name: "SessionStoragePostgres", targets: ["SessionStoragePostgres"]),
    .library(name: "SessionViewModels", targets: ["SessionViewModels"]),
    .executable(name: "sessionctl", targets: ["sessionctl"]),
  ],
  targets: [
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
    ),
    // libpq's header only: SessionStoragePostgres loads the library when a store is opened
    // (no pkgConfig, whose --libs would link it into every program).
    .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
    .executableTarget(name: "EmbedMigrationsTool", dependencies: ["CSQLite"]),
    .plugin(
      name: "EmbedMigrations",
      capability: .buildTool(),
      dependencies: ["EmbedMigrationsTool"]
    ),
    // Internal: POSIX in one place (errno, EINTR retries, file status, close-on-exec pipes, inotify
    // records, limits, and ChildProcess, the one way to start a program); below FeedKit.
    .target(name: "SystemKit"),
    .target(name: "FeedKit", dependencies: ["SystemKit"]),
    // Internal: what the tests, sessionbench and sessiontorture share and a shipped program
    // does not need: the child-process line protocol, the PostgreSQL cluster, temporary
    // directories, the seeded generator and the shrinker.
    .target(name: "ToolingKit", dependencies: ["SystemKit"]),
    // Internal: the one argument parser, help and completion of the three executables.
    .target(name: "CommandLineKit"),
    .target(
      name: "SessionStorage",
      dependencies: ["FeedKit", "SystemKit", "CSQLite"],
      plugins: ["EmbedMigrations"]
    ),
    // The same store on PostgreSQL, for several machines; embeds migrations/postgres/*.sql.
    .target(
      name: "SessionStoragePostgres",
      dependencies: ["SessionStorage", "FeedKit", "SystemKit", "CLibPQ"],
      plugins: ["EmbedMigrations"]
    ),
    .target(name: "SessionViewModels", dependencies: ["SessionStorage"]),
    .executableTarget(
      name: "sessionctl",
      dependencies: [
        "CommandLineKit", "FeedKit", "SessionStorage", "SessionStoragePostgres", "SessionViewModels",
        "SystemKit",
      ]),
    .executableTarget(
      name: "sessionbench",
      dependencies: [
        "CommandLineKit", "FeedKit", "SessionStorage", "SessionStoragePostgres", "CSQLite", "CLibPQ",
        "SystemKit", "ToolingKit",
      ]),
    .executableTarget(
      name: "sessiontorture",
      dependencies: [
        "CommandLineKit", "FeedKit", "SessionStorage", "SessionStoragePostgres", "SystemKit", "ToolingKit",
      ]),
    // Re-exports ToolingKit: a test that imports TestSupport has the whole kit.
    .target(
      name: "TestSupport", dependencies: ["SystemKit", "ToolingKit", "TestWidth"], path: "Tests/TestSupport"),
    // How many tests run at once: set before the runner starts (CONTRIBUTING.md).
    .target(name: "TestWidth", path: "Tests/TestWidth"),
    .testTarget(name: "FeedKitTests", dependencies: ["FeedKit", "SystemKit", "TestSupport"]),
    .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit"]),
    .testTarget(
      name: "SessionStorageTests",
      dependencies: ["FeedKit", "SessionStorage", "CSQLite", "SystemKit", "TestSupport", "ToolingKit"]
    ),
    // The contract every backend keeps: a file, memory and PostgreSQL, test for test.
    .testTarget(
      name: "ContractTests",
      dependencies: ["FeedKit", "SessionStorage", "SessionStoragePostgres", "TestSupport"]),
    .testTarget(
      name: "SessionStoragePostgresTests",
      dependencies: ["SessionStoragePostgres", "SessionStorage", "FeedKit", "SystemKit", "TestSupport"]),
    .testTarget(
      name: "SessionViewModelsTests",
      dependencies: [
        "SessionViewModels", "SessionStorage", "SessionStoragePostgres", "SystemKit", "TestSupport",
      ]),
    .testTarget(
      name: "sessionctlTests",
      dependencies: ["sessionctl", "FeedKit", "SessionStorage", "SystemKit", "TestSupport"]),
    // The tooling's own tests; SessionStorageTests and SessionStoragePostgresTests run the
    // built sessiontorture as a child writer or subscriber, which sessiontortureTests builds.
    .testTarget(name: "ToolingKitTests", dependencies: ["ToolingKit", "SystemKit", "TestSupport"]),
    .testTarget(
      name: "sessionbenchTests",
      dependencies: ["sessionbench", "SessionStorage", "SessionStoragePostgres", "TestSupport"]),
    .testTarget(
      name: "sessiontortureTests",
      dependencies: ["sessiontorture", "SessionStorage", "SystemKit", "TestSupport", "ToolingKit"]),
  ],
  swiftLanguageModes: [.v6]
)
