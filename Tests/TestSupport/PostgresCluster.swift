import Foundation
import Synchronization
import Testing

/// A PostgreSQL server for tests: the one named by `$SESSIONSTORAGE_TEST_POSTGRES_URL`, or a
/// throwaway cluster that `scripts/postgres-cluster` creates and starts (as `nobody` when the
/// tests run as root).
///
/// Most tests use ``shared()`` and a store of their own in a fresh schema
/// (``freshStoreURL(socket:)``). A test that stops or restarts the server takes a private one,
/// stopped on every path when the closure returns:
///
/// ```swift
/// try await PostgresCluster.withPrivateCluster { cluster in
///   try await cluster.restart()
/// }
/// ```
///
/// Everything that runs `psql` or the script is `async` and awaits the child from a thread
/// of its own (see ``ProcessRunner``); psql gets `PGCONNECT_TIMEOUT` and
/// ``ProcessRunner/environment(_:home:)``, none of the caller's `PG*` variables or
/// `~/.pgpass` (a server of your own that needs a password takes it in its URL).
///
/// A test process that dies before it stops a cluster leaves nothing behind either: the
/// script watches this process and stops the cluster once it is gone.
public struct PostgresCluster: Sendable {
  /// The server over TCP: `postgresql://postgres@127.0.0.1:PORT/postgres`.
  public var url: String
  /// The same server through its Unix socket directory; `url` for a server named by
  /// `$SESSIONSTORAGE_TEST_POSTGRES_URL` without `$SESSIONSTORAGE_TEST_POSTGRES_SOCKET_URL`.
  public var socketURL: String
  /// The directory of a private cluster; nil for the shared server.
  private let directory: String?

  /// `$SESSIONSTORAGE_TEST_POSTGRES_URL`'s server if set, else one throwaway cluster started
  /// on first use per test process, shared by all its tests and stopped at exit.
  ///
  /// When PostgreSQL is not installed, or the server cannot start or does not answer: outside
  /// CI the calling test is skipped (`Test.cancel`), saying why; in CI (`CI=true`) this throws
  /// the reason, so that the test fails with it.
  public static func shared() async throws -> PostgresCluster {
    switch await sharedCluster.value {
    case .success(let cluster): return cluster
    case .failure(let error): try unavailable(error.message)
    }
  }

  /// Runs `body` with a private cluster (its own directory and port), for tests that stop
  /// or restart the server; stops it when `body` returns or throws. Unavailable PostgreSQL
  /// is handled as in ``shared()``.
  public static func withPrivateCluster<Value>(_ body: (PostgresCluster) async throws -> Value) async throws
    -> Value
  {
    let cluster: PostgresCluster
    do {
      cluster = try await startCluster()
    } catch {
      try unavailable(ClusterError.wrapping(error).message)
    }
    do {
      let value = try await body(cluster)
      await cluster.stop()
      return value
    } catch {
      await cluster.stop()
      throw error
    }
  }

