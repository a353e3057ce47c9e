import Foundation
import SystemKit

/// Writes whole lines straight to a file descriptor with `write(2)`: nothing is buffered,
/// so each line reaches a pipe as soon as it is written (JSON Lines are flushed per line).
struct LineWriter: Sendable {
  /// The reader of the output went away (`EPIPE`): the command ends quietly.
  struct Closed: Error, Equatable {}

  /// The descriptor written to.
  let descriptor: Int32

  /// Standard output.
  static let standardOutput = LineWriter(descriptor: STDOUT_FILENO)
  /// Standard error.
  static let standardError = LineWriter(descriptor: STDERR_FILENO)

  /// Writes `line` and (unless `terminated` is false) a newline in one `write(2)`, retrying
  /// partial writes and interruptions.
  /// - Throws: ``Closed`` when the reader is gone; other write failures are ignored, like
  ///   `print` does (the command's result is its exit status).
  func write(_ line: String, terminated: Bool = true) throws(Closed) {
    var bytes = Array(line.utf8)
    if terminated { bytes.append(0x0A) }
    do {
      try writeAll(descriptor, bytes)
    } catch .brokenPipe {
      throw Closed()
    } catch {
      return
    }
  }

  /// Writes each line in turn.
  func write(_ lines: [String]) throws(Closed) {
    for line in lines { try write(line) }
  }
}
