import CommandLineKit
import Foundation
import SessionStorage

/// The sessionctl tool: parses a command line against ``root``, runs the command it names
/// (one of ``commands``) and turns every outcome into output and an exit status.
struct SessionCtl: Sendable {
  /// The version `--version` prints.
  static let version = "1.0.0"
  /// The origin recorded on sessionctl's writes.
  static let origin = "sessionctl"

  /// What commands run with; its options are filled in from each command line.
  var context: CommandContext
  /// Whether a run ends by closing standard output and checking that close (the process's
  /// own run, in `main`): some file systems report a failed write only there.
  let closesOutput: Bool

  init(environment: [String: String], closesOutput: Bool = false) {
    context = CommandContext(environment: environment)
    self.closesOutput = closesOutput
  }

  /// Runs a command line given as argv's bytes (without the program name): an argument
  /// that is not valid UTF-8 is refused (exit 65) instead of being repaired into a name.
  func run(rawArguments: [[UInt8]]) async -> Int32 {
    do {
      return await run(try Self.decode(rawArguments))
    } catch {
      signal(SIGPIPE, SIG_IGN)
      return Self.report(error, in: context).rawValue
    }
  }

  /// The arguments as strings, or an error naming the first one that is not valid UTF-8.
  static func decode(_ rawArguments: [[UInt8]]) throws(CLIError) -> [String] {
    try rawArguments.enumerated().map { (index, bytes) throws(CLIError) -> String in
      guard let text = String(validating: bytes, as: UTF8.self) else {
        throw .invalidInput("argument \(index + 1) is not valid UTF-8")
      }
      return text
    }
  }

  /// Runs a command line (without the program name) and returns the exit status.
  func run(_ arguments: [String]) async -> Int32 {
    // A closed pipe must surface as EPIPE on write, not kill the process.
    signal(SIGPIPE, SIG_IGN)
    var context = self.context
    context.commitment = Commitment()
    do {
      let parsed = try ArgumentParser(root: Self.root).parse(arguments)
      context.options = try GlobalOptions(parsed)
      let status = try await Self.execute(parsed, in: context)
      if closesOutput { try context.output.close() }
      return status.rawValue
    } catch {
      return Self.report(error, in: context).rawValue
    }
  }

  /// Help, `--version`, or the command the line names, built from it and run.
  private static func execute(_ parsed: ParsedArguments, in context: CommandContext) async throws -> ExitCode
  {
    if parsed.helpRequested {
      try context.output.write(help(for: parsed.commandPath), terminated: false)
      return .success
    }
    if parsed[GlobalOptions.version] {
      guard parsed.commandPath.isEmpty else {
        throw parsed.usageError(.invalid("'--version' cannot be combined with a command"))
      }
      try context.output.write(context.presenter.version(version))
      return .success
    }
    guard let name = parsed.commandPath.first else { throw parsed.usageError(.missingCommand) }
    guard let command = commands.first(where: { $0.spec.name == name }) else {
      throw parsed.usageError(.unknownCommand(name, suggestion: nil))
    }
    return try await command.init(parsed).run(context)
  }

  /// The help page of the command at `path` (`[]`: the tool's own).
  static func help(for path: [String]) -> String {
    HelpFormatter(root: root).help(for: path)
  }

  /// Prints `error` on stderr the way its kind asks, and returns its exit status.
  static func report(_ error: any Error, in context: CommandContext) -> ExitCode {
    switch error {
    case let failure as LineWriter.Failure:
      // Whatever the command committed stays committed: say so, or it may be done twice.
      context.fail(failure.sentence + (context.commitment.recorded.map { "; " + $0 } ?? ""))
      return .outputFailed
    case let usage as UsageError:
      context.fail(usage.message)
      // Harmless to swallow, as in `fail`: with stderr gone there is nobody to tell.
      try? context.errors.write(HelpFormatter(root: root).lines(after: usage))
      return .usage
    case let error as InvalidValue:
      context.fail(error.message)
      return .invalidInput
    case let error as CLIError:
      context.fail(error.message)
      return error.exitCode
    case let error as SessionStorageError:
      context.fail(error.description + (error.code == .needsMigration ? " (run 'sessionctl migrate')" : ""))
      if error.code == .unavailable { return .unavailable }
      if error.code == .refused { return .refused }
      return [.invalidUsername, .invalidArgument, .storeFile, .notARegularFile].contains(error.code)
        ? .invalidInput : .failure
    case let error as FeedError:
      context.fail(error.description + Self.hint(for: error))
      switch error {
      case .cursorCompacted: return .cursorCompacted
      case .historyRewritten: return .historyRewritten
      case .cursorAhead: return .invalidInput
      case .noCursorBefore: return .failure  // a row inserted by hand, not the user's input
      }
    default:
      context.fail(String(describing: error))
      return .failure
    }
  }

  /// What to type next, in sessionctl's terms, after a feed error's own sentence.
  static func hint(for error: FeedError) -> String {
    switch error {
    case .cursorCompacted(_, let oldest):
      " (sessionctl: " + (oldest.previous.map { "--since \($0), or " } ?? "") + "watch without --since)"
    case .historyRewritten: " (sessionctl: watch without --since)"
    case .noCursorBefore: " (sessionctl: --since 0)"
    case .cursorAhead: ""
    }
  }
}
