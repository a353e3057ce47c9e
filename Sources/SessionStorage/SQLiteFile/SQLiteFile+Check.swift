import FeedKit

extension SQLiteFile {
  /// Verifies the file without writing: SQLite's integrity check, the migration records,
  /// that the schema is exactly the one the applied migrations create, that each account is
  /// the state its newest change left (also after compaction deleted that change, for the
  /// account the `session_feed_tip` row remembers), that every stored time is the feed's
  /// format, that cursors have no hole above the compaction point and lie between 1 and the
  /// largest integer, and that the stored usernames meet the rules and are distinct.
  ///
  /// Each verification runs on its own: one that cannot run (a table edited away by hand)
  /// fails with SQLite's reason, and the others still run.
  package func check() throws -> [CheckResult] {
    try log.reader.withLock { connection in
      try connection.transaction(.deferred) { () throws -> [CheckResult] in
        let item = CheckResult.running
        return [
          item(.integrity) {
            let integrity = try connection.scalarText("PRAGMA integrity_check") ?? "no answer"
            return (integrity == "ok", "PRAGMA integrity_check: \(integrity)")
          },
          item(.migrations) { try Self.checkMigrations(on: connection) },
          item(.schema) {
            let applied = try Migrator.records(on: connection).count
            let differences = try Schema.differences(on: connection, applied: applied)
            guard differences.isEmpty else { return (false, Schema.message(differences)) }
            return (
              true, "tables, indexes and triggers are the ones the \(applied) applied migration(s) create"
            )
          },
          item(.state) { try Self.checkState(on: connection) },
          item(.times) { try Self.checkTimes(on: connection) },
          item(.continuity) { try Self.checkContinuity(on: connection) },
          item(.cursors) {
            guard let problem = try SessionTables.cursorProblem(on: connection) else {
              return (true, "every cursor is at least 1 and below the largest integer")
            }
            return (false, problem)
          },
          item(.username) { try Self.checkUsername(on: connection) },
        ]
      }
    }
  }

  /// Whether the file has `session_feed_tip`, the row that remembers the newest change
  /// (compaction never deletes it); a file migrated only to 0001 has none.
  private static func hasTip(on connection: Connection) throws -> Bool {
    try hasTable("session_feed_tip", on: connection)
  }

  /// Whether the file has the roster (`accounts`, from migration 0004); a file opened
  /// read-only before that migration has the 1.x session row instead.
  private static func hasRoster(on connection: Connection) throws -> Bool {
    try hasTable("accounts", on: connection)
  }

