import CommandLineKit
import SessionStorage

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

/// The sessionctl tool: parses a command line against ``root``, runs the command it names
/// (one of ``commands``) and turns every outcome into output and an exit status.
struct SessionCtl: Sendable {
  /// The version `--version` prints.
  static let version = "2.0.0"
  /// The origin recorded on sessionctl's writes.
  static let origin = "sessionctl"

  /// What commands run with; its options are filled in from each command line.
  var context: CommandContext
  /// Whether a run ends by closing standard output and checking that close (the process's
  /// own run, in `main`): some file systems report a failed write only there.
  let closesOutput: Bool

  init(environment: [String: String], closesOutput: Bool = false) {
    context = CommandContext(environment: environment)
    self.closesOutput = closesOutput
  }

  /// Runs a command line given as argv's bytes (without the program name): an argument
  /// that is not valid UTF-8 is refused (exit 65) instead of being repaired into a name.
  func run(rawArguments: [[UInt8]]) async -> Int32 {
    do {
      return await run(try Self.decode(rawArguments))
    } catch {
      signal(SIGPIPE, SIG_IGN)
      return Self.report(error, in: context).rawValue
    }
  }

  /// Runs a command line given as argv's bytes on the main thread, without starting Swift
  /// concurrency's threads, when it needs none: help, `--version`, a line that is refused,
  /// and every ``BlockingCommand``. Returns nil, having run and printed nothing, for a command
  /// that needs concurrency (`watch`): ``run(rawArguments:)`` runs that one.
  @MainActor
  func runBlocking(rawArguments: [[UInt8]]) -> Int32? {
    signal(SIGPIPE, SIG_IGN)
    var context = self.context
    context.commitment = Commitment()
    do {
      let parsed = try CommandLineParser(root: Self.root).parse(try Self.decode(rawArguments))
      context.options = try GlobalOptions(parsed)
      let status: ExitCode
      switch try Self.command(parsed, in: context) {
      case .done(let done): status = done
      case .command(let command as any BlockingCommand): status = try command.runBlocking(context)
      case .command: return nil
      }
      if closesOutput { try context.output.close() }
      return status.rawValue
    } catch {
      return Self.report(error, in: context).rawValue
    }
  }

  /// The arguments as strings, or an error naming the first one that is not valid UTF-8.
  static func decode(_ rawArguments: [[UInt8]]) throws(CLIError) -> [String] {
    try rawArguments.enumerated().map { (index, bytes) throws(CLIError) -> String in
      guard let text = String(validating: bytes, as: UTF8.self) else {
        throw .invalidInput("argument \(index + 1) is not valid UTF-8")
      }
      return text
    }
  }

  /// Runs a command line (without the program name) and returns the exit status.
  func run(_ arguments: [String]) async -> Int32 {
    // A closed pipe must surface as EPIPE on write, not kill the process.
    signal(SIGPIPE, SIG_IGN)
    var context = self.context
    context.commitment = Commitment()
    do {
      let parsed = try CommandLineParser(root: Self.root).parse(arguments)
      context.options = try GlobalOptions(parsed)
      let status = try await Self.execute(parsed, in: context)
      if closesOutput { try context.output.close() }
      return status.rawValue
    } catch {
      return Self.report(error, in: context).rawValue
    }
  }

  /// Help, `--version`, or the command the line names, built from it and run.
  private static func execute(_ parsed: ParsedArguments, in context: CommandContext) async throws -> ExitCode
  {
    switch try command(parsed, in: context) {
    case .done(let status): status
    case .command(let command): try await command.run(context)
    }
  }

  /// What a command line asks for: help or `--version`, printed here, or a command to run.
  private enum Request {
    /// Printed; the exit status.
    case done(ExitCode)
    /// The command the line names, built from it.
    case command(any SessionCommand)
  }

  /// Prints help or the version, or builds the command the line names.
  private static func command(_ parsed: ParsedArguments, in context: CommandContext) throws -> Request {
    if parsed.helpRequested {
      try context.output.write(help(for: parsed.commandPath), terminated: false)
      return .done(.success)
    }
    if parsed[GlobalOptions.version] {
      guard parsed.commandPath.isEmpty else {
        throw parsed.usageError(.invalid("'--version' cannot be combined with a command"))
      }
      try context.output.write(context.presenter.version(version))
      return .done(.success)
    }
    guard let name = parsed.commandPath.first else { throw parsed.usageError(.missingCommand) }
    guard let command = commands.first(where: { $0.spec.name == name }) else {
      throw parsed.usageError(.unknownCommand(name, suggestion: nil))
    }
    return .command(try command.init(parsed))
  }

  /// The help page of the command at `path` (`[]`: the tool's own).
  static func help(for path: [String]) -> String {
    HelpFormatter(root: root).help(for: path)
  }

