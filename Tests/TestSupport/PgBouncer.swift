import Foundation
import SystemKit
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A PgBouncer of a test's own in front of a PostgreSQL server: its own directory, a free
/// loopback port, `md5` logins checked against its own user list (the server behind it
/// trusts PgBouncer), run as `nobody` when the tests run as root (PgBouncer refuses root).
/// It is killed when dropped or ``stop()``ped, and also when the test process ends
/// however it ends: a shell beside it watches the test process.
///
/// `apt-get install pgbouncer` (the CI installs it); without it a test is skipped outside CI
/// and fails in CI, as for PostgreSQL.
public final class PgBouncer: @unchecked Sendable {
  /// `transaction` or `session`.
  public let poolMode: String
  /// The port it listens on, on 127.0.0.1.
  public let port: Int
  private let directory: TemporaryDirectory
  private let child: ChildProcess

  /// The password every user of ``users`` logs in with.
  public static let password = "bouncer-secret"

  /// Starts PgBouncer in `poolMode` in front of the server of `serverURL`
  /// (`postgresql://user@host:port/db`), with `users` (each logs in with ``password``) and
  /// `settings` added to its `[pgbouncer]` section; returns once it accepts connections.
  public init(
    poolMode: String, serverURL: String, users: [String] = ["postgres"], settings: [String: String] = [:]
  ) async throws {
    guard
      let executable = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].first(where: {
        FileManager.default.isExecutableFile(atPath: $0)
      })
    else {
      throw try Self.unavailable("PgBouncer is not installed (apt-get install pgbouncer)")
    }
    self.poolMode = poolMode
    guard let server = URLComponents(string: serverURL), let host = server.host, let serverPort = server.port
    else {
      throw ChildProcess.SpawnError(description: "not a server URL: \(serverURL)")
    }
    directory = try TemporaryDirectory(prefix: "pgbouncer")
    chmod(directory.path, 0o755)
    if getuid() == 0 { chown(directory.path, Unprivileged.uid, Unprivileged.gid) }
    // A port below Linux's ephemeral range (32768 up, which outgoing connections take), and
    // another one should something bind it first.
    for _ in 0..<5 {
      let port = try Self.freePort()
      let child = try await Self.start(
        executable, port: port, poolMode: poolMode, host: host, serverPort: serverPort, users: users,
        settings: settings, in: directory)
      if await Self.listens(on: port) {
        self.port = port
        self.child = child
        return
      }
      child.kill(SIGKILL)
      _ = try? await child.wait(timeout: .seconds(30))
    }
    let said = (try? String(contentsOfFile: directory.file("pgbouncer.log"), encoding: .utf8)) ?? ""
    throw ChildProcess.SpawnError(description: "PgBouncer did not start: \(said)")
  }

  /// Writes the configuration for `port` and starts PgBouncer.
  private static func start(
    _ executable: String, port: Int, poolMode: String, host: String, serverPort: Int, users: [String],
    settings: [String: String], in directory: TemporaryDirectory
  ) async throws -> ChildProcess {
    var options: [String: String] = [
      "listen_addr": "127.0.0.1", "listen_port": String(port), "unix_socket_dir": "",
      "auth_type": "md5", "auth_file": directory.file("userlist.txt"), "pool_mode": poolMode,
      "server_login_retry": "1", "max_client_conn": "200", "default_pool_size": "20",
      "ignore_startup_parameters": "extra_float_digits", "admin_users": "postgres",
      "logfile": directory.file("pgbouncer.log"),
    ]
    options.merge(settings) { $1 }
    let config =
      "[databases]\n* = host=\(host) port=\(serverPort)\n\n[pgbouncer]\n"
      + options.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)\n" }.joined()
    try Data(config.utf8).write(to: URL(fileURLWithPath: directory.file("pgbouncer.ini")))
    try Data(users.map { "\"\($0)\" \"\(password)\"\n" }.joined().utf8)
      .write(to: URL(fileURLWithPath: directory.file("userlist.txt")))
    for name in ["pgbouncer.ini", "userlist.txt"] {
      chmod(directory.file(name), 0o644)
      if getuid() == 0 { chown(directory.file(name), Unprivileged.uid, Unprivileged.gid) }
    }
    // The shell watches this process and kills PgBouncer (the shell's own pid, after exec)
    // once it is gone; setpriv drops root.
    let run =
      getuid() == 0 ? ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] : []
    let script =
      "owner=$1; shift; (while kill -0 \"$owner\" 2>/dev/null; do sleep 1; done; kill -KILL $$) "
      + "</dev/null >/dev/null 2>&1 & exec \"$@\""
    return try await ChildProcess(
      "/bin/sh",
      ["-c", script, "sh", String(getpid())] + run + [executable, directory.file("pgbouncer.ini")],
      environment: ["PATH": "/usr/bin:/bin"], stdout: .null, stderr: .file(directory.file("stderr")))
  }

  /// `postgresql://user:password@127.0.0.1:port/database` plus `query` (after `?`).
  public func url(user: String = "postgres", database: String = "postgres", query: String = "") -> String {
    "postgresql://\(user):\(Self.password)@127.0.0.1:\(port)/\(database)" + (query.isEmpty ? "" : "?" + query)
  }

  /// Replaces the user list (a password changed or revoked) and reloads it.
  public func setUsers(_ users: [(name: String, password: String)]) throws {
    let path = directory.file("userlist.txt")
    try Data(users.map { "\"\($0.name)\" \"\($0.password)\"\n" }.joined().utf8).write(
      to: URL(fileURLWithPath: path))
    chmod(path, 0o644)
    child.kill(SIGHUP)
  }

  /// What PgBouncer logged.
  public var log: String {
    (try? String(contentsOfFile: directory.file("pgbouncer.log"), encoding: .utf8)) ?? ""
  }

  /// Kills PgBouncer and waits for it (on a thread of its own).
  public func stop() async {
    child.kill(SIGKILL)
    await child.wait()
  }

  deinit { child.killAndReapOnThreadOfItsOwn() }

  /// Whether something accepts connections on `port` within 10 s.
  private static func listens(on port: Int) async -> Bool {
    for _ in 0..<200 {
      if accepts(port) { return true }
      try? await Task.sleep(for: .milliseconds(50))
    }
    return false
  }

  /// Whether something accepts TCP connections on 127.0.0.1:`port`.
  private static func accepts(_ port: Int) -> Bool {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { return false }
    defer { close(socket) }
    var address = loopback(port)
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
      }
    }
  }

  /// A port of 127.0.0.1 from 20000 to 32767 that can be bound now.
  private static func freePort() throws -> Int {
    for _ in 0..<50 {
      let port = Int.random(in: 20_000...32_767)
      let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      guard socket >= 0 else { break }
      defer { close(socket) }
      var address = loopback(port)
      let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      if bound { return port }
    }
    throw ChildProcess.SpawnError(description: "no free port from 20000 to 32767")
  }

  private static func loopback(_ port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
  }

  /// Skips the calling test outside CI; in CI, the error that fails it.
  private static func unavailable(_ reason: String) throws -> any Error {
    let ci = ProcessInfo.processInfo.environment["CI"] ?? ""
    if !ci.isEmpty && ci != "false" && ci != "0" {
      return ChildProcess.SpawnError(description: "PgBouncer is required in CI (CI=\(ci)): \(reason)")
    }
    try Test.cancel(Comment(rawValue: "PgBouncer tests skipped: \(reason)"))
  }
}
