import CommandLineKit
import Foundation
import ToolingKit

/// The program: parses the command line, runs the scenarios or a hidden child command.
enum SessionBench {
  static func main(_ arguments: [String]) -> Int32 {
    let command: Command
    let formatter = HelpFormatter(root: Command.root)
    do {
      command = try Command.parse(arguments)
    } catch {
      warn(formatter.diagnosis(of: error)?.joined(separator: "\n") ?? "sessionbench: error: \(error)")
      return 64
    }
    do {
      switch command {
      case .help(let path):
        print(formatter.help(for: path), terminator: "")
      case .list:
        print(Scenarios.names.joined(separator: "\n"))
      case .childSubscriber(let path):
        try ChildSubscriber.run(path: path)
      case .childRawWatcher(let path):
        try RawWatcher.run(path: path)
      case .childPostgresSubscriber(let server, let schema):
        try PostgresChildren.subscriber(server: server, schema: schema)
      case .childPostgresRawListener(let server, let schema):
        try PostgresChildren.rawListener(server: server, schema: schema)
      case .childHolder(let path):
        try SubscriptionHolder.run(path: path)
      case .bench(let quick, let json, let scenarios, let postgres, let named, let sessionctl):
        let server = PostgresServer(url: postgres ?? PostgresServer.fromEnvironment())
        defer { server.stop() }
        return try bench(
          quick: quick, json: json, scenarios: scenarios, postgres: server, named: named,
          sessionctl: sessionctl)
      case .instructions(let scenarios):
        let outcome = try InstructionCount.run(scenarios)
        print(Report.output(outcome.measurements, verdicts: outcome.verdicts, quick: false), terminator: "")
      case .instructionLoop(let scenario, let side, let count, let path):
        try InstructionCount.loop(scenario: scenario, side: side, count: count, path: path)
      }
      return 0
    } catch {
      warn("sessionbench: \(error)")
      return 1
    }
  }

  private static func bench(
    quick: Bool, json: String?, scenarios: [String], postgres: PostgresServer, named: Bool,
    sessionctl: String?
  ) throws -> Int32 {
    let scale = Scale(quick: quick)
    var measurements: [Measurement] = []
    var verdicts: [Verdict] = []
    var failed = false
    for (index, name) in scenarios.enumerated() {
      if index > 0 && !quick {
        // Let the previous scenario's dirty pages reach the disk before timing anything else.
        sync()
        Monotonic.sleep(nanoseconds: 1_000_000_000)
      }
      warn("▸ \(name)")
      do {
        let outcome = try Scenarios.run(name, scale: scale, postgres: postgres, sessionctl: sessionctl)
        measurements += outcome.measurements
        verdicts += outcome.verdicts
      } catch let error as PostgresServer.Unavailable where !named {
        warn("sessionbench: \(name) skipped: \(error)")
      } catch let error as ProcessScenario.NoSessionctl where !named {
        warn("sessionbench: \(name) skipped: \(error)")
      } catch {
        warn("sessionbench: \(name) failed: \(error)")
        failed = true
      }
    }
    print(Report.output(measurements, verdicts: verdicts, quick: quick), terminator: "")
    if let json {
      try Report.json(measurements).write(toFile: json, atomically: true, encoding: .utf8)
    }
    return failed ? 1 : 0
  }

  static func warn(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
  }
}

/// The scenarios, by name, in the order a full run takes them.
enum Scenarios {
  static let names = [
    "write-normal", "write-normal-100", "write-normal-1000", "write-full", "read", "deliver-local",
    "deliver-local-100", "deliver-local-1000", "deliver-remote", "deliver-remote-100", "deliver-remote-1000",
    "deliver-external", "fanout", "fanout-1000-local", "fanout-100-remote",
    "fanout-100-watch", "deliver-slow-fsync",
    "open",
    "idle",
    "release",
    "history",
    "cli-status", "cli-login", "cli-history", "cli-accounts", "cli-accounts-100", "cli-accounts-1000",
    "mem-subscriptions", "mem-watcher", "mem-idle-subscriber",
    "pg-write", "pg-write-100", "pg-read", "pg-read-100", "pg-deliver-remote", "pg-deliver-remote-100",
  ]