  /// `url` (or `socketURL`) plus `schema=t_<random lowercase>`: the URL of a fresh store in a
  /// schema of its own, so that tests sharing a server do not meet.
  public func freshStoreURL(socket: Bool = false) -> String {
    let base = socket ? socketURL : url
    let name = "t_" + String((0..<16).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
    return base + (base.contains("?") ? "&" : "?") + "schema=" + name
  }

  /// Runs `sql` through `psql -X -q -A -t -v ON_ERROR_STOP=1` on ``url`` (``socketURL`` when
  /// `socket`), as a script (each statement on its own, as a psql user types them), after
  /// `SET search_path TO schema` when `schema` is given.
  /// - Returns: what psql printed: unaligned rows, `|` between columns.
  /// - Throws: an error carrying psql's standard error when it fails.
  @discardableResult
  public func psql(_ sql: String, schema: String? = nil, socket: Bool = false) async throws -> String {
    let scratch = try TemporaryDirectory()
    let script = scratch.file("input.sql")
    let setPath = schema.map {
      "SET search_path TO \"\($0.replacingOccurrences(of: "\"", with: "\"\""))\";\n"
    }
    try Data(((setPath ?? "") + sql).utf8).write(to: URL(fileURLWithPath: script))
    let result = try await ProcessRunner.run(
      try await Self.psqlPath.value.get(),
      ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", socket ? socketURL : url, "-f", script],
      environment: Self.clientEnvironment)
    guard result.status == 0 else {
      throw ClusterError(
        "psql exited with \(result.status): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
    return result.stdout
  }

  /// Restarts the server on the same port (only for private clusters); sessions connected
  /// to it are ended. `immediate` stops it without a checkpoint, as a crash of the server
  /// would: what its WAL had not written yet is lost.
  public func restart(immediate: Bool = false) async throws {
    guard let directory else {
      throw ClusterError("restart() is only for private clusters, not the shared server")
    }
    _ = try await Self.script(["restart", directory] + (immediate ? ["--immediate"] : []))
  }

  /// Makes `role` log in over TCP with its password (`scram-sha-256`) instead of being
  /// trusted, as a server in production would (only for private clusters).
  public func requirePassword(for role: String) async throws {
    guard let directory else {
      throw ClusterError("requirePassword(for:) is only for private clusters, not the shared server")
    }
    let hba = directory + "/data/pg_hba.conf"
    let rules = try String(contentsOfFile: hba, encoding: .utf8)
    // The first matching line wins: this one comes before the cluster's `trust` lines.
    try ("host all \(role) 127.0.0.1/32 scram-sha-256\n" + rules).write(
      toFile: hba, atomically: false, encoding: .utf8)
    _ = try await psql("SELECT pg_reload_conf()")
  }

  /// Starts a hot standby of this server (only for private clusters): a copy that streams
  /// its changes and serves read-only queries, in recovery until promoted
  /// (`SELECT pg_promote()`). The caller stops it with ``stop()``.
  public func startStandby() async throws -> PostgresCluster {
    guard let directory else {
      throw ClusterError("startStandby() is only for private clusters, not the shared server")
    }
    let standby = NSTemporaryDirectory() + "sessionstorage-pg-" + UUID().uuidString.prefix(8).lowercased()
    let output = try await Self.script(["standby", standby, directory, "--owner", String(getpid())])
    return try Self.cluster(from: output, directory: standby)
  }

  /// Stops the server and removes its directory (only for private clusters; nothing to do
  /// once it is stopped). A failure is recorded as an issue of the running test.
  public func stop() async {
    guard let directory else {
      Issue.record("stop() is only for private clusters, not the shared server")
      return
    }
    guard FileManager.default.fileExists(atPath: directory) else { return }
    do {
      _ = try await Self.script(["stop", directory])
    } catch {
      Issue.record("The PostgreSQL cluster in \(directory) did not stop: \(error)")
    }
  }
}

extension PostgresCluster {
  /// Why a server is not available, or what psql or the script said when they failed.
  struct ClusterError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
    /// `error` itself when it is one, else its description.
    static func wrapping(_ error: any Error) -> ClusterError {
      error as? ClusterError ?? ClusterError(String(describing: error))
    }
  }

