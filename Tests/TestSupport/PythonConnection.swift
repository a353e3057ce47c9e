import Foundation
import SystemKit

/// Another process (Python's sqlite3 module) that keeps one connection to a database open
/// and runs the statements it is sent, each in its own transaction. While it lives, the
/// file's `-wal` stays, another process's close is not the last one (so it checkpoints
/// nothing), and its own commits touch the `-wal` only: it never closes, so it never
/// checkpoints into the database file.
public final class PythonConnection: Sendable {
  private let child: ChildProcess

  private static let script = """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    db.execute("SELECT count(*) FROM sqlite_master").fetchall()
    print("open", flush=True)
    while True:
        line = sys.stdin.readline()
        if not line:
            break
        db.execute(line)
        print("ok", flush=True)
    """

  private init(_ child: ChildProcess) { self.child = child }

  /// Opens `path` in a new `python3` (its errors go to `scratch`); returns once the
  /// connection has read the file.
  public static func open(_ path: String, scratch: String) async throws -> PythonConnection {
    try await onThreadOfItsOwn {
      let child = try ChildProcess(
        "/usr/bin/python3", ["-c", script, path], environment: ["PATH": "/usr/bin:/bin"], stdin: .pipe,
        stdout: .pipe, stderr: .file(scratch))
      guard try child.readLine(timeout: .seconds(120)) == "open" else {
        throw ChildProcess.SpawnError(description: "python3 could not open \(path); see \(scratch)")
      }
      return PythonConnection(child)
    }
  }

  /// Runs one statement (one line of SQL) and returns once it committed.
  public func execute(_ sql: String) async throws {
    try await onThreadOfItsOwn { [child] in
      try child.writeLine(sql)
      guard try child.readLine(timeout: .seconds(120)) == "ok" else {
        throw ChildProcess.SpawnError(description: "python3 failed to run \(sql)")
      }
    }
  }

  /// Ends the process at once, as a crash would: its connection is not closed (nothing is
  /// checkpointed, the `-wal` stays).
  public func kill() async {
    _ = try? await onThreadOfItsOwn { [child] in
      child.kill(SIGKILL)
      return child.wait()
    }
  }

  deinit { child.killAndReapOnThreadOfItsOwn() }
}
