import CommandLineKit
import SessionStorage

/// The option every write takes: `--if-cursor <cursor>`, the conditional write.
enum WriteOptions {
  static let ifCursor = CommandLineOption<Cursor>(
    "if-cursor", placeholder: "cursor",
    help: "Write only while the store's newest cursor is <cursor>; otherwise exit 68 and write nothing.")

  /// What `--if-cursor` asks the write to expect: the store still at that head.
  static func condition(_ arguments: ParsedArguments) throws(InvalidValue) -> WriteCondition? {
    try arguments[ifCursor].map { .head($0) }
  }

  /// What every write's help says about `--if-cursor`.
  static let discussion = """
    With --if-cursor <cursor> the write happens only while the store's newest cursor is
    still <cursor> (the one 'status' or the last line you read printed); when another
    write committed in between, it changes nothing and exits 68.
    """
}

extension SessionCtl {
  /// `sessionctl login <username>`: the change, or "no change" when that account is already
  /// signed in and active.
  struct Login: BlockingCommand {
    static let username = CommandLineArgument<String>("username", help: "The user to sign in as.")

    static let spec = CommandSpec(
      "login", abstract: "Sign in as <username> and make it the active account.",
      discussion: """
        An account of that name signs in and becomes the active one; any other name joins
        the roster as a new account, signed in and active. Other accounts stay as they
        are, signed in or not. Signing in as the active account, already signed in,
        changes nothing and prints "no change".

        A username is 1 to 256 characters (at most 1024 bytes in UTF-8), with no control
        characters, no invisible or bidirectional format characters (U+200B, U+FEFF,
        U+202E...; emoji keep their joiners), no unassigned or private-use code points,
        and no leading or trailing whitespace; it is stored in Unicode NFC. Use '--'
        before a username that starts with a dash. A store holds at most 1000 accounts.
        """ + "\n\n" + WriteOptions.discussion,
      arguments: [username], options: [WriteOptions.ifCursor])