  private static func hasTable(_ name: String, on connection: Connection) throws -> Bool {
    try connection.scalarInt(
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(name)]) == 1
  }

  /// Each account must be the state its newest change left: the feed row at its `seq`, or,
  /// once compaction deleted that row, what `session_feed_tip` recorded when it was the
  /// newest. An account that differs was changed without a feed entry.
  private static func checkRosterState(on connection: Connection) throws -> (passed: Bool, detail: String) {
    typealias Row = (username: String?, isLoggedIn: Int64, time: String?)
    func describe(_ row: Row) -> String {
      "\(row.username ?? "no username"), \(row.isLoggedIn == 0 ? "signed out" : row.isLoggedIn == 1 ? "signed in" : "is_logged_in \(row.isLoggedIn)")"
    }
    func rows(_ sql: String) throws -> [(seq: Int64, row: Row)] {
      try connection.query(SQL(sql)) { statement in
        var rows: [(seq: Int64, row: Row)] = []
        while try statement.step() {
          rows.append(
            (
              statement.int64(at: 0),
              (statement.lossyText(at: 1), statement.int64(at: 2), statement.lossyText(at: 3))
            ))
        }
        return rows
      }
    }
    let tip = try rows("SELECT seq, username, is_logged_in, at FROM session_feed_tip WHERE id = 1").first
    guard let tip else {
      return (false, "the session_feed_tip row is missing (deleted by hand): restore the file from a backup")
    }
    func same(_ left: Row, _ right: Row) -> Bool {
      left.username == right.username && left.isLoggedIn == right.isLoggedIn && left.time == right.time
    }
    if let newest = try rows(
      "SELECT seq, new_username, new_is_logged_in, at FROM session_changes ORDER BY seq DESC LIMIT 1"
    ).first, newest.seq == tip.seq, !same(newest.row, tip.row) {
      return (
        false,
        "the newest change (cursor \(tip.seq): \(describe(newest.row)), at \(newest.row.time ?? "no time")) differs from "
          + "what it recorded when it was written (\(describe(tip.row)), at \(tip.row.time ?? "no time")): it was edited by hand"
      )
    }
    if let dangling = try connection.scalarInt(
      "SELECT account_id FROM active_account WHERE id = 1 AND account_id NOT IN (SELECT id FROM accounts)")
    {
      return (
        false,
        "active_account names account \(dangling), which the roster does not hold: set it to NULL "
          + "(UPDATE active_account SET account_id = NULL) or to an account's id"
      )
    }
    // A row marked with a cursor ahead of the head was written as a writer's own change,
    // whose entry was never recorded.
    let ahead = try connection.query(
      """
      SELECT label, seq FROM (
        SELECT 'account ' || id AS label, seq FROM accounts
        UNION ALL SELECT 'the active_account row', seq FROM active_account)
      WHERE seq > (SELECT seq FROM session_feed_head) ORDER BY seq LIMIT 1
      """
    ) { try $0.step() ? (label: $0.lossyText(at: 0) ?? "?", seq: $0.int64(at: 1)) : nil }
    if let ahead {
      return (
        false,
        "\(ahead.label) has seq \(ahead.seq), a cursor the feed never handed out: a client set seq, as a "
          + "writer does that records its own feed entry, and recorded none, so the change is not in the feed"
      )
    }
    let accounts = try rows("SELECT seq, username, is_logged_in, updated_at FROM accounts ORDER BY id")
    var verified = 0
    for account in accounts {
      let recorded =
        try rows(
          "SELECT seq, new_username, new_is_logged_in, at FROM session_changes WHERE seq = \(account.seq)"
        ).first?.row ?? (account.seq == tip.seq ? tip.row : nil)
      guard let recorded else { continue }  // its newest change was compacted away
      verified += 1
      guard same(account.row, recorded) else {
        return (
          false,
          "the account \(describe(account.row)) (updated \(account.row.time ?? "never")) is not the state its newest "
            + "change left (\(describe(recorded)), at \(recorded.time ?? "no time"), cursor \(account.seq)): it was "
            + "changed without a feed entry, by a write that bypassed the triggers (incremental blob I/O, or an "
            + "UPDATE while a trigger was dropped)"
        )
      }
    }
    if accounts.isEmpty {
      return (
        true, tip.seq == 0 ? "the roster is as created; no change was ever recorded" : "the roster is empty"
      )
    }
    return (
      true,
      "\(verified) of \(accounts.count) account(s) agree with their newest change, up to cursor \(tip.seq)"
        + (verified < accounts.count ? " (the newest changes of the others are no longer kept)" : "")
    )
  }

  private static func checkMigrations(on connection: Connection) throws -> (passed: Bool, detail: String) {
    let records = try Migrator.records(on: connection)
    let userVersion = try connection.scalarInt("PRAGMA user_version") ?? 0
    let pending = try Migrator.pending(on: connection, verifyingSchema: false)
    return (
      pending.isEmpty && userVersion == records.count,
      "\(records.count) applied, checksums match, user_version \(userVersion)"
        + (pending.isEmpty ? "" : ", \(pending.count) pending")
    )
  }

  /// The session row must be the state the newest change left: its `after` values and time,
  /// as recorded in `session_feed_tip` (which compaction never deletes). A row that differs
  /// was changed without a feed entry.
  private static func checkState(on connection: Connection) throws -> (passed: Bool, detail: String) {
    if try hasRoster(on: connection) { return try checkRosterState(on: connection) }
    typealias Row = (username: String?, isLoggedIn: Int64, time: String?)
    func describe(_ row: Row) -> String {
      "\(row.username ?? "no username"), \(row.isLoggedIn == 0 ? "signed out" : row.isLoggedIn == 1 ? "signed in" : "is_logged_in \(row.isLoggedIn)")"
    }
    /// The first row of `sql`: an integer, then a row's three columns.
    func read(_ sql: String) throws -> (seq: Int64, row: Row)? {
      try connection.query(sql) { statement -> (seq: Int64, row: Row)? in
        guard try statement.step() else { return nil }
        return (
          statement.int64(at: 0),
          (statement.lossyText(at: 1), statement.int64(at: 2), statement.lossyText(at: 3))
        )
      }
    }
    guard
      let session = try read("SELECT 0, username, is_logged_in, updated_at FROM session WHERE id = 1")?.row
    else { return (false, "the session row is missing") }
    let newest = try read(
      "SELECT seq, new_username, new_is_logged_in, at FROM session_changes ORDER BY seq DESC LIMIT 1")
    guard try hasTip(on: connection) else {
      // A file migrated only to 0001 has no tip (check() runs on it unmigrated): compare
      // with the newest change kept.
      guard let newest else { return (true, "no change kept to compare with") }
      let agrees = newest.row.username == session.username && newest.row.isLoggedIn == session.isLoggedIn
      return (
        agrees,
        agrees
          ? "session agrees with the newest change"
          : "session (\(describe(session))) differs from the newest change (\(describe(newest.row)))"
      )
    }
    guard let tip = try read("SELECT seq, username, is_logged_in, at FROM session_feed_tip WHERE id = 1")
    else {
      return (false, "the session_feed_tip row is missing (deleted by hand): restore the file from a backup")
    }
    func same(_ left: Row, _ right: Row) -> Bool {
      left.username == right.username && left.isLoggedIn == right.isLoggedIn && left.time == right.time
    }
    if let newest, newest.seq == tip.seq, !same(newest.row, tip.row) {
      return (
        false,
        "the newest change (cursor \(tip.seq): \(describe(newest.row)), at \(newest.row.time ?? "no time")) differs from "
          + "what it recorded when it was written (\(describe(tip.row)), at \(tip.row.time ?? "no time")): it was edited by hand"
      )
    }
    guard same(session, tip.row) else {
      return (
        false,
        "session (\(describe(session)), updated \(session.time ?? "never")) is not the state the newest change left "
          + "(\(describe(tip.row)), at \(tip.row.time ?? "no time"), cursor \(tip.seq)): it was changed without a feed "
          + "entry, by a write that bypassed the session_feed trigger (incremental blob I/O, or an UPDATE while "
          + "the trigger was dropped)"
      )
    }
    return (
      true,
      tip.seq == 0
        ? "session is as created; no change was ever recorded"
        : "session agrees with the newest change (cursor \(tip.seq))"
    )
  }

  /// Every stored time must be the feed's format, ISO-8601 UTC with milliseconds
  /// (`2026-11-29T20:33:33.897Z`); the library reads any other text as the epoch.
  private static func checkTimes(on connection: Connection) throws -> (passed: Bool, detail: String) {
    var bad: [String] = []
    func inspect(_ label: String, _ text: String?) {
      guard let text else {
        bad.append("\(label) NULL")
        return
      }
      if text.utf8.count != 24 || Timestamp.parse(text) == nil { bad.append("\(label) '\(text)'") }
    }
    if try hasRoster(on: connection) {
      try connection.query("SELECT id, updated_at FROM accounts ORDER BY id") { statement in
        while try statement.step() {
          inspect("updated_at of account \(statement.int64(at: 0))", statement.lossyText(at: 1))
        }
      }
      try connection.query("SELECT updated_at FROM active_account") { statement in
        while try statement.step() { inspect("active_account.updated_at", statement.lossyText(at: 0)) }
      }
    } else {
      let updatedAt = try connection.query("SELECT updated_at FROM session WHERE id = 1") {
        try $0.step() ? $0.lossyText(at: 0) : nil
      }
      inspect("session.updated_at", updatedAt)
    }
    if try hasTip(on: connection) {
      try connection.query("SELECT at FROM session_feed_tip") { statement in
        while try statement.step() { inspect("session_feed_tip.at", statement.lossyText(at: 0)) }
      }
    }
    try connection.query("SELECT seq, at, old_updated_at FROM session_changes ORDER BY seq") { statement in
      while try statement.step() {
        let seq = statement.int64(at: 0)
        inspect("at of change \(seq)", statement.lossyText(at: 1))
        inspect("old_updated_at of change \(seq)", statement.lossyText(at: 2))
      }
    }
    guard !bad.isEmpty else { return (true, "every time is ISO-8601 UTC with milliseconds") }
    let shown = bad.prefix(5).joined(separator: ", ") + (bad.count > 5 ? ", …" : "")
    return (
      false,
      "\(bad.count) \(bad.count == 1 ? "time is" : "times are") not ISO-8601 UTC with milliseconds "
        + "(written by hand; read as 1970-01-01T00:00:00.000Z): \(shown)"
    )
  }

  /// Counts the cursors missing between the oldest kept and the head. Both come from the
  /// file, where the shell can store any Int64: the span is computed without overflow.
  private static func checkContinuity(on connection: Connection) throws -> (passed: Bool, detail: String) {
    let bounds = try SessionTables.bounds(on: connection)
    // The tip remembers the newest cursor ever written; a head below it means the
    // sequence was reset (or the rows deleted and sqlite_sequence edited): cursors would be
    // handed out again, and subscribers that saw the old ones could not tell.
    if try hasTip(on: connection),
      let tip = try connection.scalarInt("SELECT seq FROM session_feed_tip WHERE id = 1"),
      tip > bounds.head.value
    {
      return (
        false,
        "the newest cursor written was \(tip) but the head is now \(bounds.head): the sequence was reset by hand, "
          + "and cursors would be handed out again; repair with UPDATE sqlite_sequence SET seq = \(tip) "
          + "WHERE name = 'session_changes'"
      )
    }
    let count = try connection.scalarInt("SELECT count(*) FROM session_changes") ?? 0
    var missing: UInt64 = 0
    if let oldest = bounds.oldest, count > 0 {
      // head ≥ oldest, so the wrapping difference is the distance, read as unsigned.
      let span = UInt64(bitPattern: bounds.head.value &- oldest.value)
      let (difference, overflow) = span.subtractingReportingOverflow(UInt64(count - 1))
      missing = overflow ? 0 : difference
    }
    return (
      missing == 0,
      missing == 0
        ? (count == 0
          ? "no change kept; the next cursor is \(bounds.head.next.map(String.init) ?? "none")"
          : "cursors \(bounds.firstAvailable)…\(bounds.head) have no hole (\(count) kept)")
        : "\(missing) cursor(s) missing between \(bounds.firstAvailable) and \(bounds.head)"
    )
  }

  private static func checkUsername(on connection: Connection) throws -> (passed: Bool, detail: String) {
    let sql =
      try hasRoster(on: connection)
      ? "SELECT username FROM accounts ORDER BY id" : "SELECT username FROM session"
    let names = try connection.query(SQL(sql)) { statement in
      var names: [String?] = []
      while try statement.step() { names.append(try statement.text(at: 0)) }
      return names
    }
    var seen: [String] = []
    do {
      for name in names.compactMap({ $0 }) {
        // By bytes: Swift's == ignores normalization.
        if !(try Username.validated(name)).utf8.elementsEqual(name.utf8) {
          return (false, "username '\(name.escapedForTerminal)' is not in Unicode NFC")
        }
        if seen.contains(name) {
          return (
            false, "two accounts are named '\(name.escapedForTerminal)' (in two Unicode normalizations)"
          )
        }
        seen.append(name)
      }
    } catch let error as SessionStorageError where error.code == .invalidUsername || error.code == .corrupt {
      return (false, "stored " + error.message)
    }
    return (true, seen.count <= 1 ? "username is valid" : "\(seen.count) usernames are valid and distinct")
  }
}
