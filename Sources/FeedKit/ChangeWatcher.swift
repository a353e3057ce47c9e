import Synchronization
internal import SystemKit

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

/// Notices commits made by other processes without busy polling, so that their subscribers
/// wake within milliseconds: on Linux a thread sleeps on `inotify` events of one directory
/// (a file deleted and created again stays watched) and re-checks `hasChanged` with a short
/// back-off after each, since a file is written before its commit becomes visible; a slow
/// poll of `hasChanged` is the safety net, and the whole mechanism where `inotify` cannot be
/// set up (``mode`` says why). Events that come while this process writes are its own
/// commits, which its writer signals itself: they are looked at once this process's writes
/// have been quiet for ``settleMilliseconds``, so the watcher keeps out of the way of the
/// subscribers the writer just woke. `onChange` runs on the watcher's thread.
package final class ChangeWatcher: Sendable {
  /// How long this process's writes must have been quiet before an event that came while
  /// it wrote is looked at.
  package static let settleMilliseconds: Int32 = 1
  /// How long the watcher waits at most for writes of this process that keep coming to
  /// pause before it looks (a write under way is waited for: `hasChanged` waits for it).
  package static let settleLimitMilliseconds: Int32 = 20
  /// How this watcher is woken: notifications, or a poll and the reason.
  package let mode: WakeMode
  private let stopPipe: ThreadStopPipe

  /// Starts watching.
  /// - Parameters:
  ///   - directory: the directory holding the files.
  ///   - fileNames: the names whose changes matter.
  ///   - pollInterval: how often `hasChanged` runs when nothing happens.
  ///   - hasChanged: whether something committed since the last call (a cheap read of the
  ///     source's version).
  ///   - localWrites: a number that this process's writer moves as each write begins and
  ///     again as it ends (odd while one is under way); 0 for a process that never writes.
  ///   - onChange: called on the watcher's thread when `hasChanged` said yes.
  package convenience init(
    directory: String, fileNames: Set<String>, pollInterval: Duration = .seconds(1),
    hasChanged: @escaping @Sendable () -> Bool, localWrites: @escaping @Sendable () -> UInt64 = { 0 },
    onChange: @escaping @Sendable () -> Void
  ) {
    self.init(
      directory: directory, fileNames: fileNames, pollInterval: pollInterval, notifications: Self.inotify,
      hasChanged: hasChanged, localWrites: localWrites, onChange: onChange)
  }

  /// Starts watching with `notifications` as the source of file events: a descriptor to
  /// poll, or the reason there is none. Tests inject failures here.
  init(
    directory: String, fileNames: Set<String>, pollInterval: Duration,
    notifications: (String) -> Result<Int32, WatchSetupFailure>,
    hasChanged: @escaping @Sendable () -> Bool, localWrites: @escaping @Sendable () -> UInt64 = { 0 },
    onChange: @escaping @Sendable () -> Void
  ) {
    var reasons: [String] = []
    var ends: (read: Int32, write: Int32)?
    do {
      ends = try Pipes.make()
    } catch {
      reasons.append(SystemLimits.explain(error.rawValue, call: "pipe"))
    }
    let stopPipe = ThreadStopPipe(pipe: ends)
    self.stopPipe = stopPipe
    var events: Int32 = -1
    switch notifications(directory) {
    case .success(let fd): events = fd
    case .failure(let failure): reasons.append(failure.reason)
    }
    mode =
      events >= 0
      ? .notifications(pollInterval: pollInterval)
      : .polling(interval: pollInterval, reason: reasons.joined(separator: "; "))
    let loop = WatchLoop(
      fileNames: fileNames, events: events, stopFD: ends?.read ?? -1, stopPipe: stopPipe,
      pollMilliseconds: Int32(clamping: pollInterval.milliseconds),
      hasChanged: hasChanged, localWrites: localWrites, onChange: onChange)
    DetachedThread.start(name: "ChangeWatcher") {
      loop.run()
      stopPipe.closePipe()
    }
  }

  /// Tells the thread to stop, without waiting for it: the thread closes its descriptors as
  /// it exits, at most one callback later. Releasing the last subscription on the main
  /// actor therefore costs a `write` and a `close`, not the thread's wind-down. Safe to call
  /// twice.
  package func stop() { stopPipe.request() }

  deinit { stop() }

  #if os(Linux)
    /// An inotify descriptor watching `directory`, or why there is none.
    static func inotify(_ directory: String) -> Result<Int32, WatchSetupFailure> {
      Result { () throws(Inotify.Failure) in try Inotify.watch(directory) }
        .mapError { WatchSetupFailure(reason: $0.description) }
    }
  #else
    static func inotify(_ directory: String) -> Result<Int32, WatchSetupFailure> {
      .failure(WatchSetupFailure(reason: "file notifications are not built for this platform yet"))
    }
  #endif
}

