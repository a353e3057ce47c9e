import CommandLineKit
import SessionStorage
import SessionStoragePostgres
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

extension SessionCtl {
  /// `sessionctl watch`: a snapshot line (unless `--since` is given), then one line per
  /// change as it commits, until `--limit` changes, SIGINT/SIGTERM, or the output's reader
  /// goes away. With `--exec`, a command runs for each change first, and only the changes
  /// it succeeded on are printed.
  struct Watch: SessionCommand {
    static let exec = CommandLineFlag(
      "exec", help: "Run <command> for each change, one at a time, before printing its line (see above).")
    static let keepGoing = CommandLineFlag(
      "keep-going", help: "With --exec: when the command fails, say so on stderr and go on.")
    static let command = CommandLineArgument<String>(
      "command", help: "With --exec: the program and its arguments, after '--'.", isOptional: true,
      isRepeating: true)

    static let spec = CommandSpec(
      "watch", abstract: "Print changes as they commit, after a snapshot of the current state.",
      discussion: """
        The first line is the state and its cursor; every change committed after it
        follows, one line each, whichever process or tool made it (the sqlite3 shell
        included). With --since, the changes after that cursor come first and there is no
        snapshot line. Stops after --limit changes (exit 0), on SIGINT (exit 130), on
        SIGTERM (exit 143), always after a whole line, and quietly when the reader of its
        output goes away (exit 0). A line that cannot be written otherwise (a full disk, a
        closed stdout) stops it with exit 74.

        With --exec -- <command> [<argument> ...], the command runs once per change, in
        order, one at a time, started without a shell. Its environment has SESSION_CURSOR,
        SESSION_TIME, SESSION_ORIGIN, SESSION_USERNAME (unset when there is none; a value
        with a NUL byte, which no environment variable can carry, is refused: the command
        does not run for that change, which counts as a failure),
        SESSION_LOGGED_IN (1 or 0) and SESSION_EVENTS (e.g. "rename,login"), and the rest
        of watch's environment but the passwords: no PGPASSWORD, and SESSIONCTL_DB without
        its password (a hook that connects finds it in ~/.pgpass or PGPASSFILE). Its standard
        input is the change's JSON line; what it prints goes to stderr. A change's line is
        printed only once its command exited with 0, so '--since CURSOR@TIME' of the last
        line printed resumes with the first change not acted on. When that line cannot be
        written, watch stops (exit 74) before the next command, naming the change. When the command fails,
        watch stops with exit 1 and names the cursor, unless --keep-going. SIGINT and
        SIGTERM are passed on to a running command.
        """,
      arguments: [command], options: FeedOptions.declarations + [exec, keepGoing])

    /// Where to resume (nil: after a snapshot), and after how many changes to exit.
    let feed: FeedOptions
    /// The program and arguments of `--exec`; nil without it.
    let commandWords: [String]?
    let keepsGoing: Bool

    init(_ arguments: ParsedArguments) throws {
      feed = try FeedOptions(arguments)
      let words = try arguments.values(of: Self.command)
      keepsGoing = arguments[Self.keepGoing]
      if arguments[Self.exec] {
        guard !words.isEmpty else {
          throw arguments.usageError(
            .invalid("'--exec' needs a command: watch --exec -- <command> [<argument> ...]"))
        }
        commandWords = words
      } else {
        if let first = words.first {
          throw arguments.usageError(
            .invalid("'watch' runs a command only with '--exec': watch --exec -- \(first) ..."))
        }
        if keepsGoing { throw arguments.usageError(.invalid("'--keep-going' goes with '--exec'")) }
        commandWords = nil
      }
    }

    func run(_ context: CommandContext) async throws -> ExitCode {
      do {
        return try await follow(context)
      } catch let failure as LineWriter.Failure where failure.readerWentAway {
        // Nobody reads any more: that ends watch's job. Every other failed write is an error.
        return .success
      }
    }

