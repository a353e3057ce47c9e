/// Tells waiting subscribers that the log may have grown. It carries no data: subscribers
/// re-read the log by cursor, so a wake-up can be spurious or merged but never loses an entry.
public protocol WakeSignal: Sendable {
  /// A number that grows with every wake-up. Read it before reading the log, and wait
  /// past it when the log had nothing new: no wake-up can fall between the two.
  var generation: UInt64 { get }
  /// Returns once ``generation`` exceeds `generation`, or when the task is cancelled.
  func wait(past generation: UInt64) async
  /// Registers a listener for as long as the returned token lives; sources start their
  /// cross-process watching with the first listener and stop it with the last.
  func listen() -> WakeListener
  /// How this signal learns of other processes' commits right now.
  var mode: WakeMode { get }
}

/// Keeps a ``WakeSignal`` listening while it lives.
public final class WakeListener: Sendable {
  private let release: @Sendable () -> Void

  /// Creates a token that calls `release` once, when it is dropped.
  public init(release: @escaping @Sendable () -> Void) { self.release = release }

  deinit { release() }
}

/// How a ``WakeSignal`` learns of commits made by other processes.
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
  /// How this signal learns of other processes' commits; ``WakeMode/inProcess`` unless the
  /// signal says otherwise.
  public var mode: WakeMode { .inProcess }
}
