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

// Starting and waiting for a child process from async code (tests, above all). Swift's
// cooperative pool has one thread per core: a task that blocks one of them in
// `posix_spawn`, `waitpid`, `poll` or a sleep takes it from every other task for as long as
// that lasts, and on a loaded machine that starves whatever else runs on the pool. These
// overloads keep the names of the blocking ones: in an async context the compiler picks
// them (and asks for `await`). Each blocks a thread of its own, and the awaiting task is
// resumed from it.

extension ChildProcess {
  /// Starts `executable` with `arguments`, as the blocking initializer does, from a thread
  /// of its own (`posix_spawn` waits for the child to execute the program, and spawns wait
  /// for each other).
  /// - Throws: ``SpawnError``.
  package convenience init(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Input = .null,
    stdout: Output = .collected(), stderr: Output = .inherit
  ) async throws(SpawnError) {
    try await self.init(
      executable, rawArguments: arguments.map { Array($0.utf8) }, environment: environment, stdin: stdin,
      stdout: stdout, stderr: stderr)
  }

  /// Starts `executable` with arguments given as bytes, as the blocking initializer does,
  /// from a thread of its own.
  /// - Throws: ``SpawnError``.
  package convenience init(
    _ executable: String, rawArguments: [[UInt8]], environment: [String: String]? = nil, stdin: Input = .null,
    stdout: Output = .collected(), stderr: Output = .inherit
  ) async throws(SpawnError) {
    let spawned = try await onThreadOfItsOwn { () throws(SpawnError) -> Spawned in
      try Self.spawn(
        executable, rawArguments: rawArguments, environment: environment, stdin: stdin, stdout: stdout,
        stderr: stderr)
    }
    self.init(executable, spawned, stdout: stdout)
  }

  /// Waits for the child to exit and reaps it, as ``wait()`` does, on a thread of its own.
  /// - Returns: its ``Termination/status``: the exit status, or 128 + the signal.
  @discardableResult
  package func wait() async -> Int32 {
    await onThreadOfItsOwn { self.wait() }
  }

  /// Waits at most `timeout` for the child to exit, as ``wait(timeout:)`` does, without
  /// polling: a thread of its own blocks in `waitpid`, and a timer kills the child once the
  /// time is up.
  /// - Returns: its status as ``wait()`` returns it.
  /// - Throws: ``Timeout``, after killing and reaping the child.
  package func wait(timeout: Duration) async throws(Timeout) -> Int32 {
    let overdue = Overdue()
    let timer = DispatchWorkItem { [self] in
      guard termination == nil else { return }
      overdue.flag.withLock { $0 = true }
      kill(SIGKILL)
    }
    DispatchQueue.global().asyncAfter(
      deadline: .now() + .milliseconds(Int(timeout.milliseconds)), execute: timer)
    let status = await onThreadOfItsOwn { self.wait() }
    timer.cancel()
    guard !overdue.flag.withLock({ $0 }) else {
      throw Timeout(description: "\(executable) (pid \(pid)) did not exit within \(timeout)")
    }
    return status
  }

  /// The next line of a piped standard output, as ``readLine(timeout:)`` returns it, read
  /// on a thread of its own. The default `timeout` is a hang guard, ample for a loaded machine.
  /// - Throws: ``Timeout`` when no line arrives in time.
  package func readLine(timeout: Duration = .seconds(60)) async throws(Timeout) -> String? {
    try await onThreadOfItsOwn { () throws(Timeout) -> String? in try self.readLine(timeout: timeout) }
  }

  /// Waits until a line satisfying `predicate` was printed, as
  /// ``waitForLine(within:where:)`` does, on a thread of its own; false when none did in time.
  package func waitForLine(
    within timeout: Duration = .seconds(60), where predicate: @escaping @Sendable (String) -> Bool
  ) async -> Bool {
    await onThreadOfItsOwn { self.waitForLine(within: timeout, where: predicate) }
  }
}

/// Whether a timed wait's time ran out before the child exited (set by its timer).
private final class Overdue: Sendable {
  let flag = Mutex(false)
}

/// Runs `body` on a new thread and resumes the caller with what it returns; where no thread
/// can be made, on the caller's, blocking it rather than leaving the caller waiting forever.
private func onThreadOfItsOwn<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
  await withCheckedContinuation { continuation in
    let started = DetachedThread.start { continuation.resume(returning: body()) }
    if !started { continuation.resume(returning: body()) }
  }
}

/// Runs `body` on a new thread and resumes the caller with what it returns or throws.
private func onThreadOfItsOwn<Value: Sendable, Failure: Error>(
  _ body: @escaping @Sendable () throws(Failure) -> Value
) async throws(Failure) -> Value {
  let result = await onThreadOfItsOwn { () -> Result<Value, Failure> in
    do throws(Failure) {
      return .success(try body())
    } catch {
      return .failure(error)
    }
  }
  return try result.get()
}