    /// Prints the snapshot and the changes, running the command first for each.
    ///
    /// A change's line is written after its command succeeded, never before: the lines
    /// printed are the changes acted on, so a failed command is never taken for done. The
    /// first line that cannot be written stops watch before another command runs; its
    /// change is the only one whose command ran without its line being printed, and the
    /// error names it.
    private func follow(_ context: CommandContext) async throws -> ExitCode {
      let location = try context.location()
      // A command that cannot run is refused before anything is printed.
      let command = try commandWords.map { try ChangeCommand($0, environment: context.environment) }
      let stop = StopSignals.shared
      let listening = stop.listen()
      defer { withExtendedLifetime(listening) {} }
      let store = try context.openForReading(location)
      // Once watching (an error alone is the one line of a failure): a password on the
      // command line can be read by every user of the machine for as long as watch runs.
      if location.source == .named, location.isPostgres, PostgresSessionStore.containsPassword(location.path)
      {
        try context.errors.write(
          "sessionctl: warning: the password in --db can be read by every user of this machine while watch runs "
            + "(ps, /proc/PID/cmdline); keep it in ~/.pgpass or PGPASSFILE instead")
      }
      let presenter = context.presenter
      let output = context.output
      let errors = context.errors
      let changes: SessionSubscription
      if let since = feed.since {
        changes = try store.changes(from: since)
      } else {
        let snapshot = try store.snapshotAndChanges()
        try output.write(presenter.snapshot(SessionSnapshot(state: snapshot.state, cursor: snapshot.cursor)))
        changes = snapshot.changes
      }
      if feed.limit == 0 { return .success }
      // Never silently blind: when file notifications cannot be set up, say once that
      // changes arrive by polling, and why.
      if case .polling(let interval, let reason) = changes.wakeMode {
        try? context.errors.write(
          "sessionctl: warning: cannot watch \(location.isPostgres ? "the database" : "the file") for changes "
            + "(\(reason)); polling every \(interval)")
      }
      // Aligned like `history` for the cursors of today; lines cannot be measured ahead.
      let cursorWidth = try store.bounds().head.description.count
      let limit = feed.limit
      let keepsGoing = keepsGoing
      let printing = Task { () async throws -> ExitCode? in
        var count = 0
        for try await entry in changes {
          switch try command?.run(for: entry, errors: errors) ?? .succeeded {
          case .succeeded:
            let line = presenter.change(entry, cursorWidth: cursorWidth, originWidth: 10)
            if command != nil {
              context.commitment.record(
                "the command succeeded for cursor \(entry.cursor), whose line is not printed: resuming from the "
                  + "last line printed runs it again for cursor \(entry.cursor); "
                  + "--since \(entry.cursor)@\(Timestamp.format(entry.time)) goes on after it")
            }
            try output.write(line)
            context.commitment.clear()
          case .stopped: return nil
          case .failed(let how) where keepsGoing:
            try? errors.write("sessionctl: warning: the command \(how) for cursor \(entry.cursor); going on")
          case .failed(let how):
            context.fail(
              "the command \(how) for cursor \(entry.cursor); its line was not printed: "
                + "resume with --since and the last line printed to run it again")
            return .failure
          }
          count += 1
          if let limit, count >= limit { return nil }
        }
        return nil
      }
      stop.onStop {
        printing.cancel()
        command?.stop(because: stop.reason)
      }
      let failure = try await printing.value
      return stop.reason?.exitCode ?? failure ?? .success
    }
  }
}

/// The options of the commands that read the feed (`watch`, `history`), declared and read
/// once for both, like an option group of swift-argument-parser.
struct FeedOptions: Sendable {
  /// `--since <cursor>`: where to resume.
  static let since = CommandLineOption<FeedStart>(
    "since", placeholder: "cursor",
    help: "Start after this cursor (exclusive), e.g. the last one you saw. As CURSOR@TIME (the "
      + "time printed for that change, to the millisecond) it is checked first: exit 67 if the change "
      + "there committed at another time (a restore replaced it).")
  static let limit = CommandLineOption<Int>(
    "limit", short: "n", placeholder: "n", help: "Stop after this many changes.")

  /// Both, for a command's spec.
  static let declarations: [any NamedOption] = [since, limit]

  /// Where to start (exclusive); nil: the command's own default.
  let since: FeedStart?
  /// How many changes to print at most; nil: no limit.
  let limit: Int?

  init(_ arguments: ParsedArguments) throws(InvalidValue) {
    since = try arguments[Self.since]
    limit = try arguments[Self.limit]
  }
}

