import Foundation
import SessionStorage
import TestSupport
import Testing

@testable import sessionbench

/// The baselines do the store's work: the same writes through `SessionStore` on one file and
/// through the raw baseline on another leave the same rows (times aside, which are checked
/// for consistency instead), and the store finds nothing wrong with the raw file. A baseline
/// that skips a statement (no feed row, no move of the active account, a wrong "before")
/// fails here, where a benchmark would only have looked faster.
@Suite(.timeLimit(.minutes(10))) struct RawBaselineTests {
  /// What a file holds, every column but the times: the roster, the active account and the
  /// feed.
  static func contents(_ path: String, origins: Bool = true) throws -> [String] {
    let db = try RawDB(path: path, readOnly: true)
    let origin = origins ? "origin" : "'-'"
    return try db.rows("SELECT 'account', id, username, is_logged_in, seq FROM accounts ORDER BY id")
      + db.rows("SELECT 'active', account_id, seq FROM active_account")
      + db.rows(
        "SELECT 'change', seq, \(origin), account_id, old_username, new_username, old_is_logged_in, "
          + "new_is_logged_in, was_active, is_active FROM session_changes ORDER BY seq")
  }

  /// The times that disagree: a change's time before that is not the time of the account's
  /// previous change (the change's own for a new account), an account's time that is not
  /// that of its newest change, an active pointer's time that is not that of the newest
  /// change that moved it. Empty for a file the store wrote.
  static func timeProblems(_ path: String) throws -> [String] {
    let db = try RawDB(path: path, readOnly: true)
    return try db.rows(
      """
      SELECT 'change ' || c.seq || ': before ' || c.old_updated_at FROM session_changes c
      WHERE c.old_updated_at IS NOT coalesce(
        (SELECT p.at FROM session_changes p WHERE p.account_id = c.account_id AND p.seq < c.seq
         ORDER BY p.seq DESC LIMIT 1), c.at)
      """)
      + db.rows(
        """
        SELECT 'account ' || a.id || ': ' || a.updated_at FROM accounts a
        WHERE a.updated_at IS NOT (SELECT at FROM session_changes WHERE seq = a.seq)
        """)
      + db.rows(
        """
        SELECT 'active: ' || p.updated_at FROM active_account p
        WHERE p.updated_at IS NOT (SELECT at FROM session_changes WHERE was_active != is_active
                                   ORDER BY seq DESC LIMIT 1)
        """)
  }

  /// The verifications of `SessionStore.check()` that fail on `path`.
  static func failedChecks(_ path: String) throws -> [String] {
    try SessionStore(path: path, options: .init(origin: "sessionbench")).check()
      .filter { $0.verdict != .passed }.map { "\($0.check): \($0.detail)" }
  }

  /// Two files made by the store, with `accounts` in the roster as the scenarios make it.
  private static func files(accounts: Int) throws -> (Workspace, SessionStore, RawWriter) {
    let workspace = try Workspace("test")
    try workspace.createRawSchema()
    let store = try SessionStore(
      path: workspace.ours, options: .init(durability: .normal, origin: "sessionbench"))
    let raw = try RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL"))
    try Roster.populate(store, raw, accounts: accounts)
    return (workspace, store, raw)
  }

  @Test(arguments: [1, 100])
  func theRawWriterLeavesWhatTheStoreWrites(accounts: Int) throws {
    let (workspace, store, raw) = try Self.files(accounts: accounts)
    // Joins, logouts, a login of a signed-out account, a switch to a signed-in one, no-ops.
    let other = accounts > 1 ? "user-002" : "bob"
    let writes: [String?] = [
      "alice", nil, "alice", other, nil, "alice", nil, nil, "alice", "alice", other, "alice",
    ]
    for (index, name) in writes.enumerated() {
      let ours = try name.map { try store.blocking.logIn(as: $0) } ?? store.blocking.logOut()
      let changed = try raw.write(name)
      #expect(changed == (ours != nil), "write \(index) (\(name ?? "logout"))")
    }
    // The history scenario's fill: the same writes, many to a transaction.
    try HistoryScenario.fill(raw, count: 6, from: 1, batch: 4)
    for index in 1...6 {
      _ = try index.isMultiple(of: 2) ? store.blocking.logIn(as: "alice") : store.blocking.logOut()
    }

    let ours = try Self.contents(workspace.ours)
    #expect(ours.count > accounts + 2 + writes.count)
    #expect(try Self.contents(workspace.raw) == ours)
    for path in [workspace.ours, workspace.raw] {
      #expect(try Self.timeProblems(path) == [], "\(path)")
      #expect(try Self.failedChecks(path) == [], "\(path)")
    }
    // The store reads the raw file's feed as its own writes.
    let entries = try SessionStore(path: workspace.raw, options: .init(origin: "sessionbench"))
      .history(from: .beginning, limit: 1000)
    #expect(entries.count == ours.filter { $0.hasPrefix("change|") }.count)
    #expect(entries.allSatisfy { $0.origin == "sessionbench" })
  }

  /// The shell user's UPDATE of `session`: on an empty roster it adds the account, then it
  /// changes the active one; a write that changes nothing says so. The triggers record it.
  @Test func theExternalWriterEditsTheActiveAccountThroughTheView() throws {
    let workspace = try Workspace("test")
    try workspace.createRawSchema()
    let writer = try RawWriter(db: RawDB(path: workspace.raw, synchronous: "NORMAL"), external: true)
    #expect(try writer.write(login: true))
    #expect(try writer.write(login: false))
    #expect(try !writer.write(login: false))
    #expect(try writer.write("bob"))
    let store = try SessionStore(path: workspace.raw, options: .init(origin: "sessionbench"))
    let state = try store.state
    #expect(state.username == "bob" && state.isLoggedIn)
    let entries = try store.history(from: .beginning, limit: 10)
    #expect(entries.map(\.origin) == ["external", "external", "external"])
    #expect(try store.roster().accounts.map(\.username) == ["bob"])
    #expect(try Self.failedChecks(workspace.raw) == [])
  }

  /// `cli-login`'s shell SQL commits what `sessionctl login` commits: the same rows, but for
  /// the origin.
  @Test(.enabled(if: ProcessScenario.sqlite3() != nil))
  func theShellLoginCommitsWhatSessionctlCommits() throws {
    let sqlite3 = try #require(ProcessScenario.sqlite3())
    let workspace = try Workspace("cli-login")
    let prepared = try ProcessScenario.prepare("cli-login", workspace)
    let environment = ProcessScenario.childEnvironment(workspace)
    let runs = 5
    for run in 0..<runs {
      _ = try ProcessScenario.timed(
        prepared.ours(ProcessRunner.product("sessionctl"), run), workspace, environment)
      _ = try ProcessScenario.timed(prepared.shell(sqlite3, run), workspace, environment)
    }
    try prepared.verify(runs, runs)
    #expect(try Self.contents(workspace.raw, origins: false) == Self.contents(workspace.ours, origins: false))
    let origins = try RawDB(path: workspace.raw, readOnly: true).rows(
      "SELECT origin FROM session_changes ORDER BY seq DESC LIMIT \(runs)")
    #expect(origins == Array(repeating: "sqlite3", count: runs))
    for path in [workspace.ours, workspace.raw] {
      #expect(try Self.timeProblems(path) == [], "\(path)")
      #expect(try Self.failedChecks(path) == [], "\(path)")
    }
  }
}
