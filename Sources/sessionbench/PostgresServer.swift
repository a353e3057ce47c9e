import Foundation
import ProcessKit
import SessionStoragePostgres
import Synchronization

/// The PostgreSQL server of the `pg-*` scenarios: the one `--postgres URL` or
/// `$SESSIONBENCH_POSTGRES_URL` names, or else a throwaway cluster that
/// `scripts/postgres-cluster` creates on first use (when sessionbench runs from its checkout
/// and PostgreSQL is installed), shared by the run's `pg-*` scenarios and stopped by
/// ``stop()``. Each scenario makes its own schemas on it (``PostgresSchemas``).
final class PostgresServer: Sendable {
  /// The environment variable that names a server when `--postgres` does not.
  static let environmentVariable = "SESSIONBENCH_POSTGRES_URL"

  /// Why there is no server: the `pg-*` scenarios cannot run. A full run skips them,
  /// saying so; a run that names one of them fails with this.
  struct Unavailable: Error, CustomStringConvertible {
    let reason: String
    var description: String {
      "no PostgreSQL server: \(reason). Give one with --postgres postgresql://user@host:5432/db or "
        + "$\(PostgresServer.environmentVariable) (each scenario makes and drops schemas of its own there)"
    }
  }

  private enum State {
    case given(String)
    case notStarted
    case started(url: String, directory: String)
    case failed(String)
    case invalid(String)
    case stopped
  }

  private let state: Mutex<State>

  /// A server at `url` (from `--postgres` or ``fromEnvironment()``), or (nil) a throwaway
  /// cluster started on first use. A `url` with a ``problem(with:)`` fails every `pg-*`
  /// scenario, also in a full run, saying why.
  init(url: String?) {
    guard let url else {
      state = Mutex(.notStarted)
      return
    }
    state = Mutex(
      Self.problem(with: url).map { .invalid("$\(Self.environmentVariable): \($0)") } ?? .given(url))
  }

  /// `$SESSIONBENCH_POSTGRES_URL`, when set and not empty.
  static func fromEnvironment() -> String? {
    ProcessInfo.processInfo.environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
  }

  /// What is wrong with `url` as a server for the scenarios, or nil: it must be a
  /// PostgreSQL URL without a `schema` parameter (each scenario names its own schemas).
  static func problem(with url: String) -> String? {
    let shown = PostgresSessionStore.redacted(url)
    guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
      return "'\(shown)' is not a PostgreSQL URL: give postgresql://user@host:5432/db"
    }
    let parameters = url.split(separator: "?", maxSplits: 1).dropFirst().first?.split(separator: "&") ?? []
    guard !parameters.contains(where: { $0 == "schema" || $0.hasPrefix("schema=") }) else {
      return "'\(shown)' names a schema: give the server's URL alone (each scenario makes and drops "
        + "schemas of its own)"
    }
    return nil
  }

  /// `scripts/postgres-cluster` of the checkout this program was built from.
  static let clusterScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
      "scripts/postgres-cluster"
    )
    .path

  /// The server's URL, without a `schema` parameter; starts the throwaway cluster on first use.
  /// - Throws: ``Unavailable`` when there is no server and none can be started.
  func url() throws -> String {
    try state.withLock { state in
      switch state {
      case .given(let url), .started(let url, _): return url
      case .failed(let reason): throw Unavailable(reason: reason)
      case .invalid(let problem): throw BenchError(problem)
      case .stopped: throw Unavailable(reason: "the throwaway cluster was stopped")
      case .notStarted:
        do {
          let (url, directory) = try Self.startCluster()
          state = .started(url: url, directory: directory)
          return url
        } catch let error as Unavailable {
          state = .failed(error.reason)
          throw error
        }
      }
    }
  }

  /// Stops the throwaway cluster, if one was started, and removes its directory.
  func stop() {
    let directory = state.withLock { state -> String? in
      guard case .started(_, let directory) = state else { return nil }
      state = .stopped
      return directory
    }
    guard let directory else { return }
    do {
      try Self.script(["stop", directory])
    } catch {
      let reason = (error as? Unavailable)?.reason ?? "\(error)"
      SessionBench.warn(
        "sessionbench: the throwaway PostgreSQL server in \(directory) did not stop: \(reason)")
    }
  }

  /// Starts a cluster in a new directory under /tmp (the server runs as `nobody` when we are
  /// root, so every directory above it must be searchable, and its socket path short),
  /// watched by the script: stopped when this process ends without stopping it.
  private static func startCluster() throws -> (url: String, directory: String) {
    guard FileManager.default.isExecutableFile(atPath: clusterScript) else {
      throw Unavailable(
        reason: "sessionbench starts a throwaway server with scripts/postgres-cluster of its checkout, "
          + "and \(clusterScript) is not there")
    }
    var template = Array("/tmp/sessionbench-pg-XXXXXX".utf8CString)
    guard let created = mkdtemp(&template) else {
      throw Unavailable(reason: "cannot create a directory for a throwaway server in /tmp")
    }
    let directory = String(cString: created)
    SessionBench.warn("sessionbench: starting a throwaway PostgreSQL server in \(directory)")
    let output: String
    do {
      output = try script(["start", directory, "--owner", String(getpid())])
    } catch {
      try? FileManager.default.removeItem(atPath: directory)
      throw error
    }
    for line in output.split(separator: "\n") where line.hasPrefix("SESSIONSTORAGE_TEST_POSTGRES_URL=") {
      let value = line.dropFirst("SESSIONSTORAGE_TEST_POSTGRES_URL=".count)
      return (value.trimmingCharacters(in: CharacterSet(charactersIn: "'")), directory)
    }
    _ = try? script(["stop", directory])
    throw Unavailable(reason: "scripts/postgres-cluster start printed no URL: \(output)")
  }

  /// Runs the cluster script (its complaints go to our stderr). Returns its stdout; a
  /// failure throws ``Unavailable``.
  @discardableResult
  private static func script(_ arguments: [String]) throws -> String {
    let process: ChildProcess
    do {
      process = try ChildProcess(clusterScript, arguments, stdout: .collected(), stderr: .inherit)
    } catch {
      throw Unavailable(reason: "\(error)")
    }
    let status = process.wait()
    guard status == 0 else {
      throw Unavailable(
        reason:
          "scripts/postgres-cluster \(arguments.first ?? "") failed (exit \(status), its message is above)")
    }
    return process.lines.joined(separator: "\n")
  }
}
