import Foundation
import SystemKit

// The line protocol between a tool (sessionbench, sessiontorture) and the copies of itself it
// starts as children:
// - the parent starts `ChildProcess.thisProgram(arguments)`: the same executable, a hidden
//   command in `arguments`;
// - the child prints `ready` (or `ready DETAIL`, e.g. the cursor it subscribed after) once it
//   serves, then one line per report, each with a single `write(2)`;
// - the parent sends commands on the child's standard input, one per line, and reads each
//   answer as the child's next line; closing the child's standard input ends the child.

/// The child's side of the protocol.
package enum ChildChannel {
  /// Writes `line` and a newline to standard output with a single `write(2)`, so that lines
  /// from several threads never interleave and each reaches the parent at once. A failed
  /// write is dropped: the parent closed its end, and SIGPIPE (default in a child that
  /// `ChildProcess` starts) ends this process first.
  package static func say(_ line: String) {
    try? writeAll(STDOUT_FILENO, Array((line + "\n").utf8))
  }

  /// Says `ready`, or `ready DETAIL`: the first line, once the child serves.
  package static func sayReady(_ detail: String? = nil) {
    say(detail.map { "ready \($0)" } ?? "ready")
  }

  /// Serves the commands on standard input from a thread of its own: says what `answer`
  /// returns for each line (nothing for nil). The end of standard input ends the process
  /// (status 0).
  package static func serveInput(_ answer: @escaping @Sendable (String) -> String?) {
    let thread = Thread {
      readInput { command in
        if let reply = answer(command) { say(reply) }
      }
      _exit(0)
    }
    thread.name = "stdin"
    thread.start()
  }

  /// Blocks until standard input ends: the parent closed it, or died.
  package static func waitForEndOfInput() {
    readInput { _ in }
  }

  /// Hands each line of standard input to `body`, until it ends.
  private static func readInput(_ body: (String) -> Void) {
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 256)
    while true {
      let count = try? retryingOnInterrupt {
        chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
      }
      guard let count, count > 0 else { return }
      pending += chunk[0..<count]
      while let newline = pending.firstIndex(of: 0x0A) {
        let line = String(decoding: pending[..<newline], as: UTF8.self)
        pending.removeSubrange(...newline)
        body(line)
      }
    }
  }

  /// The child did not follow the protocol: it ended, stayed silent, or said something else.
  package struct Failure: Error, CustomStringConvertible {
    package var description: String
  }
}

/// The parent's side of the protocol.
extension ChildProcess {
  /// Starts this program again with `arguments` (a hidden command and its options).
  /// - Throws: ``ChildProcess/SpawnError``.
  package static func thisProgram(
    _ arguments: [String], stdin: Input = .null, stdout: Output = .collected(), stderr: Output = .inherit
  ) throws(SpawnError) -> ChildProcess {
    try ChildProcess(currentExecutable, arguments, stdin: stdin, stdout: stdout, stderr: stderr)
  }

  /// Reads the child's next line, which must be its `ready` line.
  /// - Returns: what follows `ready ` (empty for a bare `ready`).
  /// - Throws: ``ChildChannel/Failure`` when the child says something else, ends, or says
  ///   nothing within `timeout`.
  @discardableResult
  package func awaitReady(within timeout: Duration = .seconds(30)) throws(ChildChannel.Failure) -> String {
    let line = try answer(within: timeout)
    guard line == "ready" || line.hasPrefix("ready ") else {
      throw ChildChannel.Failure(description: "child \(pid) said '\(line)' instead of ready")
    }
    return String(line.dropFirst("ready ".count))
  }

  /// Sends `command` to the child's standard input (a `.pipe`) and reads its answer line.
  /// - Throws: ``ChildChannel/Failure`` as ``awaitReady(within:)`` does.
  package func ask(_ command: String, within timeout: Duration = .seconds(30)) throws(ChildChannel.Failure)
    -> String
  {
    try? writeLine(command)
    return try answer(within: timeout)
  }

  /// The child's next line that a `.collected` output's `intercept` did not take.
  /// - Throws: ``ChildChannel/Failure`` when the child ends or says nothing within `timeout`.
  package func answer(within timeout: Duration = .seconds(30)) throws(ChildChannel.Failure) -> String {
    let line: String?
    do {
      line = try readLine(timeout: timeout)
    } catch {
      throw ChildChannel.Failure(description: "child \(pid) said nothing within \(timeout) (see its stderr)")
    }
    guard let line else { throw ChildChannel.Failure(description: "child \(pid) ended (see its stderr)") }
    return line
  }

  /// Closes the child's standard input (its signal to end), waits at most `timeout` for its
  /// output to end, kills it if it did not, and reaps it.
  /// - Returns: its status as ``wait()`` returns it; nil when it was finished already.
  @discardableResult
  package func finish(within timeout: Duration = .seconds(5)) -> Int32? {
    guard closeInput() else { return nil }
    if !waitForEndOfOutput(timeout: timeout) { kill(SIGKILL) }
    return wait()
  }
}

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process on the machine, so a
/// child's timestamp can be compared with the parent's.
package enum Monotonic {
  /// Now, in nanoseconds.
  package static func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  /// CPU time used by this process so far (all threads, live and exited), in nanoseconds.
  package static func processCPU() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
  }

  package static func sleep(nanoseconds: UInt64) {
    var request = timespec(
      tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
  }
}
