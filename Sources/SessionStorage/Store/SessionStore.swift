import Dispatch
import FeedKit
import Synchronization

/// Persists who is signed in — a roster of accounts, one of them active — and turns every committed change into one entry of an
/// ordered, resumable feed, whichever process or tool made it.
///
/// One type over three backends, each made by its own initializer:
/// - a SQLite file, ``init(path:options:)`` or ``init(location:options:)``: for apps,
///   services and command-line tools on one machine; the file's own features (backup,
///   restore, stored retention) are on ``file``;
/// - memory, ``inMemory(state:)``: for tests and previews;
/// - a PostgreSQL schema, `init(postgresURL:options:)` of `SessionStoragePostgres`: for
///   several machines sharing one session.
///
/// Every backend keeps one contract — the same results, the same errors, the same feed —
/// and a contract suite holds each to it. A store is `Sendable`: share one instance between
/// tasks and threads. Its writes are `async` (``logIn(as:expecting:)``,
/// ``logOut(expecting:)``, ``switchTo(_:expecting:)``, ``remove(_:expecting:)`` and the
/// others) and run off the caller's actor; ``blocking`` has the same writes for
/// code that may block its thread.
public final class SessionStore: SessionRepository {
  /// Where the session is kept.
  package let backend: any SessionBackend

  /// A store over `backend`: each backend's initializer ends here.
  package init(backend: any SessionBackend) { self.backend = backend }

  /// The migrations this open applied (empty when the schema was up to date, and for a
  /// store in memory).
  public var appliedMigrations: [Migration] { backend.appliedMigrations }

  // MARK: Reading and following

  /// The active account's state: its username and login state, or no username and signed
  /// out when no account is active.
  public var state: SessionState {
    get throws { try backend.currentState() }
  }

  /// The state and the cursor of the newest change it includes, read atomically: resume
  /// with ``changes(from:)`` after its cursor and nothing is missed or repeated.
  public func snapshot() throws -> SessionSnapshot {
    let (state, cursor, _) = try backend.feed.source.snapshot()
    return SessionSnapshot(state: state, cursor: cursor)
  }

