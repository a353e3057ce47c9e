import Synchronization

/// The in-process ``WakeSignal``: `signal()` wakes every waiter at once. It can start and
/// stop a helper (such as a `ChangeWatcher`) with its first and last listener.
public final class Beacon: WakeSignal {
  private struct Waiters: ~Copyable {
    var generation: UInt64 = 0
    var nextID = 0
    var continuations: [Int: CheckedContinuation<Void, Never>] = [:]
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
  public init(
    activate: @escaping @Sendable (Beacon) -> Void = { _ in }, deactivate: @escaping @Sendable () -> Void = {}
  ) {
    self.activate = activate
    self.deactivate = deactivate
  }

  /// The number of wake-ups so far.
  public var generation: UInt64 { waiters.withLock { $0.generation } }

  /// How commits of other processes reach this beacon: what its activator reported with
  /// ``report(_:)``, and ``WakeMode/inProcess`` while nobody listens.
  public var mode: WakeMode { currentMode.withLock { $0 } }

  /// Records how the helper that `activate` started learns of other processes' commits.
  public func report(_ mode: WakeMode) { currentMode.withLock { $0 = mode } }

  /// How many listeners are registered.
  package var listenerCount: Int { listeners.withLock { $0 } }

  /// Wakes every waiter. Continuations resume after the lock is released.
  public func signal() {
    let woken = waiters.withLock { state in
      state.generation &+= 1
      let woken = Array(state.continuations.values)
      state.continuations.removeAll(keepingCapacity: true)
      return woken
    }
    for continuation in woken { continuation.resume() }
  }

  /// Returns once the generation exceeds `generation`, or when the task is cancelled.
  public func wait(past generation: UInt64) async {
    guard
      let id = waiters.withLock({ state -> Int? in
        guard state.generation <= generation else { return nil }
        state.nextID += 1
        return state.nextID
      })
    else { return }
    await withTaskCancellationHandler {
      await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let resumeNow = waiters.withLock { state in
          if state.cancelledBeforeRegistration.remove(id) != nil || state.generation > generation {
            return true
          }
          state.continuations[id] = continuation
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      let continuation = waiters.withLock { state in
        let continuation = state.continuations.removeValue(forKey: id)
        if continuation == nil { state.cancelledBeforeRegistration.insert(id) }
        return continuation
      }
      continuation?.resume()
    }
    // The cancellation handler cannot run any more; forget an id it may have parked.
    waiters.withLock { _ = $0.cancelledBeforeRegistration.remove(id) }
  }

  /// Registers a listener until the returned token is dropped.
  public func listen() -> WakeListener {
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
