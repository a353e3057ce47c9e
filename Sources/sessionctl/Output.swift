import SessionStorage
import Synchronization
import SystemKit

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

  static let standardOutput = LineWriter(descriptor: STDOUT_FILENO)
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
              writeDescriptor(descriptor, $0.baseAddress.map { $0 + written }, $0.count - written)
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

  func write(_ lines: [String]) throws(Failure) {
    for line in lines { try write(line) }
  }

  /// Removes the last `count` bytes written, when the descriptor is a regular file whose
  /// end is where they end (nothing else was appended after them).
  private func cutOff(_ count: Int) {
    guard let status = try? FileStatus(descriptor: descriptor), status.kind == .regular else { return }
    let end = lseek(descriptor, 0, SEEK_CUR)
    let start = end - off_t(count)
    guard start >= 0, Int64(end) == status.size else { return }
    if ftruncate(descriptor, start) == 0 { lseek(descriptor, start, SEEK_SET) }
  }

  /// Closes the descriptor, for the end of the process: on some file systems (NFS, FUSE) a
  /// failed write is reported only here.
  /// - Throws: ``Failure`` when `close(2)` reports an error (`EINTR` is none: Linux has
  ///   closed the descriptor already).
  func close() throws(Failure) {
    guard closeDescriptor(descriptor) != 0 else { return }
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
        closeDescriptor(opened)
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

/// Turns results into output lines: short aligned text for people, or one JSON object per
/// line (`--json`). Pure, so tests can check every shape without a process. What only one
/// command prints is presented beside that command.
struct Presenter: Sendable {
  /// Whether to print JSON Lines.
  let json: Bool

  /// `watch`'s first line: the snapshot's own text or JSON.
  func snapshot(_ snapshot: SessionSnapshot) -> String {
    json ? snapshot.jsonLine : snapshot.description
  }

  /// One change, its columns padded to at least the given widths (`watch` streams, so it
  /// cannot measure the lines to come): the entry's own text or JSON.
  func change(_ entry: SessionEntry, cursorWidth: Int = 1, originWidth: Int = 10) -> String {
    json ? entry.jsonLine : entry.line(cursorWidth: cursorWidth, originWidth: originWidth)
  }

  /// A write that changed nothing: the reason for people, the state and cursor for programs.
  func noChange(_ reason: String, _ snapshot: SessionSnapshot) -> String {
    json ? JSONValue.noChange(snapshot).encoded : "no change: " + reason
  }

  /// `--version`.
  func version(_ version: String) -> String {
    json ? (["version": .string(version)] as JSONValue).encoded : "sessionctl \(version)"
  }

  /// Text safe for a terminal: `(none)` for nil; control characters (C0, DEL, C1), U+2028,
  /// U+2029 and format characters but U+200D (bidirectional controls, zero-width spaces…),
  /// which only an edit in the sqlite3 shell can store in a username, shown as
  /// `\u{1B}`-style escapes.
  static func display(_ text: String?) -> String { text.escapedForTerminal }

  /// `text` padded with spaces to `width` characters.
  static func padded(_ text: String, _ width: Int) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
  }

  /// Rows of a label and a value, the values aligned.
  func table(_ rows: [(String, String)]) -> [String] {
    let width = rows.map(\.0.count).max() ?? 0
    return rows.map { Self.padded($0.0, width) + "  " + $0.1 }
  }
}

/// sessionctl's exit statuses (documented in `sessionctl --help` and the article "The sessionctl
/// command line").
enum ExitCode: Int32, Sendable {
  /// Done.
  case success = 0
  /// Any other failure: a refused or unreadable file, a failed check, an I/O error.
  case failure = 1
  /// The command line is wrong (sysexits `EX_USAGE`).
  case usage = 64
  /// A value is wrong: a username, a cursor, a count (sysexits `EX_DATAERR`).
  case invalidInput = 65
  /// The cursor asked for was compacted away; the message names the oldest one kept.
  case cursorCompacted = 66
  /// The history changed under `watch`, or `--since CURSOR@TIME` names a change that a
  /// restore replaced: take a new snapshot.
  case historyRewritten = 67
  /// A write given `--if-cursor` found the store at another cursor: another write committed
  /// first, and this one wrote nothing. Read the store again and decide again.
  case conflict = 68
  /// The PostgreSQL server cannot be reached, or the connection was lost (sysexits
  /// `EX_UNAVAILABLE`): worth retrying later, unlike a refusal.
  case unavailable = 69
  /// The result could not be written: standard output is on a full disk, closed, or (for
  /// every command but `watch`) a pipe whose reader went away (sysexits `EX_IOERR`). A
  /// change the command committed stays committed; the message says so.
  case outputFailed = 74
  /// The PostgreSQL server refused the connection for a reason that waiting does not cure
  /// (sysexits `EX_NOPERM`): a missing database or role, a role that may not log in, a
  /// missing or wrong password, SSL required but not offered.
  case refused = 77
  /// `watch` stopped by SIGINT (128 + 2).
  case interrupted = 130
  /// `watch` stopped by SIGTERM (128 + 15).
  case terminated = 143
}

/// A failure sessionctl reports itself: a sentence for stderr and the exit status.
struct CLIError: Error, Sendable, Equatable {
  /// The exit status.
  var exitCode: ExitCode
  /// The sentence after `sessionctl: error: `.
  var message: String

  init(_ exitCode: ExitCode, _ message: String) {
    self.exitCode = exitCode
    self.message = message
  }

  /// A value the user typed is wrong (exit 65).
  static func invalidInput(_ message: String) -> CLIError { CLIError(.invalidInput, message) }
}

/// The process's open files, checked before the runtime starts its threads: near the
/// limit, the runtime's own thread pool traps (it cannot read /proc), and SQLite cannot
/// open a store. Refusing up front gives a sentence instead.
enum DescriptorLimit {
  /// A sentence when the soft limit is below `minimum`, or fewer than `free` descriptors
  /// are left under it (inherited ones count), or nil.
  static func refusal(minimum: UInt64, free: Int) -> String? {
    if let limit = SystemLimits.openFiles, limit < minimum {
      return "this process may open only \(limit) files; sessionctl needs at least \(minimum): "
        + "raise the limit with `ulimit -n`"
    }
    // Count what is left by opening up to `free` descriptors, then closing them.
    var opened: [Int32] = []
    defer { for fd in opened { close(fd) } }
    while opened.count < free {
      let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { break }
      opened.append(fd)
    }
    guard opened.count < free else { return nil }
    return
      "only \(opened.count) of this process's \(SystemLimits.openFiles.map(String.init) ?? "") open files "
      + "are free (it inherited the others); sessionctl needs \(free): close them or raise the limit with `ulimit -n`"
  }
}
