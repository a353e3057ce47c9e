import Foundation
import Synchronization

/// What a finished child process printed and how it ended.
public struct ProcessResult: Sendable {
  /// Standard output.
  public var stdout: String
  /// Standard error.
  public var stderr: String
  /// The exit status, or 128 + the signal when a signal ended it.
  public var status: Int32
}

/// Runs programs for tests: our executables (built next to the test bundle) and tools
/// such as `/usr/bin/sqlite3`.
public enum ProcessRunner {
  /// The directory holding the built products (`.build/debug`).
  public static let productsDirectory: URL = {
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
      .deletingLastPathComponent()
    // On Linux the test runner sits next to the products; an .xctest bundle may sit one deeper.
    if url.lastPathComponent.hasSuffix(".xctest") { url.deleteLastPathComponent() }
    return url
  }()

  /// The path of one of our executables, e.g. `sessionctl`.
  public static func product(_ name: String) -> String {
    productsDirectory.appendingPathComponent(name).path
  }

  /// Runs `executable` to completion with `arguments`, optional standard input and
  /// environment additions.
  public static func run(
    _ executable: String, _ arguments: [String], input: String? = nil, environment: [String: String] = [:]
  ) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let out = Pipe()
    let err = Pipe()
    let inPipe = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = inPipe
    try process.run()
    if let input { inPipe.fileHandleForWriting.write(Data(input.utf8)) }
    try inPipe.fileHandleForWriting.close()
    // Read both pipes concurrently so a chatty child cannot block on a full pipe.
    let errData = Mutex<Data>(Data())
    let reader = Thread { errData.withLock { $0 = err.fileHandleForReading.readDataToEndOfFile() } }
    reader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while reader.isExecuting || !reader.isFinished { usleep(1000) }
    let status =
      process.terminationReason == .uncaughtSignal
      ? 128 + process.terminationStatus : process.terminationStatus
    return ProcessResult(
      stdout: String(decoding: outData, as: UTF8.self),
      stderr: String(decoding: errData.withLock { $0 }, as: UTF8.self),
      status: status)
  }

  /// Runs the `sqlite3` shell on `database` with `sql`; throws when it fails.
  @discardableResult
  public static func sqlite3(_ database: String, _ sql: String) throws -> String {
    let result = try run("/usr/bin/sqlite3", [database, sql])
    guard result.status == 0 else {
      throw SQLite3ShellError(message: "sqlite3 exited \(result.status): \(result.stderr)")
    }
    return result.stdout
  }
}

/// The sqlite3 shell failed.
public struct SQLite3ShellError: Error, CustomStringConvertible {
  /// What it said.
  public var message: String
  /// The message.
  public var description: String { message }
}