  /// A live subscription to every change after `start`, once, in commit order, as it
  /// commits (from this store, other stores and processes, and the database's own shell).
  ///
  /// Iterating never ends by itself: run it in a `Task` and cancel the task (or drop the
  /// iterator) to stop.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func changes(from start: FeedStart = .now) throws -> SessionSubscription {
    try backend.feed.changes(from: start)
  }

  /// The state and its cursor, read atomically, then a live subscription to every change
  /// after it: no gap, no duplicate.
  public func snapshotAndChanges() throws -> SessionSnapshotSubscription {
    try backend.feed.snapshotAndChanges()
  }

  /// A live subscription to the changes after `start` that concern `account`, once, in
  /// commit order; the cursors are the store's (the other accounts' entries are passed over).
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func changes(from start: FeedStart = .now, account: AccountID) throws -> SessionSubscription {
    try backend.feed.changes(from: start, where: { $0.change.account == account })
  }

  /// The active account's state now, then each new state (a switch delivers the newly
  /// active account's); consecutive equal states are dropped.
  public func values() -> SessionValues { backend.feed.values(SessionChange.activeStateAfter) }

  /// Every account, which one is active, and the cursor of the newest change included, read
  /// in one transaction: follow it with ``changes(from:)`` from `.after(roster.cursor)` and
  /// ``SessionRoster/applying(_:)``.
  public func roster() throws -> SessionRoster { try backend.roster() }

  /// Up to `limit` committed changes after `start`, oldest first, without waiting.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log;
  ///   `invalidArgument` for a negative limit.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try SessionStorageError.requireNonNegative(limit, "the history limit")
    return try backend.feed.history(from: start, limit: limit)
  }

  /// Up to `limit` changes concerning `account` after `start`, oldest first, without waiting.
  /// - Throws: as ``history(from:limit:)``.
  public func history(from start: FeedStart = .beginning, limit: Int = 100, account: AccountID) throws
    -> [SessionEntry]
  {
    try SessionStorageError.requireNonNegative(limit, "the history limit")
    return try backend.feed.history(from: start, limit: limit, where: { $0.change.account == account })
  }

  /// The oldest kept cursor and the newest cursor.
  public func bounds() throws -> FeedBounds { try backend.feed.source.bounds() }

  /// Verifies the store without writing, one result per verification: a SQLite file's
  /// integrity, migrations, schema, state, times, continuity, cursors and username (see
  /// <doc:Reliability>); a PostgreSQL schema's migrations, functions and triggers, state,
  /// continuity, cursors and username; memory's state, continuity, cursors and username.
  ///
  /// Each verification runs on its own: one that cannot run fails with the database's
  /// reason, and the others still run.
  public func check() throws -> [CheckResult] { try backend.check() }

  // MARK: Compaction

  /// Deletes all but the newest `count` entries; cursors are never reused.
  /// - Returns: how many entries were deleted, and the bounds afterwards.
  /// - Throws: `invalidArgument` for a negative count; `readOnly` for a read-only store.
  @discardableResult
  public func compact(keepingLast count: Int) throws -> CompactionResult {
    try SessionStorageError.requireNonNegative(count, "the number of entries to keep")
    try backend.requireWritable()
    return try backend.delete(.keepingLast(count))
  }

  /// Deletes every entry older than `cursor` (the entry at `cursor` is kept).
  /// - Returns: how many entries were deleted, and the bounds afterwards.
  /// - Throws: `cursorAhead(requested:head:)` for a cursor beyond the one the next change
  ///   would get; `readOnly` for a read-only store.
  @discardableResult
  public func compact(before cursor: Cursor) throws -> CompactionResult {
    try bounds().requireCompactable(before: cursor)
    try backend.requireWritable()
    return try backend.delete(.before(cursor))
  }

  /// Deletes the oldest entries up to the first one younger than `age`, by the time each
  /// was recorded: a clock stepped back keeps entries rather than leave a hole.
  /// - Returns: how many entries were deleted, and the bounds afterwards.
  /// - Throws: `invalidArgument` for a negative age or one above `Retention.maximumAge`
  ///   (SQLite's date functions cannot count back that far); `readOnly` for a read-only
  ///   store; nothing is deleted.
  @discardableResult
  public func compact(olderThan age: Duration) throws -> CompactionResult {
    try SessionStorageError.requireAge(age, "the age")
    try backend.requireWritable()
    return try backend.delete(.olderThan(age))
  }

  // MARK: Writing

  /// Signs in as `username` (validated, stored in Unicode NFC), off the caller's actor: an
  /// account of that name signs in and becomes the active one; otherwise a new account joins
  /// the roster, signed in and active. Other accounts stay as they are (signed in or not).
  ///
  /// The main actor stays responsive while the commit is made durable or waits for another
  /// writer's lock. Cancelling the task before the write starts throws `CancellationError`
  /// (after the username's validation) and writes nothing; so does cancelling it while the
  /// write waits for a SQLite file's write lock, which stops the wait. A write that committed
  /// returns its entry: cancellation never undoes an acknowledged change.
  /// ``blocking`` offers the same writes for code that may block its thread.
  /// - Parameters:
  ///   - username: who signs in.
  ///   - condition: where the write expects the store (or the account) to be; when it is
  ///     elsewhere, the write throws `conflict` and changes nothing.
  /// - Returns: the committed change, or nil when that account was already signed in and active.
  /// - Throws: `SessionStorageError` (`invalidUsername` before anything is written;
  ///   `conflict`; `rosterFull` for a new account past ``SessionRoster/limit``; `readOnly`
  ///   for a read-only store, cancelled or not; `busy` when another writer held the lock past
  ///   the store's timeout, and nothing was written; a server backend's codes when its
  ///   connection is lost, saying whether anything was written), or `CancellationError`.
  @discardableResult
  public func logIn(as username: String, expecting condition: WriteCondition? = nil) async throws
    -> SessionEntry?
  {
    try await outcome(of: .logIn(username, expecting: condition)).entry
  }

  /// Signs out the active account, off the caller's actor; cancellation as for
  /// ``logIn(as:expecting:)``. The account stays in the roster and stays active, so an app
  /// can offer "continue as …"; the `loggedOut(username:)` event names it.
  /// - Returns: the committed change, or nil when no account is active or it was signed out.
  @discardableResult
  public func logOut(expecting condition: WriteCondition? = nil) async throws -> SessionEntry? {
    try await outcome(of: .logOut(expecting: condition)).entry
  }

  /// Signs out the account named `username`, active or not; it stays in the roster.
  /// - Returns: the committed change, or nil when it was signed out.
  /// - Throws: `accountNotFound` when no account has that name, and as ``logIn(as:expecting:)``.
  @discardableResult
  public func logOut(_ username: String, expecting condition: WriteCondition? = nil) async throws
    -> SessionEntry?
  {
    try await outcome(of: .logOut(username, expecting: condition)).entry
  }

  /// Signs out every signed-in account, in one transaction: one entry each, consecutive, by
  /// account identifier. The active account stays active.
  /// - Parameter condition: only ``WriteCondition/head(_:)``: `.account` names no account and
  ///   is refused with `invalidArgument`.
  /// - Returns: the committed changes; none when no account was signed in.
  @discardableResult
  public func logOutAll(expecting condition: WriteCondition? = nil) async throws -> [SessionEntry] {
    try await outcome(of: .logOutAll(expecting: condition)).entries
  }

  /// Renames the active account (the new name validated, stored in Unicode NFC), keeping
  /// its login state; cancellation as for ``logIn(as:expecting:)``. With no account active,
  /// an account of that name joins, signed out and active.
  /// - Returns: the committed change, or nil when the username is already `username`.
  /// - Throws: `usernameTaken` when another account has that name; and as
  ///   ``logIn(as:expecting:)``.
  @discardableResult
  public func rename(to username: String, expecting condition: WriteCondition? = nil) async throws
    -> SessionEntry?
  {
    try await outcome(of: .rename(to: username, expecting: condition)).entry
  }

  /// Renames the account named `username`, active or not.
  /// - Throws: `accountNotFound`, `usernameTaken`, and as ``logIn(as:expecting:)``.
  @discardableResult
  public func rename(_ username: String, to newName: String, expecting condition: WriteCondition? = nil)
    async throws
    -> SessionEntry?
  {
    try await outcome(of: .rename(username, to: newName, expecting: condition)).entry
  }

  /// Makes the account named `username` the active one, changing no login state: the one
  /// active before stays signed in (or not) and in the roster.
  /// - Returns: the committed change (its event is `activated`), or nil when it was active.
  /// - Throws: `accountNotFound`, and as ``logIn(as:expecting:)``.
  @discardableResult
  public func switchTo(_ username: String, expecting condition: WriteCondition? = nil) async throws
    -> SessionEntry?
  {
    try await outcome(of: .switchTo(username, expecting: condition)).entry
  }

  /// Takes the account named `username` out of the roster (signing it out when it was
  /// signed in). Removing the active account leaves none active: no other account is
  /// promoted. Its identifier is never given to another account.
  /// - Returns: the committed change (`removed`, after `loggedOut` when it was signed in).
  /// - Throws: `accountNotFound`, and as ``logIn(as:expecting:)``.
  @discardableResult
  public func remove(_ username: String, expecting condition: WriteCondition? = nil) async throws
    -> SessionEntry?
  {
    try await outcome(of: .remove(username, expecting: condition)).entry
  }

  /// The same writes, blocking the calling thread until they commit: for command-line
  /// tools, scripts and benchmarks, never for a main thread.
  public var blocking: BlockingWrites { BlockingWrites(backend: backend) }

  /// Commits `write` off the caller's actor: on the backend's write queue, or on the
  /// caller's task for a backend whose writes never wait. Whichever it is, a task cancelled
  /// before the write starts writes nothing.
  package func outcome(of write: SessionWrite) async throws -> WriteOutcome {
    try backend.requireWritable()
    guard let queue = backend.writeQueue else {
      try Task.checkCancellation()
      return try backend.commit(write, isCancelled: { false })
    }
    let job = QueuedWrite(backend)
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        queue.async { continuation.resume(with: job.run(write)) }
      }
    } onCancel: {
      job.cancel()
    }
  }
}

