import FeedKit
import Foundation
import Synchronization

/// Persists who is signed in in a SQLite file, and turns every committed change into one
/// entry of an ordered, resumable feed, whichever process or tool made it.
///
/// A store is `Sendable`: share one instance between tasks and threads. It holds two
/// connections (a writer and a reader) and, while anyone subscribes, a watcher that
/// notices commits of other processes.
public final class SessionStore: Sendable {
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
    /// ``SessionStore/defaultPath(environment:)`` is usually opened with it on.
    public var createsMissingDirectories: Bool

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

  /// The feed of changes, for building subscriptions.
  var feed: Feed<SessionChange, SessionState> { database.feed }
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
  /// - Throws: ``SessionStorageError``: a missing directory (unless
  ///   ``Options/createsMissingDirectories``), a file that is not a database, someone else's
  ///   database, a newer schema, mismatching migrations, a missing file in read-only mode.
  ///   Such a file is left byte-identical. `invalidOrigin` for an origin that is empty, longer
  ///   than 64 characters, holds a control character or is `external`.
  public init(path: String, options: Options = Options()) throws {
    try Origin.validate(options.origin)
    self.options = options
    (self.path, database, appliedMigrations) = try Opener.open(path, options)
  }

  /// The current state.
  public var state: SessionState {
    get throws { try log.state() }
  }

  /// The state and the cursor of the newest change it includes, read in one transaction:
  /// resume with ``changes(from:)`` after ``SessionSnapshot/cursor`` and nothing is missed
  /// or repeated.
  public func snapshot() throws -> SessionSnapshot { try feed.snapshot() }

  /// Signs in as `username` (validated, stored in NFC). Blocks the calling thread until the
  /// commit is durable, and while another process holds the write lock (up to
  /// ``Options/busyTimeout``); from an actor, use the `async` variant.
  /// - Returns: the committed change, or nil when already signed in as that user.
  /// - Throws: ``SessionStorageError`` (`invalidUsername` before anything is written).
  @discardableResult
  public func logIn(as username: String) throws -> SessionEntry? { try write(.login(username: username)) }

  /// Signs out. The username is kept, so an app can offer "continue as …" and `status`
  /// can say who signed out; the ``SessionEvent/loggedOut(username:)`` event names them.
  /// Blocks the calling thread like the synchronous `logIn(as:)`.
  /// - Returns: the committed change, or nil when nobody was signed in.
  @discardableResult
  public func logOut() throws -> SessionEntry? { try write(.logout) }

  /// Changes the username and leaves the login state as it is. Blocks the calling thread
  /// like the synchronous `logIn(as:)`.
  /// - Returns: the committed change, or nil when the username is already `username`.
  @discardableResult
  public func rename(to username: String) throws -> SessionEntry? { try write(.rename(to: username)) }

  /// Signs in as `username`, off the caller's actor: the main actor stays responsive while
  /// the commit is made durable or waits for another process's write lock.
  ///
  /// Cancelling the task while the write waits for the lock stops the wait and throws
  /// `CancellationError`; nothing is written. A write that already committed returns its
  /// entry: cancellation never undoes an acknowledged change.
  /// - Returns: the committed change, or nil when already signed in as that user.
  @discardableResult
  public func logIn(as username: String) async throws -> SessionEntry? {
    try await write(.login(username: username))
  }

  /// Signs out, off the caller's actor (see the `async` `logIn(as:)`).
  @discardableResult
  public func logOut() async throws -> SessionEntry? { try await write(.logout) }

  /// Changes the username, off the caller's actor (see the `async` `logIn(as:)`).
  @discardableResult
  public func rename(to username: String) async throws -> SessionEntry? {
    try await write(.rename(to: username))
  }

  /// Runs one statement on the writer connection and returns its first integer, for tests
  /// that bend SQLite's limits (`PRAGMA max_page_count`).
  func writerInteger(_ sql: String) throws -> Int64? {
    try database.withWriter(options) { try $0.scalarInt(sql) }
  }

  private func requireWritable() throws {
    guard !options.readOnly else {
      throw SessionStorageError(.readOnly, "the store was opened read-only", path: path)
    }
  }

