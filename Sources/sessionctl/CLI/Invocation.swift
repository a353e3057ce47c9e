import SessionStorage

/// A command line turned into what to do: the command with typed values, the database
/// option and the output style.
struct Invocation: Sendable, Equatable {
  /// What `compact` deletes.
  enum Retention: Sendable, Equatable {
    /// All but the newest N changes.
    case keep(Int)
    /// Every change before a cursor.
    case before(Cursor)
  }

  /// A command with its values.
  enum Command: Sendable, Equatable {
    case status
    case login(String)
    case logout
    case rename(String)
    case watch(since: FeedStart?, limit: Int?)
    case history(since: FeedStart?, limit: Int?)
    case compact(Retention)
    case migrate
    case check
    /// Help for the command at a path (`[]` is the root).
    case help([String])
    case version
    case completion(shell: String)
  }

  /// What to do.
  var command: Command
  /// `--db`, if given.
  var databaseOption: String?
  /// `--json`.
  var json: Bool

  /// Checks what ``ArgumentParser`` left to the commands: numbers, cursors, option
  /// combinations, help topics.
  /// - Throws: ``UsageError`` (exit 64) or ``CLIError`` for invalid values (exit 65).
  init(_ parsed: ParsedArguments, commands: CommandSpec) throws {
    databaseOption = parsed.value("db")
    json = parsed.flag("json")
    let path = parsed.commandPath
    func usage(_ problem: UsageError.Problem) -> UsageError { UsageError(problem, commandPath: path) }

    if parsed.helpRequested {
      command = .help(path)
      return
    }
    if parsed.flag("version") {
      guard path.isEmpty else { throw usage(.invalid("'--version' cannot be combined with a command")) }
      command = .version
      return
    }
    guard let name = path.first else { throw usage(.missingCommand) }
    let arguments = parsed.arguments
    func argument(_ name: String) throws(UsageError) -> String {
      guard let first = arguments.first else { throw usage(.missingArgument(name)) }
      return first
    }
    switch name {
    case "status": command = .status
    case "login": command = .login(try argument("username"))
    case "logout": command = .logout
    case "rename": command = .rename(try argument("username"))
    case "watch", "history":
      let since = try parsed.value("since").map { try Self.resumePoint($0, option: "--since") }
      let limit = try parsed.value("limit").map { try Self.count($0, option: "--limit") }
      command = name == "watch" ? .watch(since: since, limit: limit) : .history(since: since, limit: limit)
    case "compact":
      switch (parsed.value("keep"), parsed.value("before")) {
      case (let keep?, nil): command = .compact(.keep(try Self.count(keep, option: "--keep")))
      case (nil, let before?): command = .compact(.before(try Self.cursor(before, option: "--before")))
      case (_?, _?): throw usage(.invalid("give either '--keep <n>' or '--before <cursor>', not both"))
      case (nil, nil): throw usage(.invalid("'compact' needs '--keep <n>' or '--before <cursor>'"))
      }
    case "migrate": command = .migrate
    case "check": command = .check
    case "help":
      guard let topic = arguments.first else {
        command = .help([])
        return
      }
      guard commands.subcommand(named: topic) != nil else {
        let suggestion = NearestMatch.suggestion(for: topic, among: commands.subcommands.map(\.name))
        throw usage(.unknownCommand(topic, suggestion: suggestion))
      }
      command = .help([topic])
    case "completion":
      let shell = try argument("shell")
      guard shell == "bash" else { throw usage(.invalid("unsupported shell '\(shell)' (supported: bash)")) }
      command = .completion(shell: shell)
    default: throw usage(.unknownCommand(name, suggestion: nil))
    }
  }

  /// A cursor as typed: a whole number ≥ 0.
  static func cursor(_ text: String, option: String) throws(CLIError) -> Cursor {
    guard let cursor = Cursor(text) else {
      throw .invalidInput("invalid cursor '\(text)' for '\(option)': expected a whole number ≥ 0")
    }
    return cursor
  }

  /// Where `--since` resumes: `CURSOR`, or `CURSOR@TIME` with the time printed for that
  /// change, which is checked so that a rewritten history is not resumed silently.
  static func resumePoint(_ text: String, option: String) throws(CLIError) -> FeedStart {
    guard let at = text.firstIndex(of: "@") else { return .after(try cursor(text, option: option)) }
    let time = String(text[text.index(after: at)...])
    guard let cursor = Cursor(String(text[..<at])), let date = Timestamp.parse(time) else {
      throw .invalidInput(
        "invalid cursor '\(text)' for '\(option)': expected a whole number ≥ 0, or one followed by @ and "
          + "the time printed for that change (e.g. 8@2026-11-29T20:33:36.562Z)")
    }
    return .afterEntry(cursor, time: date)
  }

  /// A count as typed: a whole number ≥ 0.
  static func count(_ text: String, option: String) throws(CLIError) -> Int {
    guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text) else {
      throw .invalidInput("invalid value '\(text)' for '\(option)': expected a whole number ≥ 0")
    }
    return value
  }
}