/// Where a ``SessionStore`` keeps its session and how a write reaches it: a SQLite file, the
/// process's memory, or a PostgreSQL schema. Everything else — validation, the feed's
/// methods, read-only refusals, cancellation, compaction's arguments — is the store's, once.
package protocol SessionBackend: Sendable {
  /// The log, read by cursor, and the signal that wakes its subscribers.
  var feed: Feed<SessionChange, SessionState> { get }
  /// Where the store is, as messages show it: a file's path, a URL without its password.
  var place: String { get }
  /// The origin recorded on this store's writes.
  var origin: String { get }
  /// Whether the store was opened read-only; the store refuses every write of such a
  /// backend before it reaches it.
  var isReadOnly: Bool { get }
  /// The migrations this open applied (empty when the schema was up to date).
  var appliedMigrations: [Migration] { get }
  /// The active account's state, by the cheapest read that sees every commit.
  func currentState() throws -> SessionState
  /// The roster and its cursor, read in one transaction.
  func roster() throws -> SessionRoster
  /// Where an `async` write waits for the backend's writer, off its caller's actor; nil
  /// for a backend whose writes never wait, which runs them on the caller's task.
  var writeQueue: DispatchQueue? { get }
  /// Commits `write` and returns its entry, or, when it changed nothing, the state and
  /// cursor it found in the same transaction; wakes this process's subscribers for a
  /// committed entry. `isCancelled` turns true when the task of an `async` write is
  /// cancelled: a backend that can stop waiting for a lock does so and throws
  /// `CancellationError` having written nothing. A write that committed returns its entry
  /// whatever `isCancelled` says.
  func commit(_ write: SessionWrite, isCancelled: @escaping @Sendable () -> Bool) throws -> WriteOutcome
  /// Deletes the oldest entries `deletion` names (validated), in one transaction, and
  /// returns what that removed.
  func delete(_ deletion: Deletion) throws -> CompactionResult
  /// Every verification this backend can make, one result each, without writing.
  func check() throws -> [CheckResult]
}

