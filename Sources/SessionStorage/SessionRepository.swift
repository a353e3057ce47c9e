import FeedKit

/// Everything a view model may do with the session: read the state, follow the feed, and
/// write. ``SessionStore`` and ``InMemorySessionStore`` conform; view models depend on
/// this protocol, never on a concrete store.
public protocol SessionRepository: SessionProviding, Sendable {
  /// The current state.
  var state: SessionState { get throws }
  /// Every change after `start`, once, in commit order, as it commits.
  func changes(from start: FeedStart) throws -> SessionChanges
  /// The state and its cursor, read atomically, then every change after it.
  func snapshotAndChanges() throws -> SessionSnapshotFeed
  /// The state now, then each new state; consecutive equal states are dropped.
  func values() -> SessionValues
  /// Up to `limit` committed changes after `start`, without waiting.
  func history(from start: FeedStart, limit: Int) throws -> [SessionEntry]
  /// Signs in as `username`; nil when already signed in as that user.
  @discardableResult func login(username: String) throws -> SessionEntry?
  /// Signs out, keeping the username; nil when nobody was signed in.
  @discardableResult func logout() throws -> SessionEntry?
  /// Changes the username, keeping the login state; nil when it is unchanged.
  @discardableResult func rename(to username: String) throws -> SessionEntry?
}

// `SessionProviding` asks for plain properties, so a read error becomes "nobody": a screen
// shows "signed out" rather than a stale name. A view model that must tell the two apart
// reads `state` (which throws) or follows `values()` (which ends with the error).
extension SessionRepository {
  /// The current username; nil when there is none or the state cannot be read.
  public var username: String? { (try? state)?.username }
  /// Whether the user is signed in; false when the state cannot be read.
  public var isLoggedIn: Bool { (try? state)?.isLoggedIn ?? false }
}

extension SessionStore: SessionRepository {}
