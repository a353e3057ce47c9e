import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Notices commits made by other processes, without busy polling.
///
/// On Linux a thread sleeps on `inotify` events for a few files of one directory (for a
/// SQLite database: the file and its `-wal`; the directory is watched because the WAL is
/// deleted and recreated as connections come and go). Every event is followed by
/// `hasChanged` re-checks with a short back-off, since a file can be written before its
/// commit becomes visible. A slow poll of `hasChanged` is the safety net.
///
/// It never leaves a caller blind: when `inotify` cannot be set up (a descriptor limit,
/// the inotify instance or watch limit, a platform without it) the poll is the mechanism,
/// and ``mode`` says so and why; when not even a descriptor for its stop signal can be
/// made, the thread polls in short sleeps. `onChange` runs on the watcher's thread.
package final class ChangeWatcher: Sendable {
  /// How this watcher is woken: notifications, or a poll and the reason.
  package let mode: WakeMode
  private let stopSignal: StopSignal

  /// Starts watching.
  /// - Parameters:
  ///   - directory: the directory holding the files.
  ///   - fileNames: the names whose changes matter.
  ///   - pollInterval: how often `hasChanged` runs when nothing happens.
  ///   - hasChanged: whether something committed since the last call (e.g. `PRAGMA data_version`).
  ///   - onChange: called on the watcher's thread when `hasChanged` said yes.
  package convenience init(
    directory: String, fileNames: Set<String>, pollInterval: Duration = .seconds(1),
    hasChanged: @escaping @Sendable () -> Bool, onChange: @escaping @Sendable () -> Void
  ) {
    self.init(
      directory: directory, fileNames: fileNames, pollInterval: pollInterval, notifications: Self.inotify,
      hasChanged: hasChanged, onChange: onChange)
  }

  /// Starts watching with `notifications` as the source of file events: a descriptor to
  /// poll, or the reason there is none. Tests inject failures here.
  init(
    directory: String, fileNames: Set<String>, pollInterval: Duration,
    notifications: (String) -> Result<Int32, WatchSetupFailure>,
    hasChanged: @escaping @Sendable () -> Bool, onChange: @escaping @Sendable () -> Void
  ) {
    var fds: [Int32] = [0, 0]
    var reasons: [String] = []
    var ends: (read: Int32, write: Int32)?
    if pipe(&fds) == 0 {
      for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
      ends = (fds[0], fds[1])
    } else {
      reasons.append(SystemLimits.explain(errno, call: "pipe"))
    }
    let stopSignal = StopSignal(pipe: ends)
    self.stopSignal = stopSignal
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
      fileNames: fileNames, events: events, stopFD: ends?.read ?? -1, stopSignal: stopSignal,
      pollMilliseconds: Int32(
        clamping: pollInterval.components.seconds * 1000 + pollInterval.components.attoseconds
          / 1_000_000_000_000_000),
      hasChanged: hasChanged, onChange: onChange)
    let thread = Thread {
      loop.run()
      stopSignal.closePipe()
    }
    thread.name = "ChangeWatcher"
    thread.start()
  }

  /// Tells the thread to stop, without waiting for it: the thread closes its descriptors as
  /// it exits, at most one callback later. Releasing the last subscription on the main
  /// actor therefore costs a `write` and a `close`, not the thread's wind-down. Safe to call
  /// twice.
  package func stop() { stopSignal.request() }

  deinit { stop() }

  #if os(Linux)
    /// An inotify descriptor watching `directory`, or why there is none.
    static func inotify(_ directory: String) -> Result<Int32, WatchSetupFailure> {
      let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
      guard fd >= 0 else { return .failure(WatchSetupFailure(errno: errno, call: "inotify_init1")) }
      let mask = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_CLOSE_WRITE)
      guard inotify_add_watch(fd, directory, mask) >= 0 else {
        let failure = WatchSetupFailure(errno: errno, call: "inotify_add_watch")
        close(fd)
        return .failure(failure)
      }
      return .success(fd)
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

  init(reason: String) { self.reason = reason }
  init(errno code: Int32, call: String) { reason = SystemLimits.explain(code, call: call) }
}