/// Why file notifications could not be set up.
struct WatchSetupFailure: Error {
  var reason: String
}

/// Stops a thread that sleeps in `poll`: a flag the thread reads, and a pipe whose read end
/// it polls. The byte is written under the same lock that closes the pipe, so it is only
/// ever written while the read end is open (never a `SIGPIPE`).
package final class ThreadStopPipe: Sendable {
  private let requested = Mutex(false)
  private let pipe: Mutex<(read: Int32, write: Int32)?>

  package init(pipe ends: (read: Int32, write: Int32)?) { pipe = Mutex(ends) }

  /// Asks the thread to stop, without waiting for it. Safe to call twice.
  package func request() {
    let first = requested.withLock { requested in
      defer { requested = true }
      return !requested
    }
    guard first else { return }
    pipe.withLock { ends in
      guard let open = ends, open.write >= 0 else { return }
      var byte: UInt8 = 1
      _ = write(open.write, &byte, 1)
      close(open.write)
      ends = (open.read, -1)
    }
  }

  package var isRequested: Bool { requested.withLock { $0 } }

  /// Closes the pipe; the thread calls this as it exits.
  package func closePipe() {
    pipe.withLock { ends in
      if let open = ends {
        if open.write >= 0 { close(open.write) }
        close(open.read)
      }
      ends = nil
    }
  }
}

/// The watcher thread's loop; owns the inotify descriptor.
private struct WatchLoop: Sendable {
  let fileNames: Set<String>
  let events: Int32
  let stopFD: Int32
  let stopPipe: ThreadStopPipe
  let pollMilliseconds: Int32
  let hasChanged: @Sendable () -> Bool
  let localWrites: @Sendable () -> UInt64
  let onChange: @Sendable () -> Void

  /// Re-check delays after an event whose commit was not yet visible, in milliseconds.
  /// The last one repeats until ``lingerMilliseconds`` have passed since the event.
  static let backoff: [Int32] = [0, 1, 2, 5, 10, 20, 50]
  /// How long re-checks go on after an event. A writer whose `fsync` is slow may publish
  /// its commit in a way that raises no file event (shared memory) long after its last
  /// write to a watched file: it is seen within 50 ms of becoming visible, not at the next
  /// poll, as long as its `fsync` takes less than this.
  static let lingerMilliseconds: Int32 = 5_000

  func run() {
    defer { if events >= 0 { close(events) } }
    let clock = ContinuousClock()
    let pollInterval = Duration.milliseconds(pollMilliseconds)
    // The poll is due at a time, not after a quiet interval: events on other files of the
    // directory (an app's log written hundreds of times a second) never put it off.
    var pollDue = clock.now + pollInterval
    while true {
      switch next(timeout: Self.milliseconds(until: pollDue, on: clock)) {
      case .stop: return
      case .otherFile: if clock.now < pollDue { continue }
      case .timeout: break
      case .event:
        // The re-checks end with a check: the poll is due an interval after it.
        guard recheck(on: clock) else { return }
        pollDue = clock.now + pollInterval
        continue
      }
      if hasChanged() { onChange() }
      pollDue = clock.now + pollInterval
    }
  }

