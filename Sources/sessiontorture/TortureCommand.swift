import CommandLineKit

/// A command of the driver: its spec, and how it runs from a parsed line. Every one is
/// listed once, in ``Torture/commands``.
struct TortureCommand: Sendable {
  /// The name, help, options and arguments.
  let spec: CommandSpec
  /// Reads the command's values from the line and runs it; returns the exit status.
  /// - Throws: ``UsageError`` or ``InvalidValue`` for the line (exit 64), anything else
  ///   for a failure (exit 1).
  let run: @Sendable (ParsedArguments) throws -> Int32

  init(_ spec: CommandSpec, run: @escaping @Sendable (ParsedArguments) throws -> Int32) {
    self.spec = spec
    self.run = run
  }

  /// A scenario: a type that reads its options, then runs.
  static func scenario<Scenario: TortureScenario>(_ type: Scenario.Type) -> TortureCommand {
    TortureCommand(Scenario.spec) { try Scenario($0).run() }
  }
}

/// A scenario as one type: its spec and options (``TypedCommand``), and its run.
protocol TortureScenario: TypedCommand {
  /// Runs the scenario; prints its JSON summary line and returns the exit status.
  func run() throws -> Int32
}
