#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The SQL that reads the session's tables, and the decoding of their rows: shared by the
/// feed's log, the store's writes and `check`, which each run it on a connection of theirs.
enum SessionTables {
  static let stateSQL = SQL("SELECT username, is_logged_in, updated_at FROM session WHERE id = 1")
  static let changeColumns =
    "seq, at, origin, old_username, new_username, old_is_logged_in, new_is_logged_in, old_updated_at, "
    + "account_id, was_active, is_active"
  static let accountColumns = "id, username, is_logged_in, updated_at, seq"
  static let accountsSQL = SQL("SELECT \(accountColumns) FROM accounts ORDER BY id")
  static let accountNamedSQL = SQL("SELECT \(accountColumns) FROM accounts WHERE username = ?")
  static let activeAccountSQL = SQL(
    "SELECT \(accountColumns) FROM accounts WHERE id = (SELECT account_id FROM active_account WHERE id = 1)")
  /// The accounts whose username is not ASCII text: the only ones whose name Swift may take
  /// for another's with other bytes.
  static let unusualNamesSQL = SQL(
    "SELECT \(accountColumns) FROM accounts "
      + "WHERE typeof(username) <> 'text' OR length(CAST(username AS BLOB)) <> length(username) ORDER BY id")
  static let signedInSQL = SQL("SELECT \(accountColumns) FROM accounts WHERE is_logged_in = 1 ORDER BY id")
  static let accountCountSQL = SQL("SELECT count(*) FROM accounts")
  static let activePointerSQL = SQL("SELECT account_id, updated_at FROM active_account WHERE id = 1")
  static let pageSQL = SQL("SELECT \(changeColumns) FROM session_changes WHERE seq > ? ORDER BY seq LIMIT ?")
  static let newestSQL = SQL("SELECT \(changeColumns) FROM session_changes ORDER BY seq DESC LIMIT 1")
  static let boundsSQL = SQL(
    """
    SELECT (SELECT min(seq) FROM session_changes),
      max(coalesce((SELECT max(seq) FROM session_changes), 0),
          coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'session_changes'), 0))
    """)

  static let tipSQL = SQL("SELECT seq, at FROM session_feed_tip WHERE id = 1")

  static func bounds(on connection: Connection) throws -> FeedBounds {
    try connection.query(boundsSQL) { statement in
      try statement.step()
      return FeedBounds(
        oldest: statement.isNull(at: 0) ? nil : Cursor(statement.int64(at: 0)),
        head: Cursor(statement.int64(at: 1)))
    }
  }

  /// What is wrong when the feed's cursors are at the ends of Int64, which only a hand
  /// edit can reach (the library counts from 1): nil when nothing is.
  ///
  /// At `Int64.max` SQLite cannot number another change and reports `SQLITE_FULL` ("database
  /// or disk is full"); a cursor below 1 cannot be resumed from with a cursor a user can type.
  static func cursorProblem(on connection: Connection) throws -> String? {
    let bounds = try bounds(on: connection)
    if bounds.head.next == nil {
      let row = try connection.scalarInt(
        "SELECT count(*) FROM session_changes WHERE seq = ?",
        [
          .integer(.max)
        ])
      let cause =
        row == 1
        ? "a row with seq \(Int64.max) was inserted by hand"
        : "a row with seq \(Int64.max) was inserted by hand (and deleted since), or sqlite_sequence was set to it"
      return "the feed's cursor reached the largest integer (\(Int64.max)), so SQLite cannot number another "
        + "change (it reports \"database or disk is full\"); the library counts cursors up from 1, so \(cause). "
        + "Delete the rows inserted by hand and set the sequence back to the last cursor the library wrote: "
        + "DELETE FROM session_changes WHERE seq = \(Int64.max); UPDATE sqlite_sequence SET seq = "
        + "(SELECT max(seq) FROM session_changes) WHERE name = 'session_changes'"
    }
    if let oldest = bounds.oldest, oldest.value < 1 {
      return "cursor \(oldest) is below 1, where the library's cursors start: a row was inserted by hand. "
        + "Delete it: DELETE FROM session_changes WHERE seq < 1"
    }
    return nil
  }

  static func state(on connection: Connection) throws -> SessionState {
    try connection.query(stateSQL) { statement in
      guard try statement.step() else {
        throw SessionStorageError(
          .corrupt, "the session row is missing (was the table edited by hand?)", path: connection.path)
      }
      return state(statement)
    }
  }

  /// The newest entry kept, or nil.
  static func newest(on connection: Connection) throws -> SessionEntry? {
    try connection.query(newestSQL) { try $0.step() ? entry($0) : nil }
  }

  /// The state in the current row of ``stateSQL``. Text is read as it is stored, invalid
  /// UTF-8 repaired: another client may have written it, and `check` reports it.
  static func state(_ statement: Statement) -> SessionState {
    SessionState(
      username: statement.lossyText(at: 0), isLoggedIn: statement.int64(at: 1) != 0,
      updatedAt: statement.time(at: 2))
  }

  /// The entry in the current row of a statement selecting ``changeColumns``.
  static func entry(_ statement: Statement) -> SessionEntry {
    SessionEntry(
      seq: statement.int64(at: 0), at: statement.time(at: 1), origin: statement.lossyText(at: 2),
      account: statement.int64(at: 8), oldUsername: statement.lossyText(at: 3),
      newUsername: statement.lossyText(at: 4), oldIsLoggedIn: statement.int64(at: 5) != 0,
      newIsLoggedIn: statement.int64(at: 6) != 0, oldUpdatedAt: statement.time(at: 7),
      wasActive: statement.int64(at: 9) != 0, isActive: statement.int64(at: 10) != 0)
  }

  /// The account in the current row of a statement selecting ``accountColumns``.
  static func account(_ statement: Statement) -> Account {
    Account(
      id: AccountID(statement.int64(at: 0)), username: statement.lossyText(at: 1) ?? "",
      isLoggedIn: statement.int64(at: 2) != 0, updatedAt: statement.time(at: 3),
      cursor: Cursor(statement.int64(at: 4)))
  }

  /// The accounts a statement selecting ``accountColumns`` returns.
  static func accounts(_ sql: SQL, _ bindings: [SQLiteValue] = [], on connection: Connection) throws
    -> [Account]
  {
    try connection.query(sql, bindings) { statement in
      var accounts: [Account] = []
      while try statement.step() { accounts.append(account(statement)) }
      return accounts
    }
  }

  /// The roster, read on `connection` (inside a transaction, for one consistent view).
  static func roster(on connection: Connection) throws -> SessionRoster {
    let accounts = try accounts(accountsSQL, on: connection)
    let (activeID, since) = try connection.query(activePointerSQL) { statement -> (AccountID?, Date) in
      guard try statement.step() else {
        throw SessionStorageError(
          .corrupt, "the active_account row is missing (was the table edited by hand?)", path: connection.path
        )
      }
      return (statement.isNull(at: 0) ? nil : AccountID(statement.int64(at: 0)), statement.time(at: 1))
    }
    return SessionRoster(
      accounts: accounts, activeID: activeID, activeSince: since, cursor: try bounds(on: connection).head)
  }
}
