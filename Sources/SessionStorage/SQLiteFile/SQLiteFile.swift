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

  /// The file's write queue: `async` writes of every instance on the file wait there for
  /// the one writer connection, off their callers' actors.
  package var writeQueue: DispatchQueue? { database.writeQueue }

  /// Runs one statement on the writer connection and returns its first integer, for tests
  /// that bend SQLite's limits (`PRAGMA max_page_count`).
  func writerInteger(_ sql: String) throws -> Int64? {
    try database.withWriter(options) { try $0.scalarInt(sql) }
  }

  /// Runs the write as one conditional UPDATE in an IMMEDIATE transaction and returns the
  /// entry its trigger wrote, or the state and head that transaction found when nothing
  /// changed. A wait for another connection's write lock stops as soon as
  /// `isCancelled` says so, and throws `CancellationError`.
  package func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    let (sql, bindings) = write.statement(origin: options.origin)
    let outcome: WriteOutcome
    do {
      outcome = try committed(sql, bindings, isCancelled: isCancelled)
    } catch let bytesOnly as OnlyBytesChanged {
      return .unchanged(bytesOnly.found)
    } catch let error as SessionStorageError where error.code == .busy && isCancelled() {
      throw CancellationError()
    }
    if let entry = outcome.entry { database.wake(after: entry) }
    return outcome
  }

  /// Thrown inside the write's transaction to roll back an entry with no events; it holds
  /// the state and head the transaction found before its UPDATE.
  private struct OnlyBytesChanged: Error {
    let found: SessionSnapshot
  }

  /// Runs the write's UPDATE in an IMMEDIATE transaction and returns the entry its trigger
  /// wrote, or, when the UPDATE changed nothing, the state and head read in the same
  /// transaction (the write lock is still held: that is the state the write saw).
  ///
  /// When only the username's bytes would change — the file holds another normalization of
  /// the same name, or the same text as a BLOB (stored by another client), which Swift's
  /// `String` equality takes for the same name — the trigger compares bytes and writes an
  /// entry with no events; the transaction is rolled back (``OnlyBytesChanged``), as
  /// a store in memory makes no entry for it. It costs nothing on the common path:
  /// the entry is read anyway. What the write found is that entry's "before", at the cursor
  /// below it (AUTOINCREMENT numbers the entry one past the head).
  private func committed(_ sql: SQL, _ bindings: [SQLiteValue], isCancelled: @escaping @Sendable () -> Bool)
    throws -> WriteOutcome
  {
    try database.withWriter(options, isCancelled: isCancelled) { connection in
      // The schema may have been changed since the open.
      try Migrator.verifiedWrite(connection) { () throws -> WriteOutcome in
        let before = connection.totalChanges
        do {
          try connection.run(sql, bindings)
        } catch var error as SessionStorageError
          where error.code == .full && (try? SessionTables.bounds(on: connection))?.head.next == nil
        {
          // AUTOINCREMENT has no number left: say why instead of "database or disk is full".
          // (A head that cannot be read counts as exhausted: only the message changes.)
          error.code = .cursorsExhausted
          error.message = try SessionTables.cursorProblem(on: connection) ?? error.message
          throw error
        }
        guard connection.changes > 0 else {
          return .unchanged(
            SessionSnapshot(
              state: try SessionTables.state(on: connection),
              cursor: try SessionTables.bounds(on: connection).head))
        }
        // Only the entry this transaction wrote is this write's, never an older one: the
        // feed trigger must have inserted a row besides the session's (trigger programs
        // count in the total; an added trigger is refused by the schema check above).
        guard connection.totalChanges - before >= 2, let entry = try SessionTables.newest(on: connection)
        else {
          throw SessionStorageError(
            .tamperedSchema,
            "the write changed the session but the feed recorded no entry for it: the session_feed trigger "
              + "is missing or was changed. Nothing was written; restore the file from a backup, or re-create "
              + "the trigger session_feed with its SQL in migrations/0001_session_and_feed.sql",
            path: path)
        }
        guard entry.change.hasEvents else {
          throw OnlyBytesChanged(
            found: SessionSnapshot(state: entry.change.before, cursor: Cursor(entry.cursor.value - 1)))
        }
        return .committed(entry)
      }
    }
  }
}

extension SessionWrite {
  /// The conditional UPDATE for this write by `origin`: it changes the row only when the
  /// values differ, names the writer (the origin is bound last), and bumps the write token
  /// so the trigger records that origin instead of `external`.
  func statement(origin: String) -> (sql: SQL, bindings: [SQLiteValue]) {
    switch self {
    case .login(let name): (Self.loginSQL, [.text(name), .text(origin)])
    case .logout: (Self.logoutSQL, [.text(origin)])
    case .rename(let name): (Self.renameSQL, [.text(name), .text(origin)])
    }
  }

  // Built once; each connection prepares them once (see ``SQL``).
  private static let stamp = "write_token = write_token + 1"
  private static let loginSQL = SQL(
    "UPDATE session SET username = ?1, is_logged_in = 1, updated_by = ?2, \(stamp) "
      + "WHERE id = 1 AND (username IS NOT ?1 OR is_logged_in IS NOT 1)")
  private static let logoutSQL = SQL(
    "UPDATE session SET is_logged_in = 0, updated_by = ?1, \(stamp) WHERE id = 1 AND is_logged_in IS NOT 0")
  private static let renameSQL = SQL(
    "UPDATE session SET username = ?1, updated_by = ?2, \(stamp) WHERE id = 1 AND username IS NOT ?1")
}
