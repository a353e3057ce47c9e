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
/// commit becomes visible. A slow poll of `hasChanged` is the safety net, and the only
/// mechanism where inotify is unavailable. `onChange` runs on the watcher's thread.
public final class ChangeWatcher: Sendable {
  private let wakePipe: (read: Int32, write: Int32)
  private let finished = DispatchSemaphore(value: 0)
  private let stopped = Mutex(false)

  /// Starts watching.
  /// - Parameters:
  ///   - directory: the directory holding the files.
  ///   - fileNames: the names whose changes matter.
  ///   - pollInterval: how often `hasChanged` runs when nothing happens.
  ///   - hasChanged: whether something committed since the last call (e.g. `PRAGMA data_version`).
  ///   - onChange: called on the watcher's thread when `hasChanged` said yes.
  public init(
    directory: String, fileNames: Set<String>, pollInterval: Duration = .seconds(1),
    hasChanged: @escaping @Sendable () -> Bool, onChange: @escaping @Sendable () -> Void
  ) throws {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    wakePipe = (fds[0], fds[1])
    let loop = WatchLoop(
      directory: directory, fileNames: fileNames, stopFD: fds[0],
      pollMilliseconds: Int32(
        clamping: pollInterval.components.seconds * 1000 + pollInterval.components.attoseconds
          / 1_000_000_000_000_000),
      hasChanged: hasChanged, onChange: onChange)
    let finished = self.finished
    let thread = Thread {
      loop.run()
      finished.signal()
    }
    thread.name = "ChangeWatcher"
    thread.start()
  }

  /// Stops the thread and waits until it has closed its files. Safe to call twice.
  public func stop() {
    let first = stopped.withLock { stopped in
      defer { stopped = true }
      return !stopped
    }
    guard first else { return }
    var byte: UInt8 = 1
    _ = write(wakePipe.write, &byte, 1)
    finished.wait()
    close(wakePipe.read)
    close(wakePipe.write)
  }

  deinit { stop() }
}

/// The watcher thread's loop; owns the inotify descriptor.
private struct WatchLoop: Sendable {
  let directory: String
  let fileNames: Set<String>
  let stopFD: Int32
  let pollMilliseconds: Int32
  let hasChanged: @Sendable () -> Bool
  let onChange: @Sendable () -> Void

  /// Re-check delays after an event whose commit was not yet visible, in milliseconds.
  private static let backoff: [Int32] = [0, 1, 2, 5, 10, 20, 50]

  func run() {
    let events = openEvents()
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
        while attempt < Self.backoff.count {
          let delay = Self.backoff[attempt]
          attempt += 1
          if delay > 0 {
            switch waitForEvent(events: events, timeout: delay) {
            case .stop: return
            case .event: if drain(events) { attempt = 1 }
            case .timeout: break
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

  private func waitForEvent(events: Int32, timeout: Int32) -> Wake {
    var fds = [pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
    if events >= 0 { fds.append(pollfd(fd: events, events: Int16(POLLIN), revents: 0)) }
    let ready = poll(&fds, nfds_t(fds.count), timeout)
    if ready < 0 { return errno == EINTR ? .timeout : .stop }
    if fds[0].revents != 0 { return .stop }
    return ready > 0 ? .event : .timeout
  }

  #if os(Linux)
    private func openEvents() -> Int32 {
      let fd = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
      guard fd >= 0 else { return -1 }
      let mask = UInt32(IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_CLOSE_WRITE)
      guard inotify_add_watch(fd, directory, mask) >= 0 else {
        close(fd)
        return -1
      }
      return fd
    }

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
    private func openEvents() -> Int32 { -1 }
    private func drain(_ fd: Int32) -> Bool { false }
  #endif
}
