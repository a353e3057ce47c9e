import FeedKit
import Foundation
import SessionStorage
import TestSupport
import Testing

/// An `async` write whose task is cancelled while it runs either throws `CancellationError`
/// having changed nothing, or returns the entry it committed: never a cancellation reported
/// for a change that committed.
@Suite(.timeLimit(.minutes(10))) struct CancelledWriteTests {
  @Test func aWriteCancelledWhileItRunsEitherChangedNothingOrReturnsItsEntry() async throws {
    let dir = try TemporaryDirectory()
    // Full durability: each commit syncs the WAL, which keeps the write under way long
    // enough for cancellations to land inside it.
    let store = try SessionStore(path: dir.file("session.db"), options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    // The delay between starting a write and cancelling it follows the outcomes (a
    // staircase): later after a cancellation, earlier after a commit, so that it keeps
    // crossing the moment the write checks for cancellation and the time it takes to commit.
    var delay = Duration.microseconds(50)
    var counts = (committed: 0, cancelled: 0)
    var problems: [String] = []
    for attempt in 0..<400 {
      let name = "user\(attempt)"
      let before = try store.bounds().head
      let write = try await Self.cancel(after: delay) { try await store.rename(to: name) }
      let result = await write.result
      let after = try store.bounds().head
      let state = try store.state
      switch result {
      case .success(let entry):
        counts.committed += 1
        if entry?.cursor != after || after != before.next || entry?.after.username != name
          || state.username != name
        {
          problems.append(
            "attempt \(attempt): returned \(entry.map(String.init(describing:)) ?? "nil"), head \(before) → \(after)"
          )
        }
        delay = max(.zero, delay * 0.8 - .microseconds(2))
      case .failure(is CancellationError):
        counts.cancelled += 1
        if after != before || state.username == name {
          problems.append(
            "attempt \(attempt): cancelled, but the head moved \(before) → \(after) to \(state)")
        }
        delay = min(.milliseconds(200), delay * 1.25 + .microseconds(5))
      case .failure(let error):
        problems.append("attempt \(attempt): \(error)")
      }
    }
    #expect(problems.isEmpty, "\(problems.count) of 400: \(problems.prefix(5))")
    #expect(counts.committed > 0 && counts.cancelled > 0, "\(counts)")
  }

  /// Starts `body` in a task, and cancels the task `delay` after starting it, spinning on a
  /// thread of its own (a sleep is far coarser than a write).
  static func cancel<Value: Sendable>(
    after delay: Duration, _ body: @escaping @Sendable () async throws -> Value
  ) async throws -> Task<Value, any Error> {
    try await onThreadOfItsOwn {
      let task = Task { try await body() }
      let deadline = ContinuousClock.now + delay
      while ContinuousClock.now < deadline {}
      task.cancel()
      return task
    }
  }
}
