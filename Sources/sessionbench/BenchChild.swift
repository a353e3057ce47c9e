import Foundation
import ProcessKit

/// A `sessionbench` child (a subscriber or a raw watcher) spawned by a scenario. It reads
/// commands on its stdin and writes one line per event on its stdout: `CURSOR NANOSECONDS`
/// for each entry it received, which goes to ``Arrivals`` as soon as it is read, and words
/// (`ready …`, `cpu …`) that the scenario reads with ``controlLine(timeout:)``. Closing its
/// stdin ends it; its stderr is ours.
final class BenchChild: Sendable {
  private let process: ChildProcess

  /// Starts `sessionbench ARGUMENTS…`, reporting received cursors to `arrivals`.
  init(_ arguments: [String], arrivals: Arrivals?) throws {
    do {
      process = try ChildProcess(
        ChildProcess.currentExecutable, arguments, stdin: .pipe,
        stdout: .collected(intercept: { Self.arrival($0, arrivals) }))
    } catch {
      throw BenchError("\(error)")
    }
  }

  /// Hands a `CURSOR NANOSECONDS` line to `arrivals`; false for any other line.
  private static func arrival(_ line: String, _ arrivals: Arrivals?) -> Bool {
    guard line.utf8.first.map({ (0x30...0x39).contains($0) }) == true else { return false }
    let fields = line.split(separator: " ")
    guard fields.count == 2, let cursor = Int64(fields[0]), let time = UInt64(fields[1]) else { return false }
    arrivals?.arrive(cursor, at: time)
    return true
  }

  /// The next line that is not a received cursor.
  func controlLine(timeout: Duration = .seconds(30)) throws -> String {
    let line: String?
    do {
      line = try process.readLine(timeout: timeout)
    } catch {
      throw BenchError("child \(process.pid) said nothing within \(timeout) (see its stderr above)")
    }
    guard let line else { throw BenchError("child \(process.pid) ended (see its stderr above)") }
    return line
  }

  /// Waits for the child's `ready` line.
  func waitUntilReady() throws {
    let line = try controlLine()
    guard line.hasPrefix("ready") else {
      throw BenchError("child \(process.pid) said '\(line)' instead of ready")
    }
  }

  /// The CPU time the child has used so far, in nanoseconds.
  func cpuTime() throws -> UInt64 {
    try? process.writeLine("cpu")
    let line = try controlLine()
    guard line.hasPrefix("cpu "), let value = UInt64(line.dropFirst(4)) else {
      throw BenchError("child \(process.pid) answered '\(line)' to cpu")
    }
    return value
  }

  /// Closes the child's stdin and reaps it; kills it if its output has not ended in 5 s.
  func finish() {
    guard process.closeInput() else { return }
    if !process.waitForEndOfOutput(timeout: .seconds(5)) { process.kill(SIGKILL) }
    process.wait()
  }

  deinit { finish() }
}