    /// Who signs in, as typed.
    let username: String
    let condition: WriteCondition?

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
      condition = try WriteOptions.condition(arguments)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let write = try SessionWrite.logIn(username, expecting: condition)  // before the file is created
      let store = try context.openForWriting(location, expecting: condition)
      return try context.printWrite(try store.blocking.outcome(of: write)) {
        "already logged in as \(Presenter.display($0.state.username))"
      }
    }
  }

  /// `sessionctl logout [<username> | --all]`: the changes, or "no change" when the account
  /// (or every account) was signed out already.
  struct Logout: BlockingCommand {
    static let username = CommandLineArgument<String>(
      "username", help: "The account to sign out (default: the active one).", isOptional: true)
    static let all = CommandLineFlag("all", help: "Sign out every signed-in account, one change each.")

    static let spec = CommandSpec(
      "logout", abstract: "Sign out the active account, a named one, or all (they stay in the roster).",
      discussion: """
        Without arguments, signs out the active account, which stays active with its
        username kept. With <username>, signs out that account, active or not. With --all
        (not with <username>), signs out every signed-in account in one transaction, one
        change (and one line) each. An account already signed out (or no active account)
        changes nothing and prints "no change".
        """ + "\n\n" + WriteOptions.discussion,
      arguments: [username], options: [all, WriteOptions.ifCursor])

    /// What to sign out.
    enum Target: Equatable {
      case active
      case named(String)
      case all
    }

    let target: Target
    let condition: WriteCondition?

    init(_ arguments: ParsedArguments) throws {
      let name = try arguments[Self.username]
      if arguments[Self.all] {
        if let name {
          throw arguments.usageError(
            .invalid("give either '<username>' or '--all' to 'logout', not both (got '\(name)' and '--all')"))
        }
        target = .all
      } else {
        target = name.map(Target.named) ?? .active
      }
      condition = try WriteOptions.condition(arguments)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      switch target {
      case .active:
        let write = try SessionWrite.logOut(expecting: condition)
        let store = try context.openForWriting(location, expecting: condition)
        return try context.printWrite(try store.blocking.outcome(of: write)) { found in
          found.state.username.map { "\(Presenter.display($0)) is not logged in" } ?? "no account is active"
        }
      case .named(let name):
        let write = try SessionWrite.logOut(name, expecting: condition)
        let store = try context.openNamingAccount(location, name)
        return try context.printWrite(try store.blocking.outcome(of: write)) { _ in
          "\(Presenter.display(name)) is not logged in"
        }
      case .all:
        let write = try SessionWrite.logOutAll(expecting: condition)
        let store = try context.openForWriting(location, expecting: condition)
        return try context.printWrite(try store.blocking.outcome(of: write)) { _ in "nobody is logged in" }
      }
    }
  }

  /// `sessionctl rename <username> [--account <old>]`: the change, or "no change" when the
  /// username is already that.
  struct Rename: BlockingCommand {
    static let username = CommandLineArgument<String>(
      "username", help: "The new username (same rules as 'login').")
    static let account = CommandLineOption<String>(
      "account", placeholder: "username", help: "Rename this account instead of the active one.")

    static let spec = CommandSpec(
      "rename", abstract: "Rename the active account (or --account's); the login state stays as it is.",
      discussion: """
        Renames the active account, or with --account the account of that name, active or
        not (no switch needed, so watchers see one change). A name another account has is
        refused (exit 65). With no active account, the name joins the roster, signed out
        and active (as a new file took its first username before accounts).
        """ + "\n\n" + WriteOptions.discussion,
      arguments: [username], options: [account, WriteOptions.ifCursor])

    /// The new username, as typed.
    let username: String
    /// The account renamed; nil: the active one.
    let account: String?
    let condition: WriteCondition?

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
      account = try arguments[Self.account]
      condition = try WriteOptions.condition(arguments)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let newName = try Username.validated(username)  // before the file is created
      let write = try SessionWrite.rename(account, to: newName, expecting: condition)
      let store: SessionStore
      if let account {
        store = try context.openNamingAccount(location, account)
      } else {
        store = try context.openForWriting(location, expecting: condition)
      }
      return try context.printWrite(try store.blocking.outcome(of: write)) { _ in
        "the username is already \(Presenter.display(newName))"
      }
    }
  }

  /// `sessionctl switch <username>`: the change, or "no change" when that account is active.
  struct Switch: BlockingCommand {
    static let username = CommandLineArgument<String>("username", help: "The account to make active.")

    static let spec = CommandSpec(
      "switch", abstract: "Make another account of the roster the active one.",
      discussion: """
        Changes no login state: the account active before stays signed in (or not), and
        the one switched to is active whether it is signed in or not. A name no account
        has is refused (exit 65); switching to the active account prints "no change".
        """ + "\n\n" + WriteOptions.discussion,
      arguments: [username], options: [WriteOptions.ifCursor])

    let username: String
    let condition: WriteCondition?

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
      condition = try WriteOptions.condition(arguments)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let write = try SessionWrite.switchTo(username, expecting: condition)
      let store = try context.openNamingAccount(location, username)
      return try context.printWrite(try store.blocking.outcome(of: write)) { found in
        "\(Presenter.display(found.state.username)) is already the active account"
      }
    }
  }

  /// `sessionctl remove <username>`: the change that takes the account out of the roster.
  struct Remove: BlockingCommand {
    static let username = CommandLineArgument<String>("username", help: "The account to remove.")

    static let spec = CommandSpec(
      "remove", abstract: "Take an account out of the roster (signing it out).",
      discussion: """
        The account leaves the roster in one change (signed out first when it was signed
        in); its history stays in the feed ('history --account <username>' still finds
        it). Removing the active account leaves no account active: none is promoted. A
        name no account has is refused (exit 65).
        """ + "\n\n" + WriteOptions.discussion,
      arguments: [username], options: [WriteOptions.ifCursor])

    let username: String
    let condition: WriteCondition?

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
      condition = try WriteOptions.condition(arguments)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let write = try SessionWrite.remove(username, expecting: condition)
      let store = try context.openNamingAccount(location, username)
      return try context.printWrite(try store.blocking.outcome(of: write)) { _ in "nothing to remove" }
    }
  }
}

extension CommandContext {
  /// Prints a write's change, or "no change" and why when it changed nothing, with the
  /// state and cursor the write itself found (never a second read, which another writer's
  /// commit could have moved).
  func printWrite(_ outcome: WriteOutcome, reason: (SessionSnapshot) -> String) throws -> ExitCode {
    switch outcome {
    case .committed(let entries):
      guard let last = entries.last else { return .success }
      commitment.record("the change is committed all the same, at cursor \(last.cursor)")
      for entry in entries { try output.write(presenter.change(entry)) }
    case .unchanged(let found):
      try output.write(presenter.noChange(reason(found), found))
    }
    return .success
  }

