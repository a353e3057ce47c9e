import Foundation
import Synchronization
import Testing
@_exported import ToolingKit

// The tests' PostgreSQL server: the one named by `$SESSIONSTORAGE_TEST_POSTGRES_URL`, or a
// throwaway cluster of `PostgresCluster` (ToolingKit), started as `nobody` when the tests run
// as root.
//
// Most tests use `shared()` and a store of their own in a fresh schema (`freshStoreURL`). A
// test that stops or restarts the server takes a private one, stopped on every path when the
// closure returns:
//
//     try await PostgresCluster.withPrivateCluster { cluster in
//       try await cluster.restart()
//     }
//
// Everything here is `async` and runs the script or psql from a thread of its own (see
// `ProcessRunner`); psql gets `PGCONNECT_TIMEOUT` and `ProcessRunner.environment(_:home:)`,
// none of the caller's `PG*` variables or `~/.pgpass` (a server of your own that needs a
// password takes it in its URL).

extension PostgresCluster {
  /// `$SESSIONSTORAGE_TEST_POSTGRES_URL`'s server if set, else one throwaway cluster started
  /// on first use per test process, shared by all its tests and stopped at exit.
  ///
  /// When PostgreSQL is not installed, or the server cannot start or does not answer: outside
  /// CI the calling test is skipped (`Test.cancel`), saying why; in CI (`CI=true`) this throws
  /// the reason, so that the test fails with it.
  package static func shared() async throws -> PostgresCluster {
    switch await sharedCluster.value {
    case .success(let cluster): return cluster
    case .failure(let error): try unavailable(error.message)
    }
  }

  /// Runs `body` with a private cluster (its own directory and port), for tests that stop
  /// or restart the server; stops it when `body` returns or throws. Unavailable PostgreSQL
  /// is handled as in ``shared()``.
  package static func withPrivateCluster<Value>(_ body: (PostgresCluster) async throws -> Value) async throws
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

  /// How long a test's connection attempt may take, in seconds: the `connect_timeout` of
  /// every URL ``clientURL(socket:)`` and ``freshStoreURL(socket:)`` hand out (a URL's own
  /// wins over a store's `connectTimeout`, 5 s by default), and psql's `PGCONNECT_TIMEOUT`.
  /// On a loaded machine (the whole suite on 2 cores, the server as `nobody`) a connection
  /// can take longer than 5 s; a server that is down still fails at once (refused). A test
  /// that wants a short timeout builds its own URL.
  package static let connectTimeoutSeconds = 60

  /// ``url`` (``socketURL`` when `socket`) with `connect_timeout=`
  /// ``connectTimeoutSeconds`` unless it sets one: the server URL to hand to a store or a
  /// child process (`sessionctl`, `sessiontorture`, `sessionbench`).
  package func clientURL(socket: Bool = false) -> String {
    let base = socket ? socketURL : url
    guard !base.contains("connect_timeout=") else { return base }
    return base + (base.contains("?") ? "&" : "?") + "connect_timeout=\(Self.connectTimeoutSeconds)"
  }

