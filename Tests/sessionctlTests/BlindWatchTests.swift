import Foundation
import Testing

/// `watch` is never silently blind: under a descriptor limit, or when inotify cannot be
/// set up, it still delivers another process's commit (by polling, and says so on
/// stderr), or ends with a clear error.
@Suite(.serialized, .timeLimit(.minutes(10))) struct BlindWatchTests {
  /// Starts `watch` through `/bin/bash -c PREFIX sessionctl …`, waits for its snapshot,
  /// commits with the sqlite3 shell, reads the change line, stops it with SIGTERM (which
  /// needs no descriptor), and returns the change line (or nil), the exit status and stderr.
  func watch(_ sandbox: Sandbox, prefix: String, stopBySignal: Bool = true) async throws -> (
    line: String?, status: Int32, stderr: String
  ) {
    let db = sandbox.path("s.db")
    if !sandbox.exists(db) { _ = try await sandbox.run(db: db, ["login", "alice"]) }
    let (shell, stderr) = try await sandbox.start(
      [
        "-c", "\(prefix) \"$0\" --db \"$1\" watch\(stopBySignal ? "" : " --limit 1")", Sandbox.sessionctl, db,
      ],
      executable: "/bin/bash")
    guard try await shell.readLine(timeout: .seconds(60))?.hasPrefix("snapshot at ") == true else {
      let status = try await shell.wait(timeout: .seconds(20))
      return (nil, status, String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self))
    }
    try await sandbox.sqlite(db, "UPDATE session SET username = 'u\(UInt32.random(in: 0...UInt32.max))'")
    // The safety poll runs every second; the limit is a hang guard for a loaded machine.
    let line = try await shell.readLine(timeout: .seconds(60))
    if stopBySignal { shell.kill(SIGTERM) }
    let status = try await shell.wait(timeout: .seconds(20))
    return (line, status, String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self))
  }

  /// From the smallest limit sessionctl accepts upwards: each either delivers the change
  /// (and then stops on SIGTERM) or exits 1 naming the limit. Never a snapshot and then
  /// silence.
  @Test(arguments: [10, 11, 12, 13, 14, 16, 20])
  func underADescriptorLimitAChangeStillArrivesOrTheErrorSaysWhy(limit: Int) async throws {
    let sandbox = try Sandbox()
    // Only 0, 1 and 2 are left open, so that what the test runner leaves without
    // close-on-exec does not count against the limit.
    let closeInherited = #"for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done"#
    let (line, status, stderr) = try await watch(
      sandbox, prefix: "\(closeInherited) 2>/dev/null; ulimit -n \(limit); exec")
    if let line {
      #expect(line.contains(" external ") && line.contains("rename alice → u"), "line: \(line)")
      #expect(status == 143, "stderr: \(stderr)")
      if stderr.contains("warning") { #expect(stderr.contains("polling every"), "\(stderr)") }
    } else {
      #expect(status == 1)
      #expect(stderr.contains("ulimit -n"), "\(stderr)")
    }
  }

  @Test func belowTheMinimumSessionctlRefusesClearly() async throws {
    let sandbox = try Sandbox()
    let (line, status, stderr) = try await watch(sandbox, prefix: "ulimit -n 8; exec")
    #expect(line == nil)
    #expect(status == 1)
    #expect(stderr.contains("may open only 8 files; sessionctl needs at least 10"), "\(stderr)")
  }

  /// inotify failures injected with strace (no global limit is changed): the instance
  /// limit (`EMFILE` from `inotify_init1`) and the watch limit (`ENOSPC` from
  /// `inotify_add_watch`).
  @Test(arguments: [
    ("inotify_init1", "EMFILE", "max_user_instances"), ("inotify_add_watch", "ENOSPC", "max_user_watches"),
  ])
  func whenInotifyCannotBeSetUpItPollsAndSaysSo(call: String, error: String, limit: String) async throws {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
      Issue.record("strace is not installed (.ci/run installs it)")
      return
    }
    let sandbox = try Sandbox()
    let (line, status, stderr) = try await watch(
      sandbox, prefix: "exec /usr/bin/strace -f -qq -o /dev/null -e inject=\(call):error=\(error)",
      stopBySignal: false)  // a signal would go to strace, not to sessionctl
    #expect(line?.contains("rename alice → u") == true, "\(stderr)")
    #expect(status == 0)
    #expect(stderr.contains("sessionctl: warning: cannot watch the file for changes"), "\(stderr)")
    #expect(stderr.contains(limit), "\(stderr)")
    #expect(stderr.contains("polling every 1.0 seconds"), "\(stderr)")
  }
}
