import Foundation
import Synchronization
internal import SystemKit

/// A ``SessionRepository`` without a file, for tests and previews.
///
/// Not a mock: it keeps ``SessionStore``'s contract, result for result and error for error.
/// It validates usernames and origins by the same rules, skips no-op writes (a name that
/// differs only in its Unicode normalization is the same name), numbers entries with
/// cursors that never repeat, keeps times to the millisecond as the file does, serves
/// `.now`, `.beginning`, `.after(cursor)`, `.afterEntry(cursor, time:)`,
/// snapshot-then-changes and values alike, compacts by count or cursor with the same
/// ``SessionStore/Compaction`` result, and raises the same `FeedError`s. A differential test
/// applies random sequences of every operation to both stores and compares every result.
///
/// What it cannot do: another process or the sqlite3 shell cannot change it, so it never
/// records the origin `external`.
public final class InMemorySessionStore: SessionRepository {
  /// The origin recorded on this store's writes.
  public let origin: String
  private let log: MemoryLog
  private let beacon = Beacon()
  private let feed: Feed<SessionChange, SessionState>

  /// Creates a store holding `state` (its time rounded to the millisecond) with an empty
  /// feed, whose writes record the origin `memory`: for previews.
  public init(state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date())) {
    origin = "memory"
    log = MemoryLog(state: state)
    feed = Feed(source: log, signal: beacon)
  }

  /// Creates a store holding `state` (its time rounded to the millisecond) with an empty
  /// feed, whose writes record `origin`.
  /// - Throws: `invalidOrigin` for an origin ``SessionStore/init(path:options:)`` refuses too:
  ///   empty, longer than 64 characters, holding a control character, or `external`.
  public init(
    state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date()), origin: String
  ) throws {
    try Origin.validate(origin)
    self.origin = origin
    log = MemoryLog(state: state)
    feed = Feed(source: log, signal: beacon)
  }

  /// The current state.
  public var state: SessionState { log.current.withLock { $0.state } }

  /// The state and its cursor, read atomically.
  public func snapshot() throws -> SessionSnapshot { try feed.snapshot() }

  /// Every change after `start`, once, in commit order, as it commits.
  public func changes(from start: FeedStart = .now) throws -> SessionSubscription {
    try feed.changes(from: start)
  }

  /// The state and its cursor, then every change after it.
  public func snapshotAndChanges() throws -> SessionSnapshotSubscription { try feed.snapshotAndChanges() }

  /// The state now, then each new state.
  public func values() -> SessionValues { feed.values() }

  /// Up to `limit` changes after `start`, without waiting.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try feed.checkedHistory(from: start, limit: limit)
  }

  /// Signs in as `username` (validated like ``SessionStore``'s).
  @discardableResult
  public func logIn(as username: String) throws -> SessionEntry? { try write(try .login(username: username)) }

  /// Signs out, keeping the username.
  @discardableResult
  public func logOut() throws -> SessionEntry? { try write(.logout) }

  /// Changes the username, keeping the login state.
  @discardableResult
  public func rename(to username: String) throws -> SessionEntry? { try write(try .rename(to: username)) }

  /// Signs in as `username`, like the synchronous variant (memory does not block). As with
  /// ``SessionStore``, a task cancelled before the write throws `CancellationError` (after
  /// the username's validation) and writes nothing.
  @discardableResult
  public func logIn(as username: String) async throws -> SessionEntry? {
    try write(try .login(username: username), unlessCancelled: true)
  }

  /// Signs out, keeping the username; a cancelled task writes nothing (see the `async`
  /// `logIn(as:)`).
  @discardableResult
  public func logOut() async throws -> SessionEntry? { try write(.logout, unlessCancelled: true) }

  /// Changes the username, keeping the login state; a cancelled task writes nothing (see the
  /// `async` `logIn(as:)`).
  @discardableResult
  public func rename(to username: String) async throws -> SessionEntry? {
    try write(try .rename(to: username), unlessCancelled: true)
  }

  /// The oldest kept cursor and the newest cursor.
  public func bounds() -> FeedBounds { log.bounds() }

  /// Deletes all but the newest `count` entries; cursors are never reused.
  /// - Returns: what was deleted, as ``SessionStore/compact(keepingLast:)`` returns it.
  /// - Throws: `invalidArgument` for a negative count, like ``SessionStore/compact(keepingLast:)``.
  @discardableResult
  public func compact(keepingLast count: Int) throws -> SessionStore.Compaction {
    try SessionStorageError.requireNonNegative(count, "the number of entries to keep")
    return try log.compact { $0.entries.dropLast(count).count }
  }

  /// Deletes every entry older than `cursor` (the entry at `cursor` is kept); cursors are
  /// never reused.
  /// - Returns: what was deleted, as ``SessionStore/compact(before:)`` returns it.
  /// - Throws: `cursorAhead(requested:head:)` for a cursor beyond the log, like
  ///   ``SessionStore/compact(before:)``.
  @discardableResult
  public func compact(before cursor: Cursor) throws -> SessionStore.Compaction {
    try log.compact { log in
      try FeedBounds(oldest: log.entries.first?.cursor, head: log.head).requireCompactable(before: cursor)
      return log.entries.prefix { $0.cursor < cursor }.count
    }
  }

  /// Deletes the oldest entries up to the first one younger than `age` (by the time each
  /// was recorded), as ``SessionStore/compact(olderThan:)`` does.
  /// - Throws: `invalidArgument` for a negative age or one above
  ///   ``Retention/maximumAge``, like ``SessionStore/compact(olderThan:)``.
  @discardableResult
  public func compact(olderThan age: Duration) throws -> SessionStore.Compaction {
    try SessionStorageError.requireAge(age, "the age")
    let cutoff = Date().addingTimeInterval(-Double(age.milliseconds) / 1000)
    return try log.compact { log in
      log.entries.prefix { $0.time < cutoff }.count
    }
  }

  /// Applies `write`; from an `async` variant (`unlessCancelled`), only if the task is not
  /// cancelled, no-op or not, as ``SessionStore``'s `async` writes.
  private func write(_ write: SessionWrite, unlessCancelled: Bool = false) throws -> SessionEntry? {
    if unlessCancelled { try Task.checkCancellation() }
    let entry = try log.current.withLock { log throws -> SessionEntry? in
      guard let after = write.applied(to: log.state) else { return nil }
      guard let next = log.head.next else {
        throw SessionStorageError(
          .cursorsExhausted,
          "the feed's cursor reached the largest integer (\(log.head)); no change can follow")
      }
      let now = Timestamp.rounded(Date())  // to the millisecond, as the file keeps times
      let state = SessionState(username: after.username, isLoggedIn: after.isLoggedIn, updatedAt: now)
      log.head = next
      let entry = SessionEntry(
        cursor: log.head, time: now, origin: origin, change: SessionChange(before: log.state, after: state))
      log.state = state
      log.entries.append(entry)
      return entry
    }
    if entry != nil { beacon.signal() }
    return entry
  }
}

