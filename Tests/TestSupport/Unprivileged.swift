import Foundation

/// Runs programs as an unprivileged user. Root ignores mode bits, so a permission test run
/// as root proves nothing: as root, programs run as `nobody` through `setpriv`; as anyone
/// else, they run as that user, who is unprivileged already.
public enum Unprivileged {
  /// The user and group the programs run as.
  public static let (uid, gid): (uid_t, gid_t) = getuid() == 0 ? (65534, 65534) : (getuid(), getgid())

  /// A directory everyone can traverse, holding copies of our executables: the build
  /// directory may sit under a home that `nobody` cannot enter. One per test process,
  /// removed when it exits; those of test processes that are gone (killed, crashed) are
  /// removed when the next one makes its own.
  private static let binaries: String = {
    removeLeftovers()
    let directory = binariesPrefix + String(getpid())
    try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    chmod(directory, 0o755)
    atexit { try? FileManager.default.removeItem(atPath: Unprivileged.binariesPrefix + String(getpid())) }
    return directory
  }()

  /// The binaries directory's path without the process id.
  private static let binariesPrefix = NSTemporaryDirectory() + "sessionstorage-unprivileged-"

  /// Removes the binaries directories of this user's test processes that no longer run.
  private static func removeLeftovers() {
    let parent = URL(fileURLWithPath: binariesPrefix).deletingLastPathComponent().path
    let name = URL(fileURLWithPath: binariesPrefix).lastPathComponent
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? []
    where entry.hasPrefix(name) {
      guard let pid = pid_t(entry.dropFirst(name.count)), pid != getpid() else { continue }
      let path = parent + "/" + entry
      var info = stat()
      guard lstat(path, &info) == 0, info.st_uid == getuid(), kill(pid, 0) != 0, errno == ESRCH else {
        continue
      }
      try? FileManager.default.removeItem(atPath: path)
    }
  }

  /// The path of our executable `name`, reachable by the unprivileged user: a hard link
  /// to the product (no descriptor written to it, so no `ETXTBSY` for a process another
  /// test spawns meanwhile), or a copy where a link cannot be made.
  public static func product(_ name: String) throws -> String {
    let copy = binaries + "/" + name
    if FileManager.default.fileExists(atPath: copy) { return copy }
    if link(ProcessRunner.product(name), copy) == 0 || errno == EEXIST { return copy }
    let partial = copy + ".\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.copyItem(atPath: ProcessRunner.product(name), toPath: partial)
    chmod(partial, 0o755)
    rename(partial, copy)
    return copy
  }

  /// The command line that runs `executable` with `arguments` as the unprivileged user.
  public static func command(_ executable: String, _ arguments: [String]) -> (String, [String]) {
    guard getuid() == 0 else { return (executable, arguments) }
    return (
      "/usr/bin/setpriv",
      ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", "--", executable] + arguments
    )
  }

  /// Runs `executable` as the unprivileged user with ``ProcessRunner``'s environment,
  /// `PATH=/usr/bin:/bin` and `HOME` = `home`.
  public static func run(
    _ executable: String, _ arguments: [String], home: String, timeout: Duration = .seconds(60)
  ) async throws -> ProcessResult {
    let (program, line) = command(executable, arguments)
    return try await ProcessRunner.run(
      program, line, environment: ["PATH": "/usr/bin:/bin", "HOME": home], timeout: timeout)
  }

  /// Gives `path` and everything under it to the unprivileged user, and lets everyone
  /// traverse its parent (a temporary directory is created 0700).
  public static func give(_ path: String) throws {
    let parent = URL(fileURLWithPath: path).deletingLastPathComponent().path
    chmod(parent, 0o755)
    guard getuid() == 0 else { return }
    var paths = [path]
    if let enumerator = FileManager.default.enumerator(atPath: path) {
      paths += enumerator.compactMap { $0 as? String }.map { path + "/" + $0 }
    }
    for item in paths where lchown(item, uid, gid) != 0 {
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM)
    }
  }
}