/// How a watcher is told to stop: a flag its thread looks at, and a pipe that wakes the
/// thread's `poll`. ``request()`` writes to the pipe and closes its write end; the thread
/// closes what is left as it exits. Both under one lock, so the byte is only ever written
/// while the read end is open (never a `SIGPIPE`).
private final class StopSignal: Sendable {
  private let requested = Mutex(false)
  private let pipe: Mutex<(read: Int32, write: Int32)?>

  init(pipe ends: (read: Int32, write: Int32)?) { pipe = Mutex(ends) }

  /// Asks the thread to stop, without waiting for it. Safe to call twice.
  func request() {
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

  var isRequested: Bool { requested.withLock { $0 } }

  /// Closes the pipe; the thread calls this as it exits.
  func closePipe() {
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
  let stopSignal: StopSignal
  let pollMilliseconds: Int32
  let hasChanged: @Sendable () -> Bool
  let onChange: @Sendable () -> Void

  /// Re-check delays after an event whose commit was not yet visible, in milliseconds.
  /// The last one repeats until ``lingerMilliseconds`` have passed since the event.
  static let backoff: [Int32] = [0, 1, 2, 5, 10, 20, 50]
  /// How long re-checks go on after an event. A writer whose `fsync` is slow publishes
  /// its commit (in SQLite's shared memory, which raises no file event) long after its
  /// last write to the WAL: it is seen within 50 ms of becoming visible, not at the next
  /// poll, as long as its `fsync` takes less than this.
  static let lingerMilliseconds: Int32 = 5_000

  func run() {
    defer { if events >= 0 { close(events) } }
    while true {
      switch waitForEvent(events: events, timeout: pollMilliseconds) {
      case .stop: return
      case .timeout: if hasChanged() { onChange() }
      case .event:
        guard drain(events) else { continue }
        // Re-check at once, then on the next event (the rest of the commit being written)
        // or after the delay, whichever comes first; each event of ours starts the
        // back-off over, so a commit that follows soon after is not left to a long delay.
        var attempt = 0
        var waited: Int32 = 0
        while attempt < Self.backoff.count || waited < Self.lingerMilliseconds {
          let delay = Self.backoff[min(attempt, Self.backoff.count - 1)]
          attempt += 1
          if delay > 0 {
            switch waitForEvent(events: events, timeout: delay) {
            case .stop: return
            case .event where drain(events):
              attempt = 1
              waited = 0
            case .event, .timeout: waited += delay
            }
          }
          if hasChanged() {
            onChange()
            break
          }
        }
      }
    }
  }

  private enum Wake { case stop, timeout, event }

  /// Waits for the stop signal, an event or the timeout. Without a stop descriptor, it
  /// sleeps in slices of at most 50 ms and looks at the stop flag between them.
  private func waitForEvent(events: Int32, timeout: Int32) -> Wake {
    var remaining = timeout
    while true {
      if stopSignal.isRequested { return .stop }
      let slice = stopFD >= 0 ? remaining : min(remaining, 50)
      var fds: [pollfd] = []
      if stopFD >= 0 { fds.append(pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)) }
      if events >= 0 { fds.append(pollfd(fd: events, events: Int16(POLLIN), revents: 0)) }
      let ready = poll(&fds, nfds_t(fds.count), slice)
      if ready < 0 { return errno == EINTR ? .timeout : .stop }
      if stopFD >= 0, fds[0].revents != 0 { return .stop }
      if ready > 0 { return .event }
      remaining -= slice
      if remaining <= 0 { return .timeout }
    }
  }

  #if os(Linux)
    /// Reads every pending event; true when one concerned our files.
    private func drain(_ fd: Int32) -> Bool {
      var relevant = false
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return relevant }
        var offset = 0
        buffer.withUnsafeBytes { raw in
          while offset + MemoryLayout<inotify_event>.size <= count {
            let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameStart = offset + MemoryLayout<inotify_event>.size
            let nameBytes = raw[nameStart..<min(nameStart + length, count)].prefix { $0 != 0 }
            if fileNames.contains(String(decoding: nameBytes, as: UTF8.self)) { relevant = true }
            offset = nameStart + length
          }
        }
      }
    }
  #else
    private func drain(_ fd: Int32) -> Bool { false }
  #endif
}
