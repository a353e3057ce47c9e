import Foundation
import Synchronization
import SystemKit

/// Turns the ways a long-running command is asked to stop into one callback: SIGINT,
/// SIGTERM, and the reader of standard output going away (a thread blocked in `poll(2)` on
/// a pipe or socket, so a silent `watch` notices without waiting for its next line).
///
/// A signal handler (``install()``, first thing in `main`) does only what is safe in one:
/// it records the signal and posts a semaphore, which a thread of ours waits on. That
/// needs no descriptor, so a process that ran out of them can still be stopped. Without a
/// listener (every command but `watch`) a signal ends the process at once with 128 + its
/// number, as the default action would. With one, the stop callback runs, and if the
/// process has not ended a second later — blocked in `write(2)` on a pipe nobody reads —
/// it exits anyway with the stop's status. Lines are written with one `write(2)` each, and a pipe takes a write of up to
/// `PIPE_BUF` (4,096) bytes whole or not at all, so the output still ends on a whole line.
final class StopSignals: Sendable {
  /// The process's one receiver of SIGINT and SIGTERM.
  static let shared = StopSignals()

  /// Why the command should stop.
  enum Reason: Sendable, Equatable {
    /// SIGINT: exit 130.
    case interrupt
    /// SIGTERM: exit 143.
    case terminate
    /// Standard output's reader is gone: exit 0 quietly.
    case outputClosed

    /// The exit status for this reason.
    var exitCode: ExitCode {
      switch self {
      case .interrupt: .interrupted
      case .terminate: .terminated
      case .outputClosed: .success
      }
    }
  }

  private struct State {
    var reason: Reason?
    var action: (@Sendable () -> Void)?
    var listening = false
  }

  /// Keeps the process listening; dropping it makes signals end the process at once again.
  final class Listening: Sendable {
    private let signals: StopSignals

    fileprivate init(_ signals: StopSignals) { self.signals = signals }

    deinit { signals.state.withLock { $0.listening = false } }
  }

  private let state = Mutex(State())

  private init() {}

  /// Installs the handler of SIGINT and SIGTERM and starts the thread that acts on them.
  func install() {
    sem_init(signalArrived, 0, 0)
    for number in [SIGINT, SIGTERM] {
      signal(number) { number in
        receivedSignal.pointee = number
        sem_post(signalArrived)
      }
    }
    Thread.detachNewThread { [self] in
      while true {
        if sem_wait(signalArrived) == 0 { receive(receivedSignal.pointee) }
      }
    }
  }

  private func receive(_ number: Int32) {
    let reason: Reason = number == SIGINT ? .interrupt : .terminate
    guard state.withLock({ $0.listening }) else { _exit(128 + number) }
    trigger(reason)
    Thread.sleep(forTimeInterval: 1)
    _exit(reason.exitCode.rawValue)
  }

  /// Starts listening: SIGINT and SIGTERM stop the command instead of the process while
  /// the result lives, and a closed `descriptor` (a pipe or socket) counts as a stop request.
  func listen(watchingOutput descriptor: Int32 = STDOUT_FILENO) -> Listening {
    state.withLock { $0.listening = true }
    var info = stat()
    if fstat(descriptor, &info) == 0,
      (info.st_mode & S_IFMT) == S_IFIFO || (info.st_mode & S_IFMT) == S_IFSOCK
    {
      Thread.detachNewThread { [weak self] in
        var watched = pollfd(fd: descriptor, events: 0, revents: 0)
        _ = try? retryingOnInterrupt { poll(&watched, 1, -1) }
        if watched.revents & Int16(POLLERR | POLLHUP) != 0 { self?.trigger(.outputClosed) }
      }
    }
    return Listening(self)
  }

  /// Why the command was asked to stop, if it was.
  var reason: Reason? { state.withLock { $0.reason } }

  /// Runs `action` once on the first stop request (right away if one already came).
  func onStop(_ action: @escaping @Sendable () -> Void) {
    let runNow = state.withLock { state in
      if state.reason != nil { return true }
      state.action = action
      return false
    }
    if runNow { action() }
  }

  private func trigger(_ reason: Reason) {
    let action = state.withLock { state -> (@Sendable () -> Void)? in
      guard state.reason == nil else { return nil }
      state.reason = reason
      defer { state.action = nil }
      return state.action
    }
    action?()
  }
}

// What the signal handler touches: it may only store a number and post a semaphore
// (both async-signal-safe), so these are plain memory, set up once and never freed.
nonisolated(unsafe) private let receivedSignal = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
nonisolated(unsafe) private let signalArrived = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
