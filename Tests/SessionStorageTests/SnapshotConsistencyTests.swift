import FeedKit
import Foundation
import SessionStorage
import SystemKit
import TestSupport
import Testing

/// A snapshot is one committed moment: its state is the state after the entry at its
/// cursor, also while another process commits as fast as it can.
@Suite(.timeLimit(.minutes(10))) struct SnapshotConsistencyTests {
  /// Python's sqlite3 committing as fast as it can, each commit with a username of its own
  /// and the login state flipped, so that a state names the one commit that wrote it.
  static let committer = """
    import sqlite3, sys
    db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
    db.execute("PRAGMA synchronous = OFF")
    i = 0
    while True:
        i += 1
        db.execute("UPDATE session SET username = ?, is_logged_in = ?", ("u%d" % i, i % 2))
        if i == 1:
            print("committing", flush=True)
    """

  @Test func aSnapshotIsTheStateAfterTheEntryAtItsCursorWhileAnotherProcessCommits() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    let committer = try await ChildProcess(
      "/usr/bin/python3", ["-c", Self.committer, path], environment: ["PATH": "/usr/bin:/bin"], stdout: .pipe,
      stderr: .file(dir.file("python.err")))
    defer {
      committer.kill(SIGKILL)
      committer.wait()
    }
    let started = try await onThreadOfItsOwn { try committer.readLine(timeout: .seconds(120)) }
    try #require(started == "committing", "python3 did not start committing: \(started ?? "nothing")")
    // Off the cooperative pool: the loop reads for seconds without awaiting.
    let (taken, commits, torn) = try await onThreadOfItsOwn { () throws -> (Int, Int64, [String]) in
      let headBefore = try store.bounds().head
      var torn: [String] = []
      var taken = 0
      let deadline = ContinuousClock.now + .seconds(30)
      // At least 2,000 snapshots and 300 commits meanwhile (or 30 s, on a loaded machine).
      while true {
        let commits = try store.bounds().head.value - headBefore.value
        if taken >= 2_000 && (commits >= 300 || ContinuousClock.now >= deadline) { break }
        taken += 1
        // Both ways of taking one: alone, and (now and then: each starts the watcher) at the
        // start of a subscription.
        let snapshot: SessionSnapshot
        if taken % 100 != 0 {
          snapshot = try store.snapshot()
        } else {
          let start = try store.snapshotAndChanges()
          snapshot = SessionSnapshot(state: start.state, cursor: start.cursor)
        }
        let entry = try store.history(from: .after(Cursor(snapshot.cursor.value - 1)), limit: 1).first
        if entry?.cursor != snapshot.cursor || entry?.change.after != snapshot.state {
          torn.append(
            "\(snapshot) but the entry at its cursor is \(entry.map(String.init(describing:)) ?? "none")")
        }
      }
      return (taken, try store.bounds().head.value - headBefore.value, torn)
    }
    #expect(commits >= 50, "the other process committed \(commits) times during \(taken) snapshots")
    #expect(torn.isEmpty, "\(torn.count) of \(taken) snapshots are torn: \(torn.prefix(5))")
  }
}
