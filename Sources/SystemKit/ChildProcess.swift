import Synchronization

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

/// A process started with `posix_spawn`: explicit arguments (bytes, when they must be
/// invalid UTF-8) and environment, and a choice for each standard stream. SIGINT, SIGTERM
/// and SIGPIPE start with their default action and no signal is blocked, whatever this
/// process does with them. It joins ``ChildGroup``'s process group, so it ends with this
/// process, however that ends. It is reaped with `waitpid` (not Foundation's `Process`, whose
/// `waitUntilExit` waits in 50 ms slices of a run loop); a child dropped before it ended
/// is killed and reaped.
package final class ChildProcess: Sendable {
  /// Where the child's standard input comes from.
  package enum Input: Sendable {
    /// `/dev/null`: the child reads end of file.
    case null
    /// A pipe this process writes with ``writeLine(_:)`` and closes with ``closeInput()``.
    case pipe
  }

  /// Where one of the child's outputs goes.
  package enum Output: Sendable {
    /// `/dev/null`.
    case null
    /// This process's own descriptor (a child's errors show up beside ours).
    case inherit
    /// A file, created or truncated, mode 0600.
    case file(String)
    /// Standard output only: a pipe read when asked, by ``readLine(timeout:)``. Until then
    /// a child that fills the pipe waits in `write(2)`, as behind a stalled reader.
    case pipe
    /// Standard output only: a pipe a thread of this process reads as the lines arrive,
    /// kept in ``lines``. A line `intercept` returns true for is taken by it and not kept.
    case collected(intercept: (@Sendable (String) -> Bool)? = nil)
  }

  /// The process could not be started.
  package struct SpawnError: Error, CustomStringConvertible {
    /// Why.
    package var description: String

    /// An error saying `description`.
    package init(description: String) { self.description = description }
  }

  /// A line or an exit did not come in time.
  package struct Timeout: Error, CustomStringConvertible {
    /// What was awaited.
    package var description: String
  }

  /// The child's process id.
  package let pid: pid_t
  /// The program that was started.
  package let executable: String
  private let input: Mutex<Int32>
  let output: OutputLines?
  /// How it ended, once reaped.
  let ended = Mutex<Termination?>(nil)
  /// Held around `waitpid`: one call at a time.
  let reaping = Mutex(())

  /// Starts `executable` with `arguments`.
  /// - Parameters:
  ///   - environment: the whole environment of the child; nil passes this process's own.
  ///   - stdin, stdout, stderr: where each standard stream goes. Only `stdout` can be a pipe.
  /// - Throws: ``SpawnError``.
  package convenience init(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, stdin: Input = .null,
    stdout: Output = .collected(), stderr: Output = .inherit
  ) throws(SpawnError) {
    try self.init(
      executable, rawArguments: arguments.map { Array($0.utf8) }, environment: environment, stdin: stdin,
      stdout: stdout, stderr: stderr)
  }

  /// Starts `executable` with arguments given as bytes (an argument vector may hold any
  /// byte but NUL, invalid UTF-8 included).
  /// - Throws: ``SpawnError``.
  package convenience init(
    _ executable: String, rawArguments: [[UInt8]], environment: [String: String]? = nil, stdin: Input = .null,
    stdout: Output = .collected(), stderr: Output = .inherit
  ) throws(SpawnError) {
    let spawned = try Self.spawn(
      executable, rawArguments: rawArguments, environment: environment, stdin: stdin, stdout: stdout,
      stderr: stderr)
    self.init(executable, spawned, stdout: stdout)
  }

  /// A child that ``spawn(_:rawArguments:environment:stdin:stdout:stderr:)`` started.
  init(_ executable: String, _ spawned: Spawned, stdout: Output) {
    self.executable = executable
    pid = spawned.pid
    input = Mutex(spawned.input)
    switch stdout {
    case .pipe: output = OutputLines(onDemand: spawned.output)
    case .collected(let intercept):
      output = OutputLines(collecting: spawned.output, name: "child \(spawned.pid)", intercept)
    case .null, .inherit, .file: output = nil
    }
  }

  /// A started child: its pid and this process's ends of its piped streams (-1 for none).
  struct Spawned: Sendable {
    var pid: pid_t
    var input: Int32
    var output: Int32
  }

  /// Starts the child. `posix_spawn` returns once the child has executed the program (the
  /// child runs first, on a loaded machine for a while), and one spawn runs at a time (see
  /// `Pipes.withNoPipeBeingMade`): async callers run this on a thread of their own.
  static func spawn(
    _ executable: String, rawArguments: [[UInt8]], environment: [String: String]?, stdin: Input,
    stdout: Output, stderr: Output
  ) throws(SpawnError) -> Spawned {
    let argv = ([Array(executable.utf8)] + rawArguments).map(Self.cString) + [nil]
    let envp =
      (environment ?? ProcessInfo.processInfo.environment).map {
        Self.cString(Array("\($0.key)=\($0.value)".utf8))
      }
      + [nil]
    defer { for pointer in argv + envp { pointer?.deallocate() } }
    return try Pipes.withNoPipeBeingMade { makePipe throws(SpawnError) in
      var streams = try Streams(stdin: stdin, stdout: stdout, stderr: stderr, makePipe: makePipe)
      defer { streams.destroy() }
      let group = ChildGroup.group(makePipe)
      var attributes = posix_spawnattr_t()
      Self.setSignalDefaults(&attributes, group: group)
      defer { posix_spawnattr_destroy(&attributes) }
      var pid: pid_t = 0
      var rc = posix_spawn(&pid, executable, &streams.actions, &attributes, argv, envp)
      if rc == EPERM, let group {
        // The group ended under us (its guardian was killed): start in this process's own.
        ChildGroup.forget(group)
        posix_spawnattr_destroy(&attributes)
        Self.setSignalDefaults(&attributes, group: nil)
        rc = posix_spawn(&pid, executable, &streams.actions, &attributes, argv, envp)
      }
      streams.closeChildEnds()
      guard rc == 0 else {
        streams.closeParentEnds()
        throw SpawnError(description: "cannot start \(executable): \(Errno(rawValue: rc))")
      }
      return Spawned(pid: pid, input: streams.input, output: streams.output)
    }
  }

  deinit {
    closeInput()
    if ended.withLock({ $0 }) == nil {
      send(SIGKILL, to: pid)
      _ = reap(blocking: true)
    }
    output?.closeOnDemand()
  }

  /// This process's own executable (`/proc/self/exe`, else its first argument), to start
  /// another instance of it, or to find the programs built beside it.
  package static var currentExecutable: String {
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
      ?? URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
  }

  /// Sends `signal` to the child, unless it was reaped already (its pid may be reused).
  package func kill(_ signal: Int32) {
    guard ended.withLock({ $0 }) == nil else { return }
    send(signal, to: pid)
  }

  // MARK: Standard input

  /// Writes `line` and a newline to a piped standard input.
  /// - Throws: the ``Errno`` of `write` (``Errno/brokenPipe`` once the child closed it).
  package func writeLine(_ line: String) throws(Errno) {
    try input.withLock { fd throws(Errno) in
      guard fd >= 0 else { throw Errno.brokenPipe }
      try writeAll(fd, Array((line + "\n").utf8))
    }
  }

  /// Closes a piped standard input (the child reads end of file); true the first time.
  @discardableResult
  package func closeInput() -> Bool {
    input.withLock { fd in
      guard fd >= 0 else { return false }
      close(fd)
      fd = -1
      return true
    }
  }

  // MARK: Standard output

  /// The next line of a piped standard output, without its newline; at the end of the
  /// output, a last line that has no newline, then nil.
  /// - Throws: ``Timeout`` when no line arrives in time.
  package func readLine(timeout: Duration = .seconds(20)) throws(Timeout) -> String? {
    guard let output else { return nil }
    guard let line = output.next(before: .now + timeout) else {
      throw Timeout(description: "no line from \(executable) within \(timeout); have \(output.partial)")
    }
    return line
  }

  /// The whole lines the child printed so far (for a `.pipe`, so far read from it), those
  /// ``readLine(timeout:)`` returned included.
  package var lines: [String] { output?.all ?? [] }

  /// Waits until a line satisfying `predicate` was printed; false when none did in time.
  package func waitForLine(within timeout: Duration = .seconds(10), where predicate: (String) -> Bool) -> Bool
  {
    output?.waitForLine(before: .now + timeout, where: predicate) ?? false
  }

  /// Closes this process's end of a `.pipe` standard output: the child's next write fails
  /// with `EPIPE` (by default SIGPIPE ends it). ``readLine(timeout:)`` returns nil after.
  package func closeOutput() { output?.closeOnDemand() }

  /// Waits at most `timeout` for a `.collected` output to end (the child and whatever
  /// inherited its output closed it); true when it did.
  package func waitForEndOfOutput(timeout: Duration) -> Bool {
    output?.waitForEnd(before: .now + timeout) ?? true
  }
}