  /// Opens the store for a write, creating it when missing, unless the write expects a
  /// cursor a store that does not exist yet cannot be at: then it is refused as the store
  /// would refuse it, and nothing is created.
  /// - Throws: `SessionStorageError` `conflict` (exit 68) for `--if-cursor` above 0 on a
  ///   missing file.
  func openForWriting(_ location: SessionStore.Location, expecting condition: WriteCondition?) throws
    -> SessionStore
  {
    if case .head(let expected) = condition, expected != .zero, !location.exists {
      throw SessionStorageError(
        .conflict,
        "the store is at cursor 0, not at \(expected) as the write expected: \(location.display) holds no store "
          + "yet; nothing was written or created")
    }
    return try openForWriting(location)
  }

  /// Opens the store for a write that names an account: a missing file (or one of the
  /// forms of a missing store) holds no account, so it is refused without being created.
  /// - Throws: ``CLIError`` (exit 65) when the file does not exist.
  func openNamingAccount(_ location: SessionStore.Location, _ username: String) throws -> SessionStore {
    guard location.exists else {
      throw CLIError.invalidInput(
        "no account is named '\(username)': \(location.display) holds no store yet (the first 'login' creates "
          + "it); nothing was created")
    }
    return try openForWriting(location)
  }
}

extension SessionCtl {
  /// `sessionctl compact`: what was removed and what is kept. A missing file is an error,
  /// not created.
  struct Compact: BlockingCommand {
    /// What `compact` deletes.
    enum Retention: Sendable, Equatable {
      /// All but the newest N changes.
      case keep(Int)
      /// Every change before a cursor.
      case before(Cursor)
      /// Every change older than a duration.
      case olderThan(Age)
    }

    static let keep = CommandLineOption<Int>("keep", placeholder: "n", help: "Keep the newest <n> changes.")
    static let before = CommandLineOption<Cursor>(
      "before", placeholder: "cursor", help: "Delete the changes before <cursor>.")
    static let olderThan = CommandLineOption<Age>(
      "older-than", placeholder: "age",
      help: "Delete the oldest changes up to the first one younger than <age> (90s, 15m, 12h, 30d).")

    static let spec = CommandSpec(
      "compact", abstract: "Delete old changes from the feed.",
      discussion: """
        Give exactly one of --keep, --before and --older-than. Cursors are never reused: after compaction
        the head cursor stays where it was, and a reader resuming from a deleted cursor
        gets exit status 66 with the oldest cursor still kept.
        """,
      options: [keep, before, olderThan],
      usageOverride: "(--keep <n> | --before <cursor> | --older-than <age>)")

    /// What to delete.
    let retention: Retention

    init(_ arguments: ParsedArguments) throws {
      // Which one was given matters before what was given.
      let given = [
        arguments.contains(Self.keep), arguments.contains(Self.before), arguments.contains(Self.olderThan),
      ]
      .filter { $0 }
      guard given.count == 1 else {
        throw arguments.usageError(
          .invalid(
            given.isEmpty
              ? "'compact' needs '--keep <n>', '--before <cursor>' or '--older-than <age>'"
              : "give one of '--keep <n>', '--before <cursor>' and '--older-than <age>', not several"))
      }
      if arguments.contains(Self.keep) {
        retention = .keep(try arguments.required(Self.keep))
      } else if arguments.contains(Self.before) {
        retention = .before(try arguments.required(Self.before))
      } else {
        retention = .olderThan(try arguments.required(Self.olderThan))
      }
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      guard location.exists else {
        throw CLIError(.failure, "\(location.display): no database here (nothing to compact)")
      }
      let store = try context.openForWriting(location)
      let compaction =
        switch retention {
        case .keep(let count): try store.compact(keepingLast: count)
        case .before(let cursor): try store.compact(before: cursor)
        case .olderThan(let age): try store.compact(olderThan: age.duration)
        }
      context.commitment.record(
        "the compaction is committed all the same (\(compaction.removed) removed, head \(compaction.bounds.head))"
      )
      try context.output.write(context.presenter.compaction(compaction))
      return .success
    }
  }
}

