import Foundation
import SystemKit

/// Runs `body` on a thread of its own and returns what it returns (or throws what it
/// throws), so that blocking work (a child process, a `psql` session that holds a lock for
/// seconds) does not hold one of the few threads of Swift's cooperative pool that every
/// other test's tasks need.
public func onThreadOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws
  -> Result
{
  try await withCheckedThrowingContinuation { continuation in
    Thread.detachNewThread { continuation.resume(with: Swift.Result { try body() }) }
  }
}

extension ChildProcess {
  /// Kills the child (SIGKILL) and reaps it on a thread of its own, without waiting for it:
  /// for synchronous clean-up (a `deinit`, a `defer`) that may run on the cooperative pool,
  /// where a blocking `wait()` would hold one of its few threads. What the child held (a
  /// lock, a connection) goes as it dies, an instant after the kill.
  package func killAndReapOnThreadOfItsOwn() {
    kill(SIGKILL)
    Thread.detachNewThread { self.wait() }
  }
}