  /// ``clientURL(socket:)`` plus `schema=t_<random lowercase>`: the URL of a fresh store in a
  /// schema of its own, so that tests sharing a server do not meet.
  package func freshStoreURL(socket: Bool = false) -> String {
    let name = "t_" + String((0..<16).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement() ?? "a" })
    return clientURL(socket: socket) + "&schema=" + name
  }

  /// Runs `sql` through `psql -X -q -A -t -v ON_ERROR_STOP=1` on ``url`` (``socketURL`` when
  /// `socket`), as a script (each statement on its own, as a psql user types them), after
  /// `SET search_path TO schema` when `schema` is given; psql is killed once `timeout` passed (a
  /// hang guard: `sql` that waits for long needs a longer one).
  /// - Returns: what psql printed: unaligned rows, `|` between columns.
  /// - Throws: an error carrying psql's standard error when it fails.
  @discardableResult
  package func psql(
    _ sql: String, schema: String? = nil, socket: Bool = false, timeout: Duration = .seconds(60)
  ) async throws -> String {
    let scratch = try TemporaryDirectory()
    let script = scratch.file("input.sql")
    let setPath = schema.map {
      "SET search_path TO \"\($0.replacingOccurrences(of: "\"", with: "\"\""))\";\n"
    }
    try Data(((setPath ?? "") + sql).utf8).write(to: URL(fileURLWithPath: script))
    let result = try await ProcessRunner.run(
      try await Self.psqlPath.value.get(),
      ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", socket ? socketURL : url, "-f", script],
      environment: Self.clientEnvironment, timeout: timeout)
    guard result.status == 0 else {
      throw ClusterError(
        "psql exited with \(result.status): \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
    return result.stdout
  }

  /// Restarts a private cluster on the same port, as the blocking ``restart(immediate:)``
  /// does, from a thread of its own.
  package func restart(immediate: Bool = false) async throws {
    try await onThreadOfItsOwn { try self.restart(immediate: immediate) }
  }

  /// Makes `role` log in over TCP with its password (`scram-sha-256`) instead of being
  /// trusted, as a server in production would (only for private clusters).
  package func requirePassword(for role: String) async throws {
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

  /// Starts a hot standby of a private cluster, as the blocking
  /// ``startStandby(prefix:)`` does, from a thread of its own. The caller stops it with ``stop()``.
  package func startStandby() async throws -> PostgresCluster {
    try await onThreadOfItsOwn { try self.startStandby(prefix: "sessionstorage") }
  }

  /// Stops a private cluster and removes its directory (nothing to do once it is stopped).
  /// A failure is recorded as an issue of the running test.
  package func stop() async {
    guard directory != nil else {
      Issue.record("stop() is only for private clusters, not the shared server")
      return
    }
    do {
      try await onThreadOfItsOwn { try self.stop() }
    } catch {
      Issue.record("The PostgreSQL cluster in \(directory ?? "") did not stop: \(error)")
    }
  }
}

extension PostgresCluster {
  /// Why a server is not available, or what psql said when it failed.
  struct ClusterError: Error, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
    /// `error` itself when it is one, else its description.
    static func wrapping(_ error: any Error) -> ClusterError {
      error as? ClusterError ?? ClusterError(String(describing: error))
    }
  }

  /// psql from the directory of the PostgreSQL programs the script uses.
  private static let psqlPath = Once<Result<String, ClusterError>> {
    do {
      return .success(try await onThreadOfItsOwn { try binDirectory() + "/psql" })
    } catch {
      return .failure(ClusterError.wrapping(error))
    }
  }

  /// psql's connection attempts wait as long as the stores' (``connectTimeoutSeconds``).
  private static let clientEnvironment = ["PGCONNECT_TIMEOUT": String(connectTimeoutSeconds)]

  /// The shared server, looked for once: the cluster, or why there is none.
  private static let sharedCluster = Once<Result<PostgresCluster, ClusterError>> {
    do {
      return .success(try await startShared())
    } catch {
      return .failure(ClusterError.wrapping(error))
    }
  }

  /// The shared cluster this process started, stopped at exit.
  private static let sharedOwned = Mutex<PostgresCluster?>(nil)

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

  /// The server named by the environment, checked with `SELECT 1`; else a new cluster that
  /// tests share as a borrowed handle (none of them can stop it).
  private static func startShared() async throws -> PostgresCluster {
    let environment = ProcessInfo.processInfo.environment
    guard let url = environment["SESSIONSTORAGE_TEST_POSTGRES_URL"], !url.isEmpty else {
      let cluster = try await startCluster()
      sharedOwned.withLock { $0 = cluster }
      atexit { PostgresCluster.stopSharedAtExit() }
      return cluster.borrowed
    }
    let cluster = PostgresCluster(url: url, socketURL: environment["SESSIONSTORAGE_TEST_POSTGRES_SOCKET_URL"])
    do {
      _ = try await cluster.psql("SELECT 1")
    } catch {
      throw ClusterError("the server of SESSIONSTORAGE_TEST_POSTGRES_URL does not answer: \(error)")
    }
    return cluster
  }

  /// Creates and starts a cluster in a new directory, from a thread of its own.
  private static func startCluster() async throws -> PostgresCluster {
    _ = try await psqlPath.value.get()  // PostgreSQL is installed: a clear reason when it is not
    return try await onThreadOfItsOwn { try start(prefix: "sessionstorage") }
  }

  /// Stops the shared cluster this process started (an `atexit` handler, off the pool).
  private static func stopSharedAtExit() {
    try? sharedOwned.withLock { $0 }?.stop()
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
