import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// A commit wakes the subscribers of this process once: the write wakes them as it returns,
/// and the cross-process watcher, which sees the same commit move `PRAGMA data_version`,
/// stays quiet. Another process's commit still wakes them.
@Suite(.timeLimit(.minutes(1))) struct WakeOnceTests {
  @Test func eachWriteOfThisProcessWakesSubscribersOnce() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    let subscription = try store.changes(from: .now)
    #expect(subscription.wakeMode != .inProcess, "the cross-process watcher runs")
    let writes = 30
    let reading = Task {
      var count = 0
      for try await _ in subscription {
        count += 1
        if count == writes { return count }
      }
      return count
    }
    let before = store.beacon.generation
    for index in 0..<writes { try await store.rename(to: "user\(index)") }
    #expect(try await reading.value == writes)
    // The watcher re-checks for a while after each file event: give it time to misfire.
    try await Task.sleep(for: .milliseconds(300))
    #expect(store.beacon.generation - before == UInt64(writes), "one wake-up per commit, not two")

    try ProcessRunner.sqlite3(path, "UPDATE session SET username = 'shell'")
    #expect(
      await eventually { store.beacon.generation - before == UInt64(writes) + 1 }, "another client's commit")
    try await Task.sleep(for: .milliseconds(300))
    #expect(store.beacon.generation - before == UInt64(writes) + 1)
  }
}
