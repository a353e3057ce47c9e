import FeedKit
import SessionStorage

extension PostgresBackend {
  /// Verifies the store without writing, in one read-only transaction: the migration
  /// records and their checksums, that the functions and triggers are the migrations' own
  /// (their bodies, settings and firing modes, not only their names), that each account is
  /// the state its newest change left and the active pointer names an account or none, that cursors have no hole between
  /// the oldest kept and the head, that every cursor lies between 1 and the largest
  /// integer, and that the stored username meets the rules. (SQLite's integrity check and
  /// time formats have no PostgreSQL counterpart: the server keeps its own pages and
  /// `timestamptz` holds only times.)
  ///
  /// Each verification runs on its own: one that cannot run fails with the server's
  /// reason, and the others still run.
  func check() throws -> [CheckResult] {
    try log.read(refusing: false) { connection in
      try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
      defer { try? connection.execute("ROLLBACK") }
      // Each verification in a savepoint: one the server fails aborts only its own part
      // of the transaction, which is rolled back before the next one starts.
      func item(_ check: StoreCheck, _ body: () throws -> (passed: Bool, detail: String)) -> CheckResult {
        .running(check) {
          do {
            try connection.execute("SAVEPOINT item")
            let result = try body()
            try connection.execute("RELEASE SAVEPOINT item")
            return result
          } catch {
            try? connection.execute("ROLLBACK TO SAVEPOINT item")
            throw error
          }
        }
      }
      return [
        item(.migrations) {
          let pending = try PostgresMigrator.inspect(connection)
          let applied = PostgresMigrator.known.count - pending.count
          return (
            pending.isEmpty,
            "\(applied) applied, checksums match" + (pending.isEmpty ? "" : ", \(pending.count) pending")
          )
        },
        item(.schema) { try Self.checkSchema(on: connection) },
        item(.state) { try Self.checkState(on: connection) },
        item(.continuity) { try Self.checkContinuity(on: connection) },
        item(.cursors) {
          let bounds = try Self.bounds(on: connection)
          if bounds.head.next == nil {
            return (false, "the head reached the largest integer (\(bounds.head)): it was set by hand")
          }
          if let oldest = bounds.oldest, oldest.value < 1 {
            return (false, "cursor \(oldest) is below 1, where the library's cursors start")
          }
          return (true, "every cursor is at least 1 and below the largest integer")
        },
        item(.username) {
          let names = try connection.query("SELECT id, username FROM ONLY accounts ORDER BY id").rows
          guard !names.isEmpty else { return (true, "no account") }
          for row in names {
            let (id, name) = (row[0] ?? "?", row[1] ?? "")
            do {
              guard try Username.validated(name).utf8.elementsEqual(name.utf8) else {
                // A library rename to the NFC form changes only bytes, which every store
                // treats as no change: the repair is psql's, recorded as a change without events.
                return (
                  false,
                  "the username of account \(id) is not in Unicode NFC; repair it in psql with UPDATE "
                    + "\(connection.place.quotedSchema).accounts SET username = normalize(username, NFC) WHERE id = \(id)"
                )
              }
            } catch let error as SessionStorageError where error.code == .invalidUsername {
              return (false, "account \(id): stored " + error.message)
            }
          }
          return (true, names.count == 1 ? "username is valid" : "the \(names.count) usernames are valid")
        },
      ]
    }
  }

  private static func bounds(on connection: PQConnection) throws -> FeedBounds {
    guard let row = try connection.query(PostgresTables.boundsSQL).rows.first else {
      throw SessionStorageError(
        .notFound, "the session_writer row is missing", path: connection.place.described)
    }
    return PostgresTables.bounds(row)
  }

