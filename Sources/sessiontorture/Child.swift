import Foundation
import Synchronization

/// A spawned process whose standard output is collected line by line as it arrives.
final class Child: Sendable {
  let process: Process
  private let lines = Mutex<[String]>([])
  private let finishedReading = DispatchSemaphore(value: 0)
  private let reaped = Mutex<Int32?>(nil)

  /// Starts `executable` with `arguments`; standard error is passed through unless `quiet`
  /// (for a child expected to fail).
  init(_ executable: String, _ arguments: [String], quiet: Bool = false) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardInput = FileHandle.nullDevice
    if quiet { process.standardError = FileHandle.nullDevice }
    try process.run()
    let handle = output.fileHandleForReading
    Thread.detachNewThread { [self] in
      var pending = Data()
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        pending.append(chunk)
        while let newline = pending.firstIndex(of: 0x0A) {
          let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
          pending.removeSubrange(pending.startIndex...newline)
          self.lines.withLock { $0.append(line) }
        }
      }
      // A line without its newline was cut by a kill: it was never fully reported.
      // Closed here, not left to deallocation: a driver that spawns thousands of children
      // leaked one pipe each otherwise. (Failing to close a drained pipe is harmless.)
      try? handle.close()
      self.finishedReading.signal()
    }
  }

  /// The complete lines printed so far.
  var output: [String] { lines.withLock { $0 } }

  /// Sends a signal.
  func kill(_ signal: Int32) { Foundation.kill(process.processIdentifier, signal) }

  /// Waits for the process and its output; returns the exit status (128 + signal when killed).
  @discardableResult
  func wait() -> Int32 {
    var status: Int32?
    while status == nil {
      status = exitStatus()
      if status == nil { usleep(200) }
    }
    drainOutput()
    return status ?? 1
  }

  /// Waits at most `timeout` seconds, then kills the process; returns the exit status.
  @discardableResult
  func wait(timeout: TimeInterval) -> Int32 {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if let status = exitStatus() {
        drainOutput()
        return status
      }
      usleep(1000)
    }
    kill(SIGKILL)
    return wait()
  }

  /// Waits for the end of the output of a process that has exited. Everything it wrote is
  /// in the pipe already; the end can only be missing when another process inherited the
  /// pipe. Seen once in a soak: bounded, so that the driver reports instead of hanging.
  private func drainOutput() {
    if finishedReading.wait(timeout: .now() + 5) == .timedOut {
      FileHandle.standardError.write(
        Data(
          "sessiontorture: the output of \(process.executableURL?.path ?? "a child") stayed open after it exited\n"
            .utf8))
    }
  }

  /// The exit status once the process has ended, else nil. It reaps the child itself
  /// (`waitpid`): neither `waitUntilExit()` (a run loop in 50 ms slices, paid at every
  /// step of a driver of many short processes) nor `isRunning` (which Foundation's
  /// SIGCHLD handling left true for ever once in a twenty-minute soak) is relied on.
  private func exitStatus() -> Int32? {
    let known = reaped.withLock { $0 }
    if let known { return known }
    var raw: Int32 = 0
    switch waitpid(process.processIdentifier, &raw, WNOHANG) {
    case process.processIdentifier:
      // WIFEXITED: the low seven bits are zero; then WEXITSTATUS, else WTERMSIG.
      let status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
      reaped.withLock { $0 = status }
      return status
    case -1 where errno == ECHILD:
      // Foundation reaped it first: its own record is final then.
      guard !process.isRunning else { return nil }
      return process.terminationReason == .uncaughtSignal
        ? 128 + process.terminationStatus : process.terminationStatus
    default:
      return nil
    }
  }

  /// Waits until a line satisfying `predicate` was printed, or `timeout` passes.
  func waitForLine(timeout: TimeInterval = 10, _ predicate: (String) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
      if output.contains(where: predicate) { return true }
      usleep(1000)
    }
    return false
  }

  /// This executable's path, to spawn its own children.
  static var selfPath: String {
    URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
  }
}