  /// Prints `error` on stderr the way its kind asks, and returns its exit status.
  static func report(_ error: any Error, in context: CommandContext) -> ExitCode {
    switch error {
    case let failure as LineWriter.Failure:
      // Whatever the command committed stays committed: say so, or it may be done twice.
      context.fail(failure.sentence + (context.commitment.recorded.map { "; " + $0 } ?? ""))
      return .outputFailed
    case let usage as UsageError:
      context.fail(usage.message)
      // Harmless to swallow, as in `fail`: with stderr gone there is nobody to tell.
      try? context.errors.write(HelpFormatter(root: root).lines(after: usage))
      return .usage
    case let error as InvalidValue:
      context.fail(error.message)
      return .invalidInput
    case let error as CLIError:
      context.fail(error.message)
      return error.exitCode
    case let error as SessionStorageError:
      context.fail(
        Self.inOwnTerms(error.description) + Self.hint(for: error.code))
      if error.code == .unavailable { return .unavailable }
      if error.code == .refused { return .refused }
      if error.code == .conflict { return .conflict }
      return [
        .invalidUsername, .invalidArgument, .storeFile, .notARegularFile, .accountNotFound, .usernameTaken,
      ]
      .contains(error.code) ? .invalidInput : .failure
    case let error as FeedError:
      context.fail(error.description + Self.hint(for: error))
      switch error {
      case .cursorCompacted: return .cursorCompacted
      case .historyRewritten: return .historyRewritten
      case .cursorAhead: return .invalidInput
      case .noCursorBefore: return .failure  // a row inserted by hand, not the user's input
      }
    default:
      context.fail(String(describing: error))
      return .failure
    }
  }

  /// A library message with its advice to open the store read-only (an option of the library,
  /// not of sessionctl) said in sessionctl's terms: the commands that only read.
  static func inOwnTerms(_ message: String) -> String {
    message.replacing(
      #/open (the store|it) read-only( to read it)?/#,
      with: "read it with status, history, watch or check (they open it read-only)")
  }

  /// What to type next, in sessionctl's terms, after a store error's own sentence.
  static func hint(for code: SessionStorageError.Code) -> String {
    switch code {
    case .needsMigration: " (run 'sessionctl migrate')"
    case .accountNotFound: " ('sessionctl accounts' lists the roster)"
    case .conflict: " (sessionctl: read the store again, e.g. 'sessionctl status', before writing)"
    default: ""
    }
  }

  /// What to type next, in sessionctl's terms, after a feed error's own sentence.
  static func hint(for error: FeedError) -> String {
    switch error {
    case .cursorCompacted(_, let oldest):
      " (sessionctl: " + (oldest.previous.map { "--since \($0), or " } ?? "") + "watch without --since)"
    case .historyRewritten: " (sessionctl: watch without --since)"
    case .noCursorBefore: " (sessionctl: --since 0)"
    case .cursorAhead: ""
    }
  }
}

/// One sessionctl command as one type: its spec and typed values (``TypedCommand``),
/// and how it runs. Every command is listed once, in ``SessionCtl/commands``; help,
/// completion and usage errors are generated from that list.
protocol SessionCommand: TypedCommand {
  /// Runs the command: results go to the context's output, its exit status is returned.
  /// - Throws: anything ``SessionCtl/report(_:in:)`` turns into a message and an exit status.
  func run(_ context: CommandContext) async throws -> ExitCode
}

/// A command that runs to its end on the main thread and needs no concurrency: `main` runs
/// it before Swift concurrency starts its threads, which would cost a short command more
/// than its work (see ``SessionCtl/runBlocking(rawArguments:)``).
protocol BlockingCommand: SessionCommand {
  /// Runs the command on the main thread, blocking it while the store waits for a lock.
  @MainActor func runBlocking(_ context: CommandContext) throws -> ExitCode
}

extension BlockingCommand {
  @MainActor func run(_ context: CommandContext) async throws -> ExitCode { try runBlocking(context) }
}

extension SessionCtl {
  /// Every command, in the order help lists them: the one list of sessionctl's commands.
  static let commands: [any SessionCommand.Type] = [
    Status.self, Accounts.self, Login.self, Logout.self, Rename.self, Switch.self, Remove.self, Watch.self,
    History.self, Compact.self, Retention.self,
    Migrate.self, Backup.self, Restore.self, Check.self, Help.self, Completion.self,
  ]

