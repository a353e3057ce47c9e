import Foundation

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