  /// Runs a maintenance DELETE on the feed in an IMMEDIATE transaction.
  func maintain(_ sql: String, _ bindings: [SQLiteValue]) throws -> Compaction {
    try maintain(deleting: [(sql, bindings)])
  }

  /// Runs `first` (if any), then maintenance DELETEs on the feed, in one IMMEDIATE
  /// transaction; the compaction counts the rows the DELETEs removed.
  func maintain(first: (String, [SQLiteValue])? = nil, deleting deletes: [(String, [SQLiteValue])]) throws
    -> Compaction
  {
    try requireWritable()
    return try database.withWriter(options) { connection in
      try Migrator.verifiedWrite(connection) {
        if let (sql, bindings) = first { try connection.run(sql, bindings) }
        var removed = 0
        for (sql, bindings) in deletes {
          try connection.run(sql, bindings)
          removed += connection.changes
        }
        return Compaction(removed: removed, bounds: try SessionTables.bounds(on: connection))
      }
    }
  }

  /// Runs the write on the database's write queue, off the caller's actor; cancelling the
  /// task stops a wait for the lock.
  private func write(_ write: SessionWrite) async throws -> SessionEntry? {
    let job = QueuedWrite(self)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        database.writeQueue.async { continuation.resume(with: job.run(write)) }
      }
    } onCancel: {
      job.cancel()
    }
  }

  /// Runs the write as one conditional UPDATE in an IMMEDIATE transaction and returns the
  /// entry its trigger wrote, or nil when nothing changed (see ``committed(_:_:isCancelled:)``).
  fileprivate func write(_ write: SessionWrite, isCancelled: (@Sendable () -> Bool)? = nil) throws
    -> SessionEntry?
  {
    let (sql, bindings) = write.statement(origin: options.origin)
    try requireWritable()
    if isCancelled?() == true { throw CancellationError() }
    let entry: SessionEntry?
    do {
      entry = try committed(sql, bindings, isCancelled: isCancelled)
    } catch is OnlyBytesChanged {
      return nil
    } catch let error as SessionStorageError where error.code == .busy && isCancelled?() == true {
      throw CancellationError()
    }
    if let entry { database.wake(after: entry) }
    return entry
  }

  /// Thrown inside the write's transaction to roll back an entry with no events.
  private struct OnlyBytesChanged: Error {}

  /// Runs the write's UPDATE in an IMMEDIATE transaction and returns the entry its trigger
  /// wrote, or nil when the UPDATE changed nothing.
  ///
  /// When only the username's bytes would change — the file holds another normalization of
  /// the same name, or the same text as a BLOB (stored by another client), which Swift's
  /// `String` equality takes for the same name — the trigger compares bytes and writes an
  /// entry with no events; the transaction is rolled back (``OnlyBytesChanged``), as
  /// ``InMemorySessionStore`` makes no entry for it. It costs nothing on the common path:
  /// the entry is read anyway.
  private func committed(_ sql: SQL, _ bindings: [SQLiteValue], isCancelled: (@Sendable () -> Bool)?)
    throws -> SessionEntry?
  {
    try database.withWriter(options, isCancelled: isCancelled) { connection in
      // The schema may have been changed since the open.
      try Migrator.verifiedWrite(connection) { () throws -> SessionEntry? in
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
        guard connection.changes > 0 else { return nil }
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
        guard entry.change.hasEvents else { throw OnlyBytesChanged() }
        return entry
      }
    }
  }
}

/// A write waiting on the write queue. It lets go of its store before the caller resumes, so
/// that a store released right after `await store.logIn(as:)` closes its file at once.
private final class QueuedWrite: Sendable {
  private let store: Mutex<SessionStore?>
  private let cancelled = Atomic(false)

  init(_ store: SessionStore) { self.store = Mutex(store) }

  func cancel() { cancelled.store(true, ordering: .relaxed) }

  func run(_ write: SessionWrite) -> Result<SessionEntry?, any Error> {
    guard let store = store.withLock({ $0.take() }) else { return .success(nil) }
    return Result { try store.write(write, isCancelled: { [self] in cancelled.load(ordering: .relaxed) }) }
  }
}
