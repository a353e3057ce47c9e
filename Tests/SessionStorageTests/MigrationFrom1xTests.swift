import FeedKit
import Foundation
import TestSupport
import Testing

@testable import SessionStorage

/// Files written by 1.x `sessionctl` (Tests/Fixtures/1x, made by scripts/make-1x-fixtures.sh
/// with the 1.x build) open in 2.0: migration 0004 makes their session the first account,
/// active, keeps every change with its cursor, and leaves a file 1.x refuses.
@Suite(.timeLimit(.minutes(10))) struct MigrationFrom1xTests {
  let dir: TemporaryDirectory

  init() throws { dir = try TemporaryDirectory() }

  /// A copy of the fixture `name`, in this test's directory.
  func fixture(_ name: String) throws -> String {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("Fixtures/1x/\(name)").path
    let path = dir.file(name)
    try FileManager.default.copyItem(atPath: source, toPath: path)
    return path
  }

  @Test func aSignedInSessionBecomesTheActiveAccountAndKeepsItsHistory() async throws {
    let path = try fixture("signed-in.db")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    #expect(store.appliedMigrations.map(\.name) == ["0004_accounts"])
    let roster = try store.roster()
    #expect(roster.accounts.map(\.username) == ["bob"])
    #expect(roster.activeID == AccountID(1))
    #expect(roster.active?.isLoggedIn == true)
    #expect(roster.active?.cursor == Cursor(4))
    #expect(roster.cursor == Cursor(4))
    #expect(try store.state.username == "bob")
    let history = try store.history()
    #expect(history.map(\.cursor.value) == [1, 2, 3, 4])
    #expect(history.allSatisfy { $0.change.account == AccountID(1) && $0.origin == "sessionctl" })
    #expect(
      history.map(\.events) == [
        [.added(username: "alice"), .loggedIn(username: "alice"), .activated(username: "alice")],
        [.loggedOut(username: "alice")], [.usernameChanged(from: "alice", to: "bob")],
        [.loggedIn(username: "bob")],
      ])
    // The roster folded from the history is the roster read.
    let empty = SessionRoster(accounts: [], activeID: nil, activeSince: .distantPast, cursor: .zero)
    #expect(history.reduce(empty) { $0.applying($1) }.accounts == roster.accounts)
    let checks = try store.check()
    #expect(checks.allSatisfy { $0.verdict == .passed }, "\(checks)")
    // The next change follows the last 1.x cursor; a second login adds the second account.
    let carol = try #require(try await store.logIn(as: "carol"))
    #expect(carol.cursor == Cursor(5))
    #expect(carol.change.account == AccountID(2))
    #expect(try store.roster().accounts.map(\.username) == ["bob", "carol"])
  }

  @Test func aFileNeverSignedInBecomesAnEmptyRoster() async throws {
    let path = try fixture("never-signed-in.db")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    let roster = try store.roster()
    #expect(roster.accounts.isEmpty)
    #expect(roster.activeID == nil)
    #expect(try store.bounds().head == .zero)
    let checks = try store.check()
    #expect(checks.allSatisfy { $0.verdict == .passed }, "\(checks)")
    #expect(try await store.logIn(as: "alice")?.change.account == AccountID(1))
  }

  @Test func aCompactedFileKeepsItsCursorsAndRetention() async throws {
    let path = try fixture("compacted.db")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    #expect(try store.bounds() == FeedBounds(oldest: Cursor(4), head: Cursor(4)))
    #expect(try store.requireFile().retention().keepLast == 50)
    let roster = try store.roster()
    #expect(roster.accounts.map(\.username) == ["carol"])
    #expect(roster.active?.isLoggedIn == false)
    let checks = try store.check()
    #expect(checks.allSatisfy { $0.verdict == .passed }, "\(checks)")
    #expect(throws: FeedError.self) { try store.changes(from: .after(Cursor(1))) }
    #expect(try await store.logIn(as: "carol")?.cursor == Cursor(5))
  }

  /// 1.x refuses any schema above version 3 ("the schema is at version 4, newer than this
  /// build knows (3); upgrade sessionctl"), before it reads anything: the migrated file
  /// says version 4 in both places 1.x reads.
  @Test func theMigratedFileIsOneThat1xRefuses() async throws {
    let path = try fixture("signed-in.db")
    _ = try SessionStore(path: path)
    #expect(try await ProcessRunner.sqlite3(path, "PRAGMA user_version") == "4\n")
    #expect(
      try await ProcessRunner.sqlite3(path, "SELECT version, name FROM schema_migrations WHERE version > 3")
        == "4|0004_accounts\n")
  }

  /// The shell keeps working on the migrated file: `session` shows the active account, and
  /// an UPDATE of it is recorded as an external change of that account.
  @Test func theShellsSessionViewShowsAndUpdatesTheActiveAccount() async throws {
    let path = try fixture("signed-in.db")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    #expect(try await ProcessRunner.sqlite3(path, "SELECT username, is_logged_in FROM session") == "bob|1\n")
    try await ProcessRunner.sqlite3(path, "UPDATE session SET is_logged_in = 0")
    let entry = try #require(try store.history(from: .after(Cursor(4))).first)
    #expect(entry.origin == "external")
    #expect(entry.events == [.loggedOut(username: "bob")])
    #expect(entry.change.account == AccountID(1))
  }
}