extension Presenter {
  /// `compact`.
  func compaction(_ compaction: CompactionResult) -> String {
    let bounds = compaction.bounds
    if json {
      let value: JSONValue = [
        "type": "compaction", "removed": .int(Int64(compaction.removed)),
        "oldest": bounds.oldest.map { .int($0.value) } ?? .null, "head": .int(bounds.head.value),
      ]
      return value.encoded
    }
    let removed = "removed \(compaction.removed) \(compaction.removed == 1 ? "entry" : "entries")"
    guard let oldest = bounds.oldest else { return removed + "; none kept (head \(bounds.head))" }
    return removed + "; kept \(oldest)…\(bounds.head)"
  }
}

extension SessionCtl {
  /// `sessionctl retention`: shows the retention policy stored in the file, or sets it.
  /// Showing needs an existing file; setting creates it like any write.
  struct Retention: BlockingCommand {
    static let keep = CommandLineOption<Int>(
      "keep", placeholder: "n", help: "Keep at most the newest <n> changes (1 or more).")
    static let maxAge = CommandLineOption<Age>(
      "max-age", placeholder: "age", help: "Delete changes older than <age> (90s, 15m, 12h, 30d).")
    static let off = CommandLineFlag("off", help: "Remove both limits: keep every change until 'compact'.")

    static let spec = CommandSpec(
      "retention", abstract: "Show or set how long the feed keeps its changes.",
      discussion: """
        Without options, shows the policy stored in the database. --keep and --max-age set
        one limit each and leave the other as it is; --off removes both. Every write, from
        sessionctl, an app or the sqlite3 shell, then deletes in the same transaction the
        changes that are not among the newest <n> or are older than <duration>; setting a
        policy applies it at once. The newest change is always kept.
        """,
      options: [keep, maxAge, off], usageOverride: "[--keep <n>] [--max-age <age>] [--off]")

    /// The limits to set, or nil to show the policy.
    let change: (keep: Int?, maxAge: Age?, off: Bool)?

    init(_ arguments: ParsedArguments) throws {
      let keep = try arguments[Self.keep]
      let maxAge = try arguments[Self.maxAge]
      let off = arguments[Self.off]
      if off && (keep != nil || maxAge != nil) {
        throw arguments.usageError(.invalid("give either '--off' or '--keep'/'--max-age', not both"))
      }
      change = keep == nil && maxAge == nil && !off ? nil : (keep, maxAge, off)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      try location.requireFile(
        for: "retention",
        instead: "compact it on a schedule with 'sessionctl compact --keep N' or '--older-than AGE'")
      guard let change else {
        guard location.exists else {
          throw CLIError(.failure, "\(location.path): no database here (it is created by the first write)")
        }
        let store = try context.openFileForReading(location).requireFile()
        try context.output.write(context.presenter.retention(try store.retention()))
        return .success
      }
      let store = try context.openFileForWriting(location).requireFile()
      var policy = change.off ? SessionStorage.Retention.off : try store.retention()
      if let keep = change.keep { policy.keepLast = keep }
      if let maxAge = change.maxAge { policy.maxAge = maxAge.duration }
      let compaction = try store.setRetention(policy)
      context.commitment.record(
        "the retention policy is committed all the same (\(compaction.removed) removed, head \(compaction.bounds.head))"
      )
      try context.output.write(
        context.presenter.retention(policy) + [context.presenter.compaction(compaction)])
      return .success
    }
  }
}

extension Presenter {
  /// `retention`: the policy.
  func retention(_ policy: SessionStorage.Retention) -> [String] {
    if json {
      let value: JSONValue = [
        "type": "retention", "keepLast": policy.keepLast.map { .int(Int64($0)) } ?? .null,
        "maxAge": policy.maxAge.map { .string(SessionStorage.Retention.format($0)) } ?? .null,
      ]
      return [value.encoded]
    }
    return table([
      ("keep last", policy.keepLast.map(String.init) ?? "no limit"),
      ("max age", policy.maxAge.map(SessionStorage.Retention.format) ?? "no limit"),
    ])
  }
}

/// A duration as typed for `--max-age` and `--older-than`: a whole number ≥ 0 and one unit,
/// `s`, `m`, `h` or `d` (`90s`, `15m`, `12h`, `30d`), up to the library's
/// `Retention.maximumAge` (`719528d`), the oldest cutoff SQLite's date functions compute.
/// Nothing else: no sign, no fraction, no space, no other unit, no larger value.
struct Age: CommandLineValue, Equatable {
  let duration: Duration

  init(_ duration: Duration) { self.duration = duration }

