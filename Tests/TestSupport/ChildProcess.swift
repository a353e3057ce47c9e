import Foundation

/// A process spawned with `posix_spawn`: explicit arguments and environment, stdin from
/// /dev/null, stdout to a file or a pipe read line by line, stderr to a file. SIGINT,
/// SIGTERM and SIGPIPE start with their default handling whatever the test runner does.
public final class ChildProcess {
  /// Where the child's standard output goes.
  public enum Output {
    /// A file, read after the child exits.
    case file(String)
    /// A pipe, read with ``readLine(timeout:)``.
    case pipe
  }

  /// The process could not be started.
  public struct SpawnError: Error, CustomStringConvertible {
    /// Why.
    public var description: String
  }

  /// A line or an exit did not come in time.
  public struct Timeout: Error, CustomStringConvertible {
    /// What was awaited.
    public var description: String
  }

  /// The child's process id.
  public let pid: pid_t
  private(set) var readEnd: Int32 = -1
  private var buffer: [UInt8] = []
  private var reachedEnd = false
  private var status: Int32?

  /// Held from creating a pipe to spawning, so no other test's child inherits the pipe
  /// before it is marked close-on-exec.
  private static let spawnLock = NSLock()

  /// Spawns `executable`; stdout goes to `stdout`, stderr to the file `stderr`.
  public init(
    _ executable: String, _ arguments: [String], environment: [String: String], stdout: Output, stderr: String
  )
    throws
  {
    Self.spawnLock.lock()
    defer { Self.spawnLock.unlock() }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    var pipeEnds: [Int32] = [-1, -1]
    switch stdout {
    case .file(let path):
      posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    case .pipe:
      guard pipe(&pipeEnds) == 0 else { throw SpawnError(description: "pipe failed") }
      for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
      posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
    }
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    var child: pid_t = 0
    let rc = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
    if pipeEnds[1] >= 0 { close(pipeEnds[1]) }
    guard rc == 0 else {
      if pipeEnds[0] >= 0 { close(pipeEnds[0]) }
      throw SpawnError(description: "cannot spawn \(executable): \(String(cString: strerror(rc)))")
    }
    pid = child
    readEnd = pipeEnds[0]
  }

  deinit {
    if status == nil {
      kill(pid, SIGKILL)
      _ = wait()
    }
    closeOutput()
  }

  /// Closes the test's end of the stdout pipe (the child then gets EPIPE).
  public func closeOutput() {
    if readEnd >= 0 { close(readEnd) }
    readEnd = -1
  }

  /// The next line of a piped stdout, without its newline; nil at end of output.
  /// - Throws: ``Timeout`` when no whole line arrives in time.
  public func readLine(timeout: Duration = .seconds(20)) throws -> String? {
    let deadline = ContinuousClock.now + timeout
    while true {
      if let newline = buffer.firstIndex(of: 0x0A) {
        let line = String(decoding: buffer[..<newline], as: UTF8.self)
        buffer.removeSubrange(...newline)
        return line
      }
      if reachedEnd || readEnd < 0 {
        guard !buffer.isEmpty else { return nil }
        defer { buffer.removeAll() }
        return String(decoding: buffer, as: UTF8.self)
      }
      let remaining = deadline - ContinuousClock.now
      guard remaining > .zero else {
        throw Timeout(
          description: "no line within \(timeout); have \(String(decoding: buffer, as: UTF8.self))")
      }
      var descriptor = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(
        remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000)
      guard poll(&descriptor, 1, max(1, milliseconds)) > 0 else { continue }
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count = chunk.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
      if count > 0 {
        buffer += chunk[..<count]
      } else if count == 0 || errno != EINTR {
        reachedEnd = true
      }
    }
  }

  /// Sends `signal` to the child.
  public func send(_ signal: Int32) { kill(pid, signal) }

  /// Waits for the child to exit: its exit status, or 128 + the signal that killed it.
  @discardableResult
  public func wait() -> Int32 {
    if let status { return status }
    var raw: Int32 = 0
    while waitpid(pid, &raw, 0) < 0, errno == EINTR {}
    let result = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
    status = result
    return result
  }

  /// Waits at most `timeout` for the child to exit.
  /// - Throws: ``Timeout`` (the child is then killed).
  public func wait(timeout: Duration) throws -> Int32 {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      var raw: Int32 = 0
      let done = waitpid(pid, &raw, WNOHANG)
      if done == pid {
        let result = (raw & 0x7F) == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
        status = result
        return result
      }
      usleep(5_000)
    }
    kill(pid, SIGKILL)
    wait()
    throw Timeout(description: "process \(pid) did not exit within \(timeout)")
  }
}
