import Foundation
import Synchronization

/// The chaos driver's hang limit: a thread of its own that ends the process when a step
/// (or the check after it) runs past its limit, so that a bug that blocks or spins fails
/// the run with its seed instead of running for ever.
///
/// At the limit it prints what was armed (the seed, the step, the replay command) to
/// standard error and a summary line to standard output, kills every process the driver
/// started and still runs, and exits with 1. A blocked call cannot be cancelled from
/// outside; ending the process is the only bounded way out.
final class ChaosWatchdog: Sendable {
  static let shared = ChaosWatchdog()

  private struct Armed {
    var deadline: UInt64
    var report: [String]
    var summary: String
  }

  private let armed = Mutex<Armed?>(nil)
  private let children = Mutex<Set<pid_t>>([])
  private let started = Mutex(false)

  /// Ends the process unless ``disarm()`` or another `arm` comes within `limit`; `report`
  /// goes to standard error, `summary` to standard output.
  func arm(_ limit: Duration, report: [String], summary: String) {
    startIfNeeded()
    let deadline = ChaosClock.now() + UInt64(limit.milliseconds) * 1_000_000
    armed.withLock { $0 = Armed(deadline: deadline, report: report, summary: summary) }
  }

  func disarm() { armed.withLock { $0 = nil } }

  /// A process to kill at the limit.
  func track(_ pid: pid_t) { _ = children.withLock { $0.insert(pid) } }

  /// A process that was reaped.
  func untrack(_ pid: pid_t) { _ = children.withLock { $0.remove(pid) } }

  private func startIfNeeded() {
    let first = started.withLock { started in
      defer { started = true }
      return !started
    }
    guard first else { return }
    let thread = Thread { [self] in
      while true {
        usleep(100_000)
        let expired = armed.withLock { armed in armed.flatMap { ChaosClock.now() > $0.deadline ? $0 : nil } }
        if let expired { end(expired) }
      }
    }
    thread.name = "ChaosWatchdog"
    thread.start()
  }

  private func end(_ armed: Armed) -> Never {
    FileHandle.standardError.write(Data(armed.report.map { $0 + "\n" }.joined().utf8))
    Torture.emit(armed.summary)
    for pid in children.withLock({ $0 }) { kill(pid, SIGKILL) }
    _exit(1)
  }
}
