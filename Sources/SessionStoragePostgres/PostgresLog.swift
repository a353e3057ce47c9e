import FeedKit
import SessionStorage
import Synchronization

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The SQL that reads the store's tables, and the decoding of their rows, shared by the
/// feed's log, the writes and `check`. Times are read as the feed's text format, so that
/// they parse to the same `Date`s as the SQLite store's. Tables are read `ONLY`: rows of a
/// table that inherits from one of them passed none of its triggers, and are no part of it.
enum PostgresTables {
  /// A `timestamptz` column as `2026-11-29T20:33:33.897Z`.
  static func time(_ column: String) -> String {
    "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
  }

  static let changeColumns =
    "seq, \(time("at")), origin, old_username, new_username, old_is_logged_in, new_is_logged_in, "
    + time("old_updated_at") + ", account_id, was_active, is_active"
  static let pageSQL =
    "SELECT \(changeColumns) FROM ONLY session_changes WHERE seq > $1 ORDER BY seq LIMIT $2"
  static let entrySQL = "SELECT \(changeColumns) FROM ONLY session_changes WHERE seq = $1"
  /// The active account's state (no username, signed out, since the pointer last changed
  /// when none is active) and the head, in one row: a snapshot is one statement.
  static let snapshotSQL =
    "SELECT a.username, coalesce(a.is_logged_in, false), \(time("coalesce(a.updated_at, p.updated_at)")), w.head "
    + "FROM ONLY session_writer w CROSS JOIN ONLY active_account p LEFT JOIN ONLY accounts a ON a.id = p.account_id "
    + "WHERE w.id = 1 AND p.id = 1"
  static let boundsSQL =
    "SELECT (SELECT min(seq) FROM ONLY session_changes), head FROM ONLY session_writer WHERE id = 1"
  /// ``snapshotSQL``'s row followed by the entry at the head (NULLs once compacted away):
  /// what a subscriber that starts from the snapshot checks the log keeps.
  static let snapshotEntrySQL =
    "SELECT a.username, coalesce(a.is_logged_in, false), \(time("coalesce(a.updated_at, p.updated_at)")), w.head, "
    + "c.* FROM ONLY session_writer w CROSS JOIN ONLY active_account p "
    + "LEFT JOIN ONLY accounts a ON a.id = p.account_id "
    + "LEFT JOIN LATERAL (SELECT \(changeColumns) FROM ONLY session_changes WHERE seq = w.head) c ON true "
    + "WHERE w.id = 1 AND p.id = 1"
  /// The columns of an account, as ``account(_:)`` decodes them.
  static let accountColumns = "a.id, a.username, a.is_logged_in, \(time("a.updated_at")), a.seq"
  /// The roster in one statement: the head, the pointer and its time on every row, then
  /// each account's columns (NULLs on the one row of an empty roster).
  static let rosterSQL =
    "SELECT w.head, p.account_id, \(time("p.updated_at")), \(accountColumns) FROM ONLY session_writer w "
    + "CROSS JOIN ONLY active_account p LEFT JOIN ONLY accounts a ON true WHERE w.id = 1 AND p.id = 1 ORDER BY a.id"

  /// The entry in a row of ``changeColumns``.
  static func entry(_ row: [String?]) -> SessionEntry {
    SessionEntry(
      seq: integer(row[0]), at: Timestamp.stored(row[1]), origin: row[2], account: integer(row[8]),
      oldUsername: row[3], newUsername: row[4], oldIsLoggedIn: row[5] == "t", newIsLoggedIn: row[6] == "t",
      oldUpdatedAt: Timestamp.stored(row[7]), wasActive: row[9] == "t", isActive: row[10] == "t")
  }

  /// The account in a row of ``accountColumns``.
  static func account(_ row: some Collection<String?>) -> Account {
    let row = Array(row)
    return Account(
      id: AccountID(integer(row[0])), username: row[1] ?? "", isLoggedIn: row[2] == "t",
      updatedAt: Timestamp.stored(row[3]), cursor: Cursor(integer(row[4])))
  }

  /// The roster in the rows of ``rosterSQL``; nil when there is none (the store's rows are
  /// missing).
  static func roster(_ rows: [[String?]]) -> SessionRoster? {
    guard let first = rows.first else { return nil }
    return SessionRoster(
      accounts: rows.filter { $0[3] != nil }.map { account($0.dropFirst(3)) },
      activeID: first[1].map { AccountID(integer($0)) }, activeSince: Timestamp.stored(first[2]),
      cursor: Cursor(integer(first[0])))
  }

  /// The state and head in a row of ``snapshotSQL``.
  static func snapshot(_ row: [String?]) -> (state: SessionState, cursor: Cursor) {
    (
      SessionState(username: row[0], isLoggedIn: row[1] == "t", updatedAt: Timestamp.stored(row[2])),
      Cursor(integer(row[3]))
    )
  }

  static func bounds(_ row: [String?]) -> FeedBounds {
    FeedBounds(oldest: row[0].map { Cursor(integer($0)) }, head: Cursor(integer(row[1])))
  }

  static func integer(_ text: String?) -> Int64 { text.flatMap { Int64($0) } ?? 0 }
}

