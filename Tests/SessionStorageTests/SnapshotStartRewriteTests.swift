import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// A subscription that started from a snapshot — `snapshotAndChanges()`, `changes(from: .now)`,
/// `values()` — and is not reading (a paused process, a busy one) while an older backup is
/// restored and new writes pass its cursor again: it ends with `historyRewritten`, as a
/// resume with `.afterEntry` does, and values take a new snapshot. Nothing of the new
/// history is delivered as a continuation of the old one.
@Suite(.timeLimit(.minutes(10))) struct SnapshotStartRewriteTests {
  enum Start: String, CaseIterable, Sendable {
    case snapshotAndChanges, now
  }

  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
  }

  func rename(_ names: [String]) throws {
    for name in names { try store.blocking.rename(to: name) }
  }

  /// Cursors 1…3, a backup, cursors 4 and 5.
  func historyWithABackup() async throws {
    try rename(["a", "b", "c"])
    try await ProcessRunner.sqlite3(path, ".backup '\(dir.file("backup.db"))'")
    try rename(["d", "e"])
  }

  func restore() async throws {
    try await ProcessRunner.sqlite3(path, ".restore '\(dir.file("backup.db"))'")
  }

  @Test(arguments: Start.allCases)
  func aRestoreAndWritesPastTheCursorBeforeTheFirstReadEndTheSubscription(_ start: Start) async throws {
    try await historyWithABackup()
    let changes: SessionSubscription
    switch start {
    case .snapshotAndChanges:
      let snapshot = try store.snapshotAndChanges()
      #expect(snapshot.state.username == "e")
      changes = snapshot.changes
    case .now: changes = try store.changes(from: .now)
    }
    #expect(changes.cursor == Cursor(5))
    try await restore()
    try rename(["x", "y", "z"])  // cursors 4, 5 and 6 again, other changes
    do {
      let delivered = try await first(1, of: changes, within: .seconds(60))
      Issue.record("delivered \(delivered.map { "cursor \($0.cursor)" }) of a rewritten history")
    } catch let error as FeedError {
      guard case .historyRewritten(let cursor, let reason) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(cursor == Cursor(5))
      #expect(reason.contains("not the one delivered"), "\(reason)")
    }
  }

  /// Writes after the restore that reach the old cursor exactly: values that missed the
  /// rewrite would show the old history's state until the next commit.
  @Test func valuesTakeANewSnapshotAfterARestoreAndWritesUpToTheirCursor() async throws {
    try await historyWithABackup()
    var values = store.values().makeAsyncIterator()
    #expect(try await values.next()?.username == "e")
    try await restore()
    try rename(["x", "y"])  // cursors 4 and 5 again
    // The next commit comes late, and is only for values that missed the rewrite.
    let late = Task {
      try await Task.sleep(for: .seconds(60))
      try await store.rename(to: "late")
    }
    defer { late.cancel() }
    #expect(try await values.next()?.username == "y")
  }
}
