import CommandLineKit

/// One sessionctl command as one type: its spec and typed values (``ParsableCommand``),
/// and how it runs. Every command is listed once, in ``SessionCtl/commands``; help,
/// completion and usage errors are generated from that list.
protocol SessionCommand: ParsableCommand {
  /// Runs the command: results go to the context's output, its exit status is returned.
  /// - Throws: anything ``SessionCtl/report(_:in:)`` turns into a message and an exit status.
  func run(_ context: CommandContext) async throws -> ExitCode
}
