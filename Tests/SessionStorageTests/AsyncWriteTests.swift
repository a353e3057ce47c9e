import Foundation
import SessionStorage
import TestSupport
import Testing

/// The `async` writes run off the caller's actor and stop waiting for another process's
/// write lock when their task is cancelled; nothing acknowledged is lost either way.
@Suite(.timeLimit(.minutes(10))) struct AsyncWriteTests {
  @Test func cancellingAWriteThatWaitsForTheLockWritesNothing() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path, options: .init(busyTimeout: .seconds(30)))
    try await store.logIn(as: "alice")
    let holder = try await LockHolder(path, scratch: dir.file("holder.err"))
    let write = Task { try await store.rename(to: "bob") }
    try await Task.sleep(for: .milliseconds(100))  // waiting for the lock by now
    write.cancel()
    await #expect(throws: CancellationError.self) { try await write.value }
    holder.release()
    #expect(try store.state.username == "alice")
    #expect(
      try store.history().map(\.events) == [
        [.added(username: "alice"), .loggedIn(username: "alice"), .activated(username: "alice")]
      ])
    #expect(try await store.rename(to: "carol")?.after.username == "carol", "the writer is usable again")
  }

  @Test func aWriteWhoseTaskIsCancelledBeforeItStartsWritesNothing() async throws {
    let dir = try TemporaryDirectory()
    let store = try SessionStore(path: dir.file("session.db"))
    let write = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await store.logIn(as: "alice")
    }
    await #expect(throws: CancellationError.self) { try await write.value }
    #expect(try store.state.username == nil)
  }

  @Test func aLockHeldPastTheBusyTimeoutIsABusyError() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path, options: .init(busyTimeout: .milliseconds(200)))
    let holder = try await LockHolder(path, scratch: dir.file("holder.err"))
    defer { holder.release() }
    do {
      try await store.logIn(as: "alice")
      Issue.record("the write succeeded while another process held the lock")
    } catch SessionStorageError.Code.busy {
      // The code is a catch pattern.
    }
    #expect(throws: SessionStorageError.self) { try store.blocking.logIn(as: "alice") }
  }
}
