import Foundation
import SystemKit

/// Another process (Python's sqlite3 module) holding a database's write lock: it begins an
/// IMMEDIATE transaction and keeps it until it is released (killed, which releases every
/// lock it has, as a crash would), however long a loaded machine takes to get there.
public final class LockHolder {
  private let child: ChildProcess
  private var released = false

  /// Takes the write lock on `path`; returns once it is held (awaited, not blocking a
  /// thread of the cooperative pool while python starts).
  public init(_ path: String, scratch: String) async throws {
    let script = """
      import sqlite3, sys, time
      db = sqlite3.connect(sys.argv[1], isolation_level=None)
      db.execute("BEGIN IMMEDIATE")
      print("locked", flush=True)
      time.sleep(3600)
      """
    child = try await ChildProcess(
      "/usr/bin/python3", ["-c", script, path], environment: [:], stdout: .pipe, stderr: .file(scratch))
    guard try await child.readLine() == "locked" else {
      throw ChildProcess.SpawnError(description: "python3 did not take the write lock on \(path)")
    }
  }

  /// Releases the lock: the process is killed (and reaped on a thread of its own, so that
  /// a caller on the cooperative pool never blocks in `waitpid`).
  public func release() {
    guard !released else { return }
    released = true
    child.killAndReapOnThreadOfItsOwn()
  }

  deinit { release() }
}
