import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// A commit wakes the subscribers of this process once: the write wakes them as it returns,
/// and the cross-process watcher, which sees the same commit move `PRAGMA data_version`,
/// stays quiet. Another process's commit still wakes them.
// Ten minutes: see FeedTests.
@Suite(.timeLimit(.minutes(10))) struct WakeOnceTests {
  @Test func eachWriteOfThisProcessWakesSubscribersOnce() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    let subscription = try store.changes(from: .now)
    #expect(subscription.wakeMode != .inProcess, "the cross-process watcher runs")
    let writes = 30
    async let reading = first(writes, of: subscription)
    let beacon = try store.requireFile().backend.beacon
    let before = beacon.generation
    for index in 0..<writes { try await store.rename(to: "user\(index)") }
    #expect(try await reading.count == writes)
    // The watcher re-checks for a while after each file event: give it time to misfire.
    try await Task.sleep(for: .milliseconds(300))
    #expect(
      beacon.generation - before == UInt64(writes), "one wake-up per commit, not two")

    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'shell'")
    #expect(
      await eventually { beacon.generation - before == UInt64(writes) + 1 },
      "another client's commit")
    try await Task.sleep(for: .milliseconds(300))
    #expect(beacon.generation - before == UInt64(writes) + 1)
  }

  /// The watcher looks at the writer's `data_version` while an instance holds the writer; a
  /// subscription that outlives every instance (and so the writer) still sees other clients.
  @Test func aSubscriptionThatOutlivesItsStoreStillSeesAnotherClientsCommits() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    var store: SessionStore? = try SessionStore(path: path)
    let subscription = try #require(store).changes(from: .now)
    try await #require(store).logIn(as: "alice")
    store = nil
    try await ProcessRunner.sqlite3(path, "UPDATE session SET username = 'shell'")
    let entries = try await first(2, of: subscription)
    #expect(entries.map(\.after.username) == ["alice", "shell"])
  }

  /// The watcher looks at events that come while this process writes once its writes are
  /// over: a commit of another client among them is still delivered, once, in order.
  @Test func anotherClientsCommitAmongThisProcesssWritesIsDelivered() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path, options: .init(durability: .normal))
    let subscription = try store.changes(from: .now)
    let writes = 200
    // The writes block their thread: one of their own, not one of the cooperative pool's.
    async let writing: Void = onThreadOfItsOwn {
      for index in 0..<writes { try store.blocking.rename(to: "user\(index)") }
    }
    try await ProcessRunner.sqlite3(
      path, "PRAGMA busy_timeout = 10000; UPDATE session SET username = 'shell'")
    try await writing
    let entries = try await first(writes + 1, of: subscription)
    let first = try #require(entries.first)
    #expect(entries.map(\.cursor.value) == Array(first.cursor.value..<first.cursor.value + Int64(writes) + 1))
    #expect(entries.filter { $0.origin == "external" }.map(\.after.username) == ["shell"])
  }
}
