import Foundation
import Testing

/// The roster from the command line: `accounts`, `switch`, `remove`, `logout <username>` and
/// `--all`, `rename --account`, `--if-cursor` on every write, `status`'s roster lines, and
/// `--account` of `history` and `watch`.
@Suite(.serialized, .timeLimit(.minutes(10))) struct AccountCommandTests {
  static let time = #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"#

  func matches(_ text: String, _ pattern: String) -> Bool {
    text.range(of: "^" + pattern + "$", options: .regularExpression) != nil
  }

  /// A store where alice (id 1) and bob (id 2) are signed in and bob is active, at cursor 2.
  func twoAccounts(_ sandbox: Sandbox) async throws -> String {
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "alice"]).status == 0)
    #expect(try await sandbox.run(db: db, ["login", "bob"]).status == 0)
    return db
  }

  func entries(_ sandbox: Sandbox, _ db: String) async throws -> String {
    try await sandbox.sqlite(db, "SELECT count(*) FROM session_changes")
  }

  @Test func aSecondLoginAddsAnAccountAndAccountsListsTheRoster() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let first = try await sandbox.run(db: db, ["login", "alice"])
    #expect(
      matches(first.stdout, "1  \(Self.time)  sessionctl  add alice, login alice, activate alice\n"),
      "\(first)")
    let second = try await sandbox.run(db: db, ["login", "bob"])
    #expect(
      matches(second.stdout, "2  \(Self.time)  sessionctl  add bob, login bob, activate bob\n"), "\(second)")

    let accounts = try await sandbox.run(db: db, ["accounts"])
    #expect(accounts.status == 0, "\(accounts)")
    #expect(accounts.stderr == "")
    #expect(accounts.lines.count == 2)
    #expect(matches(accounts.lines[0], "  alice  logged in   since \(Self.time)  id 1"), "\(accounts)")
    #expect(matches(accounts.lines[1], "\\* bob    logged in   since \(Self.time)  id 2"), "\(accounts)")

    let json = try await sandbox.run(db: db, ["accounts", "--json"])
    #expect(json.lines.count == 1)
    let roster = try #require(json.jsonLines.first)
    #expect(roster["type"] as? String == "roster")
    #expect(roster["cursor"] as? Int == 2)
    #expect(roster["active"] as? Int == 2)
    let members = try #require(roster["accounts"] as? [[String: Any]])
    #expect(members.map { $0["username"] as? String } == ["alice", "bob"])
    #expect(members.map { $0["id"] as? Int } == [1, 2])
    #expect(members.map { $0["isLoggedIn"] as? Bool } == [true, true])
  }

  @Test func anEmptyRosterSaysSoAndAMissingFileIsNotCreated() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let missing = try await sandbox.run(db: db, ["accounts"])
    #expect(missing.status == 1)
    #expect(missing.stderr.contains("no database here"), "\(missing)")
    #expect(!sandbox.exists(db))
    _ = try await sandbox.run(db: db, ["migrate"])
    #expect(try await sandbox.run(db: db, ["accounts"]).stdout == "no accounts\n")
    let json = try #require(try await sandbox.run(db: db, ["accounts", "-j"]).jsonLines.first)
    #expect(json["active"] is NSNull)
    #expect((json["accounts"] as? [Any])?.isEmpty == true)
  }

  @Test func switchMakesAnotherAccountActive() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let switched = try await sandbox.run(db: db, ["switch", "alice"])
    #expect(switched.status == 0, "\(switched)")
    #expect(matches(switched.stdout, "3  \(Self.time)  sessionctl  activate alice\n"), "\(switched)")
    let again = try await sandbox.run(db: db, ["switch", "alice"])
    #expect(again.status == 0)
    #expect(again.stdout == "no change: alice is already the active account\n")
    let json = try #require(try await sandbox.run(db: db, ["switch", "alice", "--json"]).jsonLines.first)
    #expect(json["type"] as? String == "noChange")
    #expect(json["cursor"] as? Int == 3)
    let accounts = try await sandbox.run(db: db, ["accounts"])
    #expect(accounts.lines.map { $0.prefix(2) } == ["* ", "  "])
  }

  @Test func aNameNoAccountHasIsRefusedAndNothingIsWritten() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    for command in [
      ["switch", "carol"], ["remove", "carol"], ["logout", "carol"], ["rename", "--account", "carol", "x"],
    ] {
      let outcome = try await sandbox.run(db: db, command)
      #expect(outcome.status == 65, "\(command): \(outcome)")
      #expect(outcome.stdout == "")
      #expect(
        outcome.stderr
          == "sessionctl: error: no account is named 'carol' ('sessionctl accounts' lists the roster)\n",
        "\(command)")
    }
    #expect(try await entries(sandbox, db) == "2")
    // A missing file holds no account: it is not created to say so.
    let other = sandbox.path("other.db")
    let outcome = try await sandbox.run(db: other, ["switch", "alice"])
    #expect(outcome.status == 65, "\(outcome)")
    #expect(outcome.stderr.contains("no account is named 'alice'"))
    #expect(!sandbox.exists(other))
  }

  @Test func removeTakesTheAccountOutAndLeavesNoneActive() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let removed = try await sandbox.run(db: db, ["remove", "bob"])
    #expect(removed.status == 0, "\(removed)")
    #expect(matches(removed.stdout, "3  \(Self.time)  sessionctl  logout bob, remove bob\n"), "\(removed)")
    #expect(try await sandbox.run(db: db, ["accounts"]).lines.count == 1)
    let status = try await sandbox.run(db: db, ["status"])
    #expect(status.lines.first == "greeting   Signed out")
    #expect(status.lines.contains("active     none"), "\(status)")
    #expect(status.lines.contains("accounts   1"), "\(status)")
    let json = try #require(try await sandbox.run(db: db, ["status", "--json"]).jsonLines.first)
    #expect(json["active"] is NSNull)
    #expect(json["accounts"] as? Int == 1)
    #expect(json["cursor"] as? Int == 3)
    #expect(try await sandbox.run(db: db, ["logout"]).stdout == "no change: no account is active\n")
    // With no account active, a rename adds the name, signed out and active.
    let rename = try await sandbox.run(db: db, ["rename", "carol"])
    #expect(rename.status == 0, "\(rename)")
    #expect(rename.stdout.hasSuffix("add carol, activate carol\n"), "\(rename)")
    #expect(try await entries(sandbox, db) == "4")
  }

  @Test func statusShowsTheActiveAccountAndTheRostersSize() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let status = try await sandbox.run(db: db, ["status"])
    #expect(status.status == 0)
    #expect(status.lines.count == 7, "\(status)")
    #expect(status.lines[0] == "greeting   Hello, bob")
    #expect(status.lines[1] == "active     bob")
    #expect(status.lines[2] == "logged in  yes")
    #expect(matches(status.lines[3], "updated    \(Self.time)"))
    #expect(status.lines[4] == "accounts   2")
    #expect(status.lines[5] == "cursor     2")
    let json = try #require(try await sandbox.run(db: db, ["status", "--json"]).jsonLines.first)
    #expect(json["username"] as? String == "bob")
    #expect(json["active"] as? Int == 2)
    #expect(json["accounts"] as? Int == 2)
  }

  @Test func logoutOfANamedAccountOrOfAll() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let named = try await sandbox.run(db: db, ["logout", "alice"])
    #expect(matches(named.stdout, "3  \(Self.time)  sessionctl  logout alice\n"), "\(named)")
    #expect(
      try await sandbox.run(db: db, ["logout", "alice"]).stdout == "no change: alice is not logged in\n")
    _ = try await sandbox.run(db: db, ["login", "alice"])  // 4: signed in and active again
    let all = try await sandbox.run(db: db, ["logout", "--all"])
    #expect(all.status == 0, "\(all)")
    #expect(all.lines.count == 2, "\(all)")
    #expect(matches(all.lines[0], "5  \(Self.time)  sessionctl  logout alice"), "\(all)")
    #expect(matches(all.lines[1], "6  \(Self.time)  sessionctl  logout bob"), "\(all)")
    #expect(try await sandbox.run(db: db, ["logout", "--all"]).stdout == "no change: nobody is logged in\n")
    #expect(try await sandbox.run(db: db, ["logout"]).stdout == "no change: alice is not logged in\n")
    _ = try await sandbox.run(db: db, ["login", "bob"])
    let json = try await sandbox.run(db: db, ["logout", "--all", "--json"])
    #expect(json.jsonLines.map { $0["cursor"] as? Int } == [8])
  }

  @Test func logoutOfANameAndAllIsAUsageError() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let outcome = try await sandbox.run(db: db, ["logout", "alice", "--all"])
    #expect(outcome.status == 64, "\(outcome)")
    #expect(
      outcome.stderr.hasPrefix("sessionctl: error: give either '<username>' or '--all' to 'logout', not both")
    )
    #expect(outcome.stderr.contains("See 'sessionctl help logout'."))
    #expect(try await entries(sandbox, db) == "2")
  }

  @Test func renameTheActiveAccountOrANamedOne() async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let active = try await sandbox.run(db: db, ["rename", "robert"])
    #expect(matches(active.stdout, "3  \(Self.time)  sessionctl  rename bob → robert\n"), "\(active)")
    let named = try await sandbox.run(db: db, ["rename", "--account", "alice", "alicia", "--json"])
    let change = try #require(named.jsonLines.first, "\(named)")
    #expect(change["account"] as? Int == 1)
    #expect((change["after"] as? [String: Any])?["username"] as? String == "alicia")
    #expect(
      try await sandbox.run(db: db, ["rename", "--account", "alicia", "alicia"]).stdout
        == "no change: the username is already alicia\n")
    let taken = try await sandbox.run(db: db, ["rename", "--account", "alicia", "robert"])
    #expect(taken.status == 65, "\(taken)")
    #expect(taken.stderr.contains("another account is named 'robert'"), "\(taken)")
    #expect(try await entries(sandbox, db) == "4")
  }

  /// Every write with a stale `--if-cursor`: exit 68, the reason, and nothing written.
  @Test(arguments: [
    ["login", "carol"], ["login", "alice"], ["logout"], ["logout", "alice"], ["logout", "--all"],
    ["rename", "robert"], ["rename", "--account", "alice", "alicia"], ["switch", "alice"],
    ["remove", "alice"],
  ])
  func aStaleIfCursorIsAConflict(_ command: [String]) async throws {
    let sandbox = try Sandbox()
    let db = try await twoAccounts(sandbox)
    let stale = try await sandbox.run(db: db, command + ["--if-cursor", "1"])
    #expect(stale.status == 68, "\(stale)")
    #expect(stale.stdout == "")
    #expect(
      stale.stderr.hasPrefix(
        "sessionctl: error: the store is at cursor 2, not at 1 as the write expected: another write committed "
          + "first; nothing was written"), "\(stale)")
    #expect(try await entries(sandbox, db) == "2")
    let fresh = try await sandbox.run(db: db, command + ["--if-cursor", "2"])
    #expect(fresh.status == 0, "\(fresh)")
    #expect(fresh.stdout.hasPrefix("3  ") || fresh.stdout.hasPrefix("no change"), "\(fresh)")
  }

  @Test func ifCursorOnANewStoreAndABadValue() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let bad = try await sandbox.run(db: db, ["login", "alice", "--if-cursor", "x"])
    #expect(bad.status == 65, "\(bad)")
    #expect(bad.stderr.contains("'--if-cursor'"), "\(bad)")
    #expect(!sandbox.exists(db))
    // A store that does not exist yet is at cursor 0: expecting another is a conflict, and
    // the file is not created to say so.
    let ahead = try await sandbox.run(db: db, ["login", "alice", "--if-cursor", "3"])
    #expect(ahead.status == 68, "\(ahead)")
    #expect(ahead.stderr.contains("the store is at cursor 0, not at 3"), "\(ahead)")
    #expect(!sandbox.exists(db))
    #expect(try await sandbox.run(db: db, ["login", "alice", "--if-cursor", "0"]).status == 0)
    #expect(try await sandbox.run(db: db, ["login", "bob", "--if-cursor", "0"]).status == 68)
  }

  /// alice 1, bob 2, switch alice 3, logout bob 4, rename alice → amy 5, remove bob 6.
  func aHistory(_ sandbox: Sandbox) async throws -> String {
    let db = try await twoAccounts(sandbox)
    for command in [["switch", "alice"], ["logout", "bob"], ["rename", "amy"], ["remove", "bob"]] {
      #expect(try await sandbox.run(db: db, command).status == 0, "\(command)")
    }
    return db
  }

  @Test func historyOfOneAccount() async throws {
    let sandbox = try Sandbox()
    let db = try await aHistory(sandbox)
    let amy = try await sandbox.run(db: db, ["history", "--account", "amy"])
    #expect(amy.status == 0, "\(amy)")
    #expect(amy.lines.map { $0.prefix(3) } == ["1  ", "3  ", "5  "], "\(amy)")
    #expect(amy.lines.last?.hasSuffix("rename alice → amy") == true)
    // A name the roster lost: the account that last had it, renamed or removed since.
    let alice = try await sandbox.run(db: db, ["history", "--account", "alice", "--json"])
    #expect(alice.jsonLines.map { $0["cursor"] as? Int } == [1, 3, 5], "\(alice)")
    #expect(alice.jsonLines.allSatisfy { $0["account"] as? Int == 1 })
    let bob = try await sandbox.run(db: db, ["history", "--account", "bob", "--since", "2", "-n", "1"])
    #expect(bob.lines.count == 1, "\(bob)")
    #expect(bob.lines.first?.hasPrefix("4  ") == true, "\(bob)")
    let nobody = try await sandbox.run(db: db, ["history", "--account", "carol"])
    #expect(nobody.status == 65, "\(nobody)")
    #expect(nobody.stderr.contains("no account is named 'carol', in the roster or in the history kept"))
    #expect(nobody.stdout == "")
  }

  @Test func watchOfOneAccount() async throws {
    let sandbox = try Sandbox()
    let db = try await aHistory(sandbox)
    let bob = try await sandbox.run(db: db, ["watch", "--account", "bob", "--since", "0", "--limit", "3"])
    #expect(bob.status == 0, "\(bob)")
    #expect(bob.lines.map { $0.prefix(3) } == ["2  ", "4  ", "6  "], "\(bob)")
    // The snapshot is the account's: a removed one has no username.
    let removed = try await sandbox.run(db: db, ["watch", "--account", "bob", "--limit", "0", "--json"])
    let snapshot = try #require(removed.jsonLines.first, "\(removed)")
    #expect(snapshot["cursor"] as? Int == 6)
    #expect((snapshot["state"] as? [String: Any])?["username"] is NSNull)
    let amy = try await sandbox.run(db: db, ["watch", "--account", "amy", "--limit", "0"])
    #expect(matches(amy.stdout, "snapshot at 6: amy, logged in, updated \(Self.time)\n"), "\(amy)")
    // By its former name, a renamed account is the same account, under its new name.
    let alice = try await sandbox.run(db: db, ["watch", "--account", "alice", "--limit", "0"])
    #expect(alice.stdout == amy.stdout, "\(alice)")

    // Live: only the account's changes reach the watcher.
    #expect(try await sandbox.run(db: db, ["login", "carol"]).status == 0)  // 7
    let (watch, _) = try await sandbox.start(["--db", db, "watch", "--account", "amy", "--limit", "1"])
    #expect(try await watch.readLine()?.hasPrefix("snapshot at 7: amy") == true)
    #expect(try await sandbox.run(db: db, ["logout", "carol"]).status == 0)  // 8
    #expect(try await sandbox.run(db: db, ["logout", "amy"]).status == 0)  // 9
    let line = try await watch.readLine()
    #expect(line?.hasPrefix("9  ") == true && line?.hasSuffix("logout amy") == true, "\(line ?? "nil")")
    #expect(try await watch.wait(timeout: .seconds(20)) == 0)
  }

  @Test func aHookGetsTheAccountAndTheNewEventWords() async throws {
    let sandbox = try Sandbox()
    let db = try await aHistory(sandbox)
    // The hook is /bin/sh with its script as an argument: a script file written here could be
    // inherited, open for writing, by a child another test spawns meanwhile, and starting it
    // would fail with ETXTBSY.
    let hook = [
      "/bin/sh", "-c",
      #"echo "$SESSION_CURSOR $SESSION_ACCOUNT ${SESSION_USERNAME-unset} $SESSION_ACTIVE $SESSION_EVENTS" >&2"#,
    ]
    let outcome = try await sandbox.run(
      db: db, ["watch", "--since", "0", "--limit", "6", "--exec", "--"] + hook)
    #expect(outcome.status == 0, "\(outcome)")
    #expect(
      outcome.stderr.split(separator: "\n") == [
        "1 1 alice 1 add,login,activate", "2 2 bob 1 add,login,activate", "3 1 alice 1 activate",
        "4 2 bob 0 logout", "5 1 amy 1 rename", "6 2 bob 0 remove",
      ], "\(outcome)")
  }
}
