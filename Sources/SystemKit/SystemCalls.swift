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

/// The error number of a failed system call (`errno`), with the system's message as its
/// description; in the style of swift-system's `Errno`.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
  /// The number, e.g. `EINTR`.
  package var rawValue: Int32

  /// The error `rawValue`, e.g. the result of a call that returns its error (`posix_spawn`).
  package init(rawValue: Int32) { self.rawValue = rawValue }

  /// This thread's `errno`: read it right after the call that failed.
  package static var current: Errno { Errno(rawValue: errno) }

  /// The system's message (`strerror`), e.g. "No such file or directory".
  package var description: String { String(cString: strerror(rawValue)) }

  /// `EINTR`: a signal arrived before the call did anything; call it again.
  package static let interrupted = Errno(rawValue: EINTR)
  /// `EAGAIN`: a non-blocking descriptor is not ready.
  package static let wouldBlock = Errno(rawValue: EAGAIN)
  /// `EPIPE`: the reader of a pipe is gone.
  package static let brokenPipe = Errno(rawValue: EPIPE)
  /// `ENOENT`: nothing is at the path.
  package static let noSuchFile = Errno(rawValue: ENOENT)
}

/// The result of a system call that returns -1 and sets `errno` when it fails.
/// - Throws: ``Errno/current`` when `result` is -1.
package func valueOrErrno<Value: FixedWidthInteger>(_ result: Value) throws(Errno) -> Value {
  guard result == -1 else { return result }
  throw Errno.current
}

/// Calls `call` (a system call that returns -1 and sets `errno` when it fails) again for as
/// long as it fails with `EINTR`, and returns its result.
/// - Throws: the ``Errno`` of a failure other than `EINTR`.
package func retryingOnInterrupt<Value: FixedWidthInteger>(_ call: () -> Value) throws(Errno) -> Value {
  while true {
    do {
      return try valueOrErrno(call())
    } catch .interrupted {
      continue
    }
  }
}

/// What `stat(2)` tells about a file, with Swift names. Reading it opens nothing, so it is
/// safe on a file that SQLite holds open (closing any descriptor of a file would drop the
/// process's locks on it).
package struct FileStatus: Sendable {
  /// What a file is.
  package enum Kind: Sendable {
    case regular, directory, symbolicLink, characterDevice, blockDevice, fifo, socket, unknown
  }

  /// What the file is (a symbolic link only when it is not followed).
  package var kind: Kind
  /// The device that holds the file (`st_dev`); with ``inode``, the file's identity.
  package var device: UInt64
  /// The file's number on its device (`st_ino`).
  package var inode: UInt64
  /// The size in bytes (`st_size`).
  package var size: Int64
  /// How many names the file has (`st_nlink`): 0 for a file deleted while open.
  package var linkCount: UInt64
  /// The owner's user id (`st_uid`).
  package var owner: uid_t
  /// The permission bits, with set-user-ID, set-group-ID and sticky (`st_mode & 0o7777`).
  package var permissions: mode_t

  /// The status of what `path` leads to, symbolic links followed (`stat(2)`); without
  /// `followingLinks`, of a symbolic link itself (`lstat(2)`).
  /// - Throws: the call's ``Errno`` (`ENOENT` when nothing is there).
  package init(_ path: String, followingLinks: Bool = true) throws(Errno) {
    var info = stat()
    _ = try valueOrErrno(followingLinks ? stat(path, &info) : lstat(path, &info))
    self.init(info)
  }

  /// The status of the file open as `descriptor` (`fstat(2)`).
  /// - Throws: the call's ``Errno`` (`EBADF` for a descriptor that is not open).
  package init(descriptor: Int32) throws(Errno) {
    var info = stat()
    _ = try valueOrErrno(fstat(descriptor, &info))
    self.init(info)
  }

  private init(_ info: stat) {
    kind =
      switch info.st_mode & S_IFMT {
      case S_IFREG: .regular
      case S_IFDIR: .directory
      case S_IFLNK: .symbolicLink
      case S_IFCHR: .characterDevice
      case S_IFBLK: .blockDevice
      case S_IFIFO: .fifo
      case S_IFSOCK: .socket
      default: .unknown
      }
    device = UInt64(info.st_dev)
    inode = UInt64(info.st_ino)
    size = Int64(info.st_size)
    linkCount = UInt64(info.st_nlink)
    owner = info.st_uid
    permissions = info.st_mode & 0o7777
  }
}

