import Synchronization

/// Tells waiting subscribers that the log may have grown. It carries no data: subscribers
/// re-read the log by cursor, so a wake-up can be spurious or merged but never loses an entry.
package protocol WakeSignal: Sendable {
  /// A number that grows with every wake-up. Read it before reading the log, and wait
  /// past it when the log had nothing new: no wake-up can fall between the two.
  var generation: UInt64 { get }
  /// Returns once ``generation`` exceeds `generation`, or when the task is cancelled: true
  /// when the task was suspended until then, false when it returned at once.
  @discardableResult
  func wait(past generation: UInt64) async -> Bool
  /// Registers a listener for as long as the returned token lives; sources start their
  /// cross-process watching with the first listener and stop it with the last.
  func listen() -> WakeListener
  /// How this signal learns of other processes' commits right now.
  var mode: WakeMode { get }
}

/// Keeps a ``WakeSignal`` listening while it lives: `release` runs once, when it is dropped.
package final class WakeListener: Sendable {
  private let release: @Sendable () -> Void

  package init(release: @escaping @Sendable () -> Void) { self.release = release }

  deinit { release() }
}

/// How a subscription learns of commits made by other processes
/// (``FeedSubscription/wakeMode``): an app can show or log it, as `sessionctl watch` warns
/// when it polls.
public enum WakeMode: Sendable, Equatable, CustomStringConvertible {
  /// Only this process's wake-ups: nothing watches other processes (no subscriber yet, or
  /// a log no other process can write, such as an in-memory one).
  case inProcess
  /// File notifications, each followed by re-checks, with a poll every `pollInterval` as
  /// the safety net.
  case notifications(pollInterval: Duration)
  /// A poll every `interval` only, because notifications could not be set up; `reason`
  /// says why (for example a descriptor or inotify limit, and how to raise it).
  case polling(interval: Duration, reason: String)

  /// A sentence for a person.
  public var description: String {
    switch self {
    case .inProcess: "woken by this process only"
    case .notifications(let interval): "woken by file notifications (and a poll every \(interval))"
    case .polling(let interval, let reason): "polling every \(interval): \(reason)"
    }
  }
}

extension WakeSignal {
  /// ``WakeMode/inProcess`` unless the signal says otherwise.
  package var mode: WakeMode { .inProcess }
}

/// The in-process ``WakeSignal``: `signal()` wakes every waiter at once. It can start and
/// stop a helper (such as a `ChangeWatcher`) with its first and last listener.
package final class Beacon: WakeSignal {
  private struct Waiters: ~Copyable {
    var generation: UInt64 = 0
    var nextID = 0
    var continuations: [Int: CheckedContinuation<Bool, Never>] = [:]
    var cancelledBeforeRegistration: Set<Int> = []
  }

  private let waiters = Mutex(Waiters())
  private let listeners = Mutex(0)
  private let currentMode = Mutex(WakeMode.inProcess)
  private let activate: @Sendable (Beacon) -> Void
  private let deactivate: @Sendable () -> Void

  /// Creates a beacon; `activate` runs when the first listener arrives (it is handed the
  /// beacon, to signal; hold it weakly) and `deactivate` when the last one leaves. Both run
  /// under a lock of their own, never the waiters' lock.
  package init(
    activate: @escaping @Sendable (Beacon) -> Void = { _ in }, deactivate: @escaping @Sendable () -> Void = {}
  ) {
    self.activate = activate
    self.deactivate = deactivate
  }

  /// The number of wake-ups so far.
  package var generation: UInt64 { waiters.withLock { $0.generation } }

  /// How commits of other processes reach this beacon: what its activator reported with
  /// ``report(_:)``, and ``WakeMode/inProcess`` while nobody listens.
  package var mode: WakeMode { currentMode.withLock { $0 } }

  /// Records how the helper that `activate` started learns of other processes' commits.
  package func report(_ mode: WakeMode) { currentMode.withLock { $0 = mode } }

  package var listenerCount: Int { listeners.withLock { $0 } }

  /// Wakes every waiter. Continuations resume after the lock is released.
  package func signal() {
    let woken = waiters.withLock { state in
      state.generation &+= 1
      let woken = Array(state.continuations.values)
      state.continuations.removeAll(keepingCapacity: true)
      return woken
    }
    for continuation in woken { continuation.resume(returning: true) }
  }

  @discardableResult
  package func wait(past generation: UInt64) async -> Bool {
    guard
      let id = waiters.withLock({ state -> Int? in
        guard state.generation <= generation else { return nil }
        state.nextID += 1
        return state.nextID
      })
    else { return false }
    let suspended = await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let resumeNow = waiters.withLock { state in
          if state.cancelledBeforeRegistration.remove(id) != nil || state.generation > generation {
            return true
          }
          state.continuations[id] = continuation
          return false
        }
        if resumeNow { continuation.resume(returning: false) }
      }
    } onCancel: {
      let continuation = waiters.withLock { state in
        let continuation = state.continuations.removeValue(forKey: id)
        if continuation == nil { state.cancelledBeforeRegistration.insert(id) }
        return continuation
      }
      continuation?.resume(returning: true)
    }
    // The cancellation handler cannot run any more; forget an id it may have parked.
    waiters.withLock { _ = $0.cancelledBeforeRegistration.remove(id) }
    return suspended
  }

  package func listen() -> WakeListener {
    listeners.withLock { count in
      count += 1
      if count == 1 { activate(self) }
    }
    return WakeListener { [self] in
      listeners.withLock { count in
        count -= 1
        if count == 0 {
          deactivate()
          currentMode.withLock { $0 = .inProcess }
        }
      }
    }
  }
}
