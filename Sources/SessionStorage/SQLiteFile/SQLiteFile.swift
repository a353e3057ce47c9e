import Dispatch
import FeedKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

extension SessionStore {
  /// Opens the SQLite file at `path`, creating it (mode 0600) and applying pending migrations.
  ///
  /// Instances opened on one file in one process — by the same path, a symbolic link or a
  /// relative path — share one writer, one reader and one cross-process watcher; the file
  /// is closed when the last of them is released. Each instance keeps its own options:
  /// its origin, durability and busy timeout apply to its own writes, and a read-only
  /// instance never writes even when a writable one shares its connections.
  ///
  /// `path` is used as given: `~` is not expanded (only a shell does that, unquoted at the
  /// start of a word). A path that begins with `~` and leads to nothing is refused rather
  /// than created in a directory named `~`. To open the file `sessionctl` uses, resolve it
  /// with ``Location/resolve(named:environment:)`` and open it with ``init(location:options:)``.
  /// - Throws: ``SessionStorageError``: a missing directory (unless
  ///   ``FileOptions/createsMissingDirectories``), a path that begins with `~` and leads to
  ///   nothing (`notFound`), a file that is not a database, someone else's
  ///   database, a newer schema, mismatching migrations, a missing file in read-only mode,
  ///   a missing file with a `-wal`, `-shm` or `-journal` of another database beside it
  ///   (`fileExists`).
  ///   Such a file is left byte-identical. `invalidOrigin` for an origin that is empty, longer
  ///   than 64 characters, holds a control character or is `external`.
  public convenience init(path: String, options: FileOptions = FileOptions()) throws {
    self.init(backend: try SQLiteFile(path: path, options: options))
  }
}

/// The SQLite file backend of ``SessionStore``: the file's connections (shared with every
/// other store on the same file in this process), its feed, and its writes.
package final class SQLiteFile: SessionBackend {
  /// The database file (a symbolic link is resolved to its target when the store opens).
  let path: String
  /// The options it was opened with.
  let options: SessionStore.FileOptions
  /// The migrations this open applied (empty when the file was up to date).
  package let appliedMigrations: [Migration]
  /// The connections shared with every other instance on the same file in this process.
  let database: SharedDatabase

  /// The file's feed, shared with the other instances on it.
  package var feed: Feed<SessionChange, SessionState> { database.feed }
  var log: SessionLog { database.log }
  /// The wake-up signal of the file's subscribers (a restore wakes them; tests count wake-ups).
  var beacon: Beacon { database.beacon }

  /// Opens the file at `path` (see ``SessionStore/init(path:options:)``).
  init(path: String, options: SessionStore.FileOptions) throws {
    try Origin.validate(options.origin)
    self.options = options
    (self.path, database, appliedMigrations) = try Opener.open(path, options)
  }

  package var place: String { path }

  package var origin: String { options.origin }

  package var isReadOnly: Bool { options.readOnly }

  package func currentState() throws -> SessionState { try log.state() }

  package func roster() throws -> SessionRoster { try log.roster() }

  /// The file's write queue: `async` writes of every instance on the file wait there for
  /// the one writer connection, off their callers' actors.
  package var writeQueue: DispatchQueue? { database.writeQueue }

  /// Runs one statement on the writer connection and returns its first integer, for tests
  /// that bend SQLite's limits (`PRAGMA max_page_count`).
  func writerInteger(_ sql: String) throws -> Int64? {
    try database.withWriter(options) { try $0.scalarInt(sql) }
  }

  /// Plans the write on what an IMMEDIATE transaction reads, applies the plan and records
  /// its entries in that transaction, and returns them, or the state and head that
  /// transaction found when the write changes nothing. A wait for another connection's write
  /// lock stops as soon as `isCancelled` says so, and throws `CancellationError`.
  package func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    let outcome: WriteOutcome
    do {
      outcome = try database.withWriter(options, isCancelled: isCancelled) { connection in
        // The schema may have been changed since the open.
        try Migrator.verifiedWrite(connection) {
          try RosterWrite(connection: connection, origin: options.origin).run(write)
        }
      }
    } catch let error as SessionStorageError where error.code == .busy && isCancelled() {
      throw CancellationError()
    }
    if let entry = outcome.entry { database.wake(after: entry) }
    return outcome
  }
}

