import Foundation
import TestSupport
import Testing

/// What the message of a `--since` that is not a cursor adds: the other form it takes.
private let sinceForms = " (a cursor), or CURSOR@TIME with the time printed for that change"

/// Every error class: its message on stderr, nothing on stdout, its exit status, and no
/// file created or touched.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ErrorTests {
  @Test(arguments: [
    (
      ["stauts"], "unknown command 'stauts'. Did you mean 'status'?",
      "sessionctl [--db <path>] [--json] [--version] <subcommand>", "sessionctl help"
    ),
    (
      ["status", "--dv", "x"], "unknown option '--dv'. Did you mean '--db'?",
      "sessionctl status [--db <path>] [--json]", "sessionctl help status"
    ),
    (
      ["watch", "--limt", "3"], "unknown option '--limt'. Did you mean '--limit'?",
      "sessionctl watch [<command> ...] [--since <cursor>] [--limit <n>] [--account <username>] [--exec] [--keep-going] [--db <path>] [--json]",
      "sessionctl help watch"
    ),
    (
      ["login"], "missing argument '<username>'",
      "sessionctl login <username> [--if-cursor <cursor>] [--db <path>] [--json]",
      "sessionctl help login"
    ),
    (
      ["login", "a", "b"], "unexpected argument 'b'",
      "sessionctl login <username> [--if-cursor <cursor>] [--db <path>] [--json]",
      "sessionctl help login"
    ),
    ([], "missing command", "sessionctl [--db <path>] [--json] [--version] <subcommand>", "sessionctl help"),
    (
      ["history", "--limit"], "missing value for '--limit <n>'",
      "sessionctl history [--since <cursor>] [--limit <n>] [--account <username>] [--db <path>] [--json]",
      "sessionctl help history"
    ),
    (
      ["history", "-n", "1", "--limit", "2"], "option '--limit' was given more than once",
      "sessionctl history [--since <cursor>] [--limit <n>] [--account <username>] [--db <path>] [--json]",
      "sessionctl help history"
    ),
    (
      ["--db", "a", "status", "--db", "b"], "option '--db' was given more than once",
      "sessionctl status [--db <path>] [--json]", "sessionctl help status"
    ),
    (
      ["status", "--json=yes"], "option '--json' takes no value (got 'yes')",
      "sessionctl status [--db <path>] [--json]", "sessionctl help status"
    ),
    (
      ["compact"], "'compact' needs '--keep <n>', '--before <cursor>' or '--older-than <age>'",
      "sessionctl compact (--keep <n> | --before <cursor> | --older-than <age>) [--db <path>] [--json]",
      "sessionctl help compact"
    ),
    (
      ["compact", "--keep", "1", "--before", "2"],
      "give one of '--keep <n>', '--before <cursor>' and '--older-than <age>', not several",
      "sessionctl compact (--keep <n> | --before <cursor> | --older-than <age>) [--db <path>] [--json]",
      "sessionctl help compact"
    ),
    (
      ["help", "wacth"], "unknown command 'wacth'. Did you mean 'watch'?",
      "sessionctl help [<command>] [--db <path>] [--json]", "sessionctl help help"
    ),
    (
      ["completion", "zsh"], "unsupported shell 'zsh' (supported: bash)",
      "sessionctl completion <shell> [--db <path>] [--json]", "sessionctl help completion"
    ),
    (
      ["--version", "status"], "'--version' cannot be combined with a command",
      "sessionctl status [--db <path>] [--json]", "sessionctl help status"
    ),
  ])
  func usageErrors(_ arguments: [String], _ message: String, _ usage: String, _ helpCommand: String)
    async throws
  {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run(arguments)
    #expect(outcome.status == 64)
    #expect(outcome.stdout == "")
    #expect(outcome.stderr == "sessionctl: error: \(message)\nUsage: \(usage)\nSee '\(helpCommand)'.\n")
    #expect(!sandbox.exists(sandbox.home + "/.local"))
  }

  @Test(arguments: [
    ("", "invalid username: it is empty"),
    (" alice", "invalid username: it has leading or trailing whitespace"),
    ("a\nb", "invalid username: it contains the control character U+000A at position 2"),
    ("   ", "invalid username: it is only whitespace"),
    (String(repeating: "x", count: 257), "invalid username: it is longer than 256 characters (257)"),
    (
      String(repeating: "y", count: 100_000),
      "invalid username: it is longer than 256 characters (100000 bytes)"
    ),
    ("\u{1B}[31mred", "invalid username: it contains the control character U+001B at position 1"),
    (
      "admin\u{202E}txt.exe",
      "invalid username: it contains the bidirectional control character U+202E (RIGHT-TO-LEFT OVERRIDE) at position 6"
    ),
    (
      "alice\u{200B}",
      "invalid username: it contains the invisible format character U+200B (ZERO WIDTH SPACE) at position 6"
    ),
    (
      "a" + String(repeating: "\u{301}", count: 5_000),
      "invalid username: character 1 is made of 5000 code points (at most 32 per character)"
    ),
  ])
  func invalidUsernames(_ username: String, _ message: String) async throws {
    let sandbox = try Sandbox()
    for command in ["login", "rename"] {
      let outcome = try await sandbox.run([command, username])
      #expect(outcome.status == 65)
      #expect(outcome.stdout == "")
      #expect(
        outcome.stderr == "sessionctl: error: \(message.replacingOccurrences(of: "\n", with: "\\u{A}"))\n")
    }
    #expect(!sandbox.exists(sandbox.home + "/.local"), "an invalid username must create nothing")
  }

  @Test(arguments: ["Robert'); DROP TABLE session;--", "مرحبا", "🧑‍💻 dev", "-dash"])
  func unusualButValidUsernamesAreStoredLiterally(_ username: String) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let outcome = try await sandbox.run(db: db, ["login", "--", username])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(try await sandbox.sqlite(db, "SELECT username FROM session") == username)
    #expect(try await sandbox.sqlite(db, "SELECT count(*) FROM sqlite_master WHERE name = 'session'") == "1")
  }

  @Test(arguments: [
    (
      ["history", "--since", "abc"],
      "invalid cursor 'abc' for '--since': expected a whole number ≥ 0" + sinceForms
    ),
    (
      ["history", "--since", "-1"],
      "invalid cursor '-1' for '--since': expected a whole number ≥ 0" + sinceForms
    ),
    (
      ["watch", "--since=1.5"],
      "invalid cursor '1.5' for '--since': expected a whole number ≥ 0" + sinceForms
    ),
    (
      ["watch", "--since", "2026-11-29T20:33:36.562Z"],
      "invalid cursor '2026-11-29T20:33:36.562Z' for '--since': expected a whole number ≥ 0"
        + sinceForms
    ),
    (
      ["history", "--since", "99999999999999999999"],
      "invalid cursor '99999999999999999999' for '--since': expected a whole number from 0 to 9223372036854775807"
        + sinceForms
    ),
    (["watch", "--limit", "x"], "invalid value 'x' for '--limit': expected a whole number ≥ 0"),
    (["history", "-n", "-3"], "invalid value '-3' for '--limit': expected a whole number ≥ 0"),
    (["compact", "--keep", "-1"], "invalid value '-1' for '--keep': expected a whole number ≥ 0"),
    (["compact", "--before", "+2"], "invalid cursor '+2' for '--before': expected a whole number ≥ 0"),
    (["--db=", "status"], "the database path given to '--db' is empty"),
  ])
  func invalidValues(_ arguments: [String], _ message: String) async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run(arguments)
    #expect(outcome.status == 65)
    #expect(outcome.stdout == "")
    #expect(outcome.stderr == "sessionctl: error: \(message)\n")
  }

  @Test func cursorAheadOfTheHeadIsInvalidInput() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    for arguments in [
      ["history", "--since", "2"], ["watch", "--since", "7"], ["compact", "--before", "3"],
    ] {
      let outcome = try await sandbox.run(db: db, arguments)
      #expect(outcome.status == 65, "\(arguments)")
      #expect(outcome.stdout == "")
      let requested = arguments[2]
      #expect(
        outcome.stderr
          == "sessionctl: error: cursor \(requested) is ahead of the newest entry 1 "
          + "(was the log restored from an older backup?)\n")
    }
  }

  @Test func compactedCursorHasItsOwnExitStatus() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "a"], ["logout"], ["login", "b"], ["logout"]] {
      _ = try await sandbox.run(db: db, command)
    }
    _ = try await sandbox.run(db: db, ["compact", "--keep", "2"])
    for command in ["history", "watch"] {
      let outcome = try await sandbox.run(db: db, [command, "--since", "1"])
      #expect(outcome.status == 66)
      #expect(outcome.stdout == "")
      #expect(
        outcome.stderr
          == "sessionctl: error: cursor 1 was compacted away; the oldest available entry is 3: resume after "
          + "cursor 2 to accept the gap, or start again from a snapshot (sessionctl: --since 2, or watch without "
          + "--since)\n")
    }
    #expect(try await sandbox.run(db: db, ["history", "--since", "2"]).lines.count == 2)
  }

  @Test(arguments: ["status", "history", "watch", "check"])
  func readOnlyCommandsOnAMissingFileCreateNothing(_ command: String) async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run([command])
    #expect(outcome.status == 1)
    #expect(outcome.stdout == "")
    #expect(
      outcome.stderr
        == "sessionctl: error: \(sandbox.defaultDatabase): no database here (it is created by the first write)\n"
    )
    #expect(!sandbox.exists(sandbox.home + "/.local"))

    let explicit = sandbox.path("missing/s.db")
    let withPath = try await sandbox.run(["--db", explicit, command])
    #expect(withPath.status == 1)
    #expect(withPath.stderr.hasPrefix("sessionctl: error: \(explicit): no database here"))
    #expect(!sandbox.exists(sandbox.path("missing")))
  }

  @Test func compactOnAMissingFileCreatesNothing() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let outcome = try await sandbox.run(db: db, ["compact", "--keep", "1"])
    #expect(outcome.status == 1)
    #expect(outcome.stderr == "sessionctl: error: \(db): no database here (nothing to compact)\n")
    #expect(!sandbox.exists(db))
  }

  /// A file sessionctl must refuse: its bytes before, and the message's reason.
  struct Refusal: CustomTestStringConvertible, Sendable {
    var name: String
    var reason: String
    var prepare: @Sendable (Sandbox, String) async throws -> Void
    var testDescription: String { name }
  }

  static let refusals: [Refusal] = [
    Refusal(
      name: "newer schema",
      reason: "the schema is at version 99, newer than this build knows (4); upgrade sessionctl"
    ) {
      sandbox, db in
      _ = try await sandbox.run(db: db, ["login", "alice"])
      try await sandbox.sqlite(db, "PRAGMA user_version = 99")
    },
    Refusal(name: "not a database", reason: "not a SQLite database (the header is wrong)") { _, db in
      var generator = SystemRandomNumberGenerator()
      let bytes = (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) }
      try Data(bytes).write(to: URL(fileURLWithPath: db))
    },
    Refusal(
      name: "foreign database",
      reason: "this SQLite database has 1 table(s) but no schema_migrations table: it is not a session store"
    ) {
      sandbox, db in
      try await sandbox.sqlite(
        db,
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO customers (name) VALUES ('ACME');"
      )
    },
    Refusal(
      name: "checksum mismatch",
      reason: "applied migration 1 (0001_session_and_feed) does not match this build's 0001_session_and_feed"
    ) {
      sandbox, db in
      _ = try await sandbox.run(db: db, ["login", "alice"])
      try await sandbox.sqlite(db, "UPDATE schema_migrations SET checksum = 'deadbeefdeadbeef'")
    },
    Refusal(name: "truncated file", reason: "the file is truncated (40 bytes)") { _, db in
      try Data(Array("SQLite format 3\0".utf8) + [UInt8](repeating: 7, count: 24)).write(
        to: URL(fileURLWithPath: db))
    },
    Refusal(name: "empty file", reason: "the file is empty (0 bytes); remove it or choose another path") {
      _, db in
      try Data().write(to: URL(fileURLWithPath: db))
    },
  ]

  @Test(arguments: refusals)
  func refusedFilesAreLeftByteIdentical(_ refusal: Refusal) async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("refused.db")
    try await refusal.prepare(sandbox, db)
    let before = try #require(sandbox.contents(db))
    for arguments in [
      ["status"], ["login", "bob"], ["migrate"], ["check"], ["history"], ["compact", "--keep", "0"],
    ] {
      let outcome = try await sandbox.run(db: db, arguments)
      #expect(outcome.status == 1, "\(arguments): \(outcome)")
      #expect(outcome.stdout == "")
      #expect(
        outcome.stderr.hasPrefix("sessionctl: error: \(db): \(refusal.reason)"),
        "\(arguments): \(outcome.stderr)")
      #expect(sandbox.contents(db) == before, "\(arguments) changed the file")
    }
  }

  @Test func aDirectoryIsRefused() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("dir.db")
    try FileManager.default.createDirectory(atPath: db, withIntermediateDirectories: false)
    let outcome = try await sandbox.run(db: db, ["login", "alice"])
    #expect(outcome.status == 1)
    #expect(outcome.stderr == "sessionctl: error: \(db): this is a directory, not a database file\n")
  }

  @Test func aLocationThatCannotBeWrittenIsRefused() async throws {
    let sandbox = try Sandbox()
    guard
      let place = try await ReadOnlyPlace(
        in: sandbox.root, prepare: { _ = try await sandbox.run(db: $0 + "/existing.db", ["login", "alice"]) })
    else {
      Issue.record("could not make a read-only directory here")
      return
    }
    let new = place.file("new.db")
    let create = try await sandbox.run(db: new, ["login", "alice"])
    #expect(create.status == 1)
    #expect(create.stdout == "")
    #expect(
      create.stderr.hasPrefix("sessionctl: error: \(new): cannot create the database file: "), "\(create)")
    #expect(!sandbox.exists(new))

    let existing = place.file("existing.db")
    let before = sandbox.contents(existing)
    let write = try await sandbox.run(db: existing, ["logout"])
    #expect(write.status == 1)
    #expect(write.stderr.hasPrefix("sessionctl: error: \(existing): "), "\(write)")
    #expect(write.stderr.contains("read-only"), "\(write)")
    #expect(
      write.stderr.contains("; read it with status, history, watch or check (they open it read-only)"),
      "\(write)")
    let read = try await sandbox.run(db: existing, ["status", "--json"])
    #expect(read.status == 0, "\(read)")
    #expect(read.jsonLines.first?["username"] as? String == "alice")
    #expect(sandbox.contents(existing) == before)
  }
}