extension FeedStart: CommandLineValue {
  /// Where `--since` resumes: `CURSOR`, or `CURSOR@TIME` with the time printed for that
  /// change, which is checked so that a rewritten history is not resumed silently.
  ///
  /// The time is taken only in the form every line prints it, to the millisecond in UTC
  /// (`2026-11-29T20:33:36.562Z`): anything else (no milliseconds, another zone, a
  /// placeholder) is a typing mistake, refused here, never compared with the stored time
  /// and taken for a rewritten history.
  package init(argument: String) throws(InvalidValue) {
    guard let at = argument.firstIndex(of: "@") else {
      do throws(InvalidValue) {
        self = .after(try Cursor(argument: argument))
      } catch {
        throw InvalidValue(
          expected: error.expected + " (a cursor), or CURSOR@TIME with the time printed for that change",
          noun: error.noun)
      }
      return
    }
    let time = String(argument[argument.index(after: at)...])
    guard let cursor = Cursor(String(argument[..<at])) else {
      throw InvalidValue(
        expected: "a whole number ≥ 0 before the '@' (the cursor of a change), then the time printed for it",
        noun: "cursor")
    }
    guard time.utf8.count == Self.printedTimeLength, let date = Timestamp.parse(time) else {
      let why = Timestamp.parse(time) != nil ? "; this one has no milliseconds" : ""
      throw InvalidValue(
        expected: "the time printed for change \(cursor) after the '@', as every line of watch and history "
          + "shows it: YYYY-MM-DDTHH:MM:SS.mmmZ, in UTC, with milliseconds\(why)",
        noun: "time")
    }
    self = .afterEntry(cursor, time: date)
  }

  /// The length of a time as lines print it: `2026-11-29T20:33:36.562Z`.
  static let printedTimeLength = 24
}

extension Cursor: CommandLineValue {
  /// A cursor as typed: a whole number ≥ 0, up to the largest cursor (`Int64.max`).
  package init(argument: String) throws(InvalidValue) {
    guard let cursor = Cursor(argument) else {
      throw InvalidValue(expected: Int.isDigits(argument) ? Int.range : "a whole number ≥ 0", noun: "cursor")
    }
    self = cursor
  }
}

/// The command of `watch --exec`, run once per change, one at a time, with the change in its
/// environment (`SESSION_*`) and its JSON line on standard input. It is spawned with an
/// argument vector, never through a shell, and its output goes to `watch`'s standard error so
/// that standard output keeps only the lines of the changes acted on.
final class ChangeCommand: Sendable {
  /// How one run ended.
  enum Outcome: Sendable, Equatable {
    /// Exit status 0.
    case succeeded
    /// Anything else, as a phrase: "exited with 3", "ended by signal 9", "cannot start …".
    case failed(String)
    /// `watch` was asked to stop before or while it ran.
    case stopped
  }

  /// The program, found in `$PATH` when its name has no slash.
  let executable: String
  /// The words after the program's name.
  let arguments: [String]
  /// `watch`'s own environment, which the command's starts from.
  let environment: [String: String]

  /// The running command, and whether `watch` was asked to stop (then none starts).
  private let running = Mutex<(child: ChildProcess?, stopped: Bool)>((nil, false))

  /// - Throws: ``CLIError`` (exit 1) when the program cannot be found or run.
  init(_ words: [String], environment: [String: String]) throws(CLIError) {
    guard let name = words.first else { throw CLIError(.usage, "'--exec' needs a command") }
    executable = try Self.resolve(name, path: environment["PATH"])
    arguments = Array(words.dropFirst())
    self.environment = Self.inherited(environment)
  }

  /// What the command inherits of `watch`'s environment: all of it but the passwords.
  /// `PGPASSWORD` is left out and `SESSIONCTL_DB` loses its password, so that a hook (or
  /// whatever it starts) never holds one; a hook that connects gets it from `~/.pgpass` or
  /// `PGPASSFILE`, as libpq looks there when no password is given.
  static func inherited(_ environment: [String: String]) -> [String: String] {
    var inherited = environment
    inherited["PGPASSWORD"] = nil
    if let database = inherited["SESSIONCTL_DB"] {
      inherited["SESSIONCTL_DB"] = PostgresSessionStore.withoutPasswords(database)
    }
    return inherited
  }

