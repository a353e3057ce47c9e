import CSQLite
import FeedKit
import Foundation
import SystemKit
import TestSupport
import Testing

@testable import SessionStorage

/// A COMMIT that fails is an error, never an acknowledged write, and the instance writes on
/// without losing or repeating anything.
@Suite(.timeLimit(.minutes(10))) struct CommitFailureTests {
  let dir: TemporaryDirectory
  let path: String

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
  }

  /// Makes every COMMIT of the store's writer fail (SQLite's commit hook turns it into a
  /// rollback) while `body` runs.
  func refusingCommits(of store: SessionStore, _ body: () async throws -> Void) async throws {
    try store.requireFile().backend.database.withWriter(store.requireFile().options) { connection in
      _ = sqlite3_commit_hook(connection.handle, { _ in 1 }, nil)
    }
    defer {
      _ = try? store.requireFile().backend.database.withWriter(store.requireFile().options) { connection in
        _ = sqlite3_commit_hook(connection.handle, nil, nil)
      }
    }
    try await body()
  }

  @Test func aCommitThatFailsIsAnErrorAndTheNextWriteLosesNothing() async throws {
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    let changes = try store.changes(from: .now)
    try await refusingCommits(of: store) {
      // The blocking write and the `async` one.
      #expect(throws: SessionStorageError.self) { try synchronously { try store.blocking.rename(to: "bob") } }
      await #expect(throws: SessionStorageError.self) { try await store.rename(to: "bob") }
      do {
        try await store.logOut()
        Issue.record("a write whose commit failed returned")
      } catch let error as SessionStorageError {
        #expect(error.message.contains("could not be committed"), "\(error)")
      }
    }
    #expect(try store.state.username == "alice")
    #expect(try store.state.isLoggedIn)
    #expect(try store.bounds().head == Cursor(1))
    // The next write gets the next cursor, and it is all a subscriber and another process see.
    let entry = try #require(try await store.rename(to: "carol"))
    #expect(entry.cursor == Cursor(2))
    let received = try await first(1, of: changes, within: .seconds(60))
    #expect(received == [entry])
    #expect(
      try await ProcessRunner.sqlite3(
        path, "SELECT group_concat(seq || ':' || new_username, ' ') FROM session_changes")
        == "1:alice 2:carol\n")
  }

  /// `sessiontorture write --keep-going` under `strace`, its `fsync`/`fdatasync` number `n`
  /// failing with EIO (this process holds the file open, so the child's syncs are its
  /// commits' syncs of the `-wal`, and once that of the directory): the write whose commit it
  /// was fails, and every write acknowledged (printed) is in the file at the cursor printed,
  /// with its name; the failed one is not, and no cursor is acknowledged twice.
  @Test(arguments: [1, 3, 5])
  func aFailedSyncFailsOneWriteAndTheInstanceWritesOnLosingNothing(failingSync n: Int) async throws {
    try #require(Strace.isAvailable, "strace is not installed")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    let run = try await Strace.run(
      ["-e", "trace=fsync,fdatasync", "-e", "inject=fsync,fdatasync:error=EIO:when=\(n)"],
      ProcessRunner.product("sessiontorture"),
      ["write", "--db", path, "--count", "6", "--origin", "child", "--keep-going"],
      environment: ["PATH": "/usr/bin:/bin"])
    #expect(run.status == 0, "\(run)")
    let failedSyncs = run.injected.filter { $0.contains("-wal>") }
    #expect(run.injected.count == 1, "\(run)")
    let lines = run.stdout.split(separator: "\n").map(String.init)
    let failed = lines.filter { $0.hasPrefix("failed ") }
    #expect(failed.count == failedSyncs.count, "a failed sync of the WAL is a failed write: \(run)")
    #expect(failed.allSatisfy { $0.contains("could not be committed") }, "\(failed)")
    let acknowledged = lines.compactMap { Int64($0) }
    #expect(acknowledged.count + failed.count == 6, "\(run)")
    #expect(Set(acknowledged).count == acknowledged.count, "a cursor was acknowledged twice: \(acknowledged)")
    // Write i of the child names itself child-i (a logout names nobody): the file holds
    // every acknowledged write at its cursor, and the failed one nowhere.
    let history = try store.history(from: .after(Cursor(1)), limit: 100)
    #expect(history.map(\.cursor.value) == acknowledged, "the file holds \(history)")
    #expect(history.allSatisfy { $0.origin == "child" })
    #expect(
      try await ProcessRunner.sqlite3(
        path, "SELECT group_concat(seq, ' ') FROM session_changes WHERE seq > 1")
        == acknowledged.map(String.init).joined(separator: " ") + "\n", "a fresh process")
    for line in failed {
      let name = String(line.dropFirst("failed ".count).prefix { $0 != ":" })
      #expect(
        !history.contains { $0.after.username == name && $0.before.username != name }, "\(name) was written")
    }
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA integrity_check") == "ok\n")
  }
}
