// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "SessionStorage",
  platforms: [.macOS(.v15), .iOS(.v18)],
  products: [
    .library(name: "FeedKit", targets: ["FeedKit"]),
    .library(name: "SessionStorage", targets: ["SessionStorage"]),
    .library(name: "SessionViewModels", targets: ["SessionViewModels"]),
    .executable(name: "sessionctl", targets: ["sessionctl"]),
  ],
  targets: [
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
    ),
    .executableTarget(name: "EmbedMigrationsTool"),
    .plugin(
      name: "EmbedMigrations",
      capability: .buildTool(),
      dependencies: ["EmbedMigrationsTool"]
    ),
    // Internal: errno, EINTR retries, pipes, inotify records, limits; below FeedKit.
    .target(name: "SystemKit"),
    .target(name: "FeedKit", dependencies: ["SystemKit"]),
    .target(
      name: "SessionStorage",
      dependencies: ["FeedKit", "SystemKit", "CSQLite"],
      plugins: ["EmbedMigrations"]
    ),
    .target(name: "SessionViewModels", dependencies: ["SessionStorage"]),
    .executableTarget(
      name: "sessionctl", dependencies: ["FeedKit", "SessionStorage", "SessionViewModels", "SystemKit"]),
    .executableTarget(
      name: "sessionbench", dependencies: ["FeedKit", "SessionStorage", "CSQLite", "SystemKit"]),
    .executableTarget(name: "sessiontorture", dependencies: ["FeedKit", "SessionStorage"]),
    .target(name: "TestSupport", path: "Tests/TestSupport"),
    .testTarget(name: "FeedKitTests", dependencies: ["FeedKit", "TestSupport"]),
    .testTarget(
      name: "SessionStorageTests",
      dependencies: [
        "FeedKit", "SessionStorage", "CSQLite", "TestSupport", "sessiontorture", "sessionbench",
      ]
    ),
    .testTarget(
      name: "SessionViewModelsTests", dependencies: ["SessionViewModels", "SessionStorage", "TestSupport"]),
    .testTarget(
      name: "sessionctlTests", dependencies: ["sessionctl", "FeedKit", "SessionStorage", "TestSupport"]),
  ],
  swiftLanguageModes: [.v6]
)