extension SessionBackend {
  /// Throws `readOnly` for a store opened read-only: every write asks first, so a write the
  /// store refuses is refused alike whether or not its task is cancelled.
  package func requireWritable() throws(SessionStorageError) {
    if isReadOnly { throw SessionStorageError.openedReadOnly(place) }
  }
}

extension SessionStorageError {
  /// The refusal of a write to a store opened read-only, at `place`.
  package static func openedReadOnly(_ place: String) -> SessionStorageError {
    SessionStorageError(.readOnly, "the store was opened read-only", path: place)
  }
}

/// A store's writes that block the calling thread until the commit is durable, and while
/// another writer holds the lock (up to the store's timeout): `try store.blocking.logIn(as:)`.
///
/// For code with a thread to spare (a command-line tool, a script, a benchmark). From an
/// actor, use the store's `async` writes, which run off the caller's actor. Their name says
/// they block, so a synchronous closure on the main thread cannot pick one by accident.
public struct BlockingWrites: Sendable {
  let backend: any SessionBackend

  /// Signs in as `username` and blocks until it commits (see ``SessionStore/logIn(as:expecting:)``).
  /// - Returns: the committed change, or nil when that account was already signed in and active.
  /// - Throws: ``SessionStorageError``, as the `async` write throws it.
  @discardableResult
  public func logIn(as username: String, expecting condition: WriteCondition? = nil) throws -> SessionEntry? {
    try outcome(of: .logIn(username, expecting: condition)).entry
  }