  /// The tool's command: the global options, and ``commands`` as its subcommands.
  static let root = CommandSpec(
    "sessionctl",
    abstract: "Show, change and watch who is signed in, in a SessionStorage database.",
    discussion: """
      The database is the file given by --db, else $SESSIONCTL_DB, else
      ${XDG_DATA_HOME:-~/.local/share}/sessionctl/session.db. The first write creates it
      (mode 0600; the default directory with mode 0700). status, history, watch and check
      only read, and create nothing.

      A postgresql://user@host:5432/db?schema=NAME URL (in --db or $SESSIONCTL_DB) names
      a PostgreSQL database instead: the store lives in schema NAME (default public), which
      the first write creates. Passwords come from ~/.pgpass, $PGPASSFILE or $PGPASSWORD
      and are never printed. backup, restore and retention work on files only.

      EXIT STATUS: 0 success; 1 failure (a refused or missing file, a failed check,
      no active account to rename, a full roster);
      64 usage error; 65 invalid input (username, cursor, number, an account no one
      has, a username another account has); 66 cursor compacted
      away; 67 the history followed changed under 'watch', or '--since CURSOR@TIME'
      names a change a restore replaced; 68 a write given --if-cursor found the store
      at another cursor (nothing written); 69 the PostgreSQL server cannot be reached or the
      connection was lost (worth retrying); 74 the result could not be written (a full
      disk, a closed stdout, a reader that went away but from 'watch'; a change made stays
      made); 77 the server refused the connection (no such database or role, login or
      password refused, SSL required); 130 and 143 'watch' stopped by SIGINT and SIGTERM.
      """,
    options: [GlobalOptions.db, GlobalOptions.json, GlobalOptions.version],
    subcommands: commands.map { $0.spec })
}

/// The options of the root command: `--db` and `--json`, which every command takes, and
/// `--version`.
struct GlobalOptions: Sendable {
  static let db = CommandLineOption<String>(
    "db", placeholder: "path", help: "The database file or PostgreSQL URL (default: see 'sessionctl help').",
    isInherited: true,
    completesFiles: true)
  static let json = CommandLineFlag(
    "json", short: "j", help: "Print JSON Lines: one object per line.", isInherited: true)
  /// `--version`, alone on the line.
  static let version = CommandLineFlag("version", help: "Show the version.")

  var db: String?
  var json = false

  init() {}

  init(_ arguments: ParsedArguments) throws(InvalidValue) {
    db = try arguments[Self.db]
    json = arguments[Self.json]
  }
}

/// What a command runs with: the global options, the environment, and where its output
/// and errors go.
struct CommandContext: Sendable {
  /// `--db` and `--json`.
  var options = GlobalOptions()
  /// The process environment (for `$SESSIONCTL_DB`, `$XDG_DATA_HOME`, `$HOME`).
  let environment: [String: String]
  /// Where results go.
  var output = LineWriter.standardOutput
  /// Where errors go.
  var errors = LineWriter.standardError
  /// What the command made permanent before printing its result (for the message when
  /// the result cannot be written); one per run.
  var commitment = Commitment()

  /// Text or JSON Lines, as `--json` asks.
  var presenter: Presenter { Presenter(json: options.json) }

  /// Writes `sessionctl: error: MESSAGE` on stderr.
  func fail(_ message: String) {
    // Harmless to swallow: when stderr itself is gone there is nobody left to tell; the
    // exit status still says it.
    try? errors.write("sessionctl: error: " + Presenter.display(message))
  }
}

extension SessionCtl {
  /// `sessionctl help [<command>]`: the help page of the tool or of one command.
  struct Help: BlockingCommand {
    static let command = CommandLineArgument<String>(
      "command", help: "The command to explain.", isOptional: true, completion: .commandNames)

    static let spec = CommandSpec("help", abstract: "Show help for a command.", arguments: [command])

    /// The command to explain; `[]`: the tool.
    let path: [String]

    init(_ arguments: ParsedArguments) throws {
      guard let topic = try arguments[Self.command] else {
        path = []
        return
      }
      guard SessionCtl.root.subcommand(named: topic) != nil else {
        let names = SessionCtl.root.visibleSubcommands.map(\.name)
        throw arguments.usageError(
          .unknownCommand(topic, suggestion: NearestMatch.suggestion(for: topic, among: names)))
      }
      path = [topic]
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      try context.output.write(SessionCtl.help(for: path), terminated: false)
      return .success
    }
  }

  /// `sessionctl completion bash`: the completion script, generated from ``SessionCtl/root``.
  struct Completion: BlockingCommand {
    static let shell = CommandLineArgument<String>(
      "shell", help: "The shell: bash.", completion: .words(["bash"]))

    static let spec = CommandSpec(
      "completion", abstract: "Print a shell completion script.",
      discussion: "Load it with: source <(sessionctl completion bash)", arguments: [shell])

    init(_ arguments: ParsedArguments) throws {
      let shell = try arguments.required(Self.shell)
      guard shell == "bash" else {
        throw arguments.usageError(.invalid("unsupported shell '\(shell)' (supported: bash)"))
      }
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      try context.output.write(BashCompletion(root: SessionCtl.root).script, terminated: false)
      return .success
    }
  }
}
