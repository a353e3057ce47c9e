import CommandLineKit
import SessionStorage
import SessionViewModels

extension SessionCtl {
  /// `sessionctl status`: the active account, the roster's size and the head cursor, read in
  /// one transaction, and the greeting an app would show: the active account's state is
  /// injected into a `GreetingViewModel`, which needs nothing more than `SessionProviding`.
  struct Status: BlockingCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "status", abstract: "Show the active account, how many accounts there are, and the head cursor.",
      discussion: """
        Reads the file without writing to it; a missing file is reported (exit 1) and not
        created. 'accounts' lists the whole roster.
        """)

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let store = try context.openForReading(location)
      let roster = try store.roster()
      let greeting = GreetingViewModel(session: roster.state).greeting
      try context.output.write(context.presenter.status(roster, path: location.display, greeting: greeting))
      return .success
    }
  }

  /// `sessionctl accounts`: the roster, one line per account, the active one marked.
  struct Accounts: BlockingCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "accounts", abstract: "List the roster: every account, the active one marked with '*'.",
      discussion: """
        One line per account, in the order they joined: '*' for the active account, the
        username, whether it is signed in, since when (its last change), and its id, which
        the store never gives to another account. With --json, one line: the roster with
        its cursor. Reads the file without writing to it; a missing file is reported
        (exit 1) and not created.
        """)

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let store = try context.openForReading(try context.location())
      try context.output.write(context.presenter.accounts(try store.roster()))
      return .success
    }
  }
}

extension Presenter {
  /// `status`: the active account, its state, the roster's size, the cursor and the file;
  /// people also get the greeting.
  func status(_ roster: SessionRoster, path: String, greeting: String) -> [String] {
    if json { return [JSONValue.status(roster).encoded] }
    let state = roster.state
    return table([
      ("greeting", Self.display(greeting)),
      ("active", roster.active.map { Self.display($0.username) } ?? "none"),
      ("logged in", state.isLoggedIn ? "yes" : "no"),
      ("updated", Timestamp.format(state.updatedAt)),
      ("accounts", String(roster.accounts.count)),
      ("cursor", roster.cursor.description),
      ("database", Self.display(path)),
    ])
  }

  /// `accounts`: `* alice  logged in   since 2026-12-02T04:49:25.795Z  id 1`, one line per
  /// account, or `no accounts`.
  func accounts(_ roster: SessionRoster) -> [String] {
    if json { return [roster.jsonLine] }
    guard !roster.accounts.isEmpty else { return ["no accounts"] }
    let names = roster.accounts.map { Self.display($0.username) }
    let width = names.map(\.count).max() ?? 0
    return zip(roster.accounts, names).map { (account: Account, name: String) -> String in
      let marker: String = account.id == roster.activeID ? "*" : " "
      let state: String = account.isLoggedIn ? "logged in " : "logged out"
      let since: String = Timestamp.format(account.updatedAt)
      return "\(marker) \(Self.padded(name, width))  \(state)  since \(since)  id \(account.id)"
    }
  }
}

extension SessionCtl {
  /// `sessionctl history`: the changes after `--since` (or from the oldest kept), page by page.
  struct History: BlockingCommand {
    /// How many changes are read per query.
    static let pageSize = 256

    static let spec = CommandSpec(
      "history", abstract: "Print committed changes, oldest first.",
      discussion: """
        Without --since, starts at the oldest change still kept (see 'compact'). With
        --account, only the changes of that account, under the store's own cursors.
        """ + FeedOptions.accountDiscussion,
      options: FeedOptions.declarations)

    /// Where to start (nil: the oldest change kept), and how many changes to print at most.
    let feed: FeedOptions

    init(_ arguments: ParsedArguments) throws {
      feed = try FeedOptions(arguments)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let store = try context.openForReading(try context.location())
      let account = try feed.account.map { try AccountLookup(store: store, username: $0) }
      let cursorWidth = try store.bounds().head.description.count
      var start = feed.since ?? .beginning
      var remaining = feed.limit ?? .max
      while remaining > 0 {
        let limit = min(remaining, Self.pageSize)
        let page: [SessionEntry]
        if let account {
          page = try store.history(from: start, limit: limit, account: account.id)
        } else {
          page = try store.history(from: start, limit: limit)
        }
        guard let last = page.last else { break }
        let originWidth = max(10, page.map { Presenter.display($0.origin).count }.max() ?? 0)
        for entry in page {
          try context.output.write(
            context.presenter.change(entry, cursorWidth: cursorWidth, originWidth: originWidth))
        }
        remaining -= page.count
        start = .after(last.cursor)
      }
      return .success
    }
  }

