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
/// write. ``SessionStore`` conforms, whichever backend holds it; view models depend on this
/// protocol, never on a concrete store, and a test may hand them a fake of its own.
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
