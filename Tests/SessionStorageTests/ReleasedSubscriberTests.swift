import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// The shared page attacked from outside: a subscriber reads and goes (the watcher stops with
/// it), another process commits or restores an older backup while this process has no
/// subscriber, then a new subscriber arrives. It must be handed what the file holds now.
@Suite(.timeLimit(.minutes(10))) struct ReleasedSubscriberTests {
  let dir: TemporaryDirectory
  let path: String
  let store: SessionStore

  init() throws {
    dir = try TemporaryDirectory()
    path = dir.file("session.db")
    store = try SessionStore(path: path, options: .init(origin: "test"))
  }

  /// Runs the `sqlite3` shell on the store in another process; throws when it fails.
  func shell(_ sql: String) async throws {
    let result = try await ProcessRunner.runDetached("/usr/bin/sqlite3", [path, sql])
    #expect(result.status == 0, "\(result.stderr)")
  }

  /// How a subscriber follows the store: after a cursor, or from a snapshot.
  enum Follow: CaseIterable, Sendable {
    case afterCursor, snapshot

    func changes(of store: SessionStore, after cursor: Cursor) throws -> SessionSubscription {
      switch self {
      case .afterCursor: return try store.changes(from: .after(cursor))
      case .snapshot:
        let snapshot = try store.snapshotAndChanges()
        #expect(snapshot.cursor == cursor)
        return snapshot.changes
      }
    }
  }

  @Test(arguments: [FeedStart.after(Cursor(2)), .beginning])
  func commitsOfAnotherProcessWhileNobodySubscribedReachANewSubscriber(_ start: FeedStart) async throws {
    try await store.logIn(as: "alice")
    try await store.rename(to: "bob")
    // A subscriber reads the page after its start (up to cursor 3) and goes.
    do {
      let first = try store.changes(from: start)
      try await store.logOut()
      #expect(try await TestSupport.first(start == .beginning ? 3 : 1, of: first).last?.cursor == Cursor(3))
    }
    #expect(try store.requireFile().backend.database.beacon.listenerCount == 0)
    // Two commits that nobody in this process is woken for.
    try await shell("UPDATE session SET username = 'carol'; UPDATE session SET is_logged_in = 1")
    #expect(try store.bounds().head == Cursor(5))
    let received = try await TestSupport.first(
      start == .beginning ? 5 : 3, of: store.changes(from: start), within: .seconds(120))
    #expect(received.map(\.cursor.value).suffix(3) == [3, 4, 5])
    let after = try #require(received.last?.change.after)
    #expect(after.username == "carol" && after.isLoggedIn)
  }

  @Test(arguments: Follow.allCases)
  func aRestoreByAnotherProcessHandsANewSubscriberNoEntryThatIsGone(_ follow: Follow) async throws {
    try await store.logIn(as: "alice")
    try await store.rename(to: "bob")
    try await store.logOut()
    let backup = dir.file("backup.db")
    _ = try store.requireFile().backup(to: backup)
    // A subscriber at 3 reads 4 and 5 in one page and goes.
    do {
      let first = try follow.changes(of: store, after: Cursor(3))
      try await store.logIn(as: "dave")
      try await store.rename(to: "erin")
      #expect(try await TestSupport.first(2, of: first).map(\.cursor) == [Cursor(4), Cursor(5)])
    }
    #expect(try store.requireFile().backend.database.beacon.listenerCount == 0)
    // Another process puts the backup back: the log ends at 3 again.
    let restore = try await ProcessRunner.runDetached(
      ProcessRunner.product("sessionctl"), ["--db", path, "restore", backup], environment: ["HOME": dir.path])
    #expect(restore.status == 0, "\(restore)")
    #expect(try store.bounds().head == Cursor(3))
    #expect(try store.state.username == "bob")
    // The new subscriber reads at once; the next commit (another process's, so that no
    // wake-up of this process's writer comes first) is the one it must be handed.
    let next = try follow.changes(of: store, after: Cursor(3))
    async let received = TestSupport.first(1, of: next, within: .seconds(120))
    try await shell("UPDATE session SET username = 'carol', is_logged_in = 1")
    let entries = try await received
    #expect(entries.map(\.cursor) == [Cursor(4)])
    // Not dave's entry, which the log no longer holds.
    #expect(entries.first?.change.after.username == "carol")
  }
}
