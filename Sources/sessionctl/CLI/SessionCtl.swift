import Foundation
import SessionStorage

/// The sessionctl tool: parses a command line, runs the command against a
/// ``SessionStore`` and turns every outcome into output and an exit status.
struct SessionCtl: Sendable {
  /// The version `--version` prints.
  static let version = "1.0.0"
  /// The origin recorded on sessionctl's writes.
  static let origin = "sessionctl"

  /// The process environment (for `$SESSIONCTL_DB`, `$XDG_DATA_HOME`, `$HOME`).
  let environment: [String: String]
  /// Where results go.
  var output = LineWriter.standardOutput
  /// Where errors go.
  var errors = LineWriter.standardError

  init(environment: [String: String]) {
    self.environment = environment
  }

  /// Runs a command line given as argv's bytes (without the program name): an argument
  /// that is not valid UTF-8 is refused (exit 65) instead of being repaired into a name.
  func run(rawArguments: [[UInt8]]) async -> Int32 {
    do {
      return await run(try Self.decode(rawArguments))
    } catch {
      signal(SIGPIPE, SIG_IGN)
      return report(error).rawValue
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
    let parser = ArgumentParser(root: Self.commands)
    do {
      let invocation = try Invocation(try parser.parse(arguments), commands: Self.commands)
      return try await execute(invocation).rawValue
    } catch {
      return report(error).rawValue
    }
  }

  /// Prints `error` on stderr the way its kind asks, and returns its exit status.
  func report(_ error: any Error) -> ExitCode {
    switch error {
    case is LineWriter.Closed:
      return .success
    case let usage as UsageError:
      let helpTopic = usage.commandPath.first.map { " " + $0 } ?? ""
      fail(usage.message)
      // Harmless to swallow, as in `fail`: with stderr gone there is nobody to tell.
      try? errors.write("Usage: " + HelpFormatter(root: Self.commands).usage(for: usage.commandPath))
      try? errors.write("See 'sessionctl help\(helpTopic)'.")
      return .usage
    case let error as CLIError:
      fail(error.message)
      return error.exitCode
    case let error as SessionStorageError:
      fail(error.description + (error.code == .needsMigration ? " (run 'sessionctl migrate')" : ""))
      return error.code == .invalidUsername ? .invalidInput : .failure
    case let error as FeedError:
      fail(error.description + Self.hint(for: error))
      switch error {
      case .cursorCompacted: return .cursorCompacted
      case .historyRewritten: return .historyRewritten
      case .cursorAhead: return .invalidInput
      case .noCursorBefore: return .failure  // a row inserted by hand, not the user's input
      }
    default:
      fail(String(describing: error))
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

  /// Writes `sessionctl: error: MESSAGE` on stderr.
  func fail(_ message: String) {
    // Harmless to swallow: when stderr itself is gone there is nobody left to tell; the
    // exit status still says it.
    try? errors.write("sessionctl: error: " + Presenter.display(message))
  }

  private func execute(_ invocation: Invocation) async throws -> ExitCode {
    let presenter = Presenter(json: invocation.json)
    switch invocation.command {
    case .help(let path):
      try output.write(HelpFormatter(root: Self.commands).help(for: path), terminated: false)
      return .success
    case .version:
      try output.write(presenter.version(Self.version))
      return .success
    case .completion:
      try output.write(BashCompletion(root: Self.commands).script, terminated: false)
      return .success
    default:
      break
    }
    let location = try DatabaseLocation.resolve(option: invocation.databaseOption, environment: environment)
    switch invocation.command {
    case .status: return try await status(location, presenter)
    case .login(let username): return try login(username, location, presenter)
    case .logout: return try logout(location, presenter)
    case .rename(let username): return try rename(username, location, presenter)
    case .history(let since, let limit): return try history(location, presenter, since: since, limit: limit)
    case .watch(let since, let limit): return try await watch(location, presenter, since: since, limit: limit)
    case .compact(let retention): return try compact(retention, location, presenter)
    case .migrate: return try migrate(location, presenter)
    case .check: return try check(location, presenter)
    case .help, .version, .completion: return .success
    }
  }

  /// Opens the file without writing; a missing file is an error, and nothing is created.
  func openForReading(_ location: DatabaseLocation) throws -> SessionStore {
    try SessionStore(path: location.path, options: .init(origin: Self.origin, readOnly: true))
  }

  /// Opens the file for writing, creating it (and the default directory) when missing.
  func openForWriting(_ location: DatabaseLocation) throws -> SessionStore {
    try SessionStore(
      path: location.path,
      options: .init(origin: Self.origin, createsMissingDirectories: location.source == .dataHome))
  }
}
