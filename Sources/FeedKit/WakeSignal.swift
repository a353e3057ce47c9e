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
}

/// Keeps a ``WakeSignal`` listening while it lives.
public final class WakeListener: Sendable {
  private let release: @Sendable () -> Void

  /// Creates a token that calls `release` once, when it is dropped.
  public init(release: @escaping @Sendable () -> Void) { self.release = release }

  deinit { release() }
}
