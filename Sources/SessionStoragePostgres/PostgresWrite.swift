import FeedKit
import SessionStorage

/// One write as PostgreSQL runs it: a conditional UPDATE of the session row that sets a
/// fresh write token (so the trigger records the origin instead of `external`), and the
/// feed row its trigger wrote, read in the same transaction.
///
/// A write is never reported as done unless it committed: when the connection is lost
/// before COMMIT was sent, nothing was written; when it is lost while committing, the
/// store connects again and looks: its token still in the row, or its entry at its cursor,
/// means it committed; a head below its cursor means it did not; otherwise the outcome is
/// unknown and the error says so.
struct PostgresWrite {
  let write: SessionWrite
  let origin: String
  /// A random number only this write puts in `session.write_token`.
  let token: String

  /// The UPDATE and its values; it returns the new head when it changed the row.
  private var statement: (sql: String, values: [String?]) {
    switch write {
    case .login(let name):
      (
        "UPDATE session SET username = $1, is_logged_in = true, updated_by = $2, write_token = $3 "
          + "WHERE id = 1 AND (username IS DISTINCT FROM $1 OR NOT is_logged_in) RETURNING head",
        [name, origin, token]
      )
    case .logout:
      (
        "UPDATE session SET is_logged_in = false, updated_by = $1, write_token = $2 "
          + "WHERE id = 1 AND is_logged_in RETURNING head",
        [origin, token]
      )
    case .rename(let name):
      (
        "UPDATE session SET username = $1, updated_by = $2, write_token = $3 "
          + "WHERE id = 1 AND username IS DISTINCT FROM $1 RETURNING head",
        [name, origin, token]
      )
    }
  }

  /// Whether `entry` is the change this write makes (and not an older one: the trigger
  /// that numbers entries was dropped by hand).
  private func isMine(_ entry: SessionEntry) -> Bool {
    guard entry.origin == origin else { return false }
    switch write {
    case .login(let name): return entry.after.username == name && entry.after.isLoggedIn
    case .logout: return !entry.after.isLoggedIn
    case .rename(let name): return entry.after.username == name
    }
  }

  /// Runs the write in a transaction and returns its committed entry, or nil when it
  /// changed nothing.
  func commit(on connection: PQConnection) throws -> SessionEntry? {
    let place = connection.place
    let (sql, values) = statement
    let entry: SessionEntry
    do {
      try connection.begin()
      guard let head = try connection.scalar(sql, values) else {
        try connection.execute("ROLLBACK")
        return nil
      }
      guard let row = try connection.query(PostgresTables.entrySQL, [head]).rows.first,
        case let found = PostgresTables.entry(row), isMine(found)
      else {
        try connection.execute("ROLLBACK")
        throw SessionStorageError(
          .postgres,
          "the write changed the session but the feed recorded no entry for it: the session_feed trigger of "
            + "schema \(place.schema) is missing or was changed. Nothing was written; re-create it with its SQL "
            + "in migrations/postgres/0001_session_and_feed.sql",
          path: place.described)
      }
      guard !found.events.isEmpty else {
        // Only the username's bytes would change (another normalization stored by another
        // client): a no-op for the library, as for the other stores.
        try connection.execute("ROLLBACK")
        return nil
      }
      entry = found
    } catch var error as SessionStorageError {
      if connection.isBroken {
        error.message += "; nothing was written (the transaction did not reach its commit)"
      } else {
        try? connection.execute("ROLLBACK")
      }
      throw error
    }
    do {
      try connection.execute("COMMIT")
    } catch let error as SessionStorageError where connection.isBroken {
      return try outcome(of: entry, on: connection, lost: error)
    }
    return entry
  }

  /// Whether `entry` committed, found on a new connection after the old one was lost while
  /// committing: returns it when it did, throws `unavailable` saying what is known when
  /// it did not or cannot be told.
  private func outcome(of entry: SessionEntry, on connection: PQConnection, lost: SessionStorageError) throws
    -> SessionEntry
  {
    var failure = lost
    do {
      try connection.reconnect()
      let row = try connection.query("SELECT write_token, head FROM session WHERE id = 1").rows.first
      if row?[0] == token { return entry }
      let head = PostgresTables.integer(row?[1] ?? nil)
      if head < entry.cursor.value {
        failure.message += "; the change was not committed (the head is \(head)): nothing was written"
        throw failure
      }
      if let found = try connection.query(PostgresTables.entrySQL, [String(entry.cursor.value)]).rows.first {
        if PostgresTables.entry(found) == entry { return entry }
        failure.message += "; the change was not committed (cursor \(entry.cursor) holds another change)"
        throw failure
      }
    } catch let error as SessionStorageError where error.code == .unavailable && error != failure {
      failure.message += " (and connecting again failed: \(error.message))"
    }
    failure.message +=
      "; whether the change (cursor \(entry.cursor)) was committed is unknown: read the state before retrying"
    throw failure
  }
}