/// The `session_changes` table as a ``FeedSource``, read through the store's reader
/// connection. A reader connection found broken is connected again and the read retried
/// once.
///
/// A login that a pooler refuses on reconnecting (SQLSTATE `08P01`, see
/// ``PostgresPlace/poolerRefusal``) may pass — PgBouncer refuses every login for a while
/// when the server behind it restarts — or not — a password revoked. Reads then fail as
/// `unavailable`, so that subscribers wait, and the login is asked again only every
/// ``poolerRetryInterval``; once the refusal has lasted ``Options/poolerRefusalGrace``, the
/// next one is thrown as `refused`, which ends the subscriptions.
final class PostgresLog: FeedSource {
  private let reader: Mutex<Reader>
  /// Why the schema is refused (it was changed by hand), for a read-only store: every read
  /// but `check` throws it.
  private let refusal: SessionStorageError?
  /// How long a pooler's refusals are taken for passing.
  private let poolerRefusalGrace: Duration

  /// How often a login that a pooler refused is asked again.
  static let poolerRetryInterval: Duration = .seconds(5)

  /// The reader connection, and the pooler's refusal it is waiting out.
  private struct Reader: ~Copyable {
    let connection: PQConnection
    /// Since when a pooler has refused every login, when to ask again, and what to throw
    /// until then.
    var refused: (since: ContinuousClock.Instant, next: ContinuousClock.Instant, error: SessionStorageError)?
  }

  init(reader: sending PQConnection, refusal: SessionStorageError?, poolerRefusalGrace: Duration) {
    self.reader = Mutex(Reader(connection: reader))
    self.refusal = refusal
    self.poolerRefusalGrace = poolerRefusalGrace
  }

  /// Runs `body` on the reader; when it fails because the connection was lost, connects
  /// again and runs it once more. Throws the schema's refusal first unless `refusing` is
  /// false (for `check`).
  func read<Result: Sendable>(refusing: Bool = true, _ body: (PQConnection) throws -> Result) throws -> Result
  {
    if refusing, let refusal { throw refusal }
    return try reader.withLock { reader in
      if reader.connection.isBroken { try reconnect(&reader) }
      do {
        return try body(reader.connection)
      } catch let error as SessionStorageError where error.code == .unavailable && reader.connection.isBroken
      {
        try reconnect(&reader)
        return try body(reader.connection)
      }
    }
  }

  /// Connects the reader again, waiting out a pooler's refusals (see ``PostgresLog``).
  private func reconnect(_ reader: inout Reader) throws {
    let now = ContinuousClock.now
    if let refused = reader.refused, now < refused.next { throw refused.error }
    do {
      try reader.connection.reconnect()
      reader.refused = nil
    } catch let error as SessionStorageError
      where error.code == .refused && reader.connection.lastLoginRefusal == PostgresPlace.poolerRefusal
    {
      let since = reader.refused?.since ?? now
      guard now - since < poolerRefusalGrace else {
        reader.refused = nil
        throw error
      }
      let waiting = SessionStorageError(
        .unavailable,
        error.message + "; asking again every \(Self.poolerRetryInterval) for up to \(poolerRefusalGrace), "
          + "in case it passes (a server restarting behind the pooler)", path: error.path)
      reader.refused = (since, now + Self.poolerRetryInterval, waiting)
      throw waiting
    }
  }

  /// A schema dropped (or renamed) under a subscriber is history that vanished: the
  /// subscription ends with `historyRewritten`, as after a restore.
  func entries(after cursor: Cursor, limit: Int) throws -> [SessionEntry] {
    do {
      return try read { try $0.query(PostgresTables.pageSQL, [String(cursor.value), String(limit)]).rows }
        .map(PostgresTables.entry)
    } catch let error as SessionStorageError where error.code == .notFound {
      throw FeedError.historyRewritten(cursor: cursor, reason: error.message)
    }
  }

  func bounds() throws -> FeedBounds {
    PostgresTables.bounds(try row(PostgresTables.boundsSQL))
  }

  /// A server that cannot be reached (`unavailable`) passes: subscribers wait for it, woken
  /// by the `LISTEN` thread at each of its reconnection attempts and every safety poll, and
  /// resume from their cursor once it answers again. So does a lock on the feed held longer
  /// than the lock timeout (`busy`: a `VACUUM FULL` or `LOCK TABLE` queued before the read,
  /// a read cancelled): a reader reads again at the next wake-up, it does not end. A login
  /// the server refuses (`refused`) does not pass: it ends the subscriptions.
  func isTransient(_ error: any Error) -> Bool {
    let code = (error as? SessionStorageError)?.code
    return code == .unavailable || code == .busy
  }

  func snapshot() throws -> (state: SessionState, cursor: Cursor, last: SessionEntry?) {
    let row = try row(PostgresTables.snapshotEntrySQL)
    let (state, cursor) = PostgresTables.snapshot(row)
    let entry = Array(row.dropFirst(4))
    return (state, cursor, entry.first.map { $0 != nil } == true ? PostgresTables.entry(entry) : nil)
  }

  /// The roster and its cursor, read in one statement.
  func roster() throws -> SessionRoster {
    try read { connection in
      guard let roster = PostgresTables.roster(try connection.query(PostgresTables.rosterSQL).rows) else {
        throw SessionStorageError(
          .notFound, "the session_writer or active_account row is missing (was the table edited by hand?)",
          path: connection.place.described)
      }
      return roster
    }
  }

  /// The first row of `sql`; `notFound` when the store's rows are missing.
  private func row(_ sql: String) throws -> [String?] {
    try read { connection in
      guard let row = try connection.query(sql).rows.first else {
        throw SessionStorageError(
          .notFound, "the session_writer or active_account row is missing (was the table edited by hand?)",
          path: connection.place.described)
      }
      return row
    }
  }
}
