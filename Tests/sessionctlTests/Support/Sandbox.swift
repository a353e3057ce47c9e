import Foundation
import SystemKit
import TestSupport
import Testing

/// What a finished command printed and how it exited.
struct Outcome: CustomStringConvertible {
  var status: Int32
  var stdout: String
  var stderr: String

  /// Standard output split into lines (without the last newline).
  var lines: [String] {
    stdout.isEmpty
      ? [] : stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
  }

  /// Each stdout line parsed as a JSON object.
  var jsonLines: [[String: Any]] {
    lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
  }

  var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

/// A temporary directory per test, with a home of its own, that runs the built
/// `sessionctl` (and `sqlite3`) with an explicit environment: nothing touches the real home,
/// and nothing of the caller's environment (`XDG_DATA_HOME`, `SESSIONCTL_DB`, `PG*`) reaches
/// a command unless a test puts it into ``environment``. Commands are awaited as
/// `ProcessRunner` awaits them, never blocking a thread of the cooperative pool.
final class Sandbox {
  /// The directory, removed when the sandbox is dropped.
  private let directory: TemporaryDirectory
  /// The directory's path.
  let root: String
  /// `$HOME` of the commands run here (`<root>/home`, created).
  let home: String
  /// The whole environment every command gets (add to it per test).
  var environment: [String: String]
  private var counter = 0

  /// The `sessionctl` built next to the running test bundle.
  static let sessionctl = ProcessRunner.product("sessionctl")

  /// The independent SQL client used to read and edit the files.
  static let sqlite3 = "/usr/bin/sqlite3"

  init() throws {
    directory = try TemporaryDirectory(prefix: "sessionctl-tests")
    root = directory.path
    home = root + "/home"
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
    chmod(home, 0o755)  // whatever the umask: a home others may write is refused as a default location
    try FileManager.default.createDirectory(atPath: root + "/io", withIntermediateDirectories: false)
    environment = ["HOME": home, "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"]
  }

  /// A path inside the sandbox.
  func path(_ name: String) -> String { root + "/" + name }

  /// `~/.local/share/sessionctl/session.db` of the sandbox's home.
  var defaultDatabase: String { home + "/.local/share/sessionctl/session.db" }

  /// Runs `sessionctl` with `arguments` and waits for it.
  func run(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> Outcome {
    try await runProgram(Self.sessionctl, arguments, environment: environment.merging(extra) { $1 })
  }

  /// Runs `sessionctl --db <database> …`.
  func run(db database: String, _ arguments: [String]) async throws -> Outcome {
    try await run(["--db", database] + arguments)
  }

  /// Runs the sqlite3 shell on `database` with `sql`; fails the test if it fails.
  @discardableResult
  func sqlite(_ database: String, _ sql: String, sourceLocation: SourceLocation = #_sourceLocation)
    async throws -> String
  {
    let outcome = try await runProgram(
      Self.sqlite3, ["-batch", "-init", "/dev/null", database, sql], environment: environment)
    #expect(outcome.status == 0, "sqlite3 failed: \(outcome.stderr)", sourceLocation: sourceLocation)
    return outcome.stdout.trimmingCharacters(in: .newlines)
  }

  /// Starts `sessionctl` (or `executable`) with its stdout on a pipe, for reading line by line.
  func start(_ arguments: [String], executable: String = Sandbox.sessionctl) async throws -> (
    ChildProcess, stderr: String
  ) {
    counter += 1
    let stderr = path("io/stderr-\(counter)")
    let child = try await ChildProcess(
      executable, arguments, environment: environment, stdout: .pipe, stderr: .file(stderr))
    return (child, stderr)
  }

  /// The bytes of a file, or nil.
  func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

  /// Whether anything exists at `path`.
  func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

  /// The permission bits of `path`.
  func mode(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? NSNumber)?.intValue
      ?? -1
  }

  /// Runs `executable` with exactly `environment` and waits for it (at most 60 s).
  func runProgram(_ executable: String, _ arguments: [String], environment: [String: String]) async throws
    -> Outcome
  {
    counter += 1
    let out = path("io/stdout-\(counter)")
    let err = path("io/stderr-\(counter)")
    let child = try await ChildProcess(
      executable, arguments, environment: environment, stdout: .file(out), stderr: .file(err))
    let status = try await child.wait(timeout: .seconds(60))
    return Outcome(
      status: status, stdout: String(decoding: contents(out) ?? Data(), as: UTF8.self),
      stderr: String(decoding: contents(err) ?? Data(), as: UTF8.self))
  }
}
