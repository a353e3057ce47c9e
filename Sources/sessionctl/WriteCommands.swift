import CommandLineKit
import SessionStorage

extension SessionCtl {
  /// `sessionctl login <username>`: the change, or "no change" when that user is already
  /// signed in.
  struct Login: BlockingCommand {
    static let username = CommandLineArgument<String>("username", help: "The user to sign in as.")

    static let spec = CommandSpec(
      "login", abstract: "Sign in as <username>.",
      discussion: """
        A username is 1 to 256 characters (at most 1024 bytes in UTF-8), with no control
        characters, no invisible or bidirectional format characters (U+200B, U+FEFF,
        U+202E...; emoji keep their joiners), no unassigned or private-use code points,
        and no leading or trailing whitespace; it is stored in Unicode NFC. Signing in
        as the user who is already signed in changes nothing and prints "no change". Use
        '--' before a username that starts with a dash.
        """,
      arguments: [username])

    /// Who signs in, as typed.
    let username: String

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let name = try Username.validated(username)  // before the file is created
      let store = try context.openForWriting(location)
      return try context.printWrite(try store.blocking.outcome(of: .logIn(name))) {
        "already logged in as \(Presenter.display(name))"
      }
    }
  }

  /// `sessionctl logout`: the change, or "no change" when nobody is signed in.
  struct Logout: BlockingCommand, OptionlessCommand {
    static let spec = CommandSpec(
      "logout", abstract: "Sign out (the username is kept).",
      discussion: "Signing out when nobody is signed in changes nothing and prints \"no change\".")

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let store = try context.openForWriting(try context.location())
      return try context.printWrite(try store.blocking.outcome(of: .logOut())) { "nobody is logged in" }
    }
  }

  /// `sessionctl rename <username>`: the change, or "no change" when the username is
  /// already that.
  struct Rename: BlockingCommand {
    static let username = CommandLineArgument<String>(
      "username", help: "The new username (same rules as 'login').")

    static let spec = CommandSpec(
      "rename", abstract: "Change the username; the login state stays as it is.", arguments: [username])

    /// The new username, as typed.
    let username: String

    init(_ arguments: ParsedArguments) throws {
      username = try arguments.required(Self.username)
    }

    func runBlocking(_ context: CommandContext) throws -> ExitCode {
      let location = try context.location()
      let name = try Username.validated(username)
      let store = try context.openForWriting(location)
      return try context.printWrite(try store.blocking.outcome(of: .rename(to: name))) {
        "the username is already \(Presenter.display(name))"
      }
    }
  }
}

extension CommandContext {
  /// Prints a write's change, or "no change" and why when it changed nothing, with the
  /// state and cursor the write itself found (never a second read, which another writer's
  /// commit could have moved).
  func printWrite(_ outcome: WriteOutcome, reason: () -> String) throws -> ExitCode {
    switch outcome {
    case .committed(let entries):
      guard let last = entries.last else { return .success }
      commitment.record("the change is committed all the same, at cursor \(last.cursor)")
      for entry in entries { try output.write(presenter.change(entry)) }
    case .unchanged(let found):
      try output.write(presenter.noChange(reason(), found))
    }
    return .success
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
