import Dispatch
import Foundation
import Synchronization

/// Turns the ways a long-running command is asked to stop into one callback: SIGINT,
/// SIGTERM (through dispatch signal sources, so the handler is ordinary code), and the
/// reader of standard output going away (a thread blocked in `poll(2)` on a pipe or
/// socket, so a silent `watch` notices without waiting for its next line).
final class StopSignals: Sendable {
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
  }

  /// Keeps the signal sources alive; dropping it cancels them and restores the default
  /// handling of SIGINT and SIGTERM.
  final class Listening {
    private let sources: [any DispatchSourceSignal]

    fileprivate init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }

    deinit {
      for source in sources { source.cancel() }
      signal(SIGINT, SIG_DFL)
      signal(SIGTERM, SIG_DFL)
    }
  }

  private let state = Mutex(State())

  init() {}

  /// Starts listening: SIGINT and SIGTERM stop killing the process while the result lives,
  /// and a closed `descriptor` (a pipe or socket) counts as a stop request.
  func listen(watchingOutput descriptor: Int32 = STDOUT_FILENO) -> Listening {
    var sources: [any DispatchSourceSignal] = []
    for (number, reason) in [(SIGINT, Reason.interrupt), (SIGTERM, Reason.terminate)] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { [weak self] in self?.trigger(reason) }
      source.resume()
      sources.append(source)
    }
    var info = stat()
    if fstat(descriptor, &info) == 0,
      (info.st_mode & S_IFMT) == S_IFIFO || (info.st_mode & S_IFMT) == S_IFSOCK
    {
      Thread.detachNewThread { [weak self] in
        var watched = pollfd(fd: descriptor, events: 0, revents: 0)
        while poll(&watched, 1, -1) < 0, errno == EINTR {}
        if watched.revents & Int16(POLLERR | POLLHUP) != 0 { self?.trigger(.outputClosed) }
      }
    }
    return Listening(sources)
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
