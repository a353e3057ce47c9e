import FeedKit
import Foundation
import SessionStorage
import SessionStoragePostgres
import TestSupport
import Testing

/// The roster on PostgreSQL: every kind of write, conditions, the limit, psql's edits of the
/// roster tables as typed `external` entries, the edits the schema refuses, and a 1.x schema
/// migrated.
@Suite(.timeLimit(.minutes(10))) struct PostgresRosterTests {
  /// The events of each entry, as `sessionctl` prints them.
  private func events(_ entries: [SessionEntry]) -> [String] { entries.map(\.change.description) }

  /// The roster rebuilt from the whole history must be the one the store reads.
  private func expectRosterIsItsHistory(
    _ store: SessionStore, sourceLocation: SourceLocation = #_sourceLocation
  )
    throws
  {
    let history = try store.history(limit: 10_000)
    let empty = SessionRoster(accounts: [], activeID: nil, activeSince: .distantPast, cursor: .zero)
    var folded = history.reduce(empty) { $0.applying($1) }
    let roster = try store.roster()
    folded.activeSince = roster.activeSince
    #expect(folded == roster, sourceLocation: sourceLocation)
    #expect(try store.state == roster.state, sourceLocation: sourceLocation)
    let check = try store.check()
    #expect(check.allSatisfy { $0.verdict == .passed }, "\(check)", sourceLocation: sourceLocation)
  }

  @Test func everyKindOfWriteCommitsItsTypedEntries() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let login = try #require(try await store.logIn(as: "alice"))
    #expect(events([login]) == ["add alice, login alice, activate alice"])
    #expect(login.change.account == AccountID(1) && login.cursor == Cursor(1))
    #expect(events([try #require(try await store.logIn(as: "bob"))]) == ["add bob, login bob, activate bob"])
    // An existing account that is signed in only becomes active again.
    #expect(events([try #require(try await store.logIn(as: "alice"))]) == ["activate alice"])
    #expect(try await store.logIn(as: "alice") == nil, "signed in and active already")
    #expect(events([try #require(try await store.logOut("bob"))]) == ["logout bob"])
    #expect(try store.state.username == "alice", "a named logout leaves the active account alone")
    #expect(events([try #require(try await store.logOut())]) == ["logout alice"])
    #expect(try await store.logOut() == nil)
    // An existing account that is signed out signs in and becomes active in one entry.
    #expect(events([try #require(try await store.logIn(as: "bob"))]) == ["login bob, activate bob"])
    try await store.logIn(as: "alice")
    let all = try await store.logOutAll()
    #expect(events(all).sorted() == ["logout alice", "logout bob"])
    #expect(all.map(\.cursor.value) == [all[0].cursor.value, all[0].cursor.value + 1], "consecutive cursors")
    #expect(try await store.logOutAll().isEmpty)
    #expect(events([try #require(try await store.rename(to: "carol"))]) == ["rename alice → carol"])
    #expect(events([try #require(try await store.rename("bob", to: "dave"))]) == ["rename bob → dave"])
    #expect(events([try #require(try await store.switchTo("dave"))]) == ["activate dave"])
    #expect(try await store.switchTo("dave") == nil)
    #expect(await code(.usernameTaken) { try await store.rename(to: "carol") })
    #expect(await code(.accountNotFound) { try await store.switchTo("zoe") })
    #expect(events([try #require(try await store.remove("dave"))]) == ["remove dave"])
    let roster = try store.roster()
    #expect(roster.activeID == nil && roster.accounts.map(\.username) == ["carol"])
    #expect(try store.state.username == nil)
    #expect(try !store.state.isLoggedIn)
    #expect(try store.state.updatedAt == store.history().last?.time, "no active account since the removal")
    #expect(try await store.logOut() == nil, "no active account: nothing to sign out")
    // With none active, a rename adds the name, signed out and active; a new account gets a
    // new id: removed ones are never given again.
    let erin = try #require(try await store.rename(to: "erin"))
    #expect(events([erin]) == ["add erin, activate erin"])
    #expect(erin.change.account == AccountID(3))
    #expect(try await store.logIn(as: "dave")?.change.account == AccountID(4))
    #expect(try store.history().allSatisfy { $0.origin == "desk" })
    try expectRosterIsItsHistory(store)
  }

  @Test func conditionsOnTheHeadAndOnAnAccountRefuseAStaleWrite() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let first = try #require(try await store.logIn(as: "alice"))
    try await store.logIn(as: "bob")
    #expect(
      await code(.conflict) {
        try await store.logOut(expecting: .head(first.cursor))
      })
    #expect(
      await code(.conflict) {
        try await store.logOut("bob", expecting: .account(first.cursor))
      })
    #expect(
      await code(.conflict) {
        try await store.logIn(as: "carol", expecting: .account(Cursor(2)))
      })
    #expect(try store.bounds().head == Cursor(2), "a refused write writes nothing")
    // Alice's newest change is still cursor 1, whatever bob did since.
    #expect(try await store.logOut("alice", expecting: .account(first.cursor)) != nil)
    #expect(try await store.logIn(as: "carol", expecting: .account(.zero)) != nil)
    #expect(try await store.logOut(expecting: .head(Cursor(4))) != nil)
    // A change by psql moves the head: a write that expected the old one is refused.
    _ = try await cluster.psql(
      "UPDATE accounts SET is_logged_in = true WHERE username = 'alice'",
      schema: store.requirePostgres().schema)
    #expect(await code(.conflict) { try await store.switchTo("alice", expecting: .head(Cursor(5))) })
    #expect(try await store.switchTo("alice", expecting: .head(Cursor(6))) != nil)
    try expectRosterIsItsHistory(store)
  }

  @Test func theRosterHoldsAtMostItsLimit() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let schema = try store.requirePostgres().schema
    _ = try await cluster.psql(
      "INSERT INTO accounts (username) SELECT 'user' || n FROM generate_series(1, \(SessionRoster.limit - 1)) n",
      schema: schema)
    #expect(try store.roster().accounts.count == SessionRoster.limit - 1)
    #expect(try store.bounds().head == Cursor(Int64(SessionRoster.limit - 1)), "one entry per row")
    try await store.logIn(as: "last")
    #expect(await code(.rosterFull) { try await store.logIn(as: "onemore") })
    await #expect(throws: (any Error).self) {
      try await cluster.psql("INSERT INTO accounts (username) VALUES ('byhand')", schema: schema)
    }
    #expect(try store.roster().accounts.count == SessionRoster.limit)
    // An account already in the roster still signs in.
    #expect(try await store.logIn(as: "user7") != nil)
    try await store.remove("user8")
    #expect(try await store.logIn(as: "onemore") != nil)
  }

  @Test func psqlEditsOfTheRosterAreExternalTypedEntries() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let schema = try store.requirePostgres().schema
    try await store.logIn(as: "alice")
    let edits = [
      ("INSERT INTO accounts (username, is_logged_in) VALUES ('bob', true)", ["add bob, login bob"]),
      ("UPDATE accounts SET is_logged_in = false WHERE username = 'alice'", ["logout alice"]),
      ("UPDATE accounts SET username = 'robert' WHERE username = 'bob'", ["rename bob → robert"]),
      ("UPDATE active_account SET account_id = 2", ["activate robert"]),
      ("UPDATE active_account SET account_id = NULL", ["deactivate robert"]),
      ("UPDATE active_account SET account_id = 1", ["activate alice"]),
      ("UPDATE session SET is_logged_in = true", ["login alice"]),
      ("UPDATE accounts SET is_logged_in = false", ["logout alice", "logout robert"]),
      ("DELETE FROM accounts WHERE username = 'alice'", ["remove alice"]),
      ("UPDATE accounts SET username = username", []),
    ]
    for (sql, expected) in edits {
      let head = try store.bounds().head
      _ = try await cluster.psql(sql, schema: schema)
      let entries = try store.history(from: .after(head))
      #expect(events(entries).sorted() == expected, "\(sql)")
      #expect(entries.allSatisfy { $0.origin == "external" }, "\(sql)")
    }
    let roster = try store.roster()
    #expect(roster.activeID == nil, "removing the active account leaves none active")
    #expect(roster.accounts.map(\.username) == ["robert"])
    #expect(try store.state == SessionState(username: nil, isLoggedIn: false, updatedAt: roster.activeSince))
    try expectRosterIsItsHistory(store)
    // The library's own writes still name their origin.
    #expect(try await store.logIn(as: "robert")?.origin == "desk")
  }

  @Test(arguments: [
    ("INSERT INTO accounts (username) VALUES ('alice')", "another account is named"),
    ("UPDATE accounts SET username = 'alice' WHERE username = 'bob'", "another account is named"),
    ("UPDATE active_account SET account_id = 42", "must be the id of an account"),
    ("UPDATE accounts SET id = 7 WHERE username = 'bob'", "id never changes"),
    ("INSERT INTO accounts (id, username) VALUES (9, 'carol')", "leave id out"),
    ("UPDATE accounts SET seq = 100 WHERE username = 'bob'", "kept by the store"),
    ("UPDATE accounts SET username = NULL WHERE username = 'bob'", "has a username"),
    ("TRUNCATE accounts", "cannot truncate"),
    ("TRUNCATE accounts CASCADE", "cannot be"),
    ("DELETE FROM active_account", "cannot be deleted"),
    ("INSERT INTO active_account (id) VALUES (2)", "exactly one row"),
    ("UPDATE active_account SET updated_at = now()", "kept by the store"),
    ("UPDATE session_writer SET head = 100", "kept by the store"),
    ("UPDATE session_writer SET last_account_id = 0", "kept by the store"),
    ("UPDATE session SET head = 100", "only username and is_logged_in"),
    ("INSERT INTO session (username) VALUES ('x')", "shows the active account"),
    ("DELETE FROM session", "shows the active account"),
    (
      "INSERT INTO session_changes SELECT * FROM session_changes WHERE seq = 1",
      "written by the session_feed trigger"
    ),
  ])
  func handEditsThatBreakTheModelAreRefused(sql: String, message: String) async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let schema = try store.requirePostgres().schema
    try await store.logIn(as: "alice")
    try await store.logIn(as: "bob")
    let before = try store.roster()
    do {
      _ = try await cluster.psql(sql, schema: schema)
      Issue.record("psql ran \(sql)")
    } catch {
      #expect("\(error)".contains(message), "\(error)")
    }
    #expect(try store.roster() == before, "nothing changed")
    #expect(try store.bounds().head == Cursor(2), "nothing recorded")
    try expectRosterIsItsHistory(store)
  }

  /// With no account active, an UPDATE of `session` that sets a username adds that account,
  /// active, as one external entry (as the SQLite view does); one that only signs in is refused.
  @Test func aSessionUpdateWithNoActiveAccountAddsTheNamedAccount() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk"))
    let schema = try store.requirePostgres().schema
    await #expect(throws: (any Error).self) {
      try await cluster.psql("UPDATE session SET is_logged_in = true", schema: schema)
    }
    #expect(try store.bounds().head == .zero)
    try await cluster.psql("UPDATE session SET username = 'alice', is_logged_in = true", schema: schema)
    let entry = try #require(try store.history().first)
    #expect(entry.origin == "external")
    #expect(
      entry.events == [
        .added(username: "alice"), .loggedIn(username: "alice"), .activated(username: "alice"),
      ])
    #expect(try store.bounds().head == Cursor(1))
    #expect(
      try await cluster.psql("SELECT username, is_logged_in, head FROM session", schema: schema)
        == "alice|t|1\n")
  }

  /// The 1.x habit of holding the session with `SELECT … FROM session FOR UPDATE` still holds
  /// what writers wait for: a write waits for psql's transaction, then commits after it.
  @Test func aSessionHeldForUpdateInPsqlMakesWritersWait() async throws {
    let cluster = try await PostgresCluster.shared()
    let store = try SessionStore(
      postgresURL: cluster.freshStoreURL(), options: .init(origin: "desk", lockTimeout: .milliseconds(300)))
    try await store.logIn(as: "alice")
    let name = uniqueName("holder")
    let held = Task { [schema = try store.requirePostgres().schema] in
      try await cluster.psql(
        "SET application_name = '\(name)'; BEGIN; SELECT 1 FROM session FOR UPDATE; SELECT pg_sleep(3); COMMIT;",
        schema: schema)
    }
    try #require(
      await eventually {
        (try? await cluster.query(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name = '\(name)' AND query LIKE '%pg_sleep%'"
        ))
          == "1\n"
      }, "psql holds the session")
    #expect(await code(.busy) { try await store.logOut() }, "the write waited for psql's lock")
    _ = try await held.value
    #expect(try await store.logOut() != nil)
  }

  /// The psql script that makes the schema `url` names with the 1.x migrations alone (0001 to
  /// 0003, recorded in `schema_migrations` as the 1.x migrator records them).
  private func oneXSchemaScript(_ url: String) throws -> String {
    let schema = try #require(url.range(of: "schema=").map { String(url[$0.upperBound...]) })
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appendingPathComponent("migrations/postgres")
    var script = "CREATE SCHEMA \(schema); SET search_path TO \"\(schema)\", pg_temp;\n"
    script +=
      "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
      + "checksum text NOT NULL, applied_at timestamptz NOT NULL);\n"
    for (version, name) in [
      (1, "0001_session_and_feed"), (2, "0002_own_tables_only"), (3, "0003_feed_guard_by_head"),
    ] {
      let sql = try String(contentsOf: folder.appendingPathComponent(name + ".sql"), encoding: .utf8)
      script += sql + "\n"
      script +=
        "INSERT INTO schema_migrations VALUES (\(version), '\(name)', "
        + "encode(sha256(convert_to($sql$\(sql)$sql$, 'UTF8')), 'hex'), now());\n"
    }
    return script
  }

  /// A schema made by the 1.x migrations alone, with history, migrates to the roster: its
  /// session is account 1, active; its history keeps its cursors and reads as account 1's.
  @Test func aOneXSchemaWithHistoryMigrates() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    var script = try oneXSchemaScript(url)
    script += """
      UPDATE session SET username = 'alice', is_logged_in = true, write_token = 1, updated_by = 'app';
      UPDATE session SET is_logged_in = false;
      UPDATE session SET username = 'bob';
      UPDATE session SET is_logged_in = true;
      DELETE FROM session_changes WHERE seq = 1;
      """
    _ = try await cluster.psql(script)
    let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
    #expect(store.appliedMigrations.map(\.name) == ["0004_accounts"])
    let roster = try store.roster()
    #expect(roster.cursor == Cursor(4))
    #expect(roster.activeID == AccountID(1))
    #expect(roster.accounts.map(\.username) == ["bob"] && roster.accounts.first?.isLoggedIn == true)
    #expect(roster.accounts.first?.cursor == Cursor(4))
    let history = try store.history()
    #expect(history.map(\.cursor.value) == [2, 3, 4])
    #expect(
      history.allSatisfy { $0.change.account == AccountID(1) && $0.change.wasActive && $0.change.isActive })
    #expect(events(history) == ["logout alice", "rename alice → bob", "login bob"])
    #expect(try store.state.username == "bob")
    let check = try store.check()
    #expect(check.allSatisfy { $0.verdict == .passed }, "\(check)")
    // The store goes on from the 1.x head, with new ids after account 1.
    let next = try #require(try await store.logIn(as: "carol"))
    #expect(next.cursor == Cursor(5) && next.change.account == AccountID(2))
    #expect(events([try #require(try await store.switchTo("bob"))]) == ["activate bob"])
  }

  /// A 1.x schema whose session never had a username migrates to an empty roster.
  @Test func aOneXSchemaWithoutAUsernameMigratesToAnEmptyRoster() async throws {
    let cluster = try await PostgresCluster.shared()
    let url = cluster.freshStoreURL()
    var script = try oneXSchemaScript(url)
    script += "UPDATE session SET is_logged_in = true;\n"
    _ = try await cluster.psql(script)
    let store = try SessionStore(postgresURL: url, options: .init(origin: "desk"))
    let roster = try store.roster()
    #expect(roster.accounts.isEmpty && roster.activeID == nil && roster.cursor == Cursor(1))
    #expect(try store.history().first?.change.wasActive == false)
    #expect(try store.history().first?.events == [.loggedIn(username: nil)])
    #expect(
      try await cluster.psql(
        "SELECT count(*), max(p.account_id) FROM accounts, active_account p",
        schema: store.requirePostgres().schema)
        == "0|\n")
    #expect(try await store.logIn(as: "alice")?.change.account == AccountID(1))
    #expect(try await store.logIn(as: "bob")?.change.account == AccountID(2))
  }
}

/// Whether `body` throws a `SessionStorageError` with `expected` as its code.
private func code(_ expected: SessionStorageError.Code, _ body: () async throws -> some Any) async -> Bool {
  do {
    _ = try await body()
    return false
  } catch {
    return (error as? SessionStorageError)?.code == expected
  }
}
