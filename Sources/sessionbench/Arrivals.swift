import Dispatch
import Synchronization
import SystemKit

/// Where subscribers report the entries they received, and where the writer waits until
/// all of them have the entry it wrote (one write at a time).
final class Arrivals: Sendable {
  private struct State {
    var cursor: Int64 = -1
    var expected = 0
    var times: [UInt64] = []
    var unexpected: [Int64] = []
  }

  private let state = Mutex(State())
  private let complete = DispatchSemaphore(value: 0)

  /// Announces the cursor of the next write and how many subscribers must report it.
  func expect(_ cursor: Int64, count: Int) {
    state.withLock { state in
      state.cursor = cursor
      state.expected = count
      state.times.removeAll(keepingCapacity: true)
    }
  }

  /// A subscriber received `cursor` at `time` (``Monotonic/now()``).
  func arrive(_ cursor: Int64, at time: UInt64) {
    let done = state.withLock { state in
      guard cursor == state.cursor, state.times.count < state.expected else {
        state.unexpected.append(cursor)
        return false
      }
      state.times.append(time)
      return state.times.count == state.expected
    }
    if done { complete.signal() }
  }

  /// Waits until every subscriber reported the expected cursor; returns their times.
  func wait(timeout: Duration = .seconds(10)) throws -> [UInt64] {
    guard complete.wait(timeout: .now() + .milliseconds(Int(timeout.milliseconds))) == .success else {
      let (cursor, got, expected) = state.withLock { ($0.cursor, $0.times.count, $0.expected) }
      throw BenchError("only \(got) of \(expected) subscribers received cursor \(cursor) within \(timeout)")
    }
    return try state.withLock { state in
      guard state.unexpected.isEmpty else {
        throw BenchError(
          "subscribers reported cursors out of turn: \(state.unexpected.prefix(10)) while waiting for \(state.cursor)"
        )
      }
      return state.times
    }
  }
}
