import Foundation
import Synchronization

/// A spawned process whose standard output is collected line by line as it arrives.
final class Child: Sendable {
  let process: Process
  private let lines = Mutex<[String]>([])
  private let finishedReading = DispatchSemaphore(value: 0)

  /// Starts `executable` with `arguments`; standard error is passed through.
  init(_ executable: String, _ arguments: [String]) throws {
    process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardInput = FileHandle.nullDevice
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
      try? output.fileHandleForWriting.close()
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
    // Not `waitUntilExit()`: it spins a run loop in 50 ms slices, which a driver of many
    // short processes pays at every step.
    while process.isRunning { usleep(200) }
    finishedReading.wait()
    return process.terminationReason == .uncaughtSignal
      ? 128 + process.terminationStatus : process.terminationStatus
  }

  /// Waits at most `timeout` seconds, then kills the process; returns the exit status.
  @discardableResult
  func wait(timeout: TimeInterval) -> Int32 {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(1000) }
    if process.isRunning { kill(SIGKILL) }
    return wait()
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
