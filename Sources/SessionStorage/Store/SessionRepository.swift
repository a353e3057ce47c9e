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
  /// Every account, which one is active, and its cursor, read in one transaction.
  func roster() throws -> SessionRoster
  /// A live subscription to the changes after `start` that concern `account`.
  func changes(from start: FeedStart, account: AccountID) throws -> SessionSubscription
  /// Up to `limit` changes concerning `account` after `start`, oldest first.
  func history(from start: FeedStart, limit: Int, account: AccountID) throws -> [SessionEntry]
  /// Signs in as `username`: an existing account signs in and becomes active, a new one
  /// joins signed in and active; nil when it was already signed in and active.
  @discardableResult func logIn(as username: String, expecting condition: WriteCondition?) async throws
    -> SessionEntry?
  /// Signs out the active account, keeping it in the roster and active; nil when none was
  /// signed in.
  @discardableResult func logOut(expecting condition: WriteCondition?) async throws -> SessionEntry?
  /// Signs out the named account; nil when it was signed out.
  @discardableResult func logOut(_ username: String, expecting condition: WriteCondition?) async throws
    -> SessionEntry?
  /// Signs out every account, one entry each.
  @discardableResult func logOutAll(expecting condition: WriteCondition?) async throws -> [SessionEntry]
  /// Renames the active account, keeping its login state; nil when the name is unchanged.
  @discardableResult func rename(to username: String, expecting condition: WriteCondition?) async throws
    -> SessionEntry?
  /// Renames the named account.
  @discardableResult func rename(_ username: String, to newName: String, expecting condition: WriteCondition?)
    async throws -> SessionEntry?
  /// Makes the named account active, changing no login state; nil when it was active.
  @discardableResult func switchTo(_ username: String, expecting condition: WriteCondition?) async throws
    -> SessionEntry?
  /// Takes the named account out of the roster; none is active after removing the active one.
  @discardableResult func remove(_ username: String, expecting condition: WriteCondition?) async throws
    -> SessionEntry?
}

extension SessionRepository {
  /// Signs in as `username`, unconditionally.
  @discardableResult public func logIn(as username: String) async throws -> SessionEntry? {
    try await logIn(as: username, expecting: nil)
  }

  /// Signs out the active account, unconditionally.
  @discardableResult public func logOut() async throws -> SessionEntry? { try await logOut(expecting: nil) }

  /// Renames the active account, unconditionally.
  @discardableResult public func rename(to username: String) async throws -> SessionEntry? {
    try await rename(to: username, expecting: nil)
  }

  /// Renames the named account, unconditionally.
  @discardableResult public func rename(_ username: String, to newName: String) async throws -> SessionEntry?
  {
    try await rename(username, to: newName, expecting: nil)
  }

  /// Makes the named account active, unconditionally.
  @discardableResult public func switchTo(_ username: String) async throws -> SessionEntry? {
    try await switchTo(username, expecting: nil)
  }

  /// Removes the named account, unconditionally.
  @discardableResult public func remove(_ username: String) async throws -> SessionEntry? {
    try await remove(username, expecting: nil)
  }

  /// Signs out the named account, unconditionally.
  @discardableResult public func logOut(_ username: String) async throws -> SessionEntry? {
    try await logOut(username, expecting: nil)
  }

  /// Signs out every account, unconditionally.
  @discardableResult public func logOutAll() async throws -> [SessionEntry] {
    try await logOutAll(expecting: nil)
  }
}
