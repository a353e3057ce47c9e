/// The scenarios, by name, in the order a full run takes them.
enum Scenarios {
  static let names = [
    "write-normal", "write-full", "read", "deliver-local", "deliver-remote", "deliver-external", "fanout",
    "deliver-slow-fsync",
    "idle",
    "release",
    "history",
    "pg-write", "pg-read", "pg-deliver-remote",
  ]

  static func run(_ name: String, scale: Scale, postgres: PostgresServer) throws -> Outcome {
    switch name {
    case _ where PostgresScenarios.names.contains(name):
      try PostgresScenarios.run(name, scale: scale, server: postgres)
    case "write-normal": try WriteScenario.run(name, durability: .normal, scale: scale)
    case "write-full": try WriteScenario.run(name, durability: .full, scale: scale)
    case "read": try ReadScenario.run(scale: scale)
    case "deliver-local": try DeliverScenario.local(scale: scale)
    case "deliver-remote": try DeliverScenario.remote(external: false, scale: scale)
    case "deliver-external": try DeliverScenario.remote(external: true, scale: scale)
    case "fanout": try DeliverScenario.fanout(scale: scale)
    case "deliver-slow-fsync": try SlowFsyncScenario.run(scale: scale)
    case "idle": try IdleScenario.run(scale: scale)
    case "history": try HistoryScenario.run(scale: scale)
    case "release": try ReleaseScenario.run(scale: scale)
    default: throw BenchError("unknown scenario \(name)")
    }
  }
}
