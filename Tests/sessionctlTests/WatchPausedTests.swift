import Foundation
import Testing

/// `watch` without `--since` starts from a snapshot. Paused (SIGSTOP, a laptop lid) while an
/// older backup is restored and new writes pass its cursor again, it stops with exit 67 when
/// it resumes, as `watch --since CURSOR@TIME` does, instead of printing the new history's
/// changes as if they followed its snapshot.
@Suite(.timeLimit(.minutes(10))) struct WatchPausedTests {
  func json(_ line: String?) throws -> [String: Any] {
    let text = try #require(line)
    return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  @Test func aWatchPausedAcrossARestoreAndNewWritesEndsWithItsOwnStatus() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(db, ".backup '\(sandbox.path("backup.db"))'")
    _ = try await sandbox.run(db: db, ["rename", "bob"])
    let (watch, stderr) = try await sandbox.start(["--db", db, "watch", "--json"])
    let snapshot = try json(try await watch.readLine())
    #expect(snapshot["type"] as? String == "snapshot")
    #expect(snapshot["cursor"] as? Int == 2)
    watch.kill(SIGSTOP)
    try await sandbox.sqlite(db, ".restore '\(sandbox.path("backup.db"))'")
    for name in ["carol", "dave"] {  // cursors 2 and 3: 2 again, another change
      _ = try await sandbox.run(db: db, ["rename", name])
    }
    watch.kill(SIGCONT)
    #expect(try await watch.readLine() == nil, "no change of the rewritten history is printed")
    #expect(try await watch.wait(timeout: .seconds(20)) == 67)
    let message = String(decoding: sandbox.contents(stderr) ?? Data(), as: UTF8.self)
    #expect(message.contains("the history changed under cursor 2"), "\(message)")
  }
}
