import Foundation
import SystemKit
import ToolingKit

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
///
/// How tests run a child process, so that the suite passes on a loaded machine and under
/// any user's environment:
/// - `try await ProcessRunner.run(program, arguments, environment: [...])` runs it to the end
///   (`runDetached` is the same function under another name). The child is started and
///   awaited from threads of their own, never on a thread of Swift's cooperative pool: a test
///   that blocks one of its few threads starves every other test's tasks. A test that runs
///   a child is an `async` test; `runBlocking` is only for code off the pool (`atexit`).
/// - A child that a test talks to while it runs is `try await ChildProcess(...)`, read and
///   awaited with the async overloads: `try await child.readLine()`,
///   `try await child.wait(timeout:)`. In an async context the compiler picks them.
/// - A child's environment is ``environment(_:home:)``: `PATH`, `LC_ALL`, `TMPDIR` and an
///   empty `HOME` of its own, plus what the test gives. Nothing else of the caller's
///   environment reaches it (`XDG_DATA_HOME`, `SESSIONCTL_DB`, `PG*`, a `HOME` with dotfiles).
///   A `ChildProcess` a test starts itself gets an explicit `environment:` too.
/// - PostgreSQL: `try await PostgresCluster.shared()`, `try await cluster.psql(...)`, and
///   `try await PostgresCluster.withPrivateCluster { cluster in ... }` for a server a test
///   stops or restarts. Clean-up that must await is `withCleanup`, not a `defer`.
/// - A child ends with the test process, however that ends (a hang guard, Ctrl-C, a CI
///   timeout, SIGKILL): every `ChildProcess` joins the process group of `ChildGroup`, whose
///   guardian kills the group when this process is gone. ``ProcessTable`` tells which
///   processes a program left behind.
/// - A test waits for an effect with `eventually` or `Task.sleep`, never with
///   `Thread.sleep`, `usleep` or a semaphore; `.timeLimit` is a hang guard (10 minutes).
public enum ProcessRunner {
  /// The directory holding the built products (`.build/debug`), next to the test runner.
  private static let productsDirectory = URL(fileURLWithPath: ChildProcess.currentExecutable)
    .deletingLastPathComponent()

  /// The path of one of our executables, e.g. `sessionctl`.
  public static func product(_ name: String) -> String {
    productsDirectory.appendingPathComponent(name).path
  }

  /// The environment a child of ``run(_:_:environment:timeout:)`` gets: `PATH` (this
  /// process's, where the tools are; `/usr/bin:/bin` without one), `LC_ALL=C.UTF-8`,
  /// `TMPDIR` (this process's temporary directory) and `HOME` = `home`, then `extra` on top.
  public static func environment(_ extra: [String: String] = [:], home: String) -> [String: String] {
    let path =
      ProcessInfo.processInfo.environment["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin:/bin"
    var temporary = NSTemporaryDirectory()
    while temporary.count > 1 && temporary.hasSuffix("/") { temporary.removeLast() }
    return ["PATH": path, "LC_ALL": "C.UTF-8", "TMPDIR": temporary, "HOME": home].merging(extra) { $1 }
  }

  /// Runs `executable` to completion (at most `timeout`, then it is killed) with `arguments`
  /// and ``environment(_:home:)`` plus `environment` (`HOME` is an empty directory of the
  /// run's own unless `environment` sets it). Awaited from a thread of its own.
  public static func run(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Duration = .seconds(60)
  ) async throws -> ProcessResult {
    let scratch = try TemporaryDirectory()
    let child = try await ChildProcess(
      executable, arguments, environment: try childEnvironment(environment, scratch),
      stdout: .file(scratch.file("stdout")), stderr: .file(scratch.file("stderr")))
    let status = try await child.wait(timeout: timeout)
    return collect(status, scratch)
  }

  /// ``run(_:_:environment:timeout:)`` under the name some tests call it by: it never held
  /// a thread of the cooperative pool either.
  public static func runDetached(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Duration = .seconds(60)
  ) async throws -> ProcessResult {
    try await run(executable, arguments, environment: environment, timeout: timeout)
  }

  /// ``run(_:_:environment:timeout:)`` for code that is not on the cooperative pool and
  /// cannot await: an `atexit` handler, a thread of its own. It blocks the calling thread.
  public static func runBlocking(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Duration = .seconds(60)
  ) throws -> ProcessResult {
    let scratch = try TemporaryDirectory()
    let child = try ChildProcess(
      executable, arguments, environment: try childEnvironment(environment, scratch),
      stdout: .file(scratch.file("stdout")), stderr: .file(scratch.file("stderr")))
    return collect(try child.wait(timeout: timeout), scratch)
  }

  /// Runs the `sqlite3` shell on `database` with `sql` (no `~/.sqliterc`); throws when it fails.
  @discardableResult
  public static func sqlite3(_ database: String, _ sql: String) async throws -> String {
    let result = try await run("/usr/bin/sqlite3", ["-batch", "-init", "/dev/null", database, sql])
    guard result.status == 0 else {
      throw SQLite3ShellError(message: "sqlite3 exited \(result.status): \(result.stderr)")
    }
    return result.stdout
  }

  /// ``environment(_:home:)`` with `extra`, `HOME` an empty directory in `scratch`.
  private static func childEnvironment(_ extra: [String: String], _ scratch: TemporaryDirectory) throws
    -> [String: String]
  {
    let home = scratch.file("home")
    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
    return environment(extra, home: home)
  }

  private static func collect(_ status: Int32, _ scratch: TemporaryDirectory) -> ProcessResult {
    ProcessResult(
      stdout: String(decoding: fileBytes(scratch.file("stdout")) ?? Data(), as: UTF8.self),
      stderr: String(decoding: fileBytes(scratch.file("stderr")) ?? Data(), as: UTF8.self), status: status)
  }
}

/// The sqlite3 shell failed.
public struct SQLite3ShellError: Error, CustomStringConvertible {
  /// What it said.
  public var message: String
  /// The message.
  public var description: String { message }
}
