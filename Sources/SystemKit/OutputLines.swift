import Dispatch
import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// The lines of a child's standard output, read from a pipe either on demand (by the
/// caller of ``next(before:)``, so the child waits while nobody reads) or by a thread of
/// its own as they arrive. One caller waits at a time (another sees news within 10 ms).
final class OutputLines: Sendable {
  private struct State {
    /// The read end, while the caller reads it on demand; -1 when closed or collected.
    var descriptor: Int32 = -1
    /// The bytes after the last newline.
    var partial: [UInt8] = []
    var lines: [String] = []
    /// The first line ``next(before:)`` has not returned.
    var next = 0
    /// The end of the output was read (or this side closed it).
    var ended = false
  }

  private let state: Mutex<State>
  /// Signalled after each change a waiter may want.
  private let changed = DispatchSemaphore(value: 0)
  /// Whether a thread of its own reads the pipe.
  let collects: Bool

  /// Lines read from `descriptor` by ``next(before:)`` as it needs them.
  init(onDemand descriptor: Int32) {
    state = Mutex(State(descriptor: descriptor))
    collects = false
  }

  /// Lines read from `descriptor` by a thread called `name` as they arrive; `intercept`
  /// sees each first, on that thread. The thread closes the descriptor at the end.
  init(collecting descriptor: Int32, name: String, _ intercept: (@Sendable (String) -> Bool)?) {
    state = Mutex(State())
    collects = true
    DetachedThread.start(name: name) { [self] in
      var partial: [UInt8] = []
      var chunk = [UInt8](repeating: 0, count: 4096)
      while let count = try? retryingOnInterrupt({
        chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
      }), count > 0 {
        // `intercept` is someone else's code: it runs before the lock is taken.
        let lines = Self.split(chunk[..<count], after: &partial).filter { intercept?($0) != true }
        guard !lines.isEmpty else { continue }
        self.state.withLock { $0.lines += lines }
        self.changed.signal()
      }
      close(descriptor)
      self.state.withLock { state in
        state.partial = partial
        state.ended = true
      }
      self.changed.signal()
    }
  }

  /// The whole lines in `partial` followed by `bytes`; `partial` keeps what follows the
  /// last newline.
  private static func split(_ bytes: some Collection<UInt8>, after partial: inout [UInt8]) -> [String] {
    partial += bytes
    guard let last = partial.lastIndex(of: 0x0A) else { return [] }
    let lines = partial[..<last].split(separator: 0x0A, omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self)
    }
    partial.removeSubrange(...last)
    return lines
  }

  /// Every whole line so far.
  var all: [String] { state.withLock { $0.lines } }

  /// What arrived after the last newline (for a message).
  var partial: String { state.withLock { String(decoding: $0.partial, as: UTF8.self) } }

  /// The next line not returned yet; at the end, a last line without a newline, then
  /// `.some(nil)`. Nil when none came before `deadline`.
  func next(before deadline: ContinuousClock.Instant) -> String?? {
    waitFor(before: deadline) { state -> String?? in
      if state.next < state.lines.count {
        defer { state.next += 1 }
        return .some(.some(state.lines[state.next]))
      }
      guard state.ended else { return .none }
      defer { state.partial = [] }
      return .some(state.partial.isEmpty ? nil : String(decoding: state.partial, as: UTF8.self))
    }
  }

  /// Waits until a line satisfying `predicate` was printed; false if none did in time.
  func waitForLine(before deadline: ContinuousClock.Instant, where predicate: (String) -> Bool) -> Bool {
    var checked = 0
    return waitFor(before: deadline) { state in
      defer { checked = state.lines.count }
      if state.lines[checked...].contains(where: predicate) { return true }
      return state.ended ? false : nil
    } ?? false
  }

  /// Waits until the end of the output was read; false if it was not in time.
  func waitForEnd(before deadline: ContinuousClock.Instant) -> Bool {
    waitFor(before: deadline) { $0.ended ? true : nil } ?? false
  }

  /// Closes an on-demand descriptor (the child's next write fails with `EPIPE`).
  func closeOnDemand() {
    state.withLock { state in
      guard state.descriptor >= 0 else { return }
      close(state.descriptor)
      state.descriptor = -1
      state.ended = true
    }
  }

  /// The first non-nil answer of `check`, asked now and after each change, or nil at
  /// `deadline`. On demand, a change is what this thread reads from the pipe meanwhile.
  private func waitFor<Answer>(
    before deadline: ContinuousClock.Instant, _ check: (inout State) -> Answer?
  ) -> Answer? {
    while true {
      if let answer = state.withLock({ check(&$0) }) { return answer }
      let remaining = deadline - .now
      guard remaining > .zero else { return nil }
      if !readOnDemand(waitingAtMost: remaining) {
        _ = changed.wait(
          timeout: .now() + .milliseconds(Int(min(remaining, .milliseconds(10)).milliseconds) + 1))
      }
    }
  }

  /// Reads what the pipe has (waiting at most `timeout` for it) into the state, when this
  /// side reads on demand; false when it does not.
  private func readOnDemand(waitingAtMost timeout: Duration) -> Bool {
    state.withLock { state in
      guard state.descriptor >= 0 else { return false }
      let descriptor = state.descriptor
      var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(clamping: max(1, timeout.milliseconds))
      let polled = try? retryingOnInterrupt { poll(&ready, 1, milliseconds) }
      if polled == 0 { return true }  // nothing within the timeout
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count =
        polled == nil
        ? 0
        : (try? retryingOnInterrupt {
          chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        }) ?? 0
      if count > 0 {
        state.lines += Self.split(chunk[..<count], after: &state.partial)
      } else {
        state.ended = true
      }
      return true
    }
  }
}