  /// Signs out the active account and blocks until it commits (see ``SessionStore/logOut(expecting:)``).
  @discardableResult
  public func logOut(expecting condition: WriteCondition? = nil) throws -> SessionEntry? {
    try outcome(of: .logOut(expecting: condition)).entry
  }

  /// Signs out the named account and blocks until it commits (see ``SessionStore/logOut(_:expecting:)``).
  @discardableResult
  public func logOut(_ username: String, expecting condition: WriteCondition? = nil) throws -> SessionEntry? {
    try outcome(of: .logOut(username, expecting: condition)).entry
  }

  /// Signs out every account and blocks until it commits (see ``SessionStore/logOutAll(expecting:)``).
  @discardableResult
  public func logOutAll(expecting condition: WriteCondition? = nil) throws -> [SessionEntry] {
    try outcome(of: .logOutAll(expecting: condition)).entries
  }

  /// Renames the active account and blocks until it commits (see ``SessionStore/rename(to:expecting:)``).
  @discardableResult
  public func rename(to username: String, expecting condition: WriteCondition? = nil) throws -> SessionEntry?
  {
    try outcome(of: .rename(to: username, expecting: condition)).entry
  }

  /// Renames the named account and blocks until it commits (see ``SessionStore/rename(_:to:expecting:)``).
  @discardableResult
  public func rename(_ username: String, to newName: String, expecting condition: WriteCondition? = nil)
    throws
    -> SessionEntry?
  {
    try outcome(of: .rename(username, to: newName, expecting: condition)).entry
  }

  /// Makes the named account active and blocks until it commits (see ``SessionStore/switchTo(_:expecting:)``).
  @discardableResult
  public func switchTo(_ username: String, expecting condition: WriteCondition? = nil) throws -> SessionEntry?
  {
    try outcome(of: .switchTo(username, expecting: condition)).entry
  }

  /// Removes the named account and blocks until it commits (see ``SessionStore/remove(_:expecting:)``).
  @discardableResult
  public func remove(_ username: String, expecting condition: WriteCondition? = nil) throws -> SessionEntry? {
    try outcome(of: .remove(username, expecting: condition)).entry
  }

  /// Commits `write` and returns what it did as its transaction saw it: its entry, or the
  /// state and cursor it found when it changed nothing (for a response that must be one
  /// observation, such as `sessionctl`'s "no change" line).
  package func outcome(of write: SessionWrite) throws -> WriteOutcome {
    try backend.requireWritable()
    return try backend.commit(write, isCancelled: { false })
  }
}

/// A write waiting on a write queue. It lets go of its backend before the caller resumes,
/// so that a store released right after `await store.logIn(as:)` closes its file or
/// connections at once.
private final class QueuedWrite: Sendable {
  private let backend: Mutex<(any SessionBackend)?>
  private let cancelled = Atomic(false)

  init(_ backend: any SessionBackend) { self.backend = Mutex(backend) }

  func cancel() { cancelled.store(true, ordering: .relaxed) }

  func run(_ write: SessionWrite) -> Result<WriteOutcome, any Error> {
    // A job runs once; a second run finds no backend and writes nothing.
    guard let backend = backend.withLock({ $0.take() }) else { return .failure(CancellationError()) }
    let isCancelled: @Sendable () -> Bool = { [self] in cancelled.load(ordering: .relaxed) }
    if isCancelled() { return .failure(CancellationError()) }
    return Result { try backend.commit(write, isCancelled: isCancelled) }
  }
}
