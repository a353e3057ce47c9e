import FeedKit
import SessionStorage

/// One write as PostgreSQL runs it: `BEGIN`; an UPDATE of `session_writer` that takes the
/// lock every change of the roster waits for, names the write's origin and sets a fresh write
/// token; the shared planner (``SessionWrite/plan(on:)``) over the transaction's rows; one
/// statement on `accounts` or `active_account` per planned change, which the schema's
/// triggers record as one feed entry each; the entries read back and compared with the plan
/// (a schema whose triggers record something else rolls back); `COMMIT`. A write is reported
/// done only when it committed; a connection lost while committing is resolved as the
/// "Faults" article says.
package struct PostgresWrite {
  let write: SessionWrite
  let origin: String
  /// A random number only this write puts in `session_writer.write_token`.
  let token: String

  package init(write: SessionWrite, origin: String, token: String) {
    self.write = write
    self.origin = origin
    self.token = token
  }

  // The statements, `package` for sessionbench's raw baseline, which runs the same ones.

  /// Takes the lock, names the origin (`$1`) and the token (`$2`); returns the head.
  package static let claimSQL =
    "UPDATE ONLY session_writer SET origin = $1, write_token = $2, activates = false WHERE id = 1 RETURNING head"
  /// Ends the write's claim: every committed state has no origin, so that other clients'
  /// changes are recorded as `external`.
  package static let releaseSQL = "UPDATE ONLY session_writer SET origin = NULL WHERE id = 1"
  /// Asks that the account the next statement changes becomes the active one.
  package static let activatesSQL = "UPDATE ONLY session_writer SET activates = true WHERE id = 1"
  package static let insertSQL = "INSERT INTO accounts (username, is_logged_in) VALUES ($1, $2)"
  package static let updateSQL = "UPDATE ONLY accounts SET username = $1, is_logged_in = $2 WHERE id = $3"
  package static let deleteSQL = "DELETE FROM ONLY accounts WHERE id = $1"
  package static let pointSQL = "UPDATE ONLY active_account SET account_id = $1 WHERE id = 1"
  /// The entries after the head `$1`: the ones the write recorded.
  package static let recordedSQL =
    "SELECT \(PostgresTables.changeColumns) FROM ONLY session_changes WHERE seq > $1 ORDER BY seq"
  package static let activeAccountSQL =
    "SELECT \(PostgresTables.accountColumns) FROM ONLY active_account p JOIN ONLY accounts a ON a.id = p.account_id "
    + "WHERE p.id = 1"
  package static let accountNamedSQL =
    "SELECT \(PostgresTables.accountColumns) FROM ONLY accounts a WHERE a.username = $1"
  static let accountsSQL = "SELECT \(PostgresTables.accountColumns) FROM ONLY accounts a ORDER BY a.id"
  static let signedInSQL =
    "SELECT \(PostgresTables.accountColumns) FROM ONLY accounts a WHERE a.is_logged_in ORDER BY a.id"
  static let accountCountSQL = "SELECT count(*) FROM ONLY accounts"

  /// The statements that apply `plan`: one that the triggers record, after a request to
  /// make its account active when the plan does so with a change of the account's row.
  package static func statements(for plan: PlannedChange) -> [(sql: String, values: [String?])] {
    let activates = plan.isActive && !plan.wasActive ? [(sql: activatesSQL, values: [String?]())] : []
    switch (plan.account, plan.after) {
    case (nil, let after?):
      return activates + [(insertSQL, [after.username, after.isLoggedIn ? "true" : "false"])]
    case (let id?, let after?):
      if after.username != plan.before.username || after.isLoggedIn != plan.before.isLoggedIn {
        return activates + [
          (updateSQL, [after.username, after.isLoggedIn ? "true" : "false", String(id.value)])
        ]
      }
      return [(pointSQL, [plan.isActive ? String(id.value) : nil])]
    case (let id?, nil):
      return [(deleteSQL, [String(id.value)])]
    case (nil, nil):
      return []
    }
  }

  /// Whether `entry`, recorded at `cursor`, is the change `plan` makes (and not another:
  /// the triggers that record changes were replaced or dropped by hand).
  private func records(_ plan: PlannedChange, _ entry: SessionEntry, at cursor: Int64) -> Bool {
    let change = entry.change
    return entry.cursor.value == cursor && entry.origin == origin
      && (plan.account == nil || plan.account == change.account)
      && change.after.username == plan.after?.username
      && change.after.isLoggedIn == (plan.after?.isLoggedIn ?? false)
      && change.wasActive == plan.wasActive && change.isActive == plan.isActive
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
    let entries: [SessionEntry]
    do {
      try connection.begin()
      // The lock, then the reads: every change of the roster takes this lock before it
      // commits, so what the planner reads is current until this transaction ends.
      let claimed = try connection.pipelined([(Self.claimSQL, [origin, token]), (Self.activeAccountSQL, [])])
      guard let headRow = claimed[0].rows.first else {
        try connection.execute("ROLLBACK")
        throw SessionStorageError(
          .notFound, "the session_writer row is missing (was the table edited by hand?)",
          path: place.described)
      }
      let head = PostgresTables.integer(headRow[0])
      let reader = Reader(
        connection: connection, head: Cursor(head), active: claimed[1].rows.first.map(PostgresTables.account))
      let planned = try write.plan(on: reader)
      guard !planned.isEmpty else {
        // Nothing to change: the state the transaction read, at its head.
        let state = try connection.query(PostgresTables.snapshotSQL).rows.first.map(PostgresTables.snapshot)
        try connection.execute("ROLLBACK")
        guard let state else {
          throw SessionStorageError(
            .notFound, "the active_account row is missing (was the table edited by hand?)",
            path: place.described)
        }
        return .unchanged(SessionSnapshot(state: state.state, cursor: Cursor(head)))
      }
      guard Int64.max - head >= planned.count else {
        try connection.execute("ROLLBACK")
        throw SessionStorageError(
          .cursorsExhausted, "the feed's cursor reached \(head): \(planned.count) change(s) cannot follow",
          path: place.described)
      }
      // The changes, the claim's end and the entries recorded, in one round trip.
      let statements = planned.flatMap(Self.statements(for:))
      let results = try connection.pipelined(
        statements + [(Self.releaseSQL, []), (Self.recordedSQL, [String(head)])])
      let found = (results.last?.rows ?? []).map(PostgresTables.entry)
      guard found.count == planned.count,
        zip(planned, found).enumerated().allSatisfy({ records($1.0, $1.1, at: head + 1 + Int64($0)) })
      else {
        try connection.execute("ROLLBACK")
        throw SessionStorageError(
          .tamperedSchema,
          "the write changed the roster but the feed did not record its \(planned.count) change(s): the "
            + "roster_feed or session_feed trigger of schema \(place.schema) (or the feed's guard) is missing or "
            + "was changed. Nothing was written; 'sessionctl check' names what differs",
          path: place.described)
      }
      entries = found
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
      return .committed(try outcome(of: entries, on: connection, lost: error, backend: backend))
    }
    return .committed(entries)
  }

  /// What the planner reads, in the write's transaction, after its lock: the head and the
  /// active account from the claim's round trip, the rest on demand.
  private struct Reader: RosterReading {
    let connection: PQConnection
    let headCursor: Cursor
    let active: Account?

    init(connection: PQConnection, head: Cursor, active: Account?) {
      self.connection = connection
      self.headCursor = head
      self.active = active
    }

    func head() throws -> Cursor { headCursor }

    func activeAccount() throws -> Account? { active }

    /// The account stored with exactly these bytes, or else one whose name Swift takes for
    /// the same (another normalization, stored by another client): the answer every store
    /// gives.
    func account(named username: String) throws -> Account? {
      if let exact = try connection.query(PostgresWrite.accountNamedSQL, [username]).rows.first {
        return PostgresTables.account(exact)
      }
      return try connection.query(PostgresWrite.accountsSQL).rows.map(PostgresTables.account).first {
        $0.username == username
      }
    }

    func accountCount() throws -> Int {
      Int(PostgresTables.integer(try connection.scalar(PostgresWrite.accountCountSQL)))
    }

    func signedIn() throws -> [Account] {
      try connection.query(PostgresWrite.signedInSQL).rows.map(PostgresTables.account)
    }
  }

  /// Whether `entries` committed, found on a new connection after the old one (whose server
  /// process was `backend`) was lost while committing: returns them when they did, throws
  /// `unavailable` saying what is known when they did not or cannot be told.
  ///
  /// The old transaction may still be running on the server (its COMMIT waiting for a
  /// synchronous standby, or not yet read): it holds the session_writer row until it ends.
  /// So the row is read `FOR UPDATE`, which waits for that end (at most the lock timeout),
  /// and only then is the outcome decided; a wait that times out leaves it unknown. The
  /// write token names the transaction: it is this write's until another write commits.
  private func outcome(
    of entries: [SessionEntry], on connection: PQConnection, lost: SessionStorageError, backend: Int32
  ) throws -> [SessionEntry] {
    var failure = lost
    guard let first = entries.first, let last = entries.last else { throw failure }
    let cursors = entries.count == 1 ? "cursor \(first.cursor)" : "cursors \(first.cursor)…\(last.cursor)"
    do {
      try connection.reconnect()
      try connection.execute("BEGIN")
      defer { try? connection.execute("ROLLBACK") }
      let row = try connection.query(
        "SELECT write_token, head FROM ONLY session_writer WHERE id = 1 FOR UPDATE"
      ).rows
        .first
      if row?[0] == token { return entries }
      let head = PostgresTables.integer(row?[1] ?? nil)
      if head < first.cursor.value {
        failure.message += "; the change was not committed (the head is \(head)): nothing was written"
        throw failure
      }
      let kept = try connection.query(
        "SELECT \(PostgresTables.changeColumns) FROM ONLY session_changes WHERE seq BETWEEN $1 AND $2 ORDER BY seq",
        [String(first.cursor.value), String(last.cursor.value)]
      ).rows.map(PostgresTables.entry)
      if kept == entries { return entries }
      if !kept.isEmpty {
        failure.message += "; the change was not committed (\(cursors) hold other changes)"
        throw failure
      }
    } catch let error as SessionStorageError where error.code == .busy {
      failure.message +=
        "; its transaction still holds the session_writer row on the server (process \(backend)) after the lock "
        + "timeout: its COMMIT may be waiting for a synchronous standby"
    } catch let error as SessionStorageError where error.code == .unavailable && error != failure {
      failure.message += " (and connecting again failed: \(error.message))"
    }
    failure.message +=
      "; whether the change (\(cursors)) was committed is unknown: read the state before retrying"
    throw failure
  }
}