/// `check` finds what the shell's triggers cannot refuse: a pointer left at a removed account
/// (with the triggers dropped) and two accounts whose names differ only in normalization.
@Suite struct RosterCheckTests {
  @Test func aDanglingActivePointerAndCanonicallyEqualNamesAreFound() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "Jos\u{E9}")
    try await ProcessRunner.sqlite3(path, "INSERT INTO accounts (username) VALUES ('Jose' || char(769))")
    let username = try #require(try store.check().first { $0.check == .username })
    #expect(username.verdict == .failed)
    #expect(
      username.detail.contains("not in Unicode NFC") || username.detail.contains("two accounts"),
      "\(username.detail)")
    try await ProcessRunner.sqlite3(
      path,
      "DROP TRIGGER accounts_external_delete; DELETE FROM accounts WHERE id = 1; "
        + SchemaTamperingTests.triggerSQL("accounts_external_delete"))
    let state = try #require(try store.check().first { $0.check == .state })
    #expect(state.verdict == .failed)
    #expect(state.detail.contains("active_account names account 1"), "\(state.detail)")
  }

  /// A row given a `seq` ahead of the feed's head is a writer's own change, which the
  /// triggers leave to that writer: a client that marks a row so and records no entry
  /// leaves a change that is in no entry, and `check` names it.
  @Test(arguments: [
    ("UPDATE accounts SET is_logged_in = 0, seq = seq + 100 WHERE id = 1", "account 1 has seq 101"),
    ("INSERT INTO accounts (username, seq) VALUES ('bob', 1000)", "account 2 has seq 1000"),
    ("UPDATE active_account SET account_id = NULL, seq = 1000", "the active_account row has seq 1000"),
    ("UPDATE accounts SET seq = 1000 WHERE id = 1; DELETE FROM accounts WHERE id = 1", "names account 1"),
  ])
  func anEditMarkedAsAWritersOwnWithNoEntryIsFound(_ sql: String, _ detail: String) async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    try await ProcessRunner.sqlite3(path, sql)
    #expect(try store.history().count == 1, "the edit left no entry")
    let state = try #require(try store.check().first { $0.check == .state })
    #expect(state.verdict == .failed)
    #expect(state.detail.contains(detail), "\(state.detail)")
  }
}

