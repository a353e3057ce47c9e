import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Pipes that no child process inherits by accident. Swift's Glibc has no `pipe2`, so a
/// pipe is made and then marked close-on-exec, and a process started in between would
/// inherit it; both steps happen under one lock, and ProcessKit starts its processes
/// under the same lock.
package enum Pipes {
  private static let lock = Mutex(())

  /// A new pipe, both ends close-on-exec.
  /// - Throws: the ``Errno`` of `pipe` (`EMFILE` when the process has no descriptor left).
  package static func make() throws(Errno) -> (read: Int32, write: Int32) {
    try lock.withLock { _ throws(Errno) in try makeUnlocked() }
  }

  /// Runs `body` while no pipe of ``make()`` is between its creation and its close-on-exec
  /// flag: a process `body` starts inherits none of them. `body` may make pipes with
  /// `makePipe`, the same as ``make()`` under the lock already held.
  package static func withNoPipeBeingMade<Value: ~Copyable, Failure: Error>(
    _ body: (_ makePipe: () throws(Errno) -> (read: Int32, write: Int32)) throws(Failure) -> Value
  ) throws(Failure) -> Value {
    try lock.withLock { _ throws(Failure) in try body(makeUnlocked) }
  }

  private static func makeUnlocked() throws(Errno) -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    _ = try valueOrErrno(pipe(&ends))
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    return (ends[0], ends[1])
  }
}