/// The in-memory log behind ``InMemorySessionStore``.
final class MemoryLog: FeedSource {
  struct Contents {
    var state: SessionState
    var entries: [SessionEntry] = []
    var head = Cursor.zero
  }

  let current: Mutex<Contents>

  /// A log holding `state`, its time rounded to the millisecond as the file keeps times.
  init(state: SessionState) {
    var state = state
    state.updatedAt = Timestamp.rounded(state.updatedAt)
    current = Mutex(Contents(state: state))
  }

  func entries(after cursor: Cursor, limit: Int) -> [SessionEntry] {
    current.withLock { log in
      let start = log.entries.firstIndex { $0.cursor > cursor } ?? log.entries.endIndex
      return Array(log.entries[start...].prefix(limit))
    }
  }

  func bounds() -> FeedBounds {
    current.withLock { FeedBounds(oldest: $0.entries.first?.cursor, head: $0.head) }
  }

  func snapshot() -> (state: SessionState, cursor: Cursor) { current.withLock { ($0.state, $0.head) } }

  /// Deletes the oldest entries, as many as `count` says of the entries kept, and returns
  /// what was deleted and the bounds afterwards.
  func compact(_ count: (Contents) throws -> Int) throws -> SessionStore.Compaction {
    try current.withLock { log in
      let removed = try count(log)
      log.entries.removeFirst(removed)
      return SessionStore.Compaction(
        removed: removed, bounds: FeedBounds(oldest: log.entries.first?.cursor, head: log.head))
    }
  }
}
