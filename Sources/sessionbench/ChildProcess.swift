import Dispatch
import Foundation
import Synchronization

/// A `sessionbench` child (a subscriber or a raw watcher) spawned by a scenario. It reads
/// commands on its stdin and writes one line per event on its stdout: `CURSOR NANOSECONDS`
/// for each entry it received, which goes to ``Arrivals``, and words (`ready …`,
/// `cpu …`) that the scenario reads with ``controlLine(timeout:)``. Closing its stdin
/// ends it.
final class ChildProcess: Sendable {
  let pid: pid_t
  private let input: Int32
  private let lines = LineQueue()
  private let finished = DispatchSemaphore(value: 0)
  private let closed = Mutex(false)

  /// Starts `sessionbench ARGUMENTS…`, reporting received cursors to `arrivals`.
  init(_ arguments: [String], arrivals: Arrivals?) throws {
    var toChild: [Int32] = [0, 0]
    var fromChild: [Int32] = [0, 0]
    guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
      throw BenchError("pipe: \(String(cString: strerror(errno)))")
    }
    // Only this process's own end may survive exec, and only as the child's stdin/stdout.
    for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
    posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
    let executable = Self.executable
    let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    close(toChild[0])
    close(fromChild[1])
    guard rc == 0 else {
      close(toChild[1])
      close(fromChild[0])
      throw BenchError("cannot start \(executable): \(String(cString: strerror(rc)))")
    }
    self.pid = pid
    input = toChild[1]
    let output = fromChild[0]
    let (lines, finished) = (self.lines, self.finished)
    let thread = Thread {
      Self.readLines(output, lines: lines, arrivals: arrivals)
      close(output)
      finished.signal()
    }
    thread.name = "child \(pid)"
    thread.start()
  }

  /// This executable, to spawn again with a hidden subcommand.
  static var executable: String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
  }

  /// The next line that is not a received cursor.
  func controlLine(timeout: Duration = .seconds(30)) throws -> String {
    guard let line = lines.pop(timeout: timeout) else {
      throw BenchError("child \(pid) said nothing within \(timeout) (see its stderr above)")
    }
    return line
  }

  /// Waits for the child's `ready` line.
  func waitUntilReady() throws {
    let line = try controlLine()
    guard line.hasPrefix("ready") else { throw BenchError("child \(pid) said '\(line)' instead of ready") }
  }

  /// Sends one command line.
  func send(_ command: String) {
    let bytes = Array((command + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
  }

  /// The CPU time the child has used so far, in nanoseconds.
  func cpuTime() throws -> UInt64 {
    send("cpu")
    let line = try controlLine()
    guard line.hasPrefix("cpu "), let value = UInt64(line.dropFirst(4)) else {
      throw BenchError("child \(pid) answered '\(line)' to cpu")
    }
    return value
  }

  /// Closes the child's stdin and reaps it; kills it (by pid) if it does not exit in 5 s.
  func finish() {
    let first = closed.withLock { closed in
      defer { closed = true }
      return !closed
    }
    guard first else { return }
    close(input)
    if finished.wait(timeout: .now() + 5) == .timedOut { kill(pid, SIGKILL) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
  }

  deinit { finish() }

  private static func readLines(_ fd: Int32, lines: LineQueue, arrivals: Arrivals?) {
    var pending: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return }
      pending += chunk[0..<count]
      while let newline = pending.firstIndex(of: 0x0A) {
        let line = pending[..<newline]
        pending.removeSubrange(...newline)
        if let first = line.first, (0x30...0x39).contains(first) {
          let fields = line.split(separator: 0x20)
          if fields.count == 2, let cursor = Int64(String(decoding: fields[0], as: UTF8.self)),
            let time = UInt64(String(decoding: fields[1], as: UTF8.self))
          {
            arrivals?.arrive(cursor, at: time)
            continue
          }
        }
        lines.push(String(decoding: line, as: UTF8.self))
      }
    }
  }
}

/// Lines handed from a reader thread to a waiting scenario.
final class LineQueue: Sendable {
  private let lines = Mutex<[String]>([])
  private let available = DispatchSemaphore(value: 0)

  func push(_ line: String) {
    lines.withLock { $0.append(line) }
    available.signal()
  }

  func pop(timeout: Duration) -> String? {
    let nanoseconds = Int(timeout.components.seconds) * 1_000_000_000
    guard available.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else { return nil }
    return lines.withLock { $0.removeFirst() }
  }
}