  /// Re-checks after an event of ours: at once, then on the next event of ours (the rest of
  /// the commit being written) or after the delay, whichever comes first; each event of ours
  /// starts the back-off over, so a commit that follows soon after is not left to a long
  /// delay. A change seen does not end the re-checks: the events read may also announce a
  /// later commit, still in its fsync, that becomes visible without an event of its own.
  /// They go on until ``lingerMilliseconds`` have passed since the last event of ours, by
  /// the clock: events on other files neither shorten a delay nor count as time waited.
  /// False when asked to stop.
  private func recheck(on clock: ContinuousClock) -> Bool {
    let linger = Duration.milliseconds(Self.lingerMilliseconds)
    var attempt = 0
    var lastEvent = clock.now
    while attempt < Self.backoff.count || clock.now - lastEvent < linger {
      let delay = Self.backoff[min(attempt, Self.backoff.count - 1)]
      attempt += 1
      let due = clock.now + .milliseconds(delay)
      waiting: while clock.now < due {
        switch next(timeout: Self.milliseconds(until: due, on: clock)) {
        case .stop: return false
        case .event:
          attempt = 1
          lastEvent = clock.now
          break waiting
        case .otherFile: continue
        case .timeout: break waiting
        }
      }
      if hasChanged() { onChange() }
    }
    return true
  }

  /// The whole milliseconds from now until `deadline` (rounded up, so that a wait for them
  /// does not end before it), or 0 once it passed.
  private static func milliseconds(until deadline: ContinuousClock.Instant, on clock: ContinuousClock)
    -> Int32
  {
    let left = clock.now.duration(to: deadline)
    guard left > .zero else { return 0 }
    let (seconds, attoseconds) = left.components
    let milliseconds = seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(clamping: milliseconds)
  }

  private enum Next { case stop, timeout, event, otherFile }

  /// Waits for the stop pipe, an event on one of our files (read, and settled: see
  /// ``settle(since:)``), an event on another file, or the timeout.
  private func next(timeout: Int32) -> Next {
    let writes = localWrites()
    switch waitForEvent(events: events, timeout: timeout) {
    case .stop: return .stop
    case .timeout: return .timeout
    case .event:
      guard drain(events) else { return .otherFile }
      return settle(since: writes) ? .event : .stop
    }
  }

  /// When this process wrote since `writes` (or is writing), sleeps, deaf to file events,
  /// until its writes have been quiet for ``ChangeWatcher/settleMilliseconds`` (writes
  /// that keep coming, for ``ChangeWatcher/settleLimitMilliseconds`` at most), then reads
  /// the events that came meanwhile. False when asked to stop.
  private func settle(since writes: UInt64) -> Bool {
    var seen = writes
    var waited: Int32 = 0
    while waited < ChangeWatcher.settleLimitMilliseconds {
      let now = localWrites()
      guard now != seen || now % 2 == 1 else { return true }
      if now != seen { waited += ChangeWatcher.settleMilliseconds }
      seen = now
      if waitForEvent(events: -1, timeout: ChangeWatcher.settleMilliseconds) == .stop { return false }
      _ = drain(events)
    }
    return true
  }

  private enum Wake { case stop, timeout, event }

  /// Waits for the stop pipe, an event or the timeout. Without a stop descriptor, it
  /// sleeps in slices of at most 50 ms and looks at the stop flag between them.
  private func waitForEvent(events: Int32, timeout: Int32) -> Wake {
    var remaining = timeout
    while true {
      if stopPipe.isRequested { return .stop }
      let slice = stopFD >= 0 ? remaining : min(remaining, 50)
      var fds: [pollfd] = []
      if stopFD >= 0 { fds.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)) }
      if events >= 0 { fds.append(pollfd(fd: events, events: Int16(POLLIN), revents: 0)) }
      let ready = pollForInput(&fds, milliseconds: slice, stopped: { stopPipe.isRequested })
      if stopFD >= 0, fds[0].revents != 0 { return .stop }
      if ready > 0 { return .event }
      remaining -= slice
      if remaining <= 0 { return .timeout }
    }
  }

  #if os(Linux)
    /// Reads every pending event; true when one concerned our files.
    private func drain(_ fd: Int32) -> Bool { Inotify.drain(fd, names: fileNames) }
  #else
    private func drain(_ fd: Int32) -> Bool { false }
  #endif
}
