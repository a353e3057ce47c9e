import CommandLineKit

/// What the command line asked for: the benchmark itself, or one of the hidden child
/// commands its scenarios start.
enum Command: Equatable {
  case help([String])
  case list
  /// `postgres`: the `--postgres` URL; `named`: whether the scenarios were named (else all of
  /// them, and the `pg-*` ones only when there is a server); `sessionctl`: the `--sessionctl`
  /// program of the `cli-*` scenarios and `fanout-100-watch` (nil: the one beside sessionbench).
  case bench(
    quick: Bool, json: String?, scenarios: [String], postgres: String?, named: Bool, sessionctl: String?)
  case instructions(scenarios: [String])
  case instructionLoop(scenario: String, side: String, count: Int, path: String)
  case childSubscriber(path: String)
  case childRawWatcher(path: String)
  case childPostgresSubscriber(server: String, schema: String)
  case childPostgresRawListener(server: String, schema: String)
  case childHolder(path: String)

  static let quickFlag = CommandLineFlag(
    "quick",
    help: "Shrink every scenario to seconds (a smoke test: figures not meant to be quoted, and the aims "
      + "are not judged on them).")
  static let jsonFile = CommandLineOption<String>(
    "json", placeholder: "file",
    help: #"Also write the figures as a JSON array of {"scenario", "metric", "ours", "baseline"} objects."#,
    completesFiles: true)
  static let postgresServer = CommandLineOption<String>(
    "postgres", placeholder: "url",
    help: "The PostgreSQL server of the pg-* scenarios, postgresql://user@host:5432/db (default: "
      + "$\(PostgresServer.environmentVariable), else a throwaway server started with scripts/postgres-cluster)."
  )
  static let sessionctlProgram = CommandLineOption<String>(
    "sessionctl", placeholder: "path",
    help:
      "The sessionctl program the cli-* and fanout-100-watch scenarios run (default: the one beside sessionbench, from the "
      + "same build).",
    completesFiles: true)
  static let listFlag = CommandLineFlag("list", help: "Print the scenario names.")
  static let instructionsFlag = CommandLineFlag(
    "instructions",
    help: "Count instructions per operation under valgrind's callgrind, ours and raw ("
      + InstructionCount.scenarios.joined(separator: ", ") + "): repeatable on a busy machine, unlike times.")
  static let scenarioNames = CommandLineArgument<String>(
    "scenario",
    help: Scenarios.names.joined(separator: ", ")
      + " (default: all of them, in this order; the pg-* ones when there is a server, see --postgres).",
    isOptional: true,
    isRepeating: true)
  static let database = CommandLineOption<String>(
    "db", placeholder: "path", help: "The database file.", isRequired: true)

  /// `sessionbench child-subscriber --db PATH` (BENCHMARKS.md).
  static let childSubscriber = CommandSpec(
    "child-subscriber", abstract: "A subscriber in another process (for deliver-remote and idle).",
    options: [database],
    isHidden: true)
  /// `sessionbench child-raw-watcher --db PATH` (BENCHMARKS.md).
  static let childRawWatcher = CommandSpec(
    "child-raw-watcher", abstract: "The raw watcher process the remote scenarios compare with.",
    options: [database],
    isHidden: true)

  /// `sessionbench child-holder --db PATH` (BENCHMARKS.md).
  static let childHolder = CommandSpec(
    "child-holder", abstract: "A store holding subscriptions, for the mem-* scenarios.",
    options: [database],
    isHidden: true)

  static let childServer = CommandLineOption<String>(
    "postgres", placeholder: "url", help: "The server, without a schema parameter.", isRequired: true)
  static let childSchema = CommandLineOption<String>(
    "schema", placeholder: "name", help: "The schema.", isRequired: true)
  /// `sessionbench child-pg-subscriber --postgres URL --schema NAME` (BENCHMARKS.md).
  static let childPostgresSubscriber = CommandSpec(
    "child-pg-subscriber",
    abstract: "A PostgreSQL store's subscriber in another process (pg-deliver-remote).",
    options: [childServer, childSchema], isHidden: true)
  /// `sessionbench child-pg-raw-listener --postgres URL --schema NAME` (BENCHMARKS.md).
  static let childPostgresRawListener = CommandSpec(
    "child-pg-raw-listener", abstract: "The raw LISTEN loop pg-deliver-remote compares with.",
    options: [childServer, childSchema], isHidden: true)

