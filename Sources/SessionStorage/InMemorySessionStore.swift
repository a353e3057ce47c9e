import Foundation
import Synchronization

/// A ``SessionRepository`` without a file, for tests and previews.
///
/// Not a mock: it validates usernames, skips no-op writes, numbers entries with cursors
/// that never repeat, serves `.now`, `.beginning`, `.after(cursor)`, snapshot-then-changes
/// and values exactly like ``SessionStore``, and raises `cursorCompacted` after
/// ``compact(keepingLast:)``. The same contract tests run against both.
public final class InMemorySessionStore: SessionRepository {
  /// The origin recorded on this store's writes.
  public let origin: String
  private let log: MemoryLog
  private let beacon = Beacon()
  private let feed: Feed<SessionChange, SessionState>

  /// Creates a store holding `state` with an empty feed.
  public init(
    state: SessionState = SessionState(username: nil, isLoggedIn: false, updatedAt: Date()),
    origin: String = "memory"
  ) {
    self.origin = origin
    log = MemoryLog(state: state)
    feed = Feed(source: log, signal: beacon)
  }

  /// The current state.
  public var state: SessionState { log.current.withLock { $0.state } }

  /// The state and its cursor, read atomically.
  public func snapshot() -> SessionSnapshot {
    let (state, cursor) = log.snapshot()
    return SessionSnapshot(state: state, cursor: cursor)
  }

  /// Every change after `start`, once, in commit order, as it commits.
  public func changes(from start: FeedStart = .now) throws -> SessionSubscription {
    try feed.changes(from: start)
  }

  /// The state and its cursor, then every change after it.
  public func snapshotAndChanges() throws -> SessionSnapshotSubscription { try feed.snapshotAndChanges() }

  /// The state now, then each new state.
  public func values() -> SessionValues { feed.values(\.change.after) }

  /// Up to `limit` changes after `start`, without waiting.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try SessionStorageError.requireNonNegative(limit, "the history limit")
    return try feed.history(from: start, limit: limit)
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

  /// Signs in as `username`; the same as the synchronous variant (memory does not block).
  @discardableResult
  public func logIn(as username: String) async throws -> SessionEntry? {
    try write(try .login(username: username))
  }

  /// Signs out, keeping the username.
  @discardableResult
  public func logOut() async throws -> SessionEntry? { try write(.logout) }

  /// Changes the username, keeping the login state.
  @discardableResult
  public func rename(to username: String) async throws -> SessionEntry? {
    try write(try .rename(to: username))
  }

  /// Deletes all but the newest `count` entries; cursors are never reused.
  /// - Throws: `invalidArgument` for a negative count, like ``SessionStore/compact(keepingLast:)``.
  public func compact(keepingLast count: Int) throws {
    try SessionStorageError.requireNonNegative(count, "the number of entries to keep")
    log.current.withLock { $0.entries = Array($0.entries.suffix(count)) }
  }

  private func write(_ write: SessionWrite) throws -> SessionEntry? {
    let entry = try log.current.withLock { log throws -> SessionEntry? in
      guard let after = write.applied(to: log.state) else { return nil }
      guard let next = log.head.next else {
        throw SessionStorageError(
          .cursorsExhausted,
          "the feed's cursor reached the largest integer (\(log.head)); no change can follow")
      }
      let now = Date()
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

  init(state: SessionState) { current = Mutex(Contents(state: state)) }

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
}
