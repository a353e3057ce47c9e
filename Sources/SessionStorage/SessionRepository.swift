// `import SessionStorage` alone gives an app everything it needs: cursors, feed starts and
// feed errors come from FeedKit.
import Dispatch
@_exported import FeedKit

#if canImport(FoundationEssentials)
  import FoundationEssentials
#else
  import Foundation
#endif

/// The narrowest view of a session: who is signed in. Hand this to a view model that only
/// reads; a two-line struct conforms, which makes such a view model trivial to test.
public protocol SessionProviding {
  /// The username, or nil when there is none.
  var username: String? { get }
  /// Whether the user is signed in.
  var isLoggedIn: Bool { get }
}

/// Everything a view model may do with the session: read the state, follow the feed, and
/// write. ``SessionStore``, ``InMemorySessionStore`` and `PostgresSessionStore` conform;
/// view models depend on this protocol, never on a concrete store.
///
/// Reads throw: a view model tells "signed out" from "cannot read the session". Writes are
/// `async`: they run off the caller's actor, so a write waiting for the disk or for another
/// process's lock never freezes the main actor.
public protocol SessionRepository: Sendable {
  /// The current state.
  var state: SessionState { get throws }
  /// The state and its cursor, read in one transaction.
  func snapshot() throws -> SessionSnapshot
  /// A live subscription to every change after `start`, once, in commit order.
  func changes(from start: FeedStart) throws -> SessionSubscription
  /// The state and its cursor, read in one transaction, then every change after it.
  func snapshotAndChanges() throws -> SessionSnapshotSubscription
  /// The state now, then each new state; consecutive equal states are dropped.
  func values() -> SessionValues
  /// Up to `limit` committed changes after `start`, oldest first, without waiting.
  func history(from start: FeedStart, limit: Int) throws -> [SessionEntry]
  /// The oldest kept cursor and the newest cursor.
  func bounds() throws -> FeedBounds
  /// Deletes all but the newest `count` entries; cursors are never reused.
  @discardableResult func compact(keepingLast count: Int) throws -> CompactionResult
  /// Deletes every entry older than `cursor` (the entry at `cursor` is kept).
  @discardableResult func compact(before cursor: Cursor) throws -> CompactionResult
  /// Deletes the oldest entries up to the first one younger than `age`.
  @discardableResult func compact(olderThan age: Duration) throws -> CompactionResult
  /// Signs in as `username`; nil when already signed in as that user.
  @discardableResult func logIn(as username: String) async throws -> SessionEntry?
  /// Signs out, keeping the username; nil when nobody was signed in.
  @discardableResult func logOut() async throws -> SessionEntry?
  /// Changes the username, keeping the login state; nil when it is unchanged.
  @discardableResult func rename(to username: String) async throws -> SessionEntry?
}

// The three stores differ in where their log lives and how a write reaches it, not in what
// their public methods promise. So each public method is written once, in extensions of
// `_SessionBackedStore`, over the few things a store really does its own way
// (`SessionBackend`). The public protocol only hands out an opaque core: like the standard
// library's and GRDB's underscored protocols it is an implementation detail, and its
// methods show up in the documentation of each store as that store's own.

/// The implementation behind ``SessionStore``, ``InMemorySessionStore`` and
/// `PostgresSessionStore`; not for conforming to outside this package.
public protocol _SessionBackedStore: SessionRepository {
  /// The store's backend.
  var _core: _SessionStoreCore { get }
}

/// A store's backend, opaque outside the package.
public struct _SessionStoreCore: Sendable {
  package let backend: any SessionBackend

  package init(_ backend: any SessionBackend) { self.backend = backend }
}

/// What a store does its own way; everything else is the shared behaviour of
/// `_SessionBackedStore`.
package protocol SessionBackend: Sendable {
  /// The log, read by cursor, and the signal that wakes its subscribers.
  var feed: Feed<SessionChange, SessionState> { get }
  /// The current state, by the cheapest read that sees every commit.
  func currentState() throws -> SessionState
  /// Where an `async` write waits for the backend's writer, off its caller's actor; nil
  /// for a backend whose writes never wait, which runs them on the caller's task.
  var writeQueue: DispatchQueue? { get }
  /// Throws `readOnly` for a store opened read-only. The shared writes ask first: a write
  /// the store refuses is refused alike whether or not its task is cancelled.
  func requireWritable() throws
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
}

extension _SessionBackedStore {
  /// The current state.
  public var state: SessionState {
    get throws { try _core.backend.currentState() }
  }

  /// The state and the cursor of the newest change it includes, read atomically: resume
  /// with ``changes(from:)`` after its cursor and nothing is missed or repeated.
  public func snapshot() throws -> SessionSnapshot { try _core.backend.feed.snapshot() }

  /// A live subscription to every change after `start`, once, in commit order, as it
  /// commits (from this store, other stores and processes, and the database's own shell).
  ///
  /// Iterating never ends by itself: run it in a `Task` and cancel the task (or drop the
  /// iterator) to stop.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log.
  public func changes(from start: FeedStart = .now) throws -> SessionSubscription {
    try _core.backend.feed.changes(from: start)
  }

  /// The state and its cursor, read atomically, then a live subscription to every change
  /// after it: no gap, no duplicate.
  public func snapshotAndChanges() throws -> SessionSnapshotSubscription {
    try _core.backend.feed.snapshotAndChanges()
  }

  /// The state now, then each new state; consecutive equal states are dropped.
  public func values() -> SessionValues { _core.backend.feed.values() }

  /// Up to `limit` committed changes after `start`, oldest first, without waiting.
  /// - Throws: `FeedError` for a compacted cursor or one ahead of the log;
  ///   `invalidArgument` for a negative limit.
  public func history(from start: FeedStart = .beginning, limit: Int = 100) throws -> [SessionEntry] {
    try _core.backend.feed.checkedHistory(from: start, limit: limit)
  }

  /// The oldest kept cursor and the newest cursor.
  public func bounds() throws -> FeedBounds { try _core.backend.feed.source.bounds() }
}

extension Feed where Change == SessionChange, Snapshot == SessionState {
  /// The state and its cursor, read atomically.
  package func snapshot() throws -> SessionSnapshot {
    let (state, cursor, _) = try source.snapshot()
    return SessionSnapshot(state: state, cursor: cursor)
  }

  /// The state now, then each new state.
  package func values() -> SessionValues { values(\.change.after) }

  /// A page of history; a negative limit is `invalidArgument`.
  package func checkedHistory(from start: FeedStart, limit: Int) throws -> [SessionEntry] {
    try SessionStorageError.requireNonNegative(limit, "the history limit")
    return try history(from: start, limit: limit)
  }
}