  static let loopScenario = CommandLineOption<String>(
    "scenario", placeholder: "name", help: InstructionCount.scenarios.joined(separator: ", ") + ".",
    isRequired: true)
  static let loopSide = CommandLineOption<String>(
    "side", placeholder: "side", help: "ours or raw.", isRequired: true)
  static let loopCount = CommandLineOption<Int>(
    "count", placeholder: "n", help: "Operations after the setup.", isRequired: true)
  /// `sessionbench instruction-loop …`: what `--instructions` runs under callgrind.
  static let instructionLoop = CommandSpec(
    "instruction-loop", abstract: "One side's setup and operations, for --instructions.",
    options: [loopScenario, loopSide, loopCount, database],
    isHidden: true)

  /// The tool's command line.
  static let root = CommandSpec(
    "sessionbench",
    abstract: "Benchmarks SessionStorage against raw SQLite (and libpq) calls, side by side in one run.",
    discussion: "See BENCHMARKS.md for what each scenario measures.", arguments: [scenarioNames],
    options: [quickFlag, jsonFile, postgresServer, sessionctlProgram, listFlag, instructionsFlag],
    subcommands: [
      childSubscriber, childRawWatcher, childPostgresSubscriber, childPostgresRawListener, instructionLoop,
      childHolder,
    ])

  /// Parses the arguments after the program name.
  /// - Throws: ``UsageError`` or ``InvalidValue``.
  static func parse(_ arguments: [String]) throws -> Command {
    let parsed = try CommandLineParser(root: root).parse(arguments)
    if parsed.helpRequested { return .help(parsed.commandPath) }
    switch parsed.commandPath.first {
    case childSubscriber.name: return .childSubscriber(path: try parsed.required(database))
    case childRawWatcher.name: return .childRawWatcher(path: try parsed.required(database))
    case childPostgresSubscriber.name:
      return .childPostgresSubscriber(
        server: try parsed.required(childServer), schema: try parsed.required(childSchema))
    case childPostgresRawListener.name:
      return .childPostgresRawListener(
        server: try parsed.required(childServer), schema: try parsed.required(childSchema))
    case childHolder.name: return .childHolder(path: try parsed.required(database))
    case instructionLoop.name:
      return .instructionLoop(
        scenario: try parsed.required(loopScenario), side: try parsed.required(loopSide),
        count: try parsed.required(loopCount), path: try parsed.required(database))
    default:
      if parsed[listFlag] { return .list }
      let scenarios = try parsed.values(of: scenarioNames)
      if parsed[instructionsFlag] {
        if let other = scenarios.first(where: { !InstructionCount.scenarios.contains($0) }) {
          throw parsed.usageError(
            .invalid(
              "'\(other)' has no instruction count (--instructions: "
                + InstructionCount.scenarios.joined(separator: ", ") + ")"))
        }
        return .instructions(scenarios: scenarios.isEmpty ? InstructionCount.scenarios : scenarios)
      }
      if let unknown = scenarios.first(where: { !Scenarios.names.contains($0) }) {
        throw parsed.usageError(
          .invalid("unknown scenario '\(unknown)' (scenarios: \(Scenarios.names.joined(separator: ", ")))"))
      }
      let postgres = try parsed[postgresServer]
      if let postgres, let problem = PostgresServer.problem(with: postgres) {
        throw parsed.usageError(.invalid("--postgres: \(problem)"))
      }
      return .bench(
        quick: parsed[quickFlag], json: try parsed[jsonFile],
        scenarios: scenarios.isEmpty ? Scenarios.names : scenarios, postgres: postgres,
        named: !scenarios.isEmpty, sessionctl: try parsed[sessionctlProgram])
    }
  }
}
