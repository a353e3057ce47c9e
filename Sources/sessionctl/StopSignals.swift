import SessionStorage
import Synchronization
import SystemKit

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Turns SIGINT, SIGTERM and the reader of standard output going away into one stop
/// callback for `watch`; without a listener a signal ends the process with 128 + its number.
///
/// The handler only records the signal and posts a semaphore (async-signal-safe, and needs
/// no descriptor); a thread of ours acts on it, and exits a second later with the stop's
/// status if `watch` is still blocked in `write(2)`. Each line is one `write(2)` of at most
/// `PIPE_BUF` bytes to a pipe, so the output still ends on a whole line.
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

  /// Makes SIGINT and SIGTERM end the process at once with exit status 128 + the signal,
  /// without the thread of ``install()``: for the commands that never listen. A backup or a
  /// new store being built goes with it: its private file is removed first.
  static func exitOnSignals() {
    StagedFiles.prepareForSignalHandlers()
    for number in [SIGINT, SIGTERM] {
      signal(number) { number in
        StagedFiles.removeAll()
        _exit(128 + number)
      }
    }
  }

  /// Installs the handler of SIGINT and SIGTERM and starts the thread that acts on them.
  func install() {
    sem_init(signalArrived, 0, 0)
    for number in [SIGINT, SIGTERM] {
      signal(number) { number in
        receivedSignal.pointee = number
        sem_post(signalArrived)
      }
    }
    DetachedThread.start { [self] in
      while true {
        if sem_wait(signalArrived) == 0 { receive(receivedSignal.pointee) }
      }
    }
  }

  private func receive(_ number: Int32) {
    let reason: Reason = number == SIGINT ? .interrupt : .terminate
    guard state.withLock({ $0.listening }) else { _exit(128 + number) }
    trigger(reason)
    DetachedThread.sleep(seconds: 1)
    _exit(reason.exitCode.rawValue)
  }

  /// Starts listening: SIGINT and SIGTERM stop the command instead of the process while
  /// the result lives, and a closed `descriptor` (a pipe or socket) counts as a stop request.
  func listen(watchingOutput descriptor: Int32 = STDOUT_FILENO) -> Listening {
    state.withLock { $0.listening = true }
    if let kind = (try? FileStatus(descriptor: descriptor))?.kind, kind == .fifo || kind == .socket {
      DetachedThread.start { [weak self] in
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
