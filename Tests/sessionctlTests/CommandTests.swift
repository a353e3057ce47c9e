import Foundation
import Testing

/// Every command's output and exit status, run as a separate process.
@Suite(.serialized, .timeLimit(.minutes(10))) struct CommandTests {
  static let timestamp = #"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"#

  func matches(_ text: String, _ pattern: String) -> Bool {
    text.range(of: "^" + pattern + "$", options: .regularExpression) != nil
  }

  @Test func loginPrintsTheChange() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let outcome = try await sandbox.run(db: db, ["login", "alice"])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr == "")
    #expect(outcome.lines.count == 1)
    #expect(
      matches(outcome.lines[0], "1  \(Self.timestamp)  sessionctl  add alice, login alice, activate alice"))
    #expect(try await sandbox.sqlite(db, "SELECT username, is_logged_in FROM session") == "alice|1")
    #expect(try await sandbox.sqlite(db, "SELECT origin FROM session_changes") == "sessionctl")
    #expect(sandbox.mode(db) == 0o600)
  }

  @Test func writesThatChangeNothingSaySo() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let again = try await sandbox.run(db: db, ["login", "alice"])
    #expect(again.status == 0)
    #expect(again.stdout == "no change: already logged in as alice\n")
    #expect(again.stderr == "")
    let json = try await sandbox.run(db: db, ["login", "alice", "--json"])
    #expect(json.status == 0)
    let line = try #require(json.jsonLines.first)
    #expect(line["type"] as? String == "noChange")
    #expect(line["cursor"] as? Int == 1)
    #expect((line["state"] as? [String: Any])?["username"] as? String == "alice")

    _ = try await sandbox.run(db: db, ["logout"])
    #expect(try await sandbox.run(db: db, ["logout"]).stdout == "no change: alice is not logged in\n")
    #expect(
      try await sandbox.run(db: db, ["rename", "alice"]).stdout
        == "no change: the username is already alice\n")
    #expect(try await sandbox.sqlite(db, "SELECT count(*) FROM session_changes") == "2")
  }

  @Test func logoutKeepsTheUsernameAndRenameKeepsTheLoginState() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let logout = try await sandbox.run(db: db, ["logout"])
    #expect(logout.status == 0)
    #expect(matches(logout.stdout, "2  \(Self.timestamp)  sessionctl  logout alice\n"))
    let rename = try await sandbox.run(db: db, ["rename", "bob", "--json"])
    #expect(rename.status == 0)
    let change = try #require(rename.jsonLines.first)
    #expect(change["cursor"] as? Int == 3)
    let events = change["events"] as? [[String: Any]]
    #expect(events?.count == 1)
    #expect(events?.first?["type"] as? String == "usernameChanged")
    #expect(events?.first?["from"] as? String == "alice")
    #expect(events?.first?["to"] as? String == "bob")
    #expect((change["after"] as? [String: Any])?["isLoggedIn"] as? Bool == false)
    #expect(try await sandbox.sqlite(db, "SELECT username, is_logged_in FROM session") == "bob|0")
  }

  @Test func loginAcceptsADashedUsernameAfterDoubleDash() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let outcome = try await sandbox.run(db: db, ["login", "--", "-dash"])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(try await sandbox.sqlite(db, "SELECT username FROM session") == "-dash")
  }

  @Test func usernamesAreStoredInNFC() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    #expect(try await sandbox.run(db: db, ["login", "e\u{301}mile"]).status == 0)
    let status = try await sandbox.run(db: db, ["status", "--json"])
    #expect(status.jsonLines.first?["username"] as? String == "\u{E9}mile")
    #expect(status.stdout.contains("\u{E9}mile"))
  }

  @Test func statusHuman() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let outcome = try await sandbox.run(db: db, ["status"])
    #expect(outcome.status == 0)
    #expect(outcome.stderr == "")
    #expect(outcome.lines.count == 7)
    #expect(outcome.lines[0] == "greeting   Hello, alice")
    #expect(outcome.lines[1] == "active     alice")
    #expect(outcome.lines[2] == "logged in  yes")
    #expect(matches(outcome.lines[3], "updated    \(Self.timestamp)"))
    #expect(outcome.lines[4] == "accounts   1")
    #expect(outcome.lines[5] == "cursor     1")
    #expect(outcome.lines[6] == "database   \(db)")
    _ = try await sandbox.run(db: db, ["logout"])
    #expect(try await sandbox.run(db: db, ["status"]).lines.first == "greeting   Signed out")
  }

  @Test func statusJSONHasExactlyTheDesignFields() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["migrate"])
    let fresh = try await sandbox.run(db: db, ["status", "--json"])
    #expect(fresh.status == 0)
    #expect(fresh.stdout.hasPrefix(#"{"username":null,"isLoggedIn":false,"updatedAt":""#))
    #expect(fresh.stdout.hasSuffix(#","cursor":0,"active":null,"accounts":0}"# + "\n"))
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let outcome = try await sandbox.run(db: db, ["-j", "status"])
    let object = try #require(outcome.jsonLines.first)
    #expect(Set(object.keys) == ["username", "isLoggedIn", "updatedAt", "cursor", "active", "accounts"])
    #expect(object["username"] as? String == "alice")
    #expect(object["isLoggedIn"] as? Bool == true)
    #expect(object["cursor"] as? Int == 1)
    let updatedAt = try await sandbox.sqlite(db, "SELECT updated_at FROM session")
    #expect(object["updatedAt"] as? String == updatedAt)
  }

  @Test func historyListsEveryChangeOldestFirst() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "alice"], ["rename", "bob"], ["logout"], ["login", "carol"]] {
      _ = try await sandbox.run(db: db, command)
    }
    try await sandbox.sqlite(db, "UPDATE session SET username = 'dave'")
    let outcome = try await sandbox.run(db: db, ["history"])
    #expect(outcome.status == 0)
    #expect(outcome.stderr == "")
    #expect(outcome.lines.count == 5)
    #expect(
      matches(outcome.lines[0], "1  \(Self.timestamp)  sessionctl  add alice, login alice, activate alice"))
    #expect(
      matches(outcome.lines[3], "4  \(Self.timestamp)  sessionctl  add carol, login carol, activate carol"))
    #expect(matches(outcome.lines[4], "5  \(Self.timestamp)  external    rename carol → dave"))

    let json = try await sandbox.run(db: db, ["history", "--json"])
    #expect(json.jsonLines.count == 5)
    let ats = try await sandbox.sqlite(db, "SELECT at FROM session_changes ORDER BY seq").split(
      separator: "\n")
    #expect(json.jsonLines.map { $0["at"] as? String } == ats.map { String($0) })
    #expect(
      json.jsonLines.map { $0["origin"] as? String } == [
        "sessionctl", "sessionctl", "sessionctl", "sessionctl", "external",
      ])
    for line in json.jsonLines {
      #expect(
        Set(line.keys) == [
          "type", "cursor", "at", "origin", "account", "events", "before", "after", "wasActive", "isActive",
        ])
      #expect(Set((line["before"] as? [String: Any] ?? [:]).keys) == ["username", "isLoggedIn", "updatedAt"])
    }

    #expect(try await sandbox.run(db: db, ["history", "--since", "3"]).lines.count == 2)
    #expect(
      try await sandbox.run(db: db, ["history", "--since=3", "-n", "1"]).lines.map { $0.prefix(1) } == ["4"])
    #expect(
      try await sandbox.run(db: db, ["history", "-jn2"]).jsonLines.map { $0["cursor"] as? Int } == [1, 2])
    #expect(try await sandbox.run(db: db, ["history", "--limit", "0"]).stdout == "")
    let atHead = try await sandbox.run(db: db, ["history", "--since", "5"])
    #expect(atHead.status == 0)
    #expect(atHead.stdout == "")
  }

  @Test func compactByCountAndByCursor() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "a"], ["logout"], ["login", "b"], ["logout"], ["login", "c"]] {
      _ = try await sandbox.run(db: db, command)
    }
    let keep = try await sandbox.run(db: db, ["compact", "--keep", "3"])
    #expect(keep.status == 0)
    #expect(keep.stdout == "removed 2 entries; kept 3…5\n")
    #expect(keep.stderr == "")
    let before = try await sandbox.run(db: db, ["compact", "--before", "5", "--json"])
    #expect(before.stdout == #"{"type":"compaction","removed":2,"oldest":5,"head":5}"# + "\n")
    let all = try await sandbox.run(db: db, ["compact", "--keep=0"])
    #expect(all.stdout == "removed 1 entry; none kept (head 5)\n")
    #expect(try await sandbox.run(db: db, ["status", "--json"]).jsonLines.first?["cursor"] as? Int == 5)
    _ = try await sandbox.run(db: db, ["logout"])
    #expect(
      try await sandbox.run(db: db, ["history", "--json"]).jsonLines.map { $0["cursor"] as? Int } == [6])
  }

  @Test func migrateCreatesAndThenIsUpToDate() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    let first = try await sandbox.run(db: db, ["migrate"])
    #expect(first.status == 0)
    #expect(first.stderr == "")
    #expect(first.lines.count == 5)
    #expect(first.lines[0] == "created \(db)")
    #expect(matches(first.lines[1], "applied 0001_session_and_feed \\(sha256 [0-9a-f]{12}\\)"))
    #expect(matches(first.lines[2], "applied 0002_feed_tip \\(sha256 [0-9a-f]{12}\\)"))
    #expect(matches(first.lines[3], "applied 0003_retention \\(sha256 [0-9a-f]{12}\\)"))
    #expect(matches(first.lines[4], "applied 0004_accounts \\(sha256 [0-9a-f]{12}\\)"))
    let second = try await sandbox.run(db: db, ["migrate"])
    #expect(second.stdout == "\(db) is up to date\n")
    let json = try await sandbox.run(db: db, ["migrate", "--json"])
    #expect(json.stdout == #"{"type":"migrate","path":"\#(db)","created":false,"applied":[]}"# + "\n")
    #expect(
      try await sandbox.sqlite(db, "SELECT name FROM schema_migrations ORDER BY version")
        == "0001_session_and_feed\n0002_feed_tip\n0003_retention\n0004_accounts")
  }

  @Test func migrateAppliesToAnEmptyDatabaseThatReadersRefuse() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("empty.db")
    try await sandbox.sqlite(db, "CREATE TABLE t(x); DROP TABLE t;")
    let status = try await sandbox.run(db: db, ["status"])
    #expect(status.status == 1)
    #expect(
      status.stderr.hasPrefix("sessionctl: error: \(db): the file needs migration 0001_session_and_feed"))
    #expect(status.stderr.contains("run 'sessionctl migrate'"))
    let migrate = try await sandbox.run(db: db, ["migrate", "--json"])
    #expect(migrate.status == 0)
    let applied = migrate.jsonLines.first?["applied"] as? [[String: Any]]
    #expect(applied?.first?["version"] as? Int == 1)
    #expect(applied?.first?["name"] as? String == "0001_session_and_feed")
    #expect((applied?.first?["checksum"] as? String)?.count == 64)
    #expect(try await sandbox.run(db: db, ["status"]).status == 0)
  }

  @Test func checkPassesOnAHealthyFile() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    let outcome = try await sandbox.run(db: db, ["check"])
    #expect(outcome.status == 0, "\(outcome)")
    #expect(outcome.stderr == "")
    #expect(
      outcome.lines.map { String($0.prefix(16)) } == [
        "ok    integrity ", "ok    migrations", "ok    schema    ", "ok    state     ", "ok    times     ",
        "ok    continuity", "ok    cursors   ", "ok    username  ",
      ])
    let json = try await sandbox.run(db: db, ["check", "--json"])
    #expect(json.jsonLines.count == 8)
    #expect(json.jsonLines.allSatisfy { $0["type"] as? String == "check" && $0["passed"] as? Bool == true })
  }

  @Test func checkReportsAHoleInTheFeed() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    for command in [["login", "a"], ["logout"], ["login", "b"]] { _ = try await sandbox.run(db: db, command) }
    try await sandbox.sqlite(db, "DELETE FROM session_changes WHERE seq = 2")
    let outcome = try await sandbox.run(db: db, ["check"])
    #expect(outcome.status == 1)
    #expect(outcome.lines.contains("FAIL  continuity  1 cursor(s) missing between 1 and 3"))
    #expect(outcome.lines.filter { $0.hasPrefix("ok") }.count == 7)
    #expect(outcome.stderr == "sessionctl: error: check found 1 problem in \(db)\n")
  }

  @Test func checkReportsAStateThatDisagreesWithTheFeed() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(
      db, "DROP TRIGGER accounts_external_update; UPDATE session SET username = 'mallory';")
    let outcome = try await sandbox.run(db: db, ["check", "--json"])
    #expect(outcome.status == 1)
    let failed = outcome.jsonLines.filter { $0["passed"] as? Bool == false }.compactMap {
      $0["name"] as? String
    }
    #expect(failed == ["schema", "state"])
    #expect(outcome.stderr == "sessionctl: error: check found 2 problems in \(db)\n")
  }

  @Test func checkReportsAnInvisibleCharacterStoredByTheShell() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    try await sandbox.sqlite(db, "UPDATE session SET username = 'alice' || char(8203)")
    let outcome = try await sandbox.run(db: db, ["check"])
    #expect(outcome.status == 1)
    #expect(
      outcome.lines.contains(
        "FAIL  username    stored invalid username: it contains the invisible format character U+200B "
          + "(ZERO WIDTH SPACE) at position 6"), "\(outcome)")
    #expect(outcome.lines.filter { $0.hasPrefix("FAIL") }.count == 1)
    #expect(outcome.stderr == "sessionctl: error: check found 1 problem in \(db)\n")
  }

  /// C1 controls and bidirectional controls only a shell edit can store: every output shows
  /// them escaped, so a terminal never receives them raw.
  @Test func controlAndBidiCharactersStoredByTheShellArePrintedEscaped() async throws {
    let sandbox = try Sandbox()
    let db = sandbox.path("s.db")
    _ = try await sandbox.run(db: db, ["login", "alice"])
    // U+0085 NEXT LINE and U+202E RIGHT-TO-LEFT OVERRIDE.
    try await sandbox.sqlite(db, "UPDATE session SET username = 'a' || char(133) || 'b' || char(8238) || 'c'")
    let raw: [Unicode.Scalar] = ["\u{85}", "\u{202E}"]
    var outputs: [Outcome] = []
    for arguments in [["status", "--json"], ["history", "--json"], ["history"], ["status"]] {
      outputs.append(try await sandbox.run(db: db, arguments))
    }
    for outcome in outputs {
      #expect(outcome.status == 0, "\(outcome)")
      #expect(!outcome.stdout.unicodeScalars.contains { raw.contains($0) }, "\(outcome)")
    }
    #expect(outputs[0].stdout.contains(#""username":"a\u0085b\u202ec""#), "\(outputs[0])")
    #expect(outputs[0].jsonLines.first?["username"] as? String == "a\u{85}b\u{202E}c")
    #expect(outputs[1].stdout.contains(#""to":"a\u0085b\u202ec""#), "\(outputs[1])")
    #expect(
      outputs[1].jsonLines.last?["after"].flatMap { $0 as? [String: Any] }?["username"] as? String
        == "a\u{85}b\u{202E}c")
    #expect(
      outputs[2].lines.last?.hasSuffix("external    rename alice → a\\u{85}b\\u{202E}c") == true,
      "\(outputs[2])")
    #expect(outputs[3].lines.contains("active     a\\u{85}b\\u{202E}c"), "\(outputs[3])")
  }

  @Test func version() async throws {
    let sandbox = try Sandbox()
    let outcome = try await sandbox.run(["--version"])
    #expect(outcome.status == 0)
    #expect(outcome.stdout == "sessionctl 2.0.0\n")
    #expect(outcome.stderr == "")
    #expect(try await sandbox.run(["--version", "--json"]).stdout == #"{"version":"2.0.0"}"# + "\n")
    #expect(!sandbox.exists(sandbox.home + "/.local"))
  }
}