  static let expected =
    "a whole number and a unit: s, m, h or d (90s, 15m, 12h, 30d), at most "
    + Retention.format(Retention.maximumAge)

  init(argument: String) throws(InvalidValue) {
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    guard let unit = argument.last, let seconds = units[unit] else {
      throw InvalidValue(expected: Self.expected, noun: "duration")
    }
    let digits = argument.dropLast()
    guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let count = Int64(digits),
      case (let total, let overflow) = count.multipliedReportingOverflow(by: seconds * 1000), !overflow,
      Duration.milliseconds(total) <= Retention.maximumAge
    else {
      throw InvalidValue(expected: Self.expected, noun: "duration")
    }
    duration = .milliseconds(total)
  }
}

extension SessionCtl {
  /// `sessionctl migrate`: creates the file if needed and lists the migrations applied.
  struct Migrate: BlockingCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "migrate", abstract: "Create the file if needed and apply pending migrations.",
      discussion: "Prints each migration it applied, or that the file is up to date.")

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let existed = location.exists
      let store = try context.openForWriting(location)
      // A PostgreSQL schema counts as created when this open applied its first migration.
      let created = location.isPostgres ? store.appliedMigrations.contains { $0.version == 1 } : !existed
      if created || !store.appliedMigrations.isEmpty {
        context.commitment.record(
          "the migrations are committed all the same (\(store.appliedMigrations.count) applied)")
      }
      try context.output.write(
        context.presenter.migration(
          path: location.display, created: created, applied: store.appliedMigrations))
      return .success
    }
  }
}

extension Presenter {
  /// `migrate`.
  func migration(path: String, created: Bool, applied: [Migration]) -> [String] {
    if json {
      let migrations: [JSONValue] = applied.map {
        ["version": .int(Int64($0.version)), "name": .string($0.name), "checksum": .string($0.checksum)]
      }
      let value: JSONValue = [
        "type": "migrate", "path": .string(path), "created": .bool(created), "applied": .array(migrations),
      ]
      return [value.encoded]
    }
    var lines = created ? ["created \(Self.display(path))"] : []
    lines += applied.map { "applied \($0.name) (sha256 \($0.checksum.prefix(12)))" }
    if applied.isEmpty { lines.append("\(Self.display(path)) is up to date") }
    return lines
  }
}

extension SessionCtl {
  /// `sessionctl restore <file>`: the store's content replaced by a verified backup's, while
  /// other processes keep it open.
  struct Restore: BlockingCommand {
    static let file = CommandLineArgument<String>(
      "file", help: "The backup to restore (from 'sessionctl backup').")

    static let spec = CommandSpec(
      "restore", abstract: "Replace the store's content with the backup in <file>.",
      discussion: """
        Verifies <file> first: it must be a session store of this version's schema that
        passes 'check'; otherwise nothing is changed. Then copies it into the store with
        SQLite's backup API in one transaction: processes that have the store open go on,
        and see the backup's content from that commit on. A running 'watch' whose last
        change the restore removed or replaced exits 67 (take a new snapshot). Creates
        the store when it is missing. A <file> that is the store itself or its -wal, -shm
        or -journal file, by any name, is refused with exit 65.
        """,
      arguments: [file])

    /// The backup, as typed.
    let file: String

    init(_ arguments: ParsedArguments) throws {
      file = try arguments.required(Self.file)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      try location.requireFile(
        for: "restore", instead: "restore a pg_dump of its schema with pg_restore or psql")
      let store = try context.openFileForWriting(location).requireFile()
      let result = try store.restore(from: file)
      context.commitment.record(
        "the restore is committed all the same (head \(result.head), was \(result.previousHead))")
      try context.output.write(context.presenter.restore(result))
      return .success
    }
  }
}

extension Presenter {
  /// `restore`.
  func restore(_ result: SessionFile.RestoreResult) -> String {
    if json {
      let value: JSONValue = [
        "type": "restore", "path": .string(result.path), "source": .string(result.source),
        "head": .int(result.head.value), "previousHead": .int(result.previousHead.value),
        "entries": .int(Int64(result.entries)),
      ]
      return value.encoded
    }
    return "restored \(Self.display(result.path)) from \(Self.display(result.source)): head \(result.head) "
      + "(was \(result.previousHead)), \(result.entries) \(result.entries == 1 ? "change" : "changes")"
  }
}