extension ChildProcess {
  /// Turns `bytes` into a C string this type deallocates.
  fileprivate static func cString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar>? {
    let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
    for (index, byte) in bytes.enumerated() { pointer[index] = CChar(bitPattern: byte) }
    pointer[bytes.count] = 0
    return pointer
  }

  /// Initializes spawn attributes: SIGINT, SIGTERM and SIGPIPE with their default action, no signal
  /// blocked. A test runner or a driver that ignores or blocks them does not pass that on.
  /// With `group`, the child joins that process group (``ChildGroup``).
  fileprivate static func setSignalDefaults(_ attributes: inout posix_spawnattr_t, group: pid_t?) {
    posix_spawnattr_init(&attributes)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGPIPE] { sigaddset(&defaults, signal) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
    if let group {
      posix_spawnattr_setpgroup(&attributes, group)
      flags |= POSIX_SPAWN_SETPGROUP
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))
  }
}

/// `kill(2)`, under a name a method called `kill` does not hide.
private func send(_ signal: Int32, to pid: pid_t) { kill(pid, signal) }

/// The file actions that connect a child's standard streams, and the pipe ends made for them.
private struct Streams {
  var actions = posix_spawn_file_actions_t()
  /// This process's end of a piped stdin, or -1.
  var input: Int32 = -1
  /// This process's end of a piped stdout, or -1.
  var output: Int32 = -1
  /// The ends that became the child's (closed here once it started).
  var childEnds: [Int32] = []

