import Dispatch
import FeedKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// Persists who is signed in in a SQLite file, and turns every committed change into one
/// entry of an ordered, resumable feed, whichever process or tool made it.
///
/// A store is `Sendable`: share one instance between tasks and threads. It holds two
/// connections (a writer and a reader) and, while anyone subscribes, a watcher that
/// notices commits of other processes.
///
/// Its writes are `async` (``logIn(as:)``, ``logOut()``, ``rename(to:)``) and run off the
/// caller's actor; ``blocking`` has the same writes for code that may block its thread.
public final class SessionStore: _SessionBackedStore, SessionBackend {
  /// How durable a commit is.
  public enum Durability: Sendable, Hashable {
    /// `synchronous=FULL`: a commit survives power loss. The default.
    case full
    /// `synchronous=NORMAL`: faster; the last commits may be lost on power loss (never on a crash).
    case normal

    /// The value of `PRAGMA synchronous`.
    var pragmaValue: String {
      switch self {
      case .full: "FULL"
      case .normal: "NORMAL"
      }
    }
  }

  /// How a store opens its file.
  public struct Options: Sendable {
    /// How durable a commit is.
    public var durability: Durability
    /// How long a write waits for another writer before failing with `SQLITE_BUSY`.
    public var busyTimeout: Duration
    /// The origin recorded on this store's writes; `external` is reserved.
    public var origin: String
    /// Open without writing: no creation, no migration, no writes.
    public var readOnly: Bool
    /// How often the cross-process watcher re-checks the file when no file event came: the
    /// safety net behind inotify, and the only mechanism where inotify cannot be set up.
    /// Instances on one file share one watcher: the first instance's interval applies.
    public var safetyPollInterval: Duration
    /// Whether a store that creates its file also creates the missing directories above it,
    /// with mode 0700 (only the owner may enter). Off by default: a mistyped path is an
    /// error that names the missing directory, not a new directory tree.
    /// ``SessionStore/init(location:options:)`` turns it on for the default location.
    public var createsMissingDirectories: Bool
    /// Whether the file is a private copy that nothing else has open or writes (a backup
    /// being verified): read-only, it is read as immutable, taking no lock and making no
    /// `-wal` or `-shm` beside it.
    var readsPrivateCopy = false

    /// Creates options; the origin defaults to the process's name.
    public init(
      durability: Durability = .full, busyTimeout: Duration = .seconds(5),
      origin: String = ProcessInfo.processInfo.processName, readOnly: Bool = false,
      safetyPollInterval: Duration = .seconds(1), createsMissingDirectories: Bool = false
    ) {
      self.durability = durability
      self.busyTimeout = busyTimeout
      self.origin = origin
      self.readOnly = readOnly
      self.safetyPollInterval = safetyPollInterval
      self.createsMissingDirectories = createsMissingDirectories
    }
  }

  /// The database file (a symbolic link is resolved to its target when the store opens).
  public let path: String
  /// The options it was opened with.
  public let options: Options
  /// The migrations this open applied (empty when the file was up to date).
  public let appliedMigrations: [Migration]
  /// The connections shared with every other instance on the same file in this process.
  let database: SharedDatabase

  /// The file's feed, shared with the other instances on it.
  package var feed: Feed<SessionChange, SessionState> { database.feed }
  var log: SessionLog { database.log }
  /// The wake-up signal of the file's subscribers (a restore wakes them; tests count wake-ups).
  var beacon: Beacon { database.beacon }

  /// Opens the store at `path`, creating it (mode 0600) and applying pending migrations.
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
  ///   ``Options/createsMissingDirectories``), a path that begins with `~` and leads to
  ///   nothing (`notFound`), a file that is not a database, someone else's
  ///   database, a newer schema, mismatching migrations, a missing file in read-only mode,
  ///   a missing file with a `-wal`, `-shm` or `-journal` of another database beside it
  ///   (`fileExists`).
  ///   Such a file is left byte-identical. `invalidOrigin` for an origin that is empty, longer
  ///   than 64 characters, holds a control character or is `external`.
  public init(path: String, options: Options = Options()) throws {
    try Origin.validate(options.origin)
    self.options = options
    (self.path, database, appliedMigrations) = try Opener.open(path, options)
  }

  /// This store, as the shared public behaviour sees it.
  public var _core: _SessionStoreCore { _SessionStoreCore(self) }

  package func currentState() throws -> SessionState { try log.state() }

  /// The file's write queue: `async` writes of every instance on the file wait there for
  /// the one writer connection, off their callers' actors.
  package var writeQueue: DispatchQueue? { database.writeQueue }

  /// Runs one statement on the writer connection and returns its first integer, for tests
  /// that bend SQLite's limits (`PRAGMA max_page_count`).
  func writerInteger(_ sql: String) throws -> Int64? {
    try database.withWriter(options) { try $0.scalarInt(sql) }
  }

  package func requireWritable() throws {
    guard !options.readOnly else {
      throw SessionStorageError(.readOnly, "the store was opened read-only", path: path)
    }
  }

  /// Runs the write as one conditional UPDATE in an IMMEDIATE transaction and returns the
  /// entry its trigger wrote, or the state and head that transaction found when nothing
  /// changed. A read-only instance refuses it, also when it shares its connections with a
  /// writable one. A wait for another connection's write lock stops as soon as
  /// `isCancelled` says so, and throws `CancellationError`.
  package func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws
    -> WriteOutcome
  {
    try requireWritable()
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
  /// ``InMemorySessionStore`` makes no entry for it. It costs nothing on the common path:
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
