import Foundation
import ProcessKit

/// What a finished child process printed and how it ended.
public struct ProcessResult: Sendable {
  /// Standard output.
  public var stdout: String
  /// Standard error.
  public var stderr: String
  /// The exit status, or 128 + the signal when a signal ended it.
  public var status: Int32
}

/// Runs programs for tests: our executables (built next to the test bundle) and tools
/// such as `/usr/bin/sqlite3`.
public enum ProcessRunner {
  /// The directory holding the built products (`.build/debug`), next to the test runner.
  private static let productsDirectory = URL(fileURLWithPath: ChildProcess.currentExecutable)
    .deletingLastPathComponent()

  /// The path of one of our executables, e.g. `sessionctl`.
  public static func product(_ name: String) -> String {
    productsDirectory.appendingPathComponent(name).path
  }

  /// Runs `executable` to completion (at most `timeout`) with `arguments` and this
  /// process's environment plus `environment`.
  public static func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Duration = .seconds(60)
  ) throws -> ProcessResult {
    let scratch = try TemporaryDirectory()
    let out = scratch.file("stdout")
    let err = scratch.file("stderr")
    let child = try ChildProcess(
      executable, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
      stdout: .file(out), stderr: .file(err))
    let status = try child.wait(timeout: timeout)
    return ProcessResult(
      stdout: String(decoding: fileBytes(out) ?? Data(), as: UTF8.self),
      stderr: String(decoding: fileBytes(err) ?? Data(), as: UTF8.self), status: status)
  }

  /// ``run(_:_:environment:timeout:)`` on a thread of its own, so that a long child (a
  /// torture scenario, a benchmark) does not hold one of the few threads of Swift's
  /// cooperative pool that every other test's tasks need.
  public static func runDetached(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Duration = .seconds(60)
  ) async throws -> ProcessResult {
    try await onThreadOfItsOwn { try run(executable, arguments, environment: environment, timeout: timeout) }
  }

  /// Runs the `sqlite3` shell on `database` with `sql`; throws when it fails.
  @discardableResult
  public static func sqlite3(_ database: String, _ sql: String) throws -> String {
    let result = try run("/usr/bin/sqlite3", [database, sql])
    guard result.status == 0 else {
      throw SQLite3ShellError(message: "sqlite3 exited \(result.status): \(result.stderr)")
    }
    return result.stdout
  }
}

/// The sqlite3 shell failed.
public struct SQLite3ShellError: Error, CustomStringConvertible {
  /// What it said.
  public var message: String
  /// The message.
  public var description: String { message }
}