  /// `sessionctl check`: every verification, then exit 1 if any failed.
  struct Check: BlockingCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "check", abstract: "Verify the file and report every finding.",
      discussion: """
        Runs PRAGMA integrity_check, compares the migration records with this build's,
        checks that the tables, indexes and triggers are exactly the ones the migrations
        create, that the session row is the state the newest change left (also after
        compaction), that every stored time is ISO-8601 UTC with milliseconds, that the
        cursors above the compaction point have no hole and lie between 1 and the largest
        integer, and that the stored username meets the rules. Reads without writing;
        exits 1 when anything fails.
        """)

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let store = try context.openForReading(location)
      let items = try store.check()
      try context.output.write(context.presenter.check(items))
      let failures = items.filter { $0.verdict == .failed }.count
      guard failures == 0 else {
        context.fail(
          "check found \(failures) \(failures == 1 ? "problem" : "problems") in \(location.display)")
        return .failure
      }
      return .success
    }
  }
}

extension Presenter {
  /// `check`: one line per verification.
  func check(_ results: [CheckResult]) -> [String] {
    if json {
      return results.map {
        ([
          "type": "check", "name": .string($0.check.rawValue), "passed": .bool($0.verdict == .passed),
          "detail": .string($0.detail),
        ]
          as JSONValue).encoded
      }
    }
    let width = results.map(\.check.rawValue.count).max() ?? 0
    return results.map {
      "\($0.verdict == .passed ? "ok  " : "FAIL")  \(Self.padded($0.check.rawValue, width))  "
        + Self.display($0.detail)
    }
  }
}

extension SessionCtl {
  /// `sessionctl backup <file> [--force]`: a verified copy of the store, taken while others
  /// keep writing and watching.
  struct Backup: BlockingCommand {
    static let file = CommandLineArgument<String>("file", help: "The backup file to create.")
    static let force = CommandLineFlag("force", help: "Replace <file> if it exists.")

    static let spec = CommandSpec(
      "backup", abstract: "Write a verified copy of the store to <file>.",
      discussion: """
        Copies the store as of one commit with SQLite's online backup API, while other
        processes keep writing and watching. The copy is written to a new private file
        (mode 0600) beside <file>, opened as a store of its own and checked like 'check'
        does, and only then put in place: on any failure nothing is left at <file>. An
        existing <file> is kept unless --force is given. Reads the store without writing.

        Refused with exit 65, also with --force: a <file> that is the store itself or its
        -wal, -shm or -journal file, by any name (a symbolic link to them or to their
        directory, a hard link), and a <file> that exists and is not a regular file (a
        device, a FIFO, a directory).
        """,
      arguments: [file], options: [force])

    /// Where to write, as typed.
    let file: String
    /// Whether an existing file is replaced.
    let force: Bool

    init(_ arguments: ParsedArguments) throws {
      file = try arguments.required(Self.file)
      force = arguments[Self.force]
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      try location.requireFile(for: "backup", instead: "back up its schema with pg_dump --schema=NAME")
      guard location.exists else {
        throw CLIError(.failure, "\(location.path): no database here (nothing to back up)")
      }
      let store = try context.openFileForReading(location).requireFile()
      let result = try store.backup(to: file, overwrite: force)
      context.commitment.record(
        "the backup is written all the same (\(Presenter.display(result.path)), head \(result.head))")
      try context.output.write(context.presenter.backup(result))
      return .success
    }
  }
}

extension Presenter {
  /// `backup`.
  func backup(_ result: SessionFile.BackupResult) -> String {
    if json {
      let value: JSONValue = [
        "type": "backup", "path": .string(result.path), "head": .int(result.head.value),
        "entries": .int(Int64(result.entries)), "bytes": .int(result.bytes),
      ]
      return value.encoded
    }
    return "backed up to \(Self.display(result.path)): head \(result.head), "
      + "\(result.entries) \(result.entries == 1 ? "change" : "changes"), \(result.bytes) bytes, check passed"
  }
}