  /// The schema's functions, triggers and tables against the migrations' (``PostgresSchema``).
  private static func checkSchema(on connection: PQConnection) throws -> (passed: Bool, detail: String) {
    let problems = try PostgresSchema.problems(on: connection)
    guard problems.isEmpty else {
      return (false, problems.joined(separator: "; ") + ". " + PostgresSchema.repair(connection.place))
    }
    return (
      true,
      "the functions, triggers and tables are the ones of the applied migrations (bodies, settings, firing modes)"
    )
  }

  /// Each account must be the state its newest change left, when that change is kept, and
  /// no account may have a newer change than the one it is stamped with; an account whose
  /// newest kept change left the roster must be gone; the pointer names an account or none.
  private static func checkState(on connection: PQConnection) throws -> (passed: Bool, detail: String) {
    guard let roster = PostgresTables.roster(try connection.query(PostgresTables.rosterSQL).rows) else {
      return (false, "the session_writer or active_account row is missing")
    }
    var problems: [String] = []
    if let active = roster.activeID, roster.account(id: active) == nil {
      problems.append("active_account names account \(active), which is not in the roster")
    }
    let newest = try connection.query(
      "SELECT DISTINCT ON (account_id) \(PostgresTables.changeColumns) FROM ONLY session_changes "
        + "ORDER BY account_id, seq DESC"
    ).rows.map(PostgresTables.entry)
    let newestByAccount = Dictionary(
      newest.map { ($0.change.account, $0) }, uniquingKeysWith: { first, _ in first })
    var compared = 0
    for account in roster.accounts {
      guard let entry = newestByAccount[account.id] else { continue }
      if entry.cursor > account.cursor {
        problems.append(
          "account \(account.id) (\(account)) is stamped with cursor \(account.cursor), but its newest change is at "
            + "\(entry.cursor)")
        continue
      }
      guard entry.cursor == account.cursor else { continue }  // its newest change was compacted away
      compared += 1
      let after = entry.after
      if after.username.map({ Array($0.utf8) }) != Array(account.username.utf8)
        || after.isLoggedIn != account.isLoggedIn
      {
        problems.append(
          "account \(account.id) (\(account)) is not the state its newest change left (\(after), cursor "
            + "\(entry.cursor)): it was changed without a feed entry (the roster_feed trigger was disabled)")
      }
    }
    for entry in newest where roster.account(id: entry.change.account) == nil && entry.after.username != nil {
      problems.append(
        "account \(entry.change.account) is not in the roster, but its newest change (cursor \(entry.cursor)) left "
          + "it there: it was removed without a feed entry (the roster_feed trigger was disabled)")
    }
    guard problems.isEmpty else { return (false, problems.joined(separator: "; ")) }
    return (
      true,
      "the \(roster.accounts.count) account(s) agree with their newest changes (\(compared) kept), "
        + (roster.activeID.map { "account \($0) is active" } ?? "none is active")
    )
  }

  /// Counts the cursors missing between the oldest kept and the head.
  private static func checkContinuity(on connection: PQConnection) throws -> (passed: Bool, detail: String) {
    let bounds = try bounds(on: connection)
    let row = try connection.query("SELECT count(*), max(seq) FROM ONLY session_changes").rows.first
    let count = PostgresTables.integer(row?[0] ?? nil)
    if let newest = row?[1] ?? nil, let value = Int64(newest), value > bounds.head.value {
      return (
        false,
        "the feed holds cursor \(value) beyond the head \(bounds.head): the head was moved back by hand, "
          + "and cursors would be handed out again"
      )
    }
    guard let oldest = bounds.oldest, count > 0 else {
      return (true, "no change kept; the next cursor is \(bounds.head.next.map(String.init) ?? "none")")
    }
    let span = UInt64(bitPattern: bounds.head.value &- oldest.value)
    let (missing, overflow) = span.subtractingReportingOverflow(UInt64(count - 1))
    guard overflow || missing == 0 else {
      return (false, "\(missing) cursor(s) missing between \(oldest) and \(bounds.head)")
    }
    return (true, "cursors \(oldest)…\(bounds.head) have no hole (\(count) kept)")
  }
}
