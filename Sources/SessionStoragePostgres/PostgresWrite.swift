import FeedKit
import SessionStorage

/// One write as PostgreSQL runs it: `BEGIN`, a conditional UPDATE that sets a fresh write
/// token and returns its own change and feed entry (a head that did not move by one, or a
/// feed without that entry, rolls it back), `COMMIT`. A write is reported done only when it
/// committed; a connection lost while committing is resolved as the "Faults" article says.
package struct PostgresWrite {
  let write: SessionWrite
  let origin: String
  /// A random number only this write puts in `session.write_token`.
  let token: String

  package init(write: SessionWrite, origin: String, token: String) {
    self.write = write
    self.origin = origin
    self.token = token
  }

  /// The UPDATE and its values. It returns one row: the change in the columns of
  /// ``PostgresTables/changeColumns`` then the head before it (all NULL when it changed
  /// nothing), then the row it found in the columns of ``PostgresTables/snapshotSQL``.
  /// (`package`: sessionbench's raw baseline runs the same statement.)
  package var statement: (sql: String, values: [String?]) {
    switch write.action {
    case .logIn(let name): (Self.loginSQL, [origin, token, name])
    case .rename(nil, let name): (Self.renameSQL, [origin, token, name])
    default: (Self.logoutSQL, [origin, token])
    }
  }

  private static let loginSQL = update(
    set: "username = $3, is_logged_in = true",
    when: "old.username IS DISTINCT FROM $3 OR NOT old.is_logged_in")
  private static let logoutSQL = update(set: "is_logged_in = false", when: "old.is_logged_in")
  private static let renameSQL = update(set: "username = $3", when: "old.username IS DISTINCT FROM $3")

  /// The UPDATE that sets `set` (with `$1` the origin, `$2` the token) when `condition`
  /// holds for the row as it was (`old`), built once per kind of write.
  ///
  /// `old` is a materialized CTE, so the row is locked whatever `condition` says: inlined
  /// as a subquery, the planner moves `condition` below the lock, and a write that changes
  /// nothing then locks nothing and decides on the statement's snapshot, which another
  /// writer's commit may already have replaced. Locked, the row `old` returns is the newest,
  /// and no commit can change it before this transaction ends: what the write decided on
  /// is what it reports.
  private static func update(set: String, when condition: String) -> String {
    "WITH old AS MATERIALIZED (SELECT username, is_logged_in, updated_at, head FROM session WHERE id = 1 "
      + "FOR UPDATE), changed AS (UPDATE session SET \(set), updated_by = $1, write_token = $2 FROM old "
      + "WHERE session.id = 1 AND (\(condition)) RETURNING session.head, "
      + PostgresTables.time("session.updated_at") + ", session.updated_by, old.username, session.username, "
      + "old.is_logged_in, session.is_logged_in, " + PostgresTables.time("old.updated_at") + ", old.head) "
      + "SELECT changed.*, old.username, old.is_logged_in, " + PostgresTables.time("old.updated_at")
      + ", old.head FROM old LEFT JOIN changed ON true"
  }

  /// Whether `entry` is the change this write makes (and not an older one: the trigger
  /// that numbers entries was dropped by hand).
  private func isMine(_ entry: SessionEntry) -> Bool {
    guard entry.origin == origin else { return false }
    switch write.action {
    case .logIn(let name): return entry.after.username == name && entry.after.isLoggedIn
    case .rename(nil, let name): return entry.after.username == name
    default: return !entry.after.isLoggedIn
    }
  }

  /// Runs the write in a transaction and returns its committed entry, or, when it changed
  /// nothing, the state and head it found in that transaction. A transaction rolled back by
  /// a serialization failure or a deadlock runs again, for as long as the lock timeout
  /// allows (for ever without one).
  func commit(on connection: PQConnection) throws -> WriteOutcome {
    let clock = ContinuousClock()
    let start = clock.now
    let limit = Duration.milliseconds(connection.place.lockTimeoutMilliseconds)
    while true {
      do {
        return try attempt(on: connection)
      } catch let rolledBack as RolledBack {
        guard limit == .zero || clock.now - start < limit else { throw rolledBack.error }
      }
    }
  }

  /// A transaction the server rolled back for a serialization failure or a deadlock;
  /// nothing was written, and running it again may succeed.
  private struct RolledBack: Error {
    let error: SessionStorageError
  }

  /// One run of the write's transaction.
  private func attempt(on connection: PQConnection) throws -> WriteOutcome {
    let place = connection.place
    let (sql, values) = statement
    let entry: SessionEntry
    do {
      try connection.begin()
      // The UPDATE, then the feed's entry at the new head, in one round trip.
      let results = try connection.pipelined([(sql, values), (PostgresTables.headEntrySQL, [])])
      guard let row = results[0].rows.first, row.count == 13 else {
        try connection.execute("ROLLBACK")
        throw SessionStorageError(
          .notFound, "the session row is missing (was the table edited by hand?)", path: place.described)
      }
      guard row[0] != nil else {
        // Nothing to change: the row the statement locked and decided on.
        try connection.execute("ROLLBACK")
        let found = PostgresTables.snapshot(Array(row[9...]))
        return .unchanged(SessionSnapshot(state: found.state, cursor: found.cursor))
      }
      let found = PostgresTables.entry(row)
      guard PostgresTables.integer(row[8]) + 1 == found.cursor.value, isMine(found),
        results[1].rows.first.map(PostgresTables.entry) == found
      else {
        try connection.execute("ROLLBACK")
        throw SessionStorageError(
          .tamperedSchema,
          "the write changed the session but the feed recorded no entry for it: the session_feed trigger of "
            + "schema \(place.schema) (or the feed's guard) is missing or was changed. Nothing was written; "
            + "'sessionctl check' names what differs",
          path: place.described)
      }
      guard !found.events.isEmpty else {
        // Only the username's bytes would change (another normalization stored by another
        // client): a no-op for the library, as for the other stores. What it found is the
        // row as it was, at the head before it.
        try connection.execute("ROLLBACK")
        return .unchanged(
          SessionSnapshot(state: found.change.before, cursor: Cursor(PostgresTables.integer(row[8]))))
      }
      entry = found
    } catch var error as SessionStorageError {
      let retryable = connection.lastFailureIsRetryable
      if connection.isBroken {
        error.message += "; nothing was written (the transaction did not reach its commit)"
      } else {
        try? connection.execute("ROLLBACK")
        if retryable { throw RolledBack(error: error) }
      }
      throw error
    }
    let backend = connection.backendPID
    do {
      try connection.execute("COMMIT")
    } catch let error as SessionStorageError where connection.isBroken {
      return .committed([try outcome(of: entry, on: connection, lost: error, backend: backend)])
    }
    return .committed([entry])
  }

  /// Whether `entry` committed, found on a new connection after the old one (whose server
  /// process was `backend`) was lost while committing: returns it when it did, throws
  /// `unavailable` saying what is known when it did not or cannot be told.
  ///
  /// The old transaction may still be running on the server (its COMMIT waiting for a
  /// synchronous standby, or not yet read): it holds the session row until it ends. So the
  /// row is read `FOR UPDATE`, which waits for that end (at most the lock timeout), and only
  /// then is the outcome decided; a wait that times out leaves it unknown.
  private func outcome(
    of entry: SessionEntry, on connection: PQConnection, lost: SessionStorageError, backend: Int32
  ) throws -> SessionEntry {
    var failure = lost
    do {
      try connection.reconnect()
      try connection.execute("BEGIN")
      defer { try? connection.execute("ROLLBACK") }
      let row = try connection.query("SELECT write_token, head FROM session WHERE id = 1 FOR UPDATE").rows
        .first
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
    } catch let error as SessionStorageError where error.code == .busy {
      failure.message +=
        "; its transaction still holds the session row on the server (process \(backend)) after the lock "
        + "timeout: its COMMIT may be waiting for a synchronous standby"
    } catch let error as SessionStorageError where error.code == .unavailable && error != failure {
      failure.message += " (and connecting again failed: \(error.message))"
    }
    failure.message +=
      "; whether the change (cursor \(entry.cursor)) was committed is unknown: read the state before retrying"
    throw failure
  }
}