  /// Runs the scenario `name`; `sessionctl` is the `--sessionctl` program of the `cli-*`
  /// scenarios and `fanout-100-watch` (nil: the one beside sessionbench).
  static func run(_ name: String, scale: Scale, postgres: PostgresServer, sessionctl: String? = nil) throws
    -> Outcome
  {
    switch name {
    case _ where PostgresScenarios.names.contains(name):
      try PostgresScenarios.run(name, scale: scale, server: postgres)
    case "write-normal": try WriteScenario.run(name, durability: .normal, scale: scale)
    case "write-normal-100": try WriteScenario.run(name, durability: .normal, accounts: 100, scale: scale)
    case "write-normal-1000":
      try WriteScenario.run(name, durability: .normal, accounts: Int(RawWriter.rosterLimit), scale: scale)
    case "write-full": try WriteScenario.run(name, durability: .full, scale: scale)
    case "read": try ReadScenario.run(scale: scale)
    case "open": try OpenScenario.run(scale: scale)
    case "deliver-local": try DeliverScenario.local(name, scale: scale)
    case "deliver-local-100": try DeliverScenario.local(name, accounts: 100, scale: scale)
    case "deliver-local-1000":
      try DeliverScenario.local(name, accounts: Int(RawWriter.rosterLimit), scale: scale)
    case "deliver-remote": try DeliverScenario.remote(name, external: false, scale: scale)
    case "deliver-remote-100": try DeliverScenario.remote(name, external: false, accounts: 100, scale: scale)
    case "deliver-remote-1000":
      try DeliverScenario.remote(name, external: false, accounts: Int(RawWriter.rosterLimit), scale: scale)
    case "deliver-external": try DeliverScenario.remote(name, external: true, scale: scale)
    case "fanout": try DeliverScenario.fanout(name, scale: scale)
    case "fanout-1000-local": try DeliverScenario.fanout(name, scale: scale, local: 1_000, remote: 0)
    case "fanout-100-remote": try DeliverScenario.fanout(name, scale: scale, local: 0, remote: 100)
    case "fanout-100-watch":
      try DeliverScenario.fanout(
        name, scale: scale, local: 0, remote: 100, watch: ProcessScenario.program(sessionctl))
    case "deliver-slow-fsync": try SlowFsyncScenario.run(scale: scale)
    case "idle": try IdleScenario.run(scale: scale)
    case "history": try HistoryScenario.run(scale: scale)
    case "release": try ReleaseScenario.run(scale: scale)
    case _ where ProcessScenario.names.contains(name):
      try ProcessScenario.run(name, scale: scale, sessionctl: sessionctl)
    case "mem-subscriptions": try MemoryScenario.subscriptions(scale: scale)
    case "mem-watcher": try MemoryScenario.watcher(scale: scale)
    case "mem-idle-subscriber": try MemoryScenario.idleSubscriber(scale: scale)
    default: throw BenchError("unknown scenario \(name)")
    }
  }
}

/// How much work each scenario does: the full run, or `--quick` (seconds in all, for CI
/// smoke tests; its figures are not meant to be quoted).
struct Scale {
  let quick: Bool
  /// Alternating blocks per side for the throughput scenarios.
  let rounds: Int
  /// Length of one timed block of writes, in nanoseconds.
  let writeBlock: UInt64
  /// Length of one timed block of reads, in nanoseconds.
  let readBlock: UInt64
  /// Writes per side in the delivery scenarios.
  let deliveries: Int
  /// Writes per side in `fanout`.
  let fanoutWrites: Int
  /// How long `idle` watches the subscribers, in seconds.
  let idleSeconds: Double
  /// Changes in the log for `history`.
  let historyChanges: Int
  /// Timed runs per side of each `cli-*` scenario.
  let processRuns: Int
  /// Runs per side under GNU time for the peak memory of each `cli-*` scenario.
  let memoryRuns: Int
  /// Subscriptions `mem-subscriptions` holds.
  let subscriptions: Int
  /// Changes written in `mem-watcher` and `mem-idle-subscriber`.
  let memoryChanges: Int

  init(quick: Bool) {
    self.quick = quick
    rounds = quick ? 2 : 6
    writeBlock = quick ? 100_000_000 : 500_000_000
    readBlock = quick ? 50_000_000 : 250_000_000
    deliveries = quick ? 200 : 5_000
    fanoutWrites = quick ? 40 : 1_000
    idleSeconds = quick ? 1 : 10
    historyChanges = quick ? 10_000 : 1_000_000
    processRuns = quick ? 8 : 40
    memoryRuns = quick ? 3 : 10
    subscriptions = quick ? 200 : 1_000
    memoryChanges = quick ? 10_000 : 100_000
  }
}

/// What a scenario produced: figures, and the aims it checked.
struct Outcome {
  var measurements: [Measurement] = []
  var verdicts: [Verdict] = []
}

/// A benchmark that could not run or produced an inconsistent result.
struct BenchError: Error, CustomStringConvertible {
  let description: String

  init(_ description: String) { self.description = description }
}
