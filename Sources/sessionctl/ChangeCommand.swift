import CommandLineKit
import SessionStorage
import SessionStoragePostgres
import Synchronization
import SystemKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The command of `watch --exec`, run once per change, one at a time, with the change in its
/// environment (`SESSION_*`) and its JSON line on standard input. It is spawned with an
/// argument vector, never through a shell, and its output goes to `watch`'s standard error so
/// that standard output keeps only the lines of the changes acted on.
final class ChangeCommand: Sendable {
  /// How one run ended.
  enum Outcome: Sendable, Equatable {
    /// Exit status 0.
    case succeeded
    /// Anything else, as a phrase: "exited with 3", "ended by signal 9", "cannot start …".
    case failed(String)
    /// `watch` was asked to stop before or while it ran.
    case stopped
  }

  /// The program, found in `$PATH` when its name has no slash.
  let executable: String
  /// The words after the program's name.
  let arguments: [String]
  /// `watch`'s own environment, which the command's starts from.
  let environment: [String: String]

  /// The running command, and whether `watch` was asked to stop (then none starts).
  private let running = Mutex<(child: ChildProcess?, stopped: Bool)>((nil, false))

  /// - Throws: ``CLIError`` (exit 1) when the program cannot be found or run.
  init(_ words: [String], environment: [String: String]) throws(CLIError) {
    guard let name = words.first else { throw CLIError(.usage, "'--exec' needs a command") }
    executable = try Self.resolve(name, path: environment["PATH"])
    arguments = Array(words.dropFirst())
    self.environment = Self.inherited(environment)
  }

  /// What the command inherits of `watch`'s environment: all of it but the passwords.
  /// `PGPASSWORD` is left out and `SESSIONCTL_DB` loses its password, so that a hook (or
  /// whatever it starts) never holds one; a hook that connects gets it from `~/.pgpass` or
  /// `PGPASSFILE`, as libpq looks there when no password is given.
  static func inherited(_ environment: [String: String]) -> [String: String] {
    var inherited = environment
    inherited["PGPASSWORD"] = nil
    if let database = inherited["SESSIONCTL_DB"] {
      inherited["SESSIONCTL_DB"] = PostgresPasswords.withoutPasswords(database)
    }
    return inherited
  }

  /// The path of `name`: as given when it has a slash, else the first executable regular
  /// file of that name in `path` (`/usr/bin:/bin` when unset), like `execvp`.
  static func resolve(_ name: String, path: String?) throws(CLIError) -> String {
    func runnable(_ candidate: String) -> Bool {
      (try? FileStatus(candidate))?.kind == .regular && access(candidate, X_OK) == 0
    }
    if name.contains("/") {
      guard runnable(name) else { throw CLIError(.failure, "cannot run '\(name)': no executable file there") }
      return name
    }
    let directories = (path.flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin:/bin")
      .split(separator: ":", omittingEmptySubsequences: false).map { $0.isEmpty ? "." : String($0) }
    guard let found = directories.map({ $0 + "/" + name }).first(where: runnable) else {
      throw CLIError(.failure, "cannot run '\(name)': not found in PATH")
    }
    return found
  }

  /// The names of the variables that describe a change.
  static let names: Set = [
    "SESSION_CURSOR", "SESSION_TIME", "SESSION_ORIGIN", "SESSION_ACCOUNT", "SESSION_USERNAME",
    "SESSION_LOGGED_IN",
    "SESSION_ACTIVE", "SESSION_EVENTS",
  ]

  /// The variables that describe `entry` to the command.
  static func variables(for entry: SessionEntry) -> [String: String] {
    var variables = [
      "SESSION_CURSOR": entry.cursor.description,
      "SESSION_TIME": Timestamp.format(entry.time),
      "SESSION_ORIGIN": entry.origin,
      "SESSION_ACCOUNT": entry.change.account.description,
      "SESSION_LOGGED_IN": entry.change.after.isLoggedIn ? "1" : "0",
      "SESSION_ACTIVE": entry.change.isActive ? "1" : "0",
      "SESSION_EVENTS": entry.change.events.map(\.word).joined(separator: ","),
    ]
    // A removal's username is the one the account had: the hook learns who left.
    variables["SESSION_USERNAME"] = entry.change.username
    return variables
  }

  /// The first of `variables` (by name) whose value holds a NUL byte: an environment
  /// variable ends at its first NUL, so the command would get a shortened value (a username
  /// edited in with the sqlite3 shell, cut at the NUL, may be another account's name).
  static func unrepresentable(_ variables: [String: String]) -> String? {
    variables.keys.sorted().first { variables[$0]?.utf8.contains(0) == true }
  }

  /// Runs the command for `entry` and waits for it; `errors` gets what it prints. A change
  /// that one of the variables cannot carry byte for byte is refused: the command does not
  /// run for it, and the outcome says why.
  func run(for entry: SessionEntry, errors: LineWriter) throws -> Outcome {
    let variables = Self.variables(for: entry)
    if let name = Self.unrepresentable(variables) {
      return .failed(
        "was not run (\(name) would hold a NUL byte, which an environment variable cannot carry: the value "
          + "would end there and name something else)")
    }
    // Its own variables replace inherited ones; one it leaves unset is not inherited either.
    var environment = environment.filter { !Self.names.contains($0.key) }
    environment.merge(variables) { $1 }
    let line = entry.jsonLine
    let started = running.withLock { running -> Result<ChildProcess, ChildProcess.SpawnError>? in
      guard !running.stopped else { return nil }
      let result = Result { () throws(ChildProcess.SpawnError) in
        try ChildProcess(
          executable, arguments, environment: environment, stdin: .pipe,
          stdout: .collected { text in
            try? errors.write(text)
            return true
          }, stderr: .inherit)
      }
      if case .success(let child) = result { running.child = child }
      return result
    }
    let child: ChildProcess
    switch started {
    case nil: return .stopped
    case .failure(let error): return .failed(error.description)
    case .success(let started): child = started
    }
    defer { running.withLock { $0.child = nil } }
    // A command that does not read its input may exit first: that is no failure of ours.
    try? child.writeLine(line)
    child.closeInput()
    let status = child.wait()
    // What it printed after its last newline.
    if let rest = try? child.readLine(timeout: .zero) { try? errors.write(rest) }
    if running.withLock({ $0.stopped }) { return .stopped }
    guard status != 0 else { return .succeeded }
    return .failed(child.termination?.description ?? "exited with \(status)")
  }

  /// Starts no more commands, and passes the signal on to the one running, if any: SIGINT
  /// for SIGINT, else SIGTERM.
  func stop(because reason: StopSignals.Reason?) {
    let signal = reason == .interrupt ? SIGINT : SIGTERM
    running.withLock { running in
      running.stopped = true
      running.child?.kill(signal)
    }
  }
}

extension SessionEvent {
  /// The word of `SESSION_EVENTS`: `add`, `login`, `logout`, `rename`, `activate`,
  /// `deactivate` or `remove`, as `watch` lines say.
  var word: String {
    switch self {
    case .added: "add"
    case .loggedIn: "login"
    case .loggedOut: "logout"
    case .usernameChanged: "rename"
    case .activated: "activate"
    case .deactivated: "deactivate"
    case .removed: "remove"
    }
  }
}