/// Writes all of `bytes` to `descriptor`: again after a partial write or an interruption,
/// and after waiting for room when the descriptor is non-blocking.
/// - Throws: the ``Errno`` of any other failure (``Errno/brokenPipe`` when a pipe's reader
///   is gone).
package func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) throws(Errno) {
  var offset = 0
  while offset < bytes.count {
    do {
      offset += try retryingOnInterrupt {
        bytes.withUnsafeBytes { write(descriptor, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
      }
    } catch .wouldBlock {
      var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
      _ = try retryingOnInterrupt { poll(&ready, 1, -1) }
    }
  }
}

/// Waits up to `milliseconds` (at least 0) for input on `descriptors`, as `poll(2)` does
/// (again after an interruption), and returns how many have some. When `poll` itself fails
/// (`ENOMEM`: the kernel could not allocate its tables), it waits the time out instead, in
/// naps of at most 50 ms that end early once `stopped` says so, and returns 0: a watcher
/// that checks on a schedule keeps its schedule, with no event to hurry it, rather than
/// stop watching.
package func pollForInput(_ descriptors: inout [pollfd], milliseconds: Int32, stopped: () -> Bool) -> Int32 {
  if let ready = try? retryingOnInterrupt({ poll(&descriptors, nfds_t(descriptors.count), milliseconds) }) {
    return ready
  }
  var left = max(milliseconds, 0)
  while left > 0, !stopped() {
    let nap = min(left, 50)
    usleep(UInt32(nap) * 1_000)
    left -= nap
  }
  return 0
}

/// Turns the `errno` of a failed system call into a sentence that names the limit that
/// was reached and how to raise it, for errors and wake-mode reasons.
package enum SystemLimits {
  /// `call` failed with `code`: what happened, and what to do.
  package static func explain(_ code: Int32, call: String) -> String {
    let what = "\(call) failed: \(Errno(rawValue: code))"
    switch code {
    case EMFILE:
      let files = openFiles.map { " of \($0)" } ?? ""
      let instances =
        call.hasPrefix("inotify")
        ? "; or all fs.inotify.max_user_instances\(procValue("fs/inotify/max_user_instances")) inotify instances "
          + "are in use: raise it with `sysctl fs.inotify.max_user_instances=N`"
        : ""
      return
        "\(what): this process may have reached its limit\(files) open files: raise it with `ulimit -n`\(instances)"
    case ENFILE:
      return "\(what): the system's open-file table is full (fs.file-max\(procValue("fs/file-max")))"
    case ENOSPC where call.hasPrefix("inotify"):
      return
        "\(what): all fs.inotify.max_user_watches\(procValue("fs/inotify/max_user_watches")) watches are in use: "
        + "raise it with `sysctl fs.inotify.max_user_watches=N`"
    default:
      return what
    }
  }

  /// The soft limit of open files of this process (`ulimit -n`), when it can be read.
  package static var openFiles: UInt64? {
    var limit = rlimit()
    return getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 ? UInt64(limit.rlim_cur) : nil
  }

  /// " (N)" for a value under `/proc/sys/`, or nothing when it cannot be read (harmless:
  /// it only completes a sentence, and without descriptors it cannot be read at all).
  private static func procValue(_ name: String) -> String {
    (try? String(contentsOfFile: "/proc/sys/" + name, encoding: .utf8))
      .map { " (\($0.trimmingWhitespace(newlines: true)))" } ?? ""
  }

  #if os(Linux)
    private static let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
  #else
    private static let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
  #endif
}

extension Duration {
  /// This duration in whole milliseconds, rounded toward zero and clamped to `Int64` (for
  /// `poll` timeouts).
  package var milliseconds: Int64 { whole(perSecond: 1_000) }

  /// This duration in whole microseconds, rounded toward zero and clamped to `Int64` (for
  /// `usleep`).
  package var microseconds: Int64 { whole(perSecond: 1_000_000) }

  private func whole(perSecond units: Int64) -> Int64 {
    let (seconds, attoseconds) = components
    let (scaled, overflow) = seconds.multipliedReportingOverflow(by: units)
    let fraction = attoseconds / (1_000_000_000_000_000_000 / units)
    guard !overflow else { return seconds < 0 ? .min : .max }
    let (sum, sumOverflow) = scaled.addingReportingOverflow(fraction)
    return sumOverflow ? (seconds < 0 ? .min : .max) : sum
  }
}