/// One write of the library inside its IMMEDIATE transaction: the reads its plan needs, and
/// the statements that apply the plan, record its entries, advance `session_feed_tip` and
/// apply the retention policy. Triggers do not fire on the writer: the write does what they
/// do for other clients' edits, in the statements below, and its plan makes no edit a guard
/// trigger refuses (it counts the roster against its limit, never sets or changes an id,
/// points only at accounts it read). Each row it changes gets the cursor of the entry it is
/// about to record (a changed `seq`; for a row it inserts or deletes, a `seq` ahead of the
/// feed's head), as the triggers that tell other clients' edits from the library's expect.
struct RosterWrite: RosterReading {
  let connection: Connection
  let origin: String

  func head() throws -> Cursor { Cursor(try connection.scalarInt(Self.headSQL) ?? 0) }

  func activeAccount() throws -> Account? {
    try SessionTables.accounts(SessionTables.activeAccountSQL, on: connection).first
  }

  /// The account stored with exactly these bytes, or else one whose name Swift takes for the
  /// same (another normalization, or the text as a BLOB, stored by another client): the same
  /// answer a store in memory gives. Only such a name can differ in its bytes and still be
  /// equal: two names of ASCII text are equal only byte for byte, so the second query reads
  /// just the names that are not (usually none), not the roster.
  func account(named username: String) throws -> Account? {
    if let exact = try SessionTables.accounts(
      SessionTables.accountNamedSQL, [.text(username)], on: connection
    ).first {
      return exact
    }
    return try SessionTables.accounts(SessionTables.unusualNamesSQL, on: connection).first {
      $0.username == username
    }
  }

  func accountCount() throws -> Int { Int(try connection.scalarInt(SessionTables.accountCountSQL) ?? 0) }

  func signedIn() throws -> [Account] {
    try SessionTables.accounts(SessionTables.signedInSQL, on: connection)
  }

