import Foundation
import Testing

/// `watch --exec` hands a hook each value byte for byte, or refuses the change: a username
/// holding a NUL byte (only the sqlite3 shell can store one) cannot travel in an environment
/// variable, which ends at the first NUL and would name another account (`bob` for
/// `bob\0-admin`).
@Suite(.timeLimit(.minutes(5))) struct WatchExecUnrepresentableTests {
  /// The hook: records `$SESSION_USERNAME` and its cursor, one line per run.
  static func hook(_ sandbox: Sandbox) -> [String] {
    [
      "/bin/sh", "-c", #"printf '%s %s\n' "$SESSION_CURSOR" "$SESSION_USERNAME" >> "$0""#,
      sandbox.path("runs"),
    ]
  }

  @Test func aUsernameWithANulByteIsRefusedNotShortened() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    try await sandbox.sqlite(db, "UPDATE session SET username = 'bob' || char(0) || '-admin'")
    #expect(try await sandbox.run(db: db, ["rename", "carol"]).status == 0)

    // Without --keep-going: the hook does not run for cursor 2, and watch stops saying why.
    let stopped = try await sandbox.run(
      db: db, ["watch", "--since", "0", "--limit", "3", "--exec", "--"] + Self.hook(sandbox))
    #expect(stopped.status == 1, "\(stopped)")
    #expect(stopped.lines.count == 1 && stopped.stdout.hasPrefix("1  "), "only cursor 1 acted on: \(stopped)")
    #expect(stopped.stderr.contains("SESSION_USERNAME"), "\(stopped)")
    #expect(stopped.stderr.contains("NUL"), "\(stopped)")
    #expect(stopped.stderr.contains("cursor 2"), "\(stopped)")
    #expect(runs(sandbox) == ["1 alice"], "the hook never receives a shortened name")

    // With --keep-going: a warning for cursor 2, and the next change runs.
    let kept = try await sandbox.run(
      db: db, ["watch", "--since", "1", "--limit", "2", "--keep-going", "--exec", "--"] + Self.hook(sandbox))
    #expect(kept.status == 0, "\(kept)")
    #expect(kept.stdout.hasPrefix("3  "), "\(kept)")
    #expect(kept.stderr.contains("warning") && kept.stderr.contains("SESSION_USERNAME"), "\(kept)")
    #expect(runs(sandbox) == ["1 alice", "3 carol"])
  }

  /// The lines the hook wrote.
  func runs(_ sandbox: Sandbox) -> [String] {
    String(decoding: sandbox.contents(sandbox.path("runs")) ?? Data(), as: UTF8.self)
      .split(separator: "\n").map(String.init)
  }
}