/// What the sqlite3 shell can do to the roster: each edit is one typed entry with origin
/// `external`, and an edit that would break the model is refused by the file itself.
@Suite(.timeLimit(.minutes(10))) struct ShellRosterEditTests {
  @Test func everyEditIsOneTypedExternalEntry() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path, options: .init(origin: "test"))
    try await store.logIn(as: "alice")
    let edits: [(sql: String, events: [SessionEvent], account: Int64)] = [
      (
        "INSERT INTO accounts (username, is_logged_in) VALUES ('bob', 1)",
        [.added(username: "bob"), .loggedIn(username: "bob")], 2
      ),
      ("UPDATE active_account SET account_id = 2", [.activated(username: "bob")], 2),
      (
        "UPDATE accounts SET username = 'robert' WHERE id = 2", [.usernameChanged(from: "bob", to: "robert")],
        2
      ),
      ("UPDATE session SET is_logged_in = 0", [.loggedOut(username: "robert")], 2),
      ("UPDATE accounts SET is_logged_in = 0 WHERE id = 1", [.loggedOut(username: "alice")], 1),
      ("UPDATE active_account SET account_id = NULL", [.deactivated(username: "robert")], 2),
      ("DELETE FROM accounts WHERE id = 1", [.removed(username: "alice")], 1),
    ]
    for (index, edit) in edits.enumerated() {
      try await ProcessRunner.sqlite3(path, edit.sql)
      let entry = try #require(try store.history(from: .after(Cursor(Int64(index + 1)))).first, "\(edit.sql)")
      #expect(entry.cursor == Cursor(Int64(index + 2)), "\(edit.sql)")
      #expect(entry.origin == "external")
      #expect(entry.events == edit.events, "\(edit.sql)")
      #expect(entry.change.account == AccountID(edit.account), "\(edit.sql)")
    }
    // A removed active account: the pointer goes with it, in the same entry.
    try await ProcessRunner.sqlite3(
      path, "UPDATE active_account SET account_id = 2; DELETE FROM accounts WHERE id = 2")
    let removal = try #require(try store.history(from: .after(Cursor(9))).first)
    #expect(removal.events == [.removed(username: "robert")])
    #expect(removal.change.wasActive && !removal.change.isActive)
    #expect(try store.roster().activeID == nil)
    #expect(try store.history(from: .after(removal.cursor)).isEmpty, "one entry for the removal")
    let checks = try store.check()
    #expect(checks.allSatisfy { $0.verdict == .passed }, "\(checks)")
  }

  @Test func editsThatBreakTheModelAreRefusedAndChangeNothing() async throws {
    let dir = try TemporaryDirectory()
    let path = dir.file("session.db")
    let store = try SessionStore(path: path)
    try await store.logIn(as: "alice")
    try await store.logIn(as: "bob")
    try await store.remove("bob")
    let refused = [
      "INSERT INTO accounts (username) VALUES ('alice')",  // a second alice
      "INSERT INTO accounts (id, username) VALUES (2, 'carol')",  // bob's id again
      "UPDATE accounts SET id = 7 WHERE id = 1",
      "UPDATE active_account SET account_id = 99",
      "INSERT INTO active_account (id, account_id) VALUES (2, 1)",
      "DELETE FROM active_account",
      "UPDATE session SET is_logged_in = 1",  // no account is active, and no name given
      "DELETE FROM session",
      "UPDATE accounts SET is_logged_in = 2",
    ]
    let head = try store.bounds().head
    for sql in refused {
      let run = try await ProcessRunner.run("/usr/bin/sqlite3", [path, sql])
      #expect(run.status != 0, "\(sql) was accepted")
    }
    #expect(try store.bounds().head == head)
    #expect(try store.roster().accounts.map(\.username) == ["alice"])
    // Past the limit: the 1001st account is refused, by the library and by the file.
    try await ProcessRunner.sqlite3(
      path,
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 999) "
        + "INSERT INTO accounts (username) SELECT 'user' || i FROM n")
    #expect(try store.roster().accounts.count == SessionRoster.limit)
    let full = try #require(throws: SessionStorageError.self) { try store.blocking.logIn(as: "one-more") }
    #expect(full.code == .rosterFull)
    let shell = try await ProcessRunner.run(
      "/usr/bin/sqlite3", [path, "INSERT INTO accounts (username) VALUES ('x')"])
    #expect(shell.status != 0)
    #expect(shell.stderr.contains("its limit"))
    #expect(try await store.logIn(as: "user7") != nil, "an account in the roster still signs in")
  }
}
