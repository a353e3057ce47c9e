import CommandLineKit
import Foundation

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
      case .bench(let quick, let json, let scenarios, let postgres, let named):
        let server = PostgresServer(url: postgres ?? PostgresServer.fromEnvironment())
        defer { server.stop() }
        return try bench(quick: quick, json: json, scenarios: scenarios, postgres: server, named: named)
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
    quick: Bool, json: String?, scenarios: [String], postgres: PostgresServer, named: Bool
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
        let outcome = try Scenarios.run(name, scale: scale, postgres: postgres)
        measurements += outcome.measurements
        verdicts += outcome.verdicts
      } catch let error as PostgresServer.Unavailable where !named {
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
