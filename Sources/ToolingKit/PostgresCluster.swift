import Foundation
import SystemKit

/// A PostgreSQL server for the tests and sessionbench: a throwaway cluster that
/// `scripts/postgres-cluster` runs (as `nobody` when we are root), or a server given by URL.
/// The script watches this process and stops the cluster once it is gone; it runs without
/// the caller's `PG*` variables. Every call blocks while the script runs.
package struct PostgresCluster: Sendable {
  /// The server over TCP: `postgresql://postgres@127.0.0.1:PORT/postgres`.
  package var url: String
  /// The same server through its Unix socket directory (`url` for a server given by URL).
  package var socketURL: String
  /// The directory of a cluster the script runs; nil for a server given by URL.
  package let directory: String?

  /// A server at `url`, not ours to stop.
  package init(url: String, socketURL: String? = nil) {
    self.init(url: url, socketURL: socketURL ?? url, directory: nil)
  }

  private init(url: String, socketURL: String, directory: String?) {
    self.url = url
    self.socketURL = socketURL
    self.directory = directory
  }

  /// The same server, without the directory: a handle that cannot stop it.
  package var borrowed: PostgresCluster { PostgresCluster(url: url, socketURL: socketURL, directory: nil) }

  /// The script's failure, with what it printed on its standard error.
  package struct ScriptError: Error, CustomStringConvertible {
    package var description: String
  }

  /// `scripts/postgres-cluster` of the checkout this program was built from.
  package static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(
      "scripts/postgres-cluster"
    )
    .path

  /// Creates and starts a cluster in a new directory `/tmp/PREFIX-pg-XXXXXX` (the server runs
  /// as `nobody` when we are root, so every directory above it must be searchable, and its
  /// socket path must stay short).
  /// - Throws: ``ScriptError``.
  package static func start(prefix: String) throws(ScriptError) -> PostgresCluster {
    var template = Array("/tmp/\(prefix)-pg-XXXXXX".utf8CString)
    guard let created = mkdtemp(&template) else {
      throw ScriptError(description: "cannot create a directory for a PostgreSQL cluster in /tmp")
    }
    let directory = String(cString: created)
    do {
      return try cluster(
        printed: run(["start", directory, "--owner", String(getpid())]), directory: directory)
    } catch {
      _ = try? run(["stop", directory])
      try? FileManager.default.removeItem(atPath: directory)
      throw error
    }
  }

  /// Starts a hot standby of this cluster: a copy that streams its changes and serves
  /// read-only queries, in recovery until promoted (`SELECT pg_promote()`).
  /// - Throws: ``ScriptError``; also for a server given by URL.
  package func startStandby(prefix: String) throws(ScriptError) -> PostgresCluster {
    let primary = try ownDirectory("startStandby")
    let standby = "/tmp/\(prefix)-pg-" + UUID().uuidString.prefix(8).lowercased()
    return try Self.cluster(
      printed: Self.run(["standby", standby, primary, "--owner", String(getpid())]), directory: standby)
  }

  /// Restarts the server on the same port; its sessions end. `immediate` stops it without a
  /// checkpoint, as a crash would: what its WAL had not written yet is lost.
  /// - Throws: ``ScriptError``; also for a server given by URL.
  package func restart(immediate: Bool = false) throws(ScriptError) {
    _ = try Self.run(["restart", ownDirectory("restart")] + (immediate ? ["--immediate"] : []))
  }

  /// Stops the server and removes its directory; nothing to do once that is done.
  /// - Throws: ``ScriptError``; also for a server given by URL.
  package func stop() throws(ScriptError) {
    let directory = try ownDirectory("stop")
    guard FileManager.default.fileExists(atPath: directory) else { return }
    _ = try Self.run(["stop", directory])
  }

  /// The directory of the PostgreSQL programs the script uses (`psql` is there).
  /// - Throws: ``ScriptError`` when PostgreSQL is not installed, saying how to install it.
  package static func binDirectory() throws(ScriptError) -> String {
    try run(["bindir"]).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  private func ownDirectory(_ operation: String) throws(ScriptError) -> String {
    guard let directory else {
      throw ScriptError(
        description: "\(operation) is only for a cluster of our own, not for a server given by URL")
    }
    return directory
  }

  /// The cluster whose URLs the script printed, as `export NAME='value'` lines.
  private static func cluster(printed output: String, directory: String) throws(ScriptError)
    -> PostgresCluster
  {
    var values: [String: String] = [:]
    for line in output.split(separator: "\n") where line.hasPrefix("export ") {
      let assignment = line.dropFirst("export ".count)
      guard let equals = assignment.firstIndex(of: "=") else { continue }
      values[String(assignment[..<equals])] = assignment[assignment.index(after: equals)...]
        .trimmingCharacters(
          in: CharacterSet(charactersIn: "'"))
    }
    guard let url = values["SESSIONSTORAGE_TEST_POSTGRES_URL"],
      let socketURL = values["SESSIONSTORAGE_TEST_POSTGRES_SOCKET_URL"]
    else {
      throw ScriptError(description: "scripts/postgres-cluster printed no URLs: \(output)")
    }
    return PostgresCluster(url: url, socketURL: socketURL, directory: directory)
  }

  /// Runs the script with `arguments` (at most 120 s); its standard output.
  private static func run(_ arguments: [String]) throws(ScriptError) -> String {
    let command = "scripts/postgres-cluster \(arguments.joined(separator: " "))"
    guard FileManager.default.isExecutableFile(atPath: script) else {
      throw ScriptError(description: "\(script) is not there: the cluster script comes with the checkout")
    }
    let scratch: TemporaryDirectory
    let child: ChildProcess
    do {
      scratch = try TemporaryDirectory(prefix: "postgres-cluster")
      child = try ChildProcess(
        script, arguments, environment: environment, stdout: .collected(),
        stderr: .file(scratch.file("stderr")))
    } catch {
      throw ScriptError(description: "cannot run \(command): \(error)")
    }
    let status: Int32
    do {
      status = try child.wait(timeout: .seconds(120))
    } catch {
      throw ScriptError(description: "\(command) did not end within 120 s")
    }
    guard status == 0 else {
      let stderr = (try? String(contentsOfFile: scratch.file("stderr"), encoding: .utf8)) ?? ""
      throw ScriptError(
        description:
          "\(command) exited with \(status): \(stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
    }
    return child.lines.joined(separator: "\n")
  }

  /// The script's environment: where the tools are, a UTF-8 locale, the temporary directory.
  private static var environment: [String: String] {
    let inherited = ProcessInfo.processInfo.environment
    var temporary = NSTemporaryDirectory()
    while temporary.count > 1 && temporary.hasSuffix("/") { temporary.removeLast() }
    return [
      "PATH": inherited["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin:/bin", "LC_ALL": "C.UTF-8",
      "TMPDIR": temporary,
    ]
  }
}