  /// The path of `name`: as given when it has a slash, else the first executable regular
  /// file of that name in `path` (`/usr/bin:/bin` when unset), like `execvp`.
  static func resolve(_ name: String, path: String?) throws(CLIError) -> String {
    func runnable(_ candidate: String) -> Bool {
      var info = stat()
      return stat(candidate, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(candidate, X_OK) == 0
    }
    if name.contains("/") {
      guard runnable(name) else { throw CLIError(.failure, "cannot run '\(name)': no executable file there") }
      return name
    }
    let directories = (path.flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin:/bin")
      .split(separator: ":", omittingEmptySubsequences: false).map { $0.isEmpty ? "." : String($0) }
    guard let found = directories.map({ $0 + "/" + name }).first(where: runnable) else {
      throw CLIError(.failure, "cannot run '\(name)': not found in PATH")
    }
    return found
  }

  /// The names of the variables that describe a change.
  static let names: Set = [
    "SESSION_CURSOR", "SESSION_TIME", "SESSION_ORIGIN", "SESSION_USERNAME", "SESSION_LOGGED_IN",
    "SESSION_EVENTS",
  ]

  /// The variables that describe `entry` to the command.
  static func variables(for entry: SessionEntry) -> [String: String] {
    var variables = [
      "SESSION_CURSOR": entry.cursor.description,
      "SESSION_TIME": Timestamp.format(entry.time),
      "SESSION_ORIGIN": entry.origin,
      "SESSION_LOGGED_IN": entry.change.after.isLoggedIn ? "1" : "0",
      "SESSION_EVENTS": entry.change.events.map(\.word).joined(separator: ","),
    ]
    variables["SESSION_USERNAME"] = entry.change.after.username
    return variables
  }

  /// The first of `variables` (by name) whose value holds a NUL byte: an environment
  /// variable ends at its first NUL, so the command would get a shortened value (a username
  /// edited in with the sqlite3 shell, cut at the NUL, may be another account's name).
  static func unrepresentable(_ variables: [String: String]) -> String? {
    variables.keys.sorted().first { variables[$0]?.utf8.contains(0) == true }
  }

  /// Runs the command for `entry` and waits for it; `errors` gets what it prints. A change
  /// that one of the variables cannot carry byte for byte is refused: the command does not
  /// run for it, and the outcome says why.
  func run(for entry: SessionEntry, errors: LineWriter) throws -> Outcome {
    let variables = Self.variables(for: entry)
    if let name = Self.unrepresentable(variables) {
      return .failed(
        "was not run (\(name) would hold a NUL byte, which an environment variable cannot carry: the value "
          + "would end there and name something else)")
    }
    // Its own variables replace inherited ones; one it leaves unset is not inherited either.
    var environment = environment.filter { !Self.names.contains($0.key) }
    environment.merge(variables) { $1 }
    let line = entry.jsonLine
    let started = running.withLock { running -> Result<ChildProcess, ChildProcess.SpawnError>? in
      guard !running.stopped else { return nil }
      let result = Result { () throws(ChildProcess.SpawnError) in
        try ChildProcess(
          executable, arguments, environment: environment, stdin: .pipe,
          stdout: .collected { text in
            try? errors.write(text)
            return true
          }, stderr: .inherit)
      }
      if case .success(let child) = result { running.child = child }
      return result
    }
    let child: ChildProcess
    switch started {
    case nil: return .stopped
    case .failure(let error): return .failed(error.description)
    case .success(let started): child = started
    }
    defer { running.withLock { $0.child = nil } }
    // A command that does not read its input may exit first: that is no failure of ours.
    try? child.writeLine(line)
    child.closeInput()
    let status = child.wait()
    // What it printed after its last newline.
    if let rest = try? child.readLine(timeout: .zero) { try? errors.write(rest) }
    if running.withLock({ $0.stopped }) { return .stopped }
    guard status != 0 else { return .succeeded }
    return .failed(child.termination?.description ?? "exited with \(status)")
  }

  /// Starts no more commands, and passes the signal on to the one running, if any: SIGINT
  /// for SIGINT, else SIGTERM.
  func stop(because reason: StopSignals.Reason?) {
    let signal = reason == .interrupt ? SIGINT : SIGTERM
    running.withLock { running in
      running.stopped = true
      running.child?.kill(signal)
    }
  }
}

extension SessionEvent {
  /// The word of `SESSION_EVENTS`: `login`, `logout` or `rename`, as `watch` lines say.
  var word: String {
    switch self {
    case .loggedIn: "login"
    case .loggedOut: "logout"
    case .usernameChanged: "rename"
    }
  }
}

/// Turns SIGINT, SIGTERM and the reader of standard output going away into one stop
/// callback for `watch`; without a listener a signal ends the process with 128 + its number.
///
/// The handler only records the signal and posts a semaphore (async-signal-safe, and needs
/// no descriptor); a thread of ours acts on it, and exits a second later with the stop's
/// status if `watch` is still blocked in `write(2)`. Each line is one `write(2)` of at most
/// `PIPE_BUF` bytes to a pipe, so the output still ends on a whole line.
final class StopSignals: Sendable {
  /// The process's one receiver of SIGINT and SIGTERM.
  static let shared = StopSignals()

  /// Why the command should stop.
  enum Reason: Sendable, Equatable {
    /// SIGINT: exit 130.
    case interrupt
    /// SIGTERM: exit 143.
    case terminate
    /// Standard output's reader is gone: exit 0 quietly.
    case outputClosed

    /// The exit status for this reason.
    var exitCode: ExitCode {
      switch self {
      case .interrupt: .interrupted
      case .terminate: .terminated
      case .outputClosed: .success
      }
    }
  }

  private struct State {
    var reason: Reason?
    var action: (@Sendable () -> Void)?
    var listening = false
  }

  /// Keeps the process listening; dropping it makes signals end the process at once again.
  final class Listening: Sendable {
    private let signals: StopSignals

    fileprivate init(_ signals: StopSignals) { self.signals = signals }

    deinit { signals.state.withLock { $0.listening = false } }
  }

  private let state = Mutex(State())

  private init() {}

  /// Makes SIGINT and SIGTERM end the process at once with exit status 128 + the signal,
  /// without the thread of ``install()``: for the commands that never listen. A backup or a
  /// new store being built goes with it: its private file is removed first.
  static func exitOnSignals() {
    StagedFiles.prepareForSignalHandlers()
    for number in [SIGINT, SIGTERM] {
      signal(number) { number in
        StagedFiles.removeAll()
        _exit(128 + number)
      }
    }
  }

  /// Installs the handler of SIGINT and SIGTERM and starts the thread that acts on them.
  func install() {
    sem_init(signalArrived, 0, 0)
    for number in [SIGINT, SIGTERM] {
      signal(number) { number in
        receivedSignal.pointee = number
        sem_post(signalArrived)
      }
    }
    DetachedThread.start { [self] in
      while true {
        if sem_wait(signalArrived) == 0 { receive(receivedSignal.pointee) }
      }
    }
  }

  private func receive(_ number: Int32) {
    let reason: Reason = number == SIGINT ? .interrupt : .terminate
    guard state.withLock({ $0.listening }) else { _exit(128 + number) }
    trigger(reason)
    DetachedThread.sleep(seconds: 1)
    _exit(reason.exitCode.rawValue)
  }

  /// Starts listening: SIGINT and SIGTERM stop the command instead of the process while
  /// the result lives, and a closed `descriptor` (a pipe or socket) counts as a stop request.
  func listen(watchingOutput descriptor: Int32 = STDOUT_FILENO) -> Listening {
    state.withLock { $0.listening = true }
    var info = stat()
    if fstat(descriptor, &info) == 0,
      (info.st_mode & S_IFMT) == S_IFIFO || (info.st_mode & S_IFMT) == S_IFSOCK
    {
      DetachedThread.start { [weak self] in
        var watched = pollfd(fd: descriptor, events: 0, revents: 0)
        _ = try? retryingOnInterrupt { poll(&watched, 1, -1) }
        if watched.revents & Int16(POLLERR | POLLHUP) != 0 { self?.trigger(.outputClosed) }
      }
    }
    return Listening(self)
  }

  /// Why the command was asked to stop, if it was.
  var reason: Reason? { state.withLock { $0.reason } }

  /// Runs `action` once on the first stop request (right away if one already came).
  func onStop(_ action: @escaping @Sendable () -> Void) {
    let runNow = state.withLock { state in
      if state.reason != nil { return true }
      state.action = action
      return false
    }
    if runNow { action() }
  }

  private func trigger(_ reason: Reason) {
    let action = state.withLock { state -> (@Sendable () -> Void)? in
      guard state.reason == nil else { return nil }
      state.reason = reason
      defer { state.action = nil }
      return state.action
    }
    action?()
  }
}

// What the signal handler touches: it may only store a number and post a semaphore
// (both async-signal-safe), so these are plain memory, set up once and never freed.
nonisolated(unsafe) private let receivedSignal = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
nonisolated(unsafe) private let signalArrived = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