  init(
    stdin: ChildProcess.Input, stdout: ChildProcess.Output, stderr: ChildProcess.Output,
    makePipe: () throws(Errno) -> (read: Int32, write: Int32)
  ) throws(ChildProcess.SpawnError) {
    posix_spawn_file_actions_init(&actions)
    do {
      switch stdin {
      case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
      case .pipe:
        let ends = try Self.pipe(makePipe)
        (input, childEnds) = (ends.write, [ends.read])
        posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
      }
      switch stdout {
      case .pipe, .collected:
        let ends = try Self.pipe(makePipe)
        (output, childEnds) = (ends.read, childEnds + [ends.write])
        posix_spawn_file_actions_adddup2(&actions, ends.write, 1)
      case .null, .inherit, .file: try connect(1, to: stdout)
      }
      try connect(2, to: stderr)
    } catch {
      closeChildEnds()
      closeParentEnds()
      destroy()
      throw error
    }
  }

  private static func pipe(
    _ makePipe: () throws(Errno) -> (read: Int32, write: Int32)
  ) throws(ChildProcess.SpawnError) -> (read: Int32, write: Int32) {
    do {
      return try makePipe()
    } catch {
      throw ChildProcess.SpawnError(description: "cannot make a pipe: \(error)")
    }
  }

  private mutating func connect(_ fd: Int32, to output: ChildProcess.Output) throws(ChildProcess.SpawnError) {
    switch output {
    case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
    case .inherit: break
    case .file(let path):
      posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    case .pipe, .collected: throw ChildProcess.SpawnError(description: "only standard output can be a pipe")
    }
  }

  mutating func closeChildEnds() {
    for end in childEnds { close(end) }
    childEnds = []
  }

  mutating func closeParentEnds() {
    for end in [input, output] where end >= 0 { close(end) }
    (input, output) = (-1, -1)
  }

  mutating func destroy() { posix_spawn_file_actions_destroy(&actions) }
}