  /// Plans `write` and applies it.
  func run(_ write: SessionWrite) throws -> WriteOutcome {
    let planned = try write.plan(on: self)
    let head = try head()
    guard !planned.isEmpty else {
      return .unchanged(SessionSnapshot(state: try SessionTables.state(on: connection), cursor: head))
    }
    guard Int64.max - head.value >= planned.count else {
      throw SessionStorageError(
        .cursorsExhausted,
        try SessionTables.cursorProblem(on: connection) ?? "the feed's cursors are exhausted",
        path: connection.path)
    }
    let time = Timestamp.rounded(Date())
    let stamp = SQLiteValue.text(Timestamp.format(time))
    var entries: [SessionEntry] = []
    for (index, plan) in planned.enumerated() {
      let cursor = Cursor(head.value + 1 + Int64(index))
      let id: AccountID
      switch (plan.account, plan.after) {
      case (nil, let after?):
        try connection.run(
          Self.insertSQL,
          [.text(after.username), .integer(after.isLoggedIn ? 1 : 0), stamp, .integer(cursor.value)])
        id = AccountID(connection.lastInsertRowID)
      case (let existing?, let after?):
        id = existing
        let isLoggedIn = SQLiteValue.integer(after.isLoggedIn ? 1 : 0)
        // A name stored as this very text stays, and so does its UNIQUE index; any other
        // (a rename, other bytes, the same bytes as a BLOB) is written.
        let sameBytes = plan.before.username?.utf8.elementsEqual(after.username.utf8) ?? false
        if sameBytes {
          try connection.run(
            Self.updateStateSQL,
            [isLoggedIn, stamp, .integer(cursor.value), .integer(id.value), .text(after.username)])
        }
        if !sameBytes || connection.changes == 0 {
          try connection.run(
            Self.updateSQL,
            [.text(after.username), isLoggedIn, stamp, .integer(cursor.value), .integer(id.value)])
        }
      case (let existing?, nil):
        id = existing
        try connection.run(Self.markSQL, [.integer(cursor.value), .integer(id.value)])
        try connection.run(Self.deleteSQL, [.integer(id.value)])
      case (nil, nil):
        continue
      }
      if plan.wasActive != plan.isActive {
        try connection.run(
          Self.pointSQL, [plan.isActive ? .integer(id.value) : .null, stamp, .integer(cursor.value)])
      }
      let change = plan.change(account: id, at: time)
      try connection.run(
        Self.recordSQL,
        [
          stamp, .text(origin), .integer(id.value), change.before.username.map(SQLiteValue.text) ?? .null,
          change.after.username.map(SQLiteValue.text) ?? .null, .integer(change.before.isLoggedIn ? 1 : 0),
          .integer(change.after.isLoggedIn ? 1 : 0), .text(Timestamp.format(change.before.updatedAt)),
          .integer(change.wasActive ? 1 : 0), .integer(change.isActive ? 1 : 0),
        ])
      guard connection.lastInsertRowID == cursor.value else {
        throw SessionStorageError(
          .corrupt,
          "the feed numbered the change \(connection.lastInsertRowID), not \(cursor) as its newest cursor says: "
            + "sqlite_sequence was edited by hand; nothing was written",
          path: connection.path)
      }
      entries.append(SessionEntry(cursor: cursor, time: time, origin: origin, change: change))
    }
    if let newest = entries.last {
      let after = newest.change.after
      try connection.run(
        Self.tipSQL,
        [
          .integer(newest.cursor.value), after.username.map(SQLiteValue.text) ?? .null,
          .integer(after.isLoggedIn ? 1 : 0), stamp,
        ])
    }
    for (sql, bindings) in try Retention.stored(on: connection).deletes { try connection.run(sql, bindings) }
    return .committed(entries)
  }

  // Built once; each connection prepares them once (see ``SQL``).
  /// The feed's head, as the view the triggers compare with says.
  private static let headSQL = SQL("SELECT seq FROM session_feed_head")
  private static let insertSQL = SQL(
    "INSERT INTO accounts (username, is_logged_in, updated_at, seq) VALUES (?, ?, ?, ?)")
  private static let updateSQL = SQL(
    "UPDATE accounts SET username = ?, is_logged_in = ?, updated_at = ?, seq = ? WHERE id = ?")
  private static let updateStateSQL = SQL(
    "UPDATE accounts SET is_logged_in = ?, updated_at = ?, seq = ? WHERE id = ? AND username = ?")
  /// Before a removal: the row's `seq` ahead of the head keeps the trigger on DELETE aside.
  private static let markSQL = SQL("UPDATE accounts SET seq = ? WHERE id = ?")
  private static let deleteSQL = SQL("DELETE FROM accounts WHERE id = ?")
  private static let pointSQL = SQL(
    "UPDATE active_account SET account_id = ?, updated_at = ?, seq = ? WHERE id = 1")
  /// What `session_feed_tip_advance` does after another client's row: the tip takes the
  /// newest entry, unless it already holds a later cursor.
  private static let tipSQL = SQL(
    "UPDATE session_feed_tip SET seq = ?1, username = ?2, is_logged_in = ?3, at = ?4 "
      + "WHERE id = 1 AND seq < ?1")
  private static let recordSQL = SQL(
    "INSERT INTO session_changes (at, origin, account_id, old_username, new_username, old_is_logged_in, "
      + "new_is_logged_in, old_updated_at, was_active, is_active) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
}