  /// `scripts/postgres-cluster`, found from this file's place in the package.
  private static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
      "scripts/postgres-cluster"
    ).path

  /// psql from the directory of the PostgreSQL programs the script uses.
  private static let psqlPath = Once<Result<String, ClusterError>> {
    do {
      return .success(try await script(["bindir"]).trimmingCharacters(in: .whitespacesAndNewlines) + "/psql")
    } catch {
      return .failure(ClusterError.wrapping(error))
    }
  }

  /// A dead or unreachable server fails a connection in seconds, not minutes.
  private static let clientEnvironment = ["PGCONNECT_TIMEOUT": "5"]

  /// The shared server, looked for once: the cluster, or why there is none.
  private static let sharedCluster = Once<Result<PostgresCluster, ClusterError>> {
    do {
      return .success(try await startShared())
    } catch {
      return .failure(ClusterError.wrapping(error))
    }
  }

  /// The directory of the shared cluster this process started, stopped at exit.
  private static let sharedDirectory = Mutex<String?>(nil)

  /// Skips the calling test outside CI, fails it in CI.
  private static func unavailable(_ reason: String) throws -> Never {
    let ci = ProcessInfo.processInfo.environment["CI"] ?? ""
    if !ci.isEmpty && ci != "false" && ci != "0" {
      throw ClusterError("PostgreSQL is required in CI (CI=\(ci)) but not available: \(reason)")
    }
    try Test.cancel(
      Comment(
        rawValue:
          "PostgreSQL tests skipped: \(reason); see \"Tests against PostgreSQL\" in the README"
      ))
  }

  /// The server named by the environment, checked with `SELECT 1`; else a new cluster.
  private static func startShared() async throws -> PostgresCluster {
    let environment = ProcessInfo.processInfo.environment
    guard let url = environment["SESSIONSTORAGE_TEST_POSTGRES_URL"], !url.isEmpty else {
      let cluster = try await startCluster()
      sharedDirectory.withLock { $0 = cluster.directory }
      atexit { PostgresCluster.stopSharedAtExit() }
      return PostgresCluster(url: cluster.url, socketURL: cluster.socketURL, directory: nil)
    }
    let cluster = PostgresCluster(
      url: url, socketURL: environment["SESSIONSTORAGE_TEST_POSTGRES_SOCKET_URL"] ?? url, directory: nil)
    do {
      _ = try await cluster.psql("SELECT 1")
    } catch {
      throw ClusterError("the server of SESSIONSTORAGE_TEST_POSTGRES_URL does not answer: \(error)")
    }
    return cluster
  }

  /// Creates and starts a cluster in a new directory, watched by the script: stopped when
  /// this process ends without stopping it.
  private static func startCluster() async throws -> PostgresCluster {
    _ = try await psqlPath.value.get()  // PostgreSQL is installed: a clear reason when it is not
    let directory = NSTemporaryDirectory() + "sessionstorage-pg-" + UUID().uuidString.prefix(8).lowercased()
    let output = try await script(["start", directory, "--owner", String(getpid())])
    return try cluster(from: output, directory: directory)
  }

  /// The cluster whose URLs the script printed in `output`.
  private static func cluster(from output: String, directory: String) throws -> PostgresCluster {
    var values: [String: String] = [:]
    for line in output.split(separator: "\n") {
      guard let equals = line.firstIndex(of: "=") else { continue }
      values[String(line[..<equals])] = line[line.index(after: equals)...].trimmingCharacters(
        in: CharacterSet(charactersIn: "'"))
    }
    guard let url = values["SESSIONSTORAGE_TEST_POSTGRES_URL"],
      let socketURL = values["SESSIONSTORAGE_TEST_POSTGRES_SOCKET_URL"]
    else {
      throw ClusterError("scripts/postgres-cluster start printed no URLs: \(output)")
    }
    return PostgresCluster(url: url, socketURL: socketURL, directory: directory)
  }

  /// Runs `scripts/postgres-cluster` with `arguments`; its standard output.
  private static func script(_ arguments: [String]) async throws -> String {
    try scriptOutput(arguments, await ProcessRunner.run(scriptPath, arguments, timeout: .seconds(120)))
  }

  /// The script's standard output, or an error with what it said.
  private static func scriptOutput(_ arguments: [String], _ result: ProcessResult) throws -> String {
    guard result.status == 0 else {
      throw ClusterError(
        "scripts/postgres-cluster \(arguments.joined(separator: " ")) exited with \(result.status): "
          + result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return result.stdout
  }

  /// Stops the shared cluster this process started (an `atexit` handler).
  private static func stopSharedAtExit() {
    guard let directory = sharedDirectory.withLock({ $0 }) else { return }
    _ = try? ProcessRunner.runBlocking(scriptPath, ["stop", directory], timeout: .seconds(120))
  }
}

/// A value made once, by the first caller of ``value``; later callers await the same one.
final class Once<Value: Sendable>: Sendable {
  private let make: @Sendable () async -> Value
  private let task = Mutex<Task<Value, Never>?>(nil)

  init(_ make: @escaping @Sendable () async -> Value) { self.make = make }

  var value: Value {
    get async {
      let task = task.withLock { task in
        if let task { return task }
        let made = Task { await make() }
        task = made
        return made
      }
      return await task.value
    }
  }
}
