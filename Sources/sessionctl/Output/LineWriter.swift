import Foundation
import Synchronization
import SystemKit

/// Writes whole lines straight to a file descriptor with `write(2)`: nothing is buffered,
/// so each line reaches a pipe as soon as it is written (JSON Lines are flushed per line),
/// and a line that cannot be written is an error the moment it happens.
struct LineWriter: Sendable {
  /// A line could not be written: the disk is full (`ENOSPC`), the descriptor is closed
  /// (`EBADF`), the reader of a pipe went away (`EPIPE`), or any other `write(2)` or
  /// `close(2)` failure. sessionctl exits with ``ExitCode/outputFailed`` (only `watch`
  /// takes a reader going away as the end of its job).
  struct Failure: Error, Equatable {
    /// Why `write(2)` or `close(2)` failed.
    var errno: Errno
    /// The descriptor written to.
    var descriptor: Int32

    /// Whether the reader of a pipe or socket went away (`EPIPE`).
    var readerWentAway: Bool { errno == .brokenPipe }

    /// "the result could not be written to standard output (No space left on device)".
    var sentence: String {
      let stream =
        switch descriptor {
        case STDOUT_FILENO: "standard output"
        case STDERR_FILENO: "standard error"
        default: "descriptor \(descriptor)"
        }
      let reason = readerWentAway ? "its reader went away: \(errno)" : errno.description
      return "the result could not be written to \(stream) (\(reason))"
    }
  }

  /// The descriptor written to.
  let descriptor: Int32

  /// Standard output.
  static let standardOutput = LineWriter(descriptor: STDOUT_FILENO)
  /// Standard error.
  static let standardError = LineWriter(descriptor: STDERR_FILENO)

  /// Writes `line` and (unless `terminated` is false) a newline in one `write(2)`, retrying
  /// partial writes and interruptions.
  ///
  /// A line is written whole or not at all where that can be undone: when a regular file
  /// takes only part of it (the disk filled up, `ulimit -f`), the part is cut off again, so
  /// a file that a script reads back (the resume recipe of `watch --exec`) never ends in
  /// half a line.
  /// - Throws: ``Failure`` when the line cannot be written.
  func write(_ line: String, terminated: Bool = true) throws(Failure) {
    var bytes = Array(line.utf8)
    if terminated { bytes.append(0x0A) }
    var written = 0
    do throws(Errno) {
      while written < bytes.count {
        do throws(Errno) {
          written += try retryingOnInterrupt {
            bytes.withUnsafeBytes {
              Foundation.write(descriptor, $0.baseAddress.map { $0 + written }, $0.count - written)
            }
          }
        } catch .wouldBlock {
          var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
          _ = try retryingOnInterrupt { poll(&ready, 1, -1) }
        }
      }
    } catch {
      if written > 0 { cutOff(written) }
      throw Failure(errno: error, descriptor: descriptor)
    }
  }

  /// Writes each line in turn.
  func write(_ lines: [String]) throws(Failure) {
    for line in lines { try write(line) }
  }

  /// Removes the last `count` bytes written, when the descriptor is a regular file whose
  /// end is where they end (nothing else was appended after them).
  private func cutOff(_ count: Int) {
    var info = stat()
    guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return }
    let end = lseek(descriptor, 0, SEEK_CUR)
    let start = end - off_t(count)
    guard start >= 0, end == info.st_size else { return }
    if ftruncate(descriptor, start) == 0 { lseek(descriptor, start, SEEK_SET) }
  }

  /// Closes the descriptor, for the end of the process: on some file systems (NFS, FUSE) a
  /// failed write is reported only here.
  /// - Throws: ``Failure`` when `close(2)` reports an error (`EINTR` is none: Linux has
  ///   closed the descriptor already).
  func close() throws(Failure) {
    guard Foundation.close(descriptor) != 0 else { return }
    let error = Errno.current
    guard error != .interrupted else { return }
    throw Failure(errno: error, descriptor: descriptor)
  }

  /// Puts `/dev/null`, opened read-only, on each of descriptors 0, 1 and 2 that the process
  /// started without (`sessionctl status >&-`). Otherwise the next file opened — the
  /// database, the runtime's event descriptor — takes the number, and results would be
  /// written into it; with it, writing a result fails with `EBADF`, as it should. Runs first
  /// thing in `main`, before anything opens a file.
  static func occupyClosedStandardDescriptors() {
    for descriptor in [STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO]
    where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
      let opened = open("/dev/null", O_RDONLY)
      if opened >= 0, opened != descriptor {
        dup2(opened, descriptor)
        Foundation.close(opened)
      }
    }
  }
}

/// What a command made permanent before it printed its result: when the result cannot be
/// written, the error says that this stays done (a committed write, a written backup), so
/// that nobody runs the command again believing it failed.
final class Commitment: Sendable {
  private let note = Mutex<String?>(nil)

  /// Records `clause`, e.g. "the change is committed all the same, at cursor 5".
  func record(_ clause: String) { note.withLock { $0 = clause } }

  /// Forgets what was recorded: the result that told of it was delivered.
  func clear() { note.withLock { $0 = nil } }

  /// The clause recorded last, if any.
  var recorded: String? { note.withLock { $0 } }
}
