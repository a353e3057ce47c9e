import Foundation
import SessionStorage
import SessionStoragePostgres
import SessionViewModels
import Synchronization
import SystemKit
import TestSupport
import Testing

/// A viewer never stays stuck: a file made late, deleted and recreated, replaced, restored or unreadable.
extension ViewModelTests {
  /// An opener for a read-only viewer of `path`, tried again every 20 ms.
  func readOnlyOpener(_ path: String, calls: Calls? = nil) -> SessionOpener {
    SessionOpener(retryInterval: .milliseconds(20)) {
      calls?.add()
      return try SessionStore(path: path, options: .init(readOnly: true))
    }
  }

  @Test func aReadOnlyViewerStartsBeforeTheFirstWrite() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let calls = Calls()
    let model = ProfileViewModel(opener: readOnlyOpener(path, calls: calls))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.phase == .noSessionYet }
      #expect(model.greeting == "No session yet")
      #expect(model.readError == nil)
      let writer = try SessionStore(path: path, options: .init(origin: "writer"))
      try await writer.logIn(as: "alice")
      try await model.waitUntil { $0.greeting == "Hello, alice" && $0.phase == .following }
      try await writer.rename(to: "bob")
      try await model.waitUntil { $0.greeting == "Hello, bob" && $0.lastChange?.origin == "writer" }
    }
    #expect(calls.value >= 2, "the opener was tried again until the file existed")
  }

  /// Deletes the store's file with its `-wal` and `-shm`, as `rm session.db*` does.
  func delete(_ path: String) {
    for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
  }

  @Test func aFileDeletedAndRecreatedIsFollowedAgain() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    // Kept open to the end, as another process would keep it: its connections never touch
    // the new file (SQLite does not checkpoint into a file that was deleted).
    let first = try SessionStore(path: path, options: .init(origin: "first"))
    try await first.logIn(as: "alice")
    let model = ProfileViewModel(opener: readOnlyOpener(path))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      delete(path)
      let second = try SessionStore(path: path, options: .init(origin: "second"))
      try await second.logIn(as: "bob")
      try await model.waitUntil { $0.greeting == "Hello, bob" && $0.phase == .following }
      try await second.rename(to: "carol")
      try await model.waitUntil { $0.greeting == "Hello, carol" && $0.lastChange?.origin == "second" }
    }
    withExtendedLifetime(first) {}
  }

  @Test func aStoreHandedInWhoseFileIsReplacedSaysToOpenItAgain() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    let model = ProfileViewModel(session: store)
    let following = Task { await model.follow() }
    defer { following.cancel() }
    try await model.waitUntil { $0.greeting == "Hello, alice" }
    delete(path)
    try await SessionStore(path: path).logIn(as: "bob")
    try await model.waitUntil {
      if case .reopenRequired = $0.phase { true } else { false }
    }
    await following.value  // follow() returns by itself: nothing more can come from this store
    #expect(model.greeting == Greeting.unavailable)
    #expect(model.readError?.contains("open the store again") == true, "\(model.readError ?? "nil")")
  }

  @Test func aRestoreOfAnOlderBackupIsFollowedFromANewSnapshot() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("session.db"))
    try await store.logIn(as: "alice")
    _ = try store.requireFile().backup(to: dir.file("backup.db"))
    // No retry within the test: only following again at once from a new snapshot passes.
    let model = ProfileViewModel(session: store, retryInterval: .seconds(3_600))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      try await store.rename(to: "bob")
      try await store.rename(to: "carol")
      try await model.waitUntil { $0.greeting == "Hello, carol" }
      _ = try store.requireFile().restore(from: dir.file("backup.db"))
      try await model.waitUntil { $0.greeting == "Hello, alice" }
      #expect(model.phase == .following)
      #expect(model.lastChange?.cursor == Cursor(1))
      // The restored log hands out cursor 2 again, for another change: it is followed.
      try await store.rename(to: "dave")
      try await model.waitUntil { $0.greeting == "Hello, dave" && $0.lastChange?.cursor == Cursor(2) }
    }
  }

  /// A repository whose reads fail until the test repairs it.
  struct FlakySession: SessionRepository {
    struct Unreadable: Error, CustomStringConvertible {
      var description: String { "disk I/O error" }
    }
    final class Fault: Sendable {
      let broken = Atomic(true)
    }
    let store = SessionStore.inMemory()
    let fault = Fault()

    func check() throws { if fault.broken.load(ordering: .relaxed) { throw Unreadable() } }
    var state: SessionState { get throws { try check(); return try store.state } }
    func snapshot() throws -> SessionSnapshot { try check(); return try store.snapshot() }
    func changes(from start: FeedStart) throws -> SessionSubscription {
      try check(); return try store.changes(from: start)
    }
    func snapshotAndChanges() throws -> SessionSnapshotSubscription {
      try check(); return try store.snapshotAndChanges()
    }
    func values() -> SessionValues { store.values() }
    func history(from start: FeedStart, limit: Int) throws -> [SessionEntry] {
      try check()
      return try store.history(from: start, limit: limit)
    }
    func bounds() throws -> FeedBounds { try check(); return try store.bounds() }
    func compact(keepingLast count: Int) throws -> CompactionResult { try store.compact(keepingLast: count) }
    func compact(before cursor: Cursor) throws -> CompactionResult { try store.compact(before: cursor) }
    func compact(olderThan age: Duration) throws -> CompactionResult { try store.compact(olderThan: age) }
    func roster() throws -> SessionRoster { try check(); return try store.roster() }
    func changes(from start: FeedStart, account: AccountID) throws -> SessionSubscription {
      try check(); return try store.changes(from: start, account: account)
    }
    func history(from start: FeedStart, limit: Int, account: AccountID) throws -> [SessionEntry] {
      try check(); return try store.history(from: start, limit: limit, account: account)
    }
    func logIn(as username: String, expecting condition: WriteCondition?) async throws -> SessionEntry? {
      try await store.logIn(as: username, expecting: condition)
    }
    func logOut(expecting condition: WriteCondition?) async throws -> SessionEntry? {
      try await store.logOut(expecting: condition)
    }
    func logOut(_ username: String, expecting condition: WriteCondition?) async throws -> SessionEntry? {
      try await store.logOut(username, expecting: condition)
    }
    func logOutAll(expecting condition: WriteCondition?) async throws -> [SessionEntry] {
      try await store.logOutAll(expecting: condition)
    }
    func rename(to username: String, expecting condition: WriteCondition?) async throws -> SessionEntry? {
      try await store.rename(to: username, expecting: condition)
    }
    func rename(_ username: String, to newName: String, expecting condition: WriteCondition?) async throws
      -> SessionEntry?
    {
      try await store.rename(username, to: newName, expecting: condition)
    }
    func switchTo(_ username: String, expecting condition: WriteCondition?) async throws -> SessionEntry? {
      try await store.switchTo(username, expecting: condition)
    }
    func remove(_ username: String, expecting condition: WriteCondition?) async throws -> SessionEntry? {
      try await store.remove(username, expecting: condition)
    }
  }

  @Test func aSessionThatCannotBeReadIsShownAsUnavailableAndReadAgain() async throws {
    let session = FlakySession()
    _ = try await session.logIn(as: "alice")
    let model = ProfileViewModel(session: session, retryInterval: .milliseconds(20))
    try await whileFollowing(model) {
      try await model.waitUntil { $0.phase != .idle }
      #expect(model.greeting == Greeting.unavailable)
      #expect(model.readError == "The session cannot be read: disk I/O error")
      #expect(!model.isLoggedIn, "never a guess")
      #expect(model.username == nil)
      session.fault.broken.store(false, ordering: .relaxed)
      try await model.waitUntil { $0.greeting == "Hello, alice" && $0.phase == .following }
      #expect(model.readError == nil)
    }
  }
}
