#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

extension ChildProcess {
  /// How a child ended.
  package enum Termination: Sendable, Equatable, CustomStringConvertible {
    /// It exited with this status.
    case exited(Int32)
    /// This signal ended it.
    case signalled(Int32)
    /// Something else in this process reaped it (`ECHILD`): how it ended is unknown.
    case lost

    /// Decodes a status from `waitpid`: `WIFEXITED` (the low seven bits are zero), then
    /// `WEXITSTATUS`, else `WTERMSIG`.
    init(waitStatus raw: Int32) {
      self = raw & 0x7F == 0 ? .exited((raw >> 8) & 0xFF) : .signalled(raw & 0x7F)
    }

    /// The status a shell reports: the exit status, or 128 + the signal; -1 when lost.
    package var status: Int32 {
      switch self {
      case .exited(let status): status
      case .signalled(let signal): 128 + signal
      case .lost: -1
      }
    }

    /// A phrase: "exited with 1", "ended by signal 9".
    package var description: String {
      switch self {
      case .exited(let status): "exited with \(status)"
      case .signalled(let signal): "ended by signal \(signal)"
      case .lost: "was reaped elsewhere"
      }
    }
  }

  /// How the child ended, once it was reaped by ``wait()`` or a timed wait; nil before.
  package var termination: Termination? { ended.withLock { $0 } }

  /// Waits for the child to exit and reaps it; then, for a `.collected` output, waits at
  /// most 5 s for the output's end, so that ``lines`` holds everything it printed.
  /// - Returns: its ``Termination/status``: the exit status, or 128 + the signal.
  @discardableResult
  package func wait() -> Int32 {
    let termination = reap(blocking: true) ?? .lost
    drainOutput()
    return termination.status
  }

  /// Waits at most `timeout` for the child to exit; its status as ``wait()`` returns it,
  /// or nil when it is still running (it is left running).
  package func status(within timeout: Duration) -> Int32? {
    let deadline = ContinuousClock.now + timeout
    var pause: Duration = .microseconds(100)
    while true {
      if let termination = reap(blocking: false) {
        drainOutput()
        return termination.status
      }
      let now = ContinuousClock.now
      guard now < deadline else { return nil }
      usleep(UInt32(clamping: min(pause, deadline - now).microseconds))
      pause = min(pause * 2, .milliseconds(1))
    }
  }

  /// Waits at most `timeout` for the child to exit.
  /// - Returns: its status as ``wait()`` returns it.
  /// - Throws: ``Timeout``, after killing and reaping the child.
  package func wait(timeout: Duration) throws(Timeout) -> Int32 {
    if let status = status(within: timeout) { return status }
    kill(SIGKILL)
    wait()
    throw Timeout(description: "\(executable) (pid \(pid)) did not exit within \(timeout)")
  }

  /// Reaps the child if it ended (or, `blocking`, once it ends), `EINTR`-safe; how it
  /// ended, or nil while it runs. One thread at a time calls `waitpid`; a non-blocking
  /// call while another thread blocks answers nil.
  func reap(blocking: Bool) -> Termination? {
    if let known = termination { return known }
    let reapNow = { () -> Termination? in
      if let known = self.termination { return known }
      var raw: Int32 = 0
      let result: Termination?
      do {
        let reaped = try retryingOnInterrupt { waitpid(self.pid, &raw, blocking ? 0 : WNOHANG) }
        result = reaped == self.pid ? Termination(waitStatus: raw) : nil
      } catch {
        result = .lost
      }
      if let result { self.ended.withLock { $0 = result } }
      return result
    }
    return blocking
      ? reaping.withLock { _ in reapNow() } : reaping.withLockIfAvailable { _ in reapNow() } ?? nil
  }

  /// After the child ended: a `.collected` output ends too, unless another process
  /// inherited the pipe (seen once in a soak). Bounded, so that a driver reports instead
  /// of hanging.
  private func drainOutput() {
    guard output?.collects == true, !waitForEndOfOutput(timeout: .seconds(5)) else { return }
    let name = CommandLine.arguments[0].split(separator: "/").last.map(String.init) ?? "SystemKit"
    try? writeAll(
      STDERR_FILENO, Array("\(name): the output of \(executable) stayed open after it exited\n".utf8))
  }
}
